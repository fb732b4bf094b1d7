package bench

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The wirebench method (issue 16): both systems are driven by the same lean
// libpq client, wirebench.c, whose own cost per query (~40 µs of CPU) is small
// next to the server work it measures. The Go pgx client of the older cells
// costs more per query than DHSI's server work, which hid the ratios.

//go:embed wirebench/wirebench.c
var wirebenchSource []byte

// ErrNoCC says wirebench cannot be built here: no C compiler or no libpq
// headers.
var ErrNoCC = errors.New("bench: cannot build wirebench (needs cc and libpq-dev)")

// BuildWirebench compiles the embedded wirebench.c with $CC (default cc)
// into dir and returns the binary's path. The binary's name carries the
// source's hash, so a dir reused across runs rebuilds only when the source
// changes.
func BuildWirebench(ctx context.Context, dir string) (string, error) {
	sum := sha256.Sum256(wirebenchSource)
	bin := filepath.Join(dir, "wirebench-"+hex.EncodeToString(sum[:6]))
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		return bin, nil
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrNoCC, cc, err)
	}
	inc := "/usr/include/postgresql"
	if out, err := exec.CommandContext(ctx, "pg_config", "--includedir").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		inc = strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(inc, "libpq-fe.h")); err != nil {
		return "", fmt.Errorf("%w: no %s", ErrNoCC, filepath.Join(inc, "libpq-fe.h"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "wirebench.c")
	if err := os.WriteFile(src, wirebenchSource, 0o644); err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	// the build line at the top of wirebench.c, with the include directory
	// pg_config reports
	out, err := exec.CommandContext(ctx, cc, "-O2", "-Wall", "-pthread", "-I"+inc, "-o", tmp, src, "-lpq", "-lm").CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%w: %s: %v\n%s", ErrNoCC, cc, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// wbRun is one wirebench invocation.
type wbRun struct {
	conninfo, sql string
	params        string // "none", "d" (domain), "dd" (domain, dataset id) or "d3" (three domains)
	queries       string // the query file
	clients       int
	dur, warm     time.Duration
	fixedN        int  // > 0: this many queries per client, no warm-up (-N)
	sequential    bool // walk the query file in order (-S)
	label         string
}

// wbResult is wirebench's one output line.
type wbResult struct {
	Label                         string
	Clients                       int
	TPS, Mean, P50, P95, P99, Max float64 // latencies in ms
	RowsPerQ                      float64
	Errors, N, WarmN              int64
	Wall                          float64
	ClientMin, ClientMax          int64 // queries by the slowest and the fastest connection
}

// parseWirebench parses wirebench's output line:
// "label clients=4 tps=… mean_ms=… p50_ms=… p95_ms=… p99_ms=… max_ms=…
// rows_per_q=… errors=… n=… warm_n=… wall_s=… mapped=… client_n_min=… client_n_max=…".
func parseWirebench(line string) (wbResult, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return wbResult{}, fmt.Errorf("wirebench output %q: too short", line)
	}
	res := wbResult{Label: f[0]}
	seen := map[string]bool{}
	for _, kv := range f[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return wbResult{}, fmt.Errorf("wirebench output %q: %q is not key=value", line, kv)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return wbResult{}, fmt.Errorf("wirebench output %q: %s: %w", line, k, err)
		}
		seen[k] = true
		switch k {
		case "clients":
			res.Clients = int(x)
		case "tps":
			res.TPS = x
		case "mean_ms":
			res.Mean = x
		case "p50_ms":
			res.P50 = x
		case "p95_ms":
			res.P95 = x
		case "p99_ms":
			res.P99 = x
		case "max_ms":
			res.Max = x
		case "rows_per_q":
			res.RowsPerQ = x
		case "errors":
			res.Errors = int64(x)
		case "n":
			res.N = int64(x)
		case "warm_n":
			res.WarmN = int64(x)
		case "wall_s":
			res.Wall = x
		case "client_n_min":
			res.ClientMin = int64(x)
		case "client_n_max":
			res.ClientMax = int64(x)
		}
	}
	for _, k := range []string{"clients", "tps", "p50_ms", "p99_ms", "errors", "n"} {
		if !seen[k] {
			return wbResult{}, fmt.Errorf("wirebench output %q: no %s", line, k)
		}
	}
	return res, nil
}

// runWirebench runs bin once and parses its line. A run with errors fails,
// naming wirebench's first error.
func runWirebench(ctx context.Context, bin string, a wbRun) (wbResult, error) {
	args := []string{"-c", a.conninfo, "-s", a.sql, "-p", a.params, "-n", strconv.Itoa(max(1, a.clients)), "-l", a.label}
	if a.queries != "" {
		args = append(args, "-q", a.queries)
	}
	if a.fixedN > 0 {
		args = append(args, "-N", strconv.Itoa(a.fixedN))
	} else {
		args = append(args, "-T", strconv.FormatFloat(a.dur.Seconds(), 'f', 3, 64), "-w", strconv.FormatFloat(a.warm.Seconds(), 'f', 3, 64))
	}
	if a.sequential {
		args = append(args, "-S")
	}
	var stdout, stderr strings.Builder
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var res wbResult
	var perr error = fmt.Errorf("wirebench printed no result")
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if strings.Contains(l, "tps=") {
			res, perr = parseWirebench(l)
		}
	}
	if err != nil || perr != nil || res.Errors > 0 {
		return res, fmt.Errorf("wirebench %s (%s): exit %v, %d errors: %v\n%s%s", a.label, a.sql, err, res.Errors, perr, stdout.String(), stderr.String())
	}
	return res, nil
}

// writeQueryFile writes the queries as wirebench reads them:
// qid,rank,domain,dataset_id, the dataset id as the server knows it.
func writeQueryFile(path string, c *Corpus, queries []Query, dsID []int32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "qid,rank,domain,dataset_id")
	for i, q := range queries {
		rank := -1
		if c != nil {
			if c.index == nil {
				c.index = map[string]int{}
				for i, s := range c.Domains {
					c.index[s] = i
				}
			}
			rank = c.index[q.Domain]
		}
		fmt.Fprintf(w, "%d,%d,%s,%d\n", i, rank, q.Domain, dsID[q.Dataset])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// procCPU is a process's CPU time from /proc/PID/stat: its own user and
// system time, plus with children the time of its children it has reaped
// (PostgreSQL's backends, once their connections closed).
func procCPU(pid int, children bool) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no comm", pid)
	}
	f := strings.Fields(s[i+1:])
	// after the comm: state(3) … utime(14) stime(15) cutime(16) cstime(17)
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	var ticks int64
	last := 12 // stime
	if children {
		last = 14 // cstime
	}
	for _, x := range f[11 : last+1] {
		v, _ := strconv.ParseInt(x, 10, 64)
		ticks += v
	}
	// USER_HZ is 100 on every Linux Go runs on
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
