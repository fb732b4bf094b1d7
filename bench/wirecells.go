package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// Client names the load client of the warm cells.
type Client string

const (
	// ClientPGX is the Go pgx client of the earlier tables: it costs more
	// CPU per query than DHSI's server work, so its ratios flatter
	// whichever server is slower per query.
	ClientPGX Client = "pgx"
	// ClientWirebench drives DHSI and PostgreSQL alike with wirebench.c
	// (bench/wirebench), interleaved A B | B A over the rounds (issue 16).
	ClientWirebench Client = "wirebench"
)

// wbSpec is one cell of the wirebench table: a statement on DHSI and its
// PostgreSQL counterpart, and which parameters wirebench binds.
type wbSpec struct {
	key, name string
	dhsi, pg  string
	params    string // wirebench -p
	// orderedBy is the column both statements order by ("" for none).
	// The agreement check compares that column's sequence and the rows
	// as sets: an ORDER BY on a column with ties (url_count) leaves the
	// order of tied rows to each system, so only url, unique within a
	// (domain, dataset), fixes the whole sequence.
	orderedBy string
}

const (
	dhsiPP = "SELECT dataset_id, url_count FROM domain_datasets($1) WHERE url_count > 0 ORDER BY url_count DESC"
	pgPP   = "SELECT dataset_id, url_count FROM domain_counts WHERE domain = $1 AND url_count > 0 ORDER BY url_count DESC"
	// issue 17 §2's filtered first page, written against the urls view as
	// a CDX user writes it; PostgreSQL answers it from its B-tree on
	// (domain, dataset_id, url), in url order, stopping at 100
	filteredFirstPage = "SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2 AND url LIKE 'https://%' ORDER BY url LIMIT 100"
	// count(*) as people write it: how many datasets hold a domain, and
	// how many URLs a dataset holds for it (PostgreSQL: its count table,
	// and its B-tree on (domain, dataset_id, url))
	dhsiDC    = "SELECT count(*) AS n FROM domain_datasets($1) WHERE url_count > 0"
	pgDC      = "SELECT count(*) AS n FROM domain_counts WHERE domain = $1 AND url_count > 0"
	countURLs = "SELECT count(*) AS n FROM urls WHERE domain = $1 AND dataset_id = $2"
	// and how many URLs a domain has in all
	dhsiSum = "SELECT sum(url_count) AS n FROM domain_datasets($1)"
	pgSum   = "SELECT sum(url_count) AS n FROM domain_counts WHERE domain = $1"
	// a BI tool's join of a domain's datasets with the registry
	dhsiJoin = "SELECT d.dataset_id, d.url_count, s.urls FROM domain_datasets($1) d JOIN datasets s USING (dataset_id) ORDER BY d.url_count DESC"
	pgJoin   = "SELECT d.dataset_id, d.url_count, s.urls FROM domain_counts d JOIN datasets s USING (dataset_id) WHERE d.domain = $1 ORDER BY d.url_count DESC"
	// and a summary as a BI tool writes it over the urls view, the same
	// statement on both (PostgreSQL: its B-tree on (domain, dataset_id, url))
	groupByDataset = "SELECT dataset_id, count(*) AS n FROM urls WHERE domain = $1 GROUP BY dataset_id ORDER BY n DESC, dataset_id"
	// and over several domains at once, as a person lists them
	groupByThree = "SELECT dataset_id, count(*) AS n FROM urls WHERE domain IN ($1, $2, $3) GROUP BY dataset_id ORDER BY n DESC, dataset_id"
)

