package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/internal/memlimit"
	"github.com/dhsi/dhsi/records"
)

// memoryFlag is --memory-limit of serve and ingest: one size that bounds
// the whole process (internal/memlimit splits it among the parts).
type memoryFlag struct {
	value *string
	fs    *flag.FlagSet
}

func registerMemoryFlag(fs *flag.FlagSet, what string) memoryFlag {
	machine, from, err := memlimit.Machine()
	def := "a quarter of memory"
	if err == nil {
		def = fmt.Sprintf("a quarter of memory, here %s (%s: %s)", memlimit.Format(memlimit.Default(machine)), from, memlimit.Format(machine))
	}
	return memoryFlag{fs: fs, value: fs.String("memory-limit", "",
		"memory "+what+" may use in all, as a size (512MB, 2GiB) or a share of memory (25%); default "+def)}
}

// total resolves the flag: the size given, or a quarter of the machine's
// memory. explicit reports whether the user gave it.
func (m memoryFlag) total() (total int64, explicit bool, err error) {
	machine, _, merr := memlimit.Machine()
	if *m.value == "" {
		if merr != nil {
			// not Linux, or no /proc: a budget a small machine can afford
			return 1 << 30, false, nil
		}
		return memlimit.Default(machine), false, nil
	}
	if merr != nil {
		machine = 0
	}
	n, err := memlimit.Parse(*m.value, machine)
	if err != nil {
		return 0, true, fmt.Errorf("%w: --memory-limit: %v", errUsage, err)
	}
	if machine == 0 && n == 0 {
		return 0, true, fmt.Errorf("%w: --memory-limit %s: the machine's memory is unknown here; give a size", errUsage, *m.value)
	}
	return n, true, nil
}

// processLimits is false in the tests, which run many commands in one
// process: a hard limit one server set would bound every test beside it.
// The tests of the hard limit run the built binary.
var processLimits = true

// hardLimit resolves serve's --memory-hard-limit against the budget's
// total: unset, memlimit.Hard(total); "off", 0 (none); else a size at
// least the total (M2).
func hardLimit(value string, total int64) (int64, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "":
		return memlimit.Hard(total), nil
	case "off", "0":
		return 0, nil
	}
	machine, _, _ := memlimit.Machine()
	n, err := memlimit.Parse(value, machine)
	if err != nil {
		return 0, fmt.Errorf("%w: --memory-hard-limit: %v", errUsage, err)
	}
	if n <= total {
		return 0, fmt.Errorf("%w: --memory-hard-limit %s is not above --memory-limit %s: the budget is soft and must have room above it", errUsage, value, memlimit.Format(total))
	}
	return n, nil
}

// applyHardLimit caps the process's mappings at n bytes (0: no cap) and
// returns the function that lifts the cap. DuckDB's allocator gives freed
// address space back (jemalloc.go), so the cap counts what is in use.
func applyHardLimit(n int64) (restore func(), err error) {
	if n <= 0 || !processLimits {
		return func() {}, nil
	}
	return capProcessData(n)
}

// wasSet reports whether the named flag was given on the command line.
func wasSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// gcPercent is the GOGC of serve and ingest when the environment sets
// none. The Go heap's soft limit (limitGoHeap) bounds what it lets the heap
// grow to, so a higher GOGC trades memory the budget already allows for
// fewer collections; a dedicated mark worker takes one of the 2 cores while
// it runs.
//   - serve, at Go's default of 100, collected ~9 times a second under 16
//     clients. Measured (wirebench, domain_datasets at 16 clients, 2M-URL
//     realistic corpus, A B B A, 6 s each): 37,466 and 39,990 tps at 100
//     against 48,110 and 50,826 at 400; 71 and 76 collections against 20
//     and 21.
//   - ingest of 63 datasets of the 10M-URL realistic corpus (dhsi ingest
//     --dataset-per-file, A B A B): 38.8 and 36.5 s at 100, 36.2 and 33.9 s
//     at 400; 62.8 and 59.1 CPU-s against 68.4 and 64.4; peak RSS 0.5 GB
//     against 1.1 GB under the default --memory-limit of 6 GB.
const gcPercent = 400

// tuneGC sets gcPercent unless GOGC chose, and returns the function that
// restores the previous setting.
func tuneGC() func() {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(gcPercent)
	return func() { debug.SetGCPercent(prev) }
}

// limitGoHeap sets the Go heap's soft limit for the life of the process,
// unless GOMEMLIMIT chose one; the garbage collector works harder near it.
// It returns the function that restores the previous limit (the tests run
// commands in one process).
func limitGoHeap(n int64) func() {
	if n <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(n)
	return func() { debug.SetMemoryLimit(prev) }
}

// optionalMB is a size flag in MiB whose default is a share of
// --memory-limit: unset, it prints no default in --help and reports -1.
type optionalMB struct {
	set bool
	n   int64
}

func (o *optionalMB) String() string {
	if o == nil || !o.set {
		return ""
	}
	return fmt.Sprint(o.n)
}

func (o *optionalMB) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 || n > 1<<30 {
		return fmt.Errorf("want a whole number of MiB, 0 or more")
	}
	o.set, o.n = true, n
	return nil
}

// bytes is the size given in bytes, or -1 when the flag was not given.
func (o *optionalMB) bytes() int64 {
	if !o.set {
		return -1
	}
	return o.n << 20
}

// serveBudget splits --memory-limit among a server's parts (memlimit M1).
// Parts given by their own flags keep their sizes; when they do not fit a
// budget the user did not give, the budget grows to hold them (a server
// started with --duckdb-memory-limit 8GB on a small machine keeps working
// as it did before --memory-limit existed); when they do not fit one the
// user gave, that is an error.
func serveBudget(mem memoryFlag, duckMemory string, set memlimit.Parts) (memlimit.Serve, error) {
	total, explicit, err := mem.total()
	if err != nil {
		return memlimit.Serve{}, err
	}
	set.DuckDB = -1
	if duckMemory != "" {
		machine, _, _ := memlimit.Machine()
		if set.DuckDB, err = memlimit.Parse(duckMemory, machine); err != nil {
			return memlimit.Serve{}, fmt.Errorf("%w: --duckdb-memory-limit: %v", errUsage, err)
		}
	}
	ceilings := memlimit.Parts{RowCache: catalog.DefaultRowCacheBytes, BlockCache: catalog.DefaultBlockCacheBytes, RecordCache: records.DefaultCacheBytes}
	for {
		b, err := memlimit.SplitServe(total, set, ceilings)
		if err == nil {
			return b, nil
		}
		if explicit || total > 1<<50 {
			return memlimit.Serve{}, fmt.Errorf("%w: --memory-limit: %v", errUsage, err)
		}
		total *= 2
	}
}
