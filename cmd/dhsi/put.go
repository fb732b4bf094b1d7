package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/records"
)

func runPut(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("put", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	parallel := fs.Int("parallel", 8, "objects written concurrently")
	batch := fs.String("batch", "auto", "land records as batch objects, one per shard, written once without a read (on), or in each domain's inbox object, merged with what is there (off); auto: batches for files, and for field=value pairs never (one record)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage:
  dhsi put [flags] field=value ...     one record, e.g. domain=example.com company_name="Example Inc"
  dhsi put [flags] FILE ...            records from .usv, .csv, .tsv or .jsonl files (- for USV on stdin)

One record goes to its domain's inbox object indexes/domains/{domain}.usv,
merged with what is there (the latest updated_at wins), exactly as a worker
would. Many records go as batch objects indexes/domains/batches/{hh}/…usv,
one per shard, each written once (--batch). Either way compaction merges
them, the latest updated_at winning. updated_at defaults to now. Domains are
normalized to registered domains (lower case, punycode). A record that
cannot be written is reported and the rest proceed; the exit status is 1 if
any was rejected.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("%w: give field=value pairs or files", errUsage)
	}
	if *batch != "on" && *batch != "off" && *batch != "auto" {
		return fmt.Errorf("%w: --batch %q: want on, off or auto", errUsage, *batch)
	}
	log, err := newLogger(stderr, "warn")
	if err != nil {
		return err
	}
	var tables []compiler.Table
	files := !strings.Contains(fs.Arg(0), "=")
	if files && *batch != "off" {
		// files land as batch objects one file at a time: a file's parsed
		// records are held, never every file's grouped by domain (a file
		// of 1M records took 1.2 GB that way)
		for _, f := range fs.Args() {
			if _, err := os.Stat(f); err != nil && f != "-" {
				return err
			}
		}
	} else if !files {
		t, err := recordFromPairs(fs.Args())
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		tables = append(tables, t)
	} else {
		for _, f := range fs.Args() {
			t, err := readRecordsFile(f)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			tables = append(tables, t)
		}
	}
	st, err := sf.open(ctx, log, "put", stderr)
	if err != nil {
		return err
	}
	pkg, err := records.LoadPackage(ctx, st)
	if err != nil {
		return err
	}
	cfg, err := records.CompilerConfig(pkg)
	if err != nil {
		return err
	}
	cfg.Parallel = *parallel
	c, err := compiler.New(st, cfg, log)
	if err != nil {
		return err
	}
	if files && *batch != "off" {
		return putFilesBatched(ctx, c, fs.Args(), stdout, stderr)
	}
	useBatches := *batch == "on" || *batch == "auto" && countRows(tables) > 1
	byDomain, rejected := groupByDomain(tables, stderr)
	if useBatches {
		rep, err := writeBatches(ctx, c, byDomain)
		for _, e := range rep.Errors {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintf(stdout, "records %d, landed %d in %d batch objects, rejected %d\n", countRows(tables), rep.Landed, rep.Objects, rejected+rep.Failed)
		if err != nil {
			return err
		}
		if rejected+rep.Failed > 0 {
			return fmt.Errorf("%d records rejected", rejected+rep.Failed)
		}
		return nil
	}
	written, failed := writeInbox(ctx, c, byDomain, *parallel, stderr)
	fmt.Fprintf(stdout, "records %d, domains written %d, rejected %d\n", countRows(tables), written, rejected+failed)
	if rejected+failed > 0 {
		return fmt.Errorf("%d records rejected", rejected+failed)
	}
	return nil
}

func recordFromPairs(pairs []string) (compiler.Table, error) {
	var t compiler.Table
	var row []string
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return t, fmt.Errorf("%q is not field=value", p)
		}
		t.Header = append(t.Header, k)
		row = append(row, v)
	}
	t.Rows = [][]string{row}
	return withUpdatedAt(t), nil
}

// withUpdatedAt adds updated_at = now to records that lack the field.
func withUpdatedAt(t compiler.Table) compiler.Table {
	for _, h := range t.Header {
		if h == compiler.UpdatedAtField {
			return t
		}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	t.Header = append(t.Header, compiler.UpdatedAtField)
	for i := range t.Rows {
		t.Rows[i] = append(t.Rows[i], now)
	}
	return t
}

func readRecordsFile(path string) (compiler.Table, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return compiler.Table{}, err
		}
		defer f.Close()
		r = f
	}
	var t compiler.Table
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".usv", "":
		// both USV forms, as the compiler reads inbox objects
		b, err := io.ReadAll(r)
		if err != nil {
			return t, err
		}
		if t, err = compiler.ParseTable(b); err != nil {
			return t, err
		}
	case ".csv", ".tsv":
		cr := csv.NewReader(r)
		if ext == ".tsv" {
			cr.Comma = '\t'
		}
		recs, err := cr.ReadAll()
		if err != nil {
			return t, err
		}
		if len(recs) == 0 {
			return t, fmt.Errorf("no header line")
		}
		t = compiler.Table{Header: recs[0], Rows: recs[1:]}
	case ".jsonl", ".ndjson":
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		var objs []map[string]any
		cols := map[string]bool{}
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				return t, fmt.Errorf("line %d: %w", n, err)
			}
			for k := range m {
				cols[k] = true
			}
			objs = append(objs, m)
		}
		if err := sc.Err(); err != nil {
			return t, err
		}
		for k := range cols {
			t.Header = append(t.Header, k)
		}
		sort.Strings(t.Header)
		for _, m := range objs {
			row := make([]string, len(t.Header))
			for i, k := range t.Header {
				switch v := m[k].(type) {
				case nil:
				case string:
					row[i] = v
				default:
					b, _ := json.Marshal(v)
					row[i] = string(b)
				}
			}
			t.Rows = append(t.Rows, row)
		}
	default:
		return t, fmt.Errorf("unknown file type %q: want .usv, .csv, .tsv or .jsonl", ext)
	}
	return withUpdatedAt(t), nil
}