var wbSpecs = []wbSpec{
	{"dd", "domain_datasets($1) vs PG's (domain, dataset_id, count) table", "SELECT * FROM domain_datasets($1)", pgDD, "d", ""},
	{"fp", "first page domain_urls($1,$2,0,1000) vs PG's B-tree", "SELECT * FROM domain_urls($1, $2, 0, 1000)", pgFP, "dd", "url"},
	{"pp", "as a person writes it: domain_datasets($1) WHERE url_count > 0 ORDER BY url_count DESC", dhsiPP, pgPP, "d", "url_count"},
	{"ff", "filtered first page: urls WHERE domain, dataset_id, url LIKE 'https://%' ORDER BY url LIMIT 100", filteredFirstPage, filteredFirstPage, "dd", "url"},
	{"dc", "count(*): datasets holding a domain, domain_datasets($1) WHERE url_count > 0", dhsiDC, pgDC, "d", ""},
	{"uc", "count(*): a domain's URLs in a dataset, urls WHERE domain = $1 AND dataset_id = $2", countURLs, countURLs, "dd", ""},
	{"sum", "sum(url_count) of domain_datasets($1): a domain's URLs in all", dhsiSum, pgSum, "d", ""},
	{"join", "domain_datasets($1) JOIN datasets USING (dataset_id) ORDER BY url_count DESC", dhsiJoin, pgJoin, "d", "url_count"},
	{"gb", "GROUP BY: urls WHERE domain = $1 GROUP BY dataset_id ORDER BY count DESC", groupByDataset, groupByDataset, "d", ""},
	{"in", "three domains: urls WHERE domain IN ($1, $2, $3) GROUP BY dataset_id ORDER BY count DESC", groupByThree, groupByThree, "d3", ""},
	{"one", "SELECT 1", "SELECT 1", "SELECT 1", "none", ""},
}

// WirebenchCells are the keys of the wirebench cells, in the table's order.
func WirebenchCells() []string {
	keys := make([]string, len(wbSpecs))
	for i, s := range wbSpecs {
		keys[i] = s.key
	}
	return keys
}

// wbRound is one round of a cell: both systems, one after the other.
type wbRound struct {
	dhsiFirst      bool
	dhsi, pg       wbResult
	hasPG          bool
	dhsiCPU, pgCPU time.Duration // server CPU per query (0: not known)
}

func (r wbRound) ratio() float64 {
	if !r.hasPG || r.pg.TPS == 0 {
		return 0
	}
	return r.dhsi.TPS / r.pg.TPS
}

// wbCell is one (statement, client count) of the wirebench table.
type wbCell struct {
	spec    wbSpec
	clients int
	rounds  []wbRound
}

// wbSystem is one server under measurement.
type wbSystem struct {
	name, conninfo string
	// cpu is the server's CPU time so far, settled: PostgreSQL's backends
	// count once they have exited and been reaped
	cpu func() (time.Duration, error)
}

