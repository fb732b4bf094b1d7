// Package memlimit turns one --memory-limit into the budgets of a process's
// parts: DuckDB's memory_limit, the Go heap's soft limit and the caches.
//
// Invariant M1: the parts a budget hands out add up to at most its total:
// Reserve + DuckDB + GoHeap == Total, and the caches are inside GoHeap (they
// are Go memory). What no limit governs (the binary's and DuckDB's code
// pages, thread stacks) is what Reserve stands for; it was measured, not
// derived (an idle `dhsi serve` at 80–100 MB of RSS).
//
// Invariant M2: a server's hard limit (Hard) is above its budget. The
// budget is a set of goals: DuckDB spills past memory_limit and the Go
// heap's limit is soft, so RSS may pass the total for a moment, and the
// hard limit must leave room for that. It is there for what no soft limit
// sees: one call inside DuckDB that allocates gigabytes outside its buffer
// manager (a list of a billion elements from range(1000000000) asks for
// 8 GiB at once), which the hard limit turns into an error instead of the
// kernel's OOM killer ending the process.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Reserve is the memory a process needs outside every limit it can set:
// code pages of the binary and of DuckDB, thread stacks, the runtime.
const Reserve = 96 << 20

// Minimum is the smallest total a budget accepts: below it the parts are
// too small to answer a query.
const Minimum = 256 << 20

// Machine reports the memory this process may use: the smaller of the
// machine's RAM (/proc/meminfo MemTotal) and the memory limit of its cgroup
// or any ancestor (a container's memory.max, cgroup v2, or
// memory.limit_in_bytes, v1), with where the figure came from.
func Machine() (int64, string, error) {
	ram, err := memTotal("/proc/meminfo")
	if err != nil {
		return 0, "", err
	}
	if n, file := cgroupLimit("/proc/self/cgroup", "/sys/fs/cgroup"); n > 0 && n < ram {
		return n, "the cgroup's limit (" + file + ")", nil
	}
	return ram, "RAM", nil
}

// cgroupLimit is the smallest memory limit on the path from this process's
// cgroup up to the root of the hierarchy mounted at root, and the file it
// came from (0, "": none). /proc/self/cgroup names the cgroup: "0::/path"
// (v2, files under root) or "N:memory:/path" (v1, under root/memory).
func cgroupLimit(self, root string) (int64, string) {
	b, err := os.ReadFile(self)
	if err != nil {
		return 0, ""
	}
	var best int64
	var from string
	consider := func(file string) {
		v, err := os.ReadFile(file)
		if err != nil {
			return
		}
		t := strings.TrimSpace(string(v))
		n, err := strconv.ParseInt(t, 10, 64)
		// "max" (v2) and v1's page-rounded 2^63 mean no limit
		if err != nil || n <= 0 || n >= 1<<62 {
			return
		}
		if best == 0 || n < best {
			best, from = n, file
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, file = root, "memory.max"
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			dir, file = filepath.Join(root, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		// the process's own cgroup and its ancestors; inside a cgroup
		// namespace the path may not exist under the mount, whose root
		// is then the process's cgroup
		for p := filepath.Clean("/" + parts[2]); ; p = filepath.Dir(p) {
			consider(filepath.Join(dir, p, file))
			if p == "/" {
				break
			}
		}
	}
	return best, from
}

func memTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("machine memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("machine memory: %s: %w", path, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("machine memory: no MemTotal in %s", path)
}

// Default is the budget of a process given no --memory-limit: a quarter of
// what the machine has, as the issue asks, so a 2 GB Raspberry Pi runs a
// server and an ingest side by side with room for the system.
func Default(machine int64) int64 { return machine / 4 }

var units = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1}, {"", 1},
}

// Parse reads a size as people write it: "512MB", "2GiB", "1.5G",
// "536870912", or a share of the machine, "25%". KB/MB/GB are powers of
// ten and KiB/MiB/GiB and the bare K/M/G powers of two, as DuckDB reads
// them.
func Parse(s string, machine int64) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, errors.New("empty size")
	}
	if p, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 || math.IsNaN(f) {
			return 0, fmt.Errorf("size %q: a percentage is more than 0 and at most 100", s)
		}
		return int64(float64(machine) * f / 100), nil
	}
	for _, u := range units {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil {
			continue // "12mb" also ends in "b": the longer suffixes come first
		}
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || f*u.mult > math.MaxInt64/2 {
			return 0, fmt.Errorf("size %q is out of range", s)
		}
		return int64(f * u.mult), nil
	}
	return 0, fmt.Errorf("size %q: want a number with KB, MB, GB (powers of 10), KiB, MiB, GiB (powers of 2), or a percentage of memory", s)
}

