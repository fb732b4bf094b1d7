package memlimit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const machine = 8 << 30
	for in, want := range map[string]int64{
		"512MB": 512e6, "512MiB": 512 << 20, "2GiB": 2 << 30, "2gb": 2e9, "1.5G": 3 << 29,
		"536870912": 536870912, "536870912b": 536870912, "25%": 2 << 30, " 100% ": 8 << 30, "64k": 64 << 10,
	} {
		got, err := Parse(in, machine)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1GB", "0%", "101%", "NaN%", "12 parsecs", "1e40GB"} {
		if n, err := Parse(in, machine); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, n)
		}
	}
}

// TestSplitServeKeepsM1: the parts add up to the total, the caches fit in
// the Go heap with room for sessions, and a part given keeps its size.
func TestSplitServeKeepsM1(t *testing.T) {
	unset := Parts{DuckDB: -1, RowCache: -1, BlockCache: -1, RecordCache: -1}
	ceil := Parts{RowCache: 512 << 20, BlockCache: 256 << 20, RecordCache: 256 << 20}
	for _, total := range []int64{Minimum, 512 << 20, 2 << 30, 6 << 30, 64 << 30} {
		b, err := SplitServe(total, unset, ceil)
		if err != nil {
			t.Fatalf("%s: %v", Format(total), err)
		}
		if Reserve+b.DuckDB+b.GoHeap != total {
			t.Errorf("%s: reserve %d + duckdb %d + go %d != total", Format(total), Reserve, b.DuckDB, b.GoHeap)
		}
		if c := b.RowCache + b.BlockCache + b.RecordCache; c > b.GoHeap*3/4 || b.RowCache > ceil.RowCache || b.BlockCache > ceil.BlockCache || b.RecordCache > ceil.RecordCache {
			t.Errorf("%s: caches %+v against a Go heap of %d", Format(total), b, b.GoHeap)
		}
	}
	set := unset
	set.RecordCache, set.DuckDB = 0, 100<<20
	b, err := SplitServe(2<<30, set, ceil)
	if err != nil || b.RecordCache != 0 || b.DuckDB != 100<<20 || b.GoHeap != 2<<30-Reserve-100<<20 {
		t.Errorf("given parts: %+v, %v", b, err)
	}
	set = unset
	set.RowCache = 2 << 30
	if _, err := SplitServe(2<<30, set, ceil); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("overfilled: %v", err)
	}
	if _, err := SplitServe(Minimum-1, unset, ceil); err == nil {
		t.Error("a total under the minimum was accepted")
	}
}

// TestHardKeepsM2: the hard limit is twice the budget, at least 1 GiB
// above it (a 2 GB Raspberry Pi's default 512 MB budget gets 1.5 GiB).
func TestHardKeepsM2(t *testing.T) {
	for total, want := range map[int64]int64{
		Minimum: Minimum + 1<<30, 512 << 20: 512<<20 + 1<<30, 1 << 30: 2 << 30, 6 << 30: 12 << 30,
	} {
		if got := Hard(total); got != want || got <= total {
			t.Errorf("Hard(%s) = %s, want %s", Format(total), Format(got), Format(want))
		}
	}
}

func TestSplitIngestKeepsM1(t *testing.T) {
	for _, total := range []int64{Minimum, 512 << 20, 6 << 30} {
		b, err := SplitIngest(total)
		if err != nil || Reserve+b.DuckDB+b.GoHeap != total || b.Stage > b.GoHeap/4 || b.Stage > stageCeiling {
			t.Errorf("%s: %+v, %v", Format(total), b, err)
		}
	}
}

func TestMachine(t *testing.T) {
	n, from, err := Machine()
	if err != nil {
		t.Skipf("no machine memory here: %v", err)
	}
	if n < 64<<20 || from == "" {
		t.Errorf("Machine() = %d from %q", n, from)
	}
}

// TestCgroupLimit: the smallest limit from the process's cgroup up to the
// root counts, in cgroup v1 and v2 layouts; "max" and v1's unlimited
// 2^63-page value are no limit.
func TestCgroupLimit(t *testing.T) {
	root := t.TempDir()
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	self := filepath.Join(root, "self")
	// v1: the memory controller's hierarchy, a limit on the parent
	write(self, "9:name=systemd:/\n4:memory:/jobs/pi\n0::/\n")
	write(filepath.Join(root, "memory/memory.limit_in_bytes"), "9223372036854771712\n")
	write(filepath.Join(root, "memory/jobs/memory.limit_in_bytes"), "2147483648\n")
	write(filepath.Join(root, "memory/jobs/pi/memory.limit_in_bytes"), "9223372036854771712\n")
	if n, from := cgroupLimit(self, root); n != 2<<30 || !strings.HasSuffix(from, "memory/jobs/memory.limit_in_bytes") {
		t.Errorf("v1: %d from %q", n, from)
	}
	// v2: memory.max on the unified hierarchy
	root2 := t.TempDir()
	self2 := filepath.Join(root2, "self")
	write(self2, "0::/user.slice/app\n")
	write(filepath.Join(root2, "user.slice/memory.max"), "max\n")
	write(filepath.Join(root2, "user.slice/app/memory.max"), "1073741824\n")
	if n, _ := cgroupLimit(self2, root2); n != 1<<30 {
		t.Errorf("v2: %d", n)
	}
	write(filepath.Join(root2, "user.slice/app/memory.max"), "max\n")
	if n, _ := cgroupLimit(self2, root2); n != 0 {
		t.Errorf("v2 without a limit: %d", n)
	}
}