// settledCPU reads procCPU until two reads 50 ms apart agree (at most 2 s).
func settledCPU(pid int, children bool) (time.Duration, error) {
	prev, err := procCPU(pid, children)
	if err != nil {
		return 0, err
	}
	for range 40 {
		time.Sleep(50 * time.Millisecond)
		cur, err := procCPU(pid, children)
		if err != nil {
			return 0, err
		}
		if cur == prev {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}

// runWirebenchCells serves the built store, loads PostgreSQL (unless
// skipped), and measures every cell of wbSpecs at every client count, each
// in o.Rounds rounds: DHSI then PostgreSQL in even rounds, PostgreSQL then
// DHSI in odd ones.
func (r *Result) runWirebenchCells(ctx context.Context, o Options, work, storeDir string, queries []Query) error {
	bin := o.Wirebench
	if bin == "" {
		b, err := BuildWirebench(ctx, filepath.Join(work, "wirebench"))
		if err != nil {
			return err
		}
		bin = b
	}
	qfile := filepath.Join(work, "queries.csv")
	if err := writeQueryFile(qfile, r.corp, queries, r.DatasetIDs); err != nil {
		return err
	}
	sockDir := filepath.Join(work, "sock")
	if err := os.MkdirAll(sockDir, 0o755); err != nil {
		return err
	}
	srv, url, err := startServe(ctx, o.Bin, filepath.Join(work, "serve.log"), nil,
		append([]string{"--store", storeDir, "--cache-dir", filepath.Join(work, "cache"), "--refresh-interval", "0", "--unix-socket-dir", sockDir}, o.serveFlags()...)...)
	if err != nil {
		return err
	}
	defer srv.stop()
	r.Check = r.check(ctx, url, queries)
	dhsiConn := url
	if o.UnixSockets {
		if dhsiConn, err = serveSocketURL(url, sockDir); err != nil {
			return err
		}
	}
	dhsi := wbSystem{name: "DHSI", conninfo: dhsiConn, cpu: func() (time.Duration, error) { return settledCPU(srv.cmd.Process.Pid, false) }}
	systems := []wbSystem{dhsi}
	if !o.SkipPG {
		pg, err := r.loadPG(ctx, o, storeDir)
		if err != nil {
			return err
		}
		defer pg.stop()
		pgConn := pg.url
		if o.UnixSockets {
			pgConn = pg.socketURL
		}
		systems = append(systems, wbSystem{name: "PG", conninfo: pgConn, cpu: func() (time.Duration, error) { return settledCPU(pg.proc.cmd.Process.Pid, true) }})
		if a := r.agree(ctx, url, pg.url, queries); strings.HasPrefix(a, "ok") {
			r.Check += "; " + a
		} else {
			r.Check = a + "; " + r.Check // a wrong answer leads the report
		}
	}
	stmt := func(sys wbSystem, s wbSpec) string {
		if sys.name == "DHSI" {
			return s.dhsi
		}
		return s.pg
	}
	// warm: each system runs the query set once, in order, on one
	// connection (domain_datasets' caches serve the person-written cell too)
	for _, sys := range systems {
		for _, s := range wbSpecs[:2] {
			t0 := time.Now()
			res, err := runWirebench(ctx, bin, wbRun{conninfo: sys.conninfo, sql: stmt(sys, s), params: s.params, queries: qfile,
				clients: 1, fixedN: len(queries), sequential: true, label: "prime-" + s.key})
			if err != nil {
				return fmt.Errorf("%s: %w", sys.name, err)
			}
			o.logf("%-4s %s primed: %d queries in %v (%.0f q/s)", sys.name, s.key, res.N, time.Since(t0).Round(time.Millisecond), res.TPS)
		}
	}
	measure := func(sys wbSystem, s wbSpec, n int) (wbResult, time.Duration, error) {
		cpu0, cerr := sys.cpu()
		res, err := runWirebench(ctx, bin, wbRun{conninfo: sys.conninfo, sql: stmt(sys, s), params: s.params, queries: qfile,
			clients: n, dur: o.Duration, warm: o.Warmup, label: fmt.Sprintf("%s-%s-c%d", strings.ToLower(sys.name), s.key, n)})
		if err != nil {
			return res, 0, fmt.Errorf("%s: %w", sys.name, err)
		}
		var perQ time.Duration
		if cpu1, err := sys.cpu(); err == nil && cerr == nil && res.N+res.WarmN > 0 {
			perQ = (cpu1 - cpu0) / time.Duration(res.N+res.WarmN)
		}
		return res, perQ, nil
	}
	for _, s := range wbSpecs {
		if len(o.Cells) > 0 && !slices.Contains(o.Cells, s.key) {
			continue
		}
		for _, n := range o.Clients {
			c := wbCell{spec: s, clients: n}
			for round := range o.Rounds {
				rd := wbRound{dhsiFirst: round%2 == 0, hasPG: len(systems) > 1}
				order := systems
				if !rd.dhsiFirst && len(systems) > 1 {
					order = []wbSystem{systems[1], systems[0]}
				}
				for _, sys := range order {
					res, cpu, err := measure(sys, s, n)
					if err != nil {
						return err
					}
					if sys.name == "DHSI" {
						rd.dhsi, rd.dhsiCPU = res, cpu
					} else {
						rd.pg, rd.pgCPU = res, cpu
					}
				}
				c.rounds = append(c.rounds, rd)
				line := fmt.Sprintf("%-3s x%-2d round %d: DHSI %.0f tps p50 %.3f p99 %.3f ms", s.key, n, round+1, rd.dhsi.TPS, rd.dhsi.P50, rd.dhsi.P99)
				if rd.hasPG {
					line += fmt.Sprintf(" | PG %.0f tps p50 %.3f p99 %.3f ms | DHSI/PG %.2f", rd.pg.TPS, rd.pg.P50, rd.pg.P99, rd.ratio())
				}
				o.logf("%s", line)
			}
			r.WB = append(r.WB, c)
		}
	}
	r.ServeRSS = srv.peakRSS()
	return nil
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func (c wbCell) meanOf(f func(wbRound) float64) float64 {
	var xs []float64
	for _, rd := range c.rounds {
		xs = append(xs, f(rd))
	}
	return mean(xs)
}

// printWirebench writes the ratio table (the headline: DHSI ÷ PostgreSQL
// tps per cell and client count, the mean of the rounds' ratios, each
// round's ratio after it) and the per-round detail.
func (r *Result) printWirebench(w io.Writer) {
	o := r.Opts
	transport := "TCP 127.0.0.1"
	if o.UnixSockets {
		transport = "unix-domain sockets"
	}
	fmt.Fprintf(w, "\nDHSI vs PostgreSQL 15, wirebench (libpq, one prepared statement per connection, %s): %d URLs, %d domains, %d datasets, %s corpus\n",
		transport, r.URLs, o.Domains, o.Datasets, shapeName(o.Shape))
	if o.NoNative {
		fmt.Fprintf(w, "DHSI served with --no-native: every statement through DuckDB\n")
	}
	fmt.Fprintf(w, "each measurement: %v warm-up + %v measured; %d rounds per cell, DHSI first in odd rounds, PostgreSQL first in even ones (A B | B A); both served the %d-query set once before\n\n",
		o.Warmup, o.Duration, o.Rounds, len(r.queries))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.Debug)
	hdr := "tps, DHSI ÷ PostgreSQL (mean of rounds: round 1, round 2, …)"
	for _, n := range o.Clients {
		hdr += fmt.Sprintf("\t%d client(s)", n)
	}
	fmt.Fprintln(tw, hdr+"\t")
	for _, s := range wbSpecs {
		line := s.name
		for _, n := range o.Clients {
			c, ok := r.wbCell(s.key, n)
			if !ok || len(c.rounds) == 0 || !c.rounds[0].hasPG {
				line += "\tn/a"
				continue
			}
			var each []string
			for _, rd := range c.rounds {
				each = append(each, fmt.Sprintf("%.2f", rd.ratio()))
			}
			line += fmt.Sprintf("\t%.2f (%s)", c.meanOf(wbRound.ratio), strings.Join(each, ", "))
		}
		fmt.Fprintln(tw, line+"\t")
	}
	tw.Flush()

	fmt.Fprintln(w, "\nper round (p50/p99 in ms; server CPU per query from /proc: DHSI's serve process, PostgreSQL's postmaster and its reaped backends; conns: queries by the slowest/fastest connection)")
	tw = tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "cell\tclients\tround\tfirst\tDHSI tps\tPG tps\tDHSI÷PG\tDHSI p50/p99\tPG p50/p99\tDHSI µs CPU/q\tPG µs CPU/q\tDHSI conns\tPG conns\tDHSI rows/q\tPG rows/q\t")
	us := func(d time.Duration) string {
		if d == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.0f", float64(d)/1e3)
	}
	for _, c := range r.WB {
		for i, rd := range c.rounds {
			first := "DHSI"
			if !rd.dhsiFirst {
				first = "PG"
			}
			pgTPS, ratio, pgLat, pgCPU, pgConns, pgRows := "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"
			if rd.hasPG {
				pgTPS, ratio = fmt.Sprintf("%.0f", rd.pg.TPS), fmt.Sprintf("%.2f", rd.ratio())
				pgLat = fmt.Sprintf("%.3f/%.3f", rd.pg.P50, rd.pg.P99)
				pgCPU, pgConns, pgRows = us(rd.pgCPU), fmt.Sprintf("%d/%d", rd.pg.ClientMin, rd.pg.ClientMax), fmt.Sprintf("%.1f", rd.pg.RowsPerQ)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.0f\t%s\t%s\t%.3f/%.3f\t%s\t%s\t%s\t%d/%d\t%s\t%.1f\t%s\t\n", c.spec.key, c.clients, i+1, first,
				rd.dhsi.TPS, pgTPS, ratio, rd.dhsi.P50, rd.dhsi.P99, pgLat, us(rd.dhsiCPU), pgCPU, rd.dhsi.ClientMin, rd.dhsi.ClientMax, pgConns, rd.dhsi.RowsPerQ, pgRows)
		}
		if len(c.rounds) > 1 {
			pg := "n/a"
			ratio, pgLat := "n/a", "n/a"
			if c.rounds[0].hasPG {
				pg = fmt.Sprintf("%.0f", c.meanOf(func(rd wbRound) float64 { return rd.pg.TPS }))
				ratio = fmt.Sprintf("%.2f", c.meanOf(wbRound.ratio))
				pgLat = fmt.Sprintf("%.3f/%.3f", c.meanOf(func(rd wbRound) float64 { return rd.pg.P50 }), c.meanOf(func(rd wbRound) float64 { return rd.pg.P99 }))
			}
			fmt.Fprintf(tw, "%s\t%d\tmean\t\t%.0f\t%s\t%s\t%.3f/%.3f\t%s\t\t\t\t\t\t\t\n", c.spec.key, c.clients,
				c.meanOf(func(rd wbRound) float64 { return rd.dhsi.TPS }), pg, ratio,
				c.meanOf(func(rd wbRound) float64 { return rd.dhsi.P50 }), c.meanOf(func(rd wbRound) float64 { return rd.dhsi.P99 }), pgLat)
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "cells:")
	for _, s := range wbSpecs {
		fmt.Fprintf(w, "  %-3s DHSI: %s\n      PG:   %s\n", s.key, s.dhsi, s.pg)
	}
}

func (r *Result) wbCell(key string, n int) (wbCell, bool) {
	for _, c := range r.WB {
		if c.spec.key == key && c.clients == n {
			return c, true
		}
	}
	return wbCell{}, false
}

func shapeName(s Shape) Shape {
	if s == "" {
		return ShapeSimple
	}
	return s
}

// agree runs the first 100 queries of every cell on DHSI and PostgreSQL
// and compares the answers: the columns PostgreSQL's statement returns,
// taken by name from DHSI's, as text; in order where the statement orders
// by a unique column (the pages), as sets where it does not.
func (r *Result) agree(ctx context.Context, dhsiURL, pgURL string, queries []Query) string {
	conns := make([]*pgx.Conn, 2)
	for i, u := range []string{dhsiURL, pgURL} {
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			return "agreement: " + err.Error()
		}
		defer c.Close(ctx)
		conns[i] = c
	}
	// answer runs sql and returns its rows, each the values of names (the
	// statement's own columns when nil) as text, and those names.
	answer := func(c *pgx.Conn, sql string, names []string, args []any) ([][]string, []string, error) {
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		var cols []string
		for _, f := range rows.FieldDescriptions() {
			cols = append(cols, f.Name)
		}
		if names == nil {
			names = cols
		}
		var out [][]string
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return nil, nil, err
			}
			row := make([]string, len(names))
			for j, n := range names {
				if i := slices.Index(cols, n); i >= 0 {
					row[j] = fmt.Sprint(vals[i])
				} else {
					row[j] = "<no column " + n + ">"
				}
			}
			out = append(out, row)
		}
		return out, names, rows.Err()
	}
	var checked []string
	total := 0
	for _, s := range wbSpecs {
		if s.params == "none" {
			continue
		}
		for i, q := range queries[:min(100, len(queries))] {
			args := []any{q.Domain}
			switch s.params {
			case "dd":
				args = append(args, r.DatasetIDs[q.Dataset])
			case "d3":
				// wirebench -p d3 -S: three queries in a row
				args = append(args, queries[(i+1)%len(queries)].Domain, queries[(i+2)%len(queries)].Domain)
			}
			pgRows, names, err := answer(conns[1], s.pg, nil, args)
			if err != nil {
				return fmt.Sprintf("agreement: %s on PostgreSQL: %v", s.key, err)
			}
			dhRows, _, err := answer(conns[0], s.dhsi, names, args)
			if err != nil {
				return fmt.Sprintf("agreement: %s on DHSI: %v", s.key, err)
			}
			if what := disagreement(dhRows, pgRows, slices.Index(names, s.orderedBy)); what != "" {
				return fmt.Sprintf("MISMATCH: %s for %v: %s", s.key, args, what)
			}
			total += len(pgRows)
		}
		checked = append(checked, s.key)
	}
	return fmt.Sprintf("ok: DHSI's answers equal PostgreSQL's for 100 queries of each of %s (%d rows)", strings.Join(checked, ", "), total)
}

// disagreement says how DHSI's rows differ from PostgreSQL's ("" when they
// agree). orderBy is the index of the column both order by (-1: none):
// its values must come in the same sequence, and the rows must be the same
// set, since rows tied on it may come in either order.
func disagreement(dhsi, pg [][]string, orderBy int) string {
	if orderBy >= 0 {
		for i := range min(len(dhsi), len(pg)) {
			if dhsi[i][orderBy] != pg[i][orderBy] {
				return fmt.Sprintf("row %d orders by %q on DHSI and %q on PostgreSQL", i+1, dhsi[i][orderBy], pg[i][orderBy])
			}
		}
	}
	join := func(rows [][]string) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = strings.Join(r, "|")
		}
		slices.Sort(out)
		return out
	}
	d, p := join(dhsi), join(pg)
	if !slices.Equal(d, p) {
		return fmt.Sprintf("DHSI %d rows, PostgreSQL %d (first rows, sorted: %q and %q)", len(d), len(p), d[:min(3, len(d))], p[:min(3, len(p))])
	}
	return ""
}