// Format prints a size in the unit people read, MiB or GiB, exactly as
// Parse and DuckDB read it back (MiB).
func Format(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%dGiB", n>>30)
	}
	return fmt.Sprintf("%dMiB", n>>20)
}

// Serve is a server's budget (M1).
type Serve struct {
	Total  int64
	DuckDB int64 // DuckDB's memory_limit: its buffer pool, hash tables, sorts (it spills past it)
	GoHeap int64 // the Go heap's soft limit: the caches below and every session's buffers
	// the caches, inside GoHeap
	RowCache, BlockCache, RecordCache int64
}

// Parts the caller set by its own flags (-1: not set, take the share).
type Parts struct {
	DuckDB, RowCache, BlockCache, RecordCache int64
}

// Shares of what is left after Reserve, and the caches' ceilings: past
// them a bigger machine gains little, and the memory is better left to
// DuckDB's spills and the page cache.
const (
	duckDBShare      = 0.40
	rowCacheShare    = 0.15
	blockCacheShare  = 0.10
	recordCacheShare = 0.10
)

// SplitServe divides total among a server's parts: DuckDB 40% of what the
// reserve leaves, the row cache 15%, the block and record caches 10% each
// (each at most its ceiling), the Go heap the rest, caches included. A part
// the caller set keeps its value; if the set parts do not fit, SplitServe
// fails naming them.
func SplitServe(total int64, set Parts, ceilings Parts) (Serve, error) {
	if total < Minimum {
		return Serve{}, fmt.Errorf("%s is less than the %s a server needs", Format(total), Format(Minimum))
	}
	rest := total - Reserve
	pick := func(given int64, share float64, ceiling int64) int64 {
		if given >= 0 {
			return given
		}
		v := int64(float64(rest) * share)
		if ceiling > 0 && v > ceiling {
			v = ceiling
		}
		return v
	}
	b := Serve{Total: total,
		DuckDB:      pick(set.DuckDB, duckDBShare, ceilings.DuckDB),
		RowCache:    pick(set.RowCache, rowCacheShare, ceilings.RowCache),
		BlockCache:  pick(set.BlockCache, blockCacheShare, ceilings.BlockCache),
		RecordCache: pick(set.RecordCache, recordCacheShare, ceilings.RecordCache),
	}
	b.GoHeap = rest - b.DuckDB
	caches := b.RowCache + b.BlockCache + b.RecordCache
	// the Go heap needs room beyond its caches for sessions' work: at
	// least a quarter of it
	if b.GoHeap <= 0 || caches > b.GoHeap*3/4 {
		return Serve{}, fmt.Errorf("DuckDB's %s and the caches' %s (row %s, block %s, record %s) do not fit in %s (%s of it kept for code and stacks, and a quarter of the Go heap for sessions)",
			Format(b.DuckDB), Format(caches), Format(b.RowCache), Format(b.BlockCache), Format(b.RecordCache), Format(total), Format(Reserve))
	}
	return b, nil
}

// Hard is the hard limit of a server whose budget is total (M2): twice it,
// and at least 1 GiB above it, so a small machine's server keeps room for
// DuckDB's threads and a spill's buffers.
func Hard(total int64) int64 { return max(2*total, total+1<<30) }

// Ingest is an ingest's budget (M1: Reserve + DuckDB + GoHeap == Total):
// the Go heap's soft limit, inside it the rows staged in memory before
// they spill, and DuckDB's memory_limit while it reads Parquet inputs.
type Ingest struct {
	Total, GoHeap, Stage, DuckDB int64
}

// stageCeiling is the stage's size before --memory-limit existed: a larger
// machine keeps building as it did.
const stageCeiling = 256 << 20

// SplitIngest gives DuckDB a quarter of what the reserve leaves, the Go heap
// the rest, and the stage a quarter of the Go heap (at most 256 MiB).
func SplitIngest(total int64) (Ingest, error) {
	if total < Minimum {
		return Ingest{}, fmt.Errorf("%s is less than the %s an ingest needs", Format(total), Format(Minimum))
	}
	rest := total - Reserve
	b := Ingest{Total: total, DuckDB: rest / 4}
	b.GoHeap = rest - b.DuckDB
	b.Stage = min(b.GoHeap/4, stageCeiling)
	return b, nil
}