func countRows(ts []compiler.Table) int {
	n := 0
	for _, t := range ts {
		n += len(t.Rows)
	}
	return n
}

// putFilesBatched lands each file's records as batch objects, a file at a
// time, and reports as put does.
func putFilesBatched(ctx context.Context, c *compiler.Compiler, files []string, stdout, stderr io.Writer) error {
	var total compiler.BatchReport
	records, rejected := 0, 0
	var firstErr error
	for _, f := range files {
		t, err := readRecordsFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", f, err)
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", f, err)
			}
			continue
		}
		records += len(t.Rows)
		ok, bad := normalizeKeys(t, stderr)
		rejected += bad
		{
			rep, err := c.WriteBatch(ctx, ok) // one batch object per shard
			total.Landed += rep.Landed
			total.Objects += rep.Objects
			total.Failed += rep.Failed
			total.Errors = append(total.Errors, rep.Errors...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	c.FlushSignals()
	for _, e := range total.Errors {
		fmt.Fprintln(stderr, e)
	}
	fmt.Fprintf(stdout, "records %d, landed %d in %d batch objects, rejected %d\n", records, total.Landed, total.Objects, rejected+total.Failed)
	if firstErr != nil {
		return firstErr
	}
	if rejected+total.Failed > 0 {
		return fmt.Errorf("%d records rejected", rejected+total.Failed)
	}
	return nil
}

// normalizeKeys returns t's records with their domain keys normalized
// (compiler.NormalizeDomain, the record rule's K1), and how many it
// rejected (each named on stderr).
func normalizeKeys(t compiler.Table, stderr io.Writer) (compiler.Table, int) {
	out := compiler.Table{Header: t.Header}
	di := slices.Index(t.Header, compiler.DomainField)
	rejected := 0
	for n, row := range t.Rows {
		if di < 0 || len(row) != len(t.Header) {
			fmt.Fprintf(stderr, "record %d: no domain field or wrong number of fields\n", n+1)
			rejected++
			continue
		}
		// the record rule's K1 (compiler/rule.go): one spelling per
		// registered domain (lower case, punycode, no root dot), as the
		// URL index writes it
		d, err := compiler.NormalizeDomain(row[di])
		if err != nil {
			fmt.Fprintf(stderr, "record %d: %v\n", n+1, err)
			rejected++
			continue
		}
		row[di] = d
		out.Rows = append(out.Rows, row)
	}
	return out, rejected
}

func groupByDomain(tables []compiler.Table, stderr io.Writer) (map[string]compiler.Table, int) {
	out := map[string]compiler.Table{}
	rejected := 0
	for _, t := range tables {
		ok, bad := normalizeKeys(t, stderr)
		rejected += bad
		di := slices.Index(ok.Header, compiler.DomainField)
		for _, row := range ok.Rows {
			d := row[di]
			g := out[d]
			if g.Header == nil {
				g.Header = t.Header
			}
			if strings.Join(g.Header, "\x00") != strings.Join(t.Header, "\x00") {
				// records of one domain from files with other headers go separately
				key := d + "\x00" + strings.Join(t.Header, "\x00")
				h := out[key]
				h.Header = t.Header
				h.Rows = append(h.Rows, row)
				out[key] = h
				continue
			}
			g.Rows = append(g.Rows, row)
			out[d] = g
		}
	}
	return out, rejected
}

// writeBatches lands the records as batch objects, one WriteBatch per
// distinct header.
func writeBatches(ctx context.Context, c *compiler.Compiler, byDomain map[string]compiler.Table) (compiler.BatchReport, error) {
	byHeader := map[string]*compiler.Table{}
	var order []string
	for _, t := range byDomain {
		h := strings.Join(t.Header, "\x00")
		if byHeader[h] == nil {
			byHeader[h] = &compiler.Table{Header: t.Header}
			order = append(order, h)
		}
		byHeader[h].Rows = append(byHeader[h].Rows, t.Rows...)
	}
	sort.Strings(order)
	var total compiler.BatchReport
	for _, h := range order {
		rep, err := c.WriteBatch(ctx, *byHeader[h])
		total.Landed += rep.Landed
		total.Objects += rep.Objects
		total.Failed += rep.Failed
		total.Errors = append(total.Errors, rep.Errors...)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func writeInbox(ctx context.Context, c *compiler.Compiler, byDomain map[string]compiler.Table, parallelism int, stderr io.Writer) (written, failed int) {
	keys := make([]string, 0, len(byDomain))
	for key := range byDomain {
		keys = append(keys, key)
	}
	var mu sync.Mutex
	parallel.ForEach(len(keys), parallelism, func(i int) {
		t := byDomain[keys[i]]
		domain, _, _ := strings.Cut(keys[i], "\x00")
		err := c.WriteInbox(ctx, domain, t)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", domain, err)
			failed += len(t.Rows)
			return
		}
		written++
	})
	return written, failed
}
