package memlimit

import (
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
