package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	pqfile "github.com/apache/arrow-go/v18/parquet/file"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/udf"
	"github.com/dhsi/dhsi/urlnorm"
)

// writeTo is a finish callback that writes each file under dir the way the
// store lays it out, recording its path in paths.
func writeTo(dir string, paths map[string]string) func(*lakeFile) error {
	var mu sync.Mutex
	return func(f *lakeFile) error {
		d := filepath.Join(dir, "domain_prefix="+f.Prefix)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		p := filepath.Join(d, f.Name)
		mu.Lock()
		paths[f.Prefix] = p
		mu.Unlock()
		return os.WriteFile(p, f.Data, 0o644)
	}
}

// testLake returns a lake writer over a temporary work directory.
func testLake(t *testing.T) (*lakeWriter, string) {
	dir := t.TempDir()
	w := newLakeWriter(dir, nil, 0)
	t.Cleanup(w.close)
	return w, dir
}

func TestLakeWriter(t *testing.T) {
	ctx := context.Background()
	w, dir := testLake(t)
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	// 3 domains in two prefixes; big.example spans several row groups and
	// arrives in reverse order
	for i := 4999; i >= 0; i-- {
		u := fmt.Sprintf("https://big.example/p/%05d", i)
		w.add("big.example", "aa", u, u, ts)
	}
	w.add("small.example", "aa", "https://small.example/", "HTTPS://small.example", ts)
	w.add("small.example", "aa", "https://small.example/", "https://SMALL.example", ts.Add(time.Hour)) // duplicate: latest ts, first raw
	w.add("other.example", "bb", "https://other.example/x", "https://other.example/x", time.Time{})
	paths := map[string]string{}
	files, cols, written, err := w.finish(ctx, "part-v1.parquet", layout{RowGroupRows: 2048, PrefixWidth: 2}, writeTo(filepath.Join(dir, "out"), paths))
	if err != nil {
		t.Fatal(err)
	}
	if written != 5002 || len(cols) != 0 || len(files) != 2 {
		t.Fatalf("written %d, collisions %v, files %d", written, cols, len(files))
	}
	aa := files[0]
	if aa.Prefix != "aa" || aa.Rows != 5001 || aa.RowGroups != 3 {
		t.Fatalf("file aa: %+v rows=%d groups=%d", aa.Name, aa.Rows, aa.RowGroups)
	}
	total := 0
	last := -1
	aaSpans := spansByDomain(w, aa)
	for _, s := range aaSpans["big.example"] {
		total += int(s.Rows)
		if int(s.RowGroup) <= last {
			t.Fatalf("spans not in row-group order: %+v", aaSpans["big.example"])
		}
		last = int(s.RowGroup)
	}
	if total != 5000 || len(aaSpans["small.example"]) != 1 || aaSpans["small.example"][0] != (groupRows{RowGroup: 2, Rows: 1, First: 5000 - 2*2048}) {
		t.Fatalf("spans: big=%d small=%+v", total, aaSpans["small.example"])
	}

	// DuckDB reads the files as the urls view does, sorted (L1), deduplicated
	// (L2), and with the row groups the spans say (L3)
	db := lakeDB(t)
	glob := filepath.Join(dir, "out", "*", "*.parquet")
	var n, sorted int64
	if err := db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE prev IS NULL OR (domain, url) > prev) FROM (
		SELECT domain, url, lag((domain, url)) OVER (PARTITION BY domain_prefix ORDER BY file_row_number) AS prev
		FROM `+lakeRowsSQL+`)`, glob).Scan(&n, &sorted); err != nil {
		t.Fatal(err)
	}
	if n != 5002 || sorted != n {
		t.Fatalf("duckdb reads %d rows, %d in order", n, sorted)
	}
	var raw string
	var got time.Time
	if err := db.QueryRow(`SELECT raw, ts FROM `+lakeRowsSQL+` WHERE domain = 'small.example'`, glob).Scan(&raw, &got); err != nil {
		t.Fatal(err)
	}
	if raw != "HTTPS://small.example" || !got.Equal(ts.Add(time.Hour)) {
		t.Fatalf("merged duplicate: raw %q ts %v", raw, got)
	}
	var groups int64
	if err := db.QueryRow(`SELECT count(DISTINCT row_group_id) FROM parquet_metadata(?)`, paths["aa"]).Scan(&groups); err != nil || groups != 3 {
		t.Fatalf("row groups %d %v", groups, err)
	}
	var layout string
	if err := db.QueryRow(`SELECT decode(value) FROM parquet_kv_metadata(?) WHERE decode(key) = ?`, paths["aa"], catalog.LakeLayoutKey).Scan(&layout); err != nil || layout != fmt.Sprint(catalog.LakeLayout) {
		t.Fatalf("the file's %s is %q (%v), want %d", catalog.LakeLayoutKey, layout, err, catalog.LakeLayout)
	}
}

// lakeRowsSQL reads lake files (the parameter) of the current layout with
// each row's domain, raw URL and timestamp.
const lakeRowsSQL = "(SELECT * EXCLUDE (domain, raw_edit, ts, ts_seconds), " + LakeDomainSQL + " AS domain, lake_raw(url, raw_edit) AS raw, " + LakeTSSQL + " AS ts FROM read_parquet(?, hive_partitioning = true, file_row_number = true))"

// lakeDB opens DuckDB with DHSI's URL functions, as the server's: lake_raw
// rebuilds raw URLs from raw_edit (L5).
func lakeDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	norm, err := urlnorm.NewNormalizer(urlnorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := udf.RegisterURLFuncs(t.Context(), db, norm); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestLakeWriterReportsForcedCollisions(t *testing.T) {
	defer func(f func(string) uint64) { urlIDOf = f }(urlIDOf)
	urlIDOf = func(s string) uint64 { return uint64(len(s)) } // every URL of one length collides
	ctx := context.Background()
	w, dir := testLake(t)
	w.add("a.example", "aa", "https://a.example/1", "https://a.example/1", time.Time{})
	w.add("b.example", "bb", "https://b.example/2", "https://b.example/2", time.Time{})
	w.add("b.example", "bb", "https://b.example/2", "https://b.example/2", time.Time{}) // same URL: not a collision
	w.add("c.example", "cc", "https://c.example/long", "https://c.example/long", time.Time{})
	_, cols, written, err := w.finish(ctx, "part-v1.parquet", layout{}, writeTo(filepath.Join(dir, "out"), map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if written != 3 || len(cols) != 1 || cols[0].A != "https://a.example/1" || cols[0].B != "https://b.example/2" {
		t.Fatalf("written %d, collisions %+v", written, cols)
	}
}

// TestLakeWriterSpills stages rows past a tiny memory budget, so they are
// spilled to files and read back with the rows still buffered: the same
// Parquet as a batch that never spilled.
func TestLakeWriterSpills(t *testing.T) {
	ctx := context.Background()
	write := func(budget int64) ([]lakeFile, map[string][]byte) {
		w, _ := testLake(t)
		w.memBudget = budget
		for i := 0; i < 3000; i++ {
			u := fmt.Sprintf("https://d%d.example/p/%d", i%7, i)
			if err := w.add(fmt.Sprintf("d%d.example", i%7), fmt.Sprintf("%02x", i%3), u, u, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		data := map[string][]byte{}
		var mu sync.Mutex
		files, _, written, err := w.finish(ctx, "part-v1.parquet", layout{PrefixWidth: 2}, func(f *lakeFile) error {
			mu.Lock()
			data[f.Prefix] = append([]byte(nil), f.Data...)
			mu.Unlock()
			return nil
		})
		if err != nil || written != 3000 {
			t.Fatalf("budget %d: written %d, %v", budget, written, err)
		}
		if budget < 1000 && w.buckets["00"].f == nil {
			t.Fatalf("budget %d: nothing was spilled", budget)
		}
		return files, data
	}
	_, inMemory := write(defaultStageBudget)
	_, spilled := write(500)
	for p, b := range inMemory {
		if string(spilled[p]) != string(b) {
			t.Errorf("prefix %s: the spilled batch wrote different Parquet", p)
		}
	}
}

// TestLakeWriterPrefixWidth: a small batch goes to one file per first hex
// digit, each file sorted across the two-digit buckets it merges (L1), with
// spans for every domain (L3); a batch that fills a row group per prefix
// keeps two digits.
func TestLakeWriterPrefixWidth(t *testing.T) {
	if PrefixWidth(256*2048-1, 2048) != 1 || PrefixWidth(256*2048, 2048) != 2 || PrefixWidth(10, 0) != 1 {
		t.Fatal("PrefixWidth thresholds")
	}
	ctx := context.Background()
	w, dir := testLake(t)
	// domains named so that bucket order differs from domain order
	add := func(domain, prefix string, n int) {
		for i := 0; i < n; i++ {
			u := fmt.Sprintf("https://%s/%d", domain, i)
			if err := w.add(domain, prefix, u, u, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("z.example", "a0", 3)
	add("m.example", "a7", 2)
	add("b.example", "af", 4)
	add("c.example", "3c", 1)
	paths := map[string]string{}
	files, _, written, err := w.finish(ctx, "part-v1.parquet", layout{RowGroupRows: 4}, writeTo(filepath.Join(dir, "out"), paths))
	if err != nil || written != 10 || len(files) != 2 {
		t.Fatalf("written %d, files %d, %v", written, len(files), err)
	}
	if files[0].Prefix != "3" || files[1].Prefix != "a" || files[1].Rows != 9 || files[1].RowGroups != 3 {
		t.Fatalf("files: %+v %+v", files[0], files[1])
	}
	// b (4 rows: group 0), m (2: group 1 from row 0), z (3: group 1 from
	// row 2, then group 2)
	sp := spansByDomain(w, files[1])
	if len(sp["b.example"]) != 1 || sp["b.example"][0] != (groupRows{0, 4, 0}) ||
		len(sp["m.example"]) != 1 || sp["m.example"][0] != (groupRows{1, 2, 0}) ||
		len(sp["z.example"]) != 2 || sp["z.example"][0] != (groupRows{1, 2, 2}) || sp["z.example"][1] != (groupRows{2, 1, 0}) {
		t.Fatalf("spans %+v", sp)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var order string
	if err := db.QueryRow(`SELECT string_agg(`+LakeDomainSQL+`, ',' ORDER BY file_row_number) FROM read_parquet(?, file_row_number = true)`, paths["a"]).Scan(&order); err != nil {
		t.Fatal(err)
	}
	if want := "b.example,b.example,b.example,b.example,m.example,m.example,z.example,z.example,z.example"; order != want {
		t.Fatalf("file a rows in order %s", order)
	}
	if _, _, _, err := w.finish(ctx, "part-v2.parquet", layout{RowGroupRows: 4, PrefixWidth: 3}, writeTo(filepath.Join(dir, "out2"), paths)); err == nil {
		t.Fatal("width 3 was accepted")
	}
}

// TestLakeFilesWithManyPages guards the Parquet writer and reader we
// depend on: with many pages per column chunk (front-coded URLs, raw_edit
// and delta-coded ts_seconds columns null on whole pages), DuckDB reads
// every row as written, and so does a seek to any row. arrow-go before v18.8.0 carried the front-coding
// prefix across pages: its own reader agreed, DuckDB called the file
// corrupt, and a seek to a later page panicked.
func TestLakeFilesWithManyPages(t *testing.T) {
	w, dir := testLake(t)
	want := func(i int) (url, raw string) {
		url = fmt.Sprintf("https://d%03d.example/p/%04d", i/10, i)
		if i >= 300 && i < 400 && i%3 == 0 { // raw only on a few pages
			return url, strings.ToUpper(url)
		}
		return url, ""
	}
	wantTS := func(i int) time.Time {
		if i >= 500 && i < 600 && i%2 == 0 { // ts only on a few pages
			return time.Unix(1721000000+int64(i)*7919, 0).UTC()
		}
		return time.Time{}
	}
	for i := 0; i < 1000; i++ {
		u, raw := want(i)
		if raw == "" {
			raw = u
		}
		if err := w.add(fmt.Sprintf("d%03d.example", i/10), "aa", u, raw, wantTS(i)); err != nil {
			t.Fatal(err)
		}
	}
	paths := map[string]string{}
	if _, _, _, err := w.finish(t.Context(), "part-v1.parquet", layout{RowGroupRows: 2048, PageRows: 64, PrefixWidth: 2}, writeTo(dir, paths)); err != nil {
		t.Fatal(err)
	}
	db := lakeDB(t)
	rows, err := db.Query(`SELECT url, coalesce(lake_raw(url, raw_edit), ''), `+LakeTSSQL+` FROM read_parquet(?, file_row_number = true) ORDER BY file_row_number`, paths["aa"])
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for rows.Next() {
		var u, raw string
		var ts sql.NullTime
		if err := rows.Scan(&u, &raw, &ts); err != nil {
			t.Fatal(err)
		}
		if wu, wr := want(i); u != wu || raw != wr {
			t.Fatalf("DuckDB row %d: %q %q, want %q %q", i, u, raw, wu, wr)
		}
		if wt := wantTS(i); ts.Valid != !wt.IsZero() || ts.Valid && !ts.Time.Equal(wt) {
			t.Fatalf("DuckDB row %d: ts %v, want %v", i, ts, wt)
		}
		i++
	}
	if err := rows.Err(); err != nil || i != 1000 {
		t.Fatalf("DuckDB read %d rows: %v", i, err)
	}
	r, err := pqfile.OpenParquetFile(paths["aa"], false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, row := range []int64{0, 1, 63, 64, 65, 127, 128, 300, 333, 399, 640, 999} {
		cr, err := r.RowGroup(0).Column(r.MetaData().Schema.ColumnIndexByName("url"))
		if err != nil {
			t.Fatal(err)
		}
		br := cr.(*pqfile.ByteArrayColumnChunkReader)
		if err := br.SeekToRow(row); err != nil {
			t.Fatal(err)
		}
		vals := make([]parquet.ByteArray, 1)
		if _, _, err := br.ReadBatch(1, vals, nil, nil); err != nil {
			t.Fatalf("row %d: %v", row, err)
		}
		if wu, _ := want(int(row)); string(vals[0]) != wu {
			t.Fatalf("seek to row %d read %q, want %q", row, vals[0], wu)
		}
	}
	// ts_seconds is delta-coded (DELTA_BINARY_PACKED) and has pages
	// without a value: a seek lands on either kind
	for _, row := range []int64{0, 300, 499, 500, 501, 502, 563, 598, 599, 640, 999} {
		cr, err := r.RowGroup(0).Column(r.MetaData().Schema.ColumnIndexByName("ts_seconds"))
		if err != nil {
			t.Fatal(err)
		}
		ir := cr.(*pqfile.Int64ColumnChunkReader)
		if err := ir.SeekToRow(row); err != nil {
			t.Fatalf("ts_seconds row %d: %v", row, err)
		}
		vals, defs := make([]int64, 1), make([]int16, 1)
		if _, nv, err := ir.ReadBatch(1, vals, defs, nil); err != nil {
			t.Fatalf("ts_seconds row %d: %v", row, err)
		} else if wt := wantTS(int(row)); (nv == 1) != !wt.IsZero() || nv == 1 && vals[0] != wt.Unix() {
			t.Fatalf("seek to ts_seconds row %d read %d values %v, want %v", row, nv, vals, wt)
		}
		cr.Close()
	}
}

// TestLakeDomainRecoveredBySQL: every row's domain, stored as an offset
// into its URL or (where an offset cannot say it) as itself, reads back
// exactly through LakeDomainSQL in DuckDB (L4).
func TestLakeDomainRecoveredBySQL(t *testing.T) {
	w, dir := testLake(t)
	cases := []struct {
		domain, url string
		offset      bool // stored as an offset
	}{
		{"example.com", "https://example.com/", true},
		{"example.com", "https://www.a.example.com/x?y=1", true},
		{"example.com", "http://user:pw@example.com:8080/p", true},
		{"example.co.uk", "https://shop.example.co.uk/", true},
		{"xn--bcher-kva.de", "https://www.xn--bcher-kva.de/", true},
		{"192.0.2.1", "http://192.0.2.1:81/a", true},
		{"[2001:db8::1]", "http://[2001:db8::1]:8080/", true},
		{"xn--bcher-kva.de", "https://b\u00fccher.xn--bcher-kva.de/", false},
		{"example.org", "foo://example.org?q", true},
		{"example.org", "mailto:someone@example.org", false},
		{"example.net", "https://notexample.net/", false},
		{"example.com", "https://example.com", true},
	}
	for i, c := range cases {
		off, ok := domainOffset(c.url, c.domain)
		if ok != c.offset || ok && c.url[off:int(off)+len(c.domain)] != c.domain {
			t.Fatalf("domainOffset(%q, %q) = %d, %v; want stored as offset: %v", c.url, c.domain, off, ok, c.offset)
		}
		if err := w.add(c.domain, "aa", c.url, fmt.Sprintf("%s?raw%d", c.url, i), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	paths := map[string]string{}
	if _, _, _, err := w.finish(t.Context(), "part-v1.parquet", layout{PrefixWidth: 2}, writeTo(dir, paths)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT `+LakeDomainSQL+`, url, domain IS NOT NULL FROM read_parquet(?)`, paths["aa"])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	stored := 0
	for rows.Next() {
		var d, u string
		var isStored bool
		if err := rows.Scan(&d, &u, &isStored); err != nil {
			t.Fatal(err)
		}
		got[u] = d
		if isStored {
			stored++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, c := range cases {
		if got[c.url] != c.domain {
			t.Fatalf("DuckDB reads the domain of %q as %q, want %q", c.url, got[c.url], c.domain)
		}
		if !c.offset {
			want++
		}
	}
	if stored != want {
		t.Fatalf("%d rows store their domain, want %d", stored, want)
	}
}

// spansByDomain is f's spans by domain name, as the lake writer w
// numbered them, each domain's in row order.
func spansByDomain(w *lakeWriter, f lakeFile) map[string][]groupRows {
	names := w.domains.domains()
	m := map[string][]groupRows{}
	for _, s := range f.Spans {
		m[names[s.Domain]] = append(m[names[s.Domain]], s.groupRows)
	}
	return m
}

// dedupe's counting sort by domain and per-domain sort by url give what
// one sort by (domain, url, raw) and a merge of equal keys give.
func TestDedupeMatchesOneSort(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		var s stagedRows
		put := func(v string) strRef {
			if v == "" {
				return 0
			}
			at := len(s.buf)
			s.buf = append(s.buf, v...)
			return strRef(at)<<24 | strRef(len(v))
		}
		n := rnd.IntN(400)
		type row struct {
			domain, url, raw string
			ts               int64
		}
		var in []row
		for range n {
			d := fmt.Sprintf("d%d.com", rnd.IntN(1+trial))
			u := fmt.Sprintf("http://%s/%d", d, rnd.IntN(20))
			raw := ""
			if rnd.IntN(3) == 0 {
				raw = strings.ToUpper(u[:4]) + u[4:]
			}
			in = append(in, row{d, u, raw, rnd.Int64N(5)})
		}
		for _, r := range in {
			s.rows = append(s.rows, lakeRow{domain: put(r.domain), url: put(r.url), raw: put(r.raw), ts: r.ts, hasTS: true})
		}
		s.dedupe()
		// the reference: latest ts per (domain, url), rows in key order
		want := map[[2]string]int64{}
		for _, r := range in {
			k := [2]string{r.domain, r.url}
			if ts, ok := want[k]; !ok || r.ts > ts {
				want[k] = r.ts
			}
		}
		var keys [][2]string
		for k := range want {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [2]string) int {
			if c := strings.Compare(a[0], b[0]); c != 0 {
				return c
			}
			return strings.Compare(a[1], b[1])
		})
		if len(s.rows) != len(keys) {
			t.Fatalf("trial %d: %d rows after dedupe, want %d", trial, len(s.rows), len(keys))
		}
		for i, k := range keys {
			r := s.rows[i]
			if got := [2]string{s.str(r.domain), s.str(r.url)}; got != k || r.ts != want[k] {
				t.Fatalf("trial %d row %d: %v ts %d, want %v ts %d", trial, i, got, r.ts, k, want[k])
			}
		}
	}
}
