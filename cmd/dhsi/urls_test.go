package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store/localfs"
)

// TestIngestWhileServing: an ingest beside a running server is picked up
// without a restart, and the SQL surface answers from the new version.
func TestIngestWhileServing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := connect(t, startServe(t, "--store", dir, "--refresh-interval", "200ms"))
	if got := one[int64](t, c, "SELECT count(*) FROM datasets"); got != 0 {
		t.Fatalf("a new store has %d datasets", got)
	}
	list := filepath.Join("..", "..", "testdata", "shared", "urls", "pywb_sample_archive.txt")
	if code := run(ctx, []string{"ingest", "--store", dir, "--dataset", "pywb", list}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("dhsi ingest exit %d", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for one[int64](t, c, "SELECT count(*) FROM datasets") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the server never picked up the ingested version")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var id int32
	var name string
	var n int64
	if err := c.QueryRow(ctx, "SELECT dataset_id, dataset, url_count FROM domain_datasets('https://www.iana.org/')").Scan(&id, &name, &n); err != nil || name != "pywb" || n != 48 {
		t.Fatalf("domain_datasets: %d %q %d %v", id, name, n, err)
	}
	// prepared with parameters, as pgx sends it by default
	rows, err := c.Query(ctx, "SELECT * FROM domain_datasets($1)", "iana.org")
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for rows.Next() {
		got, _ = rows.Values()
	}
	if rows.Err() != nil || len(got) != 3 || got[1] != "pywb" {
		t.Fatalf("prepared domain_datasets($1): %v %v", got, rows.Err())
	}
	var urlCount int
	rows, err = c.Query(ctx, "SELECT url FROM domain_urls($1, $2, $3, $4)", "iana.org", 1, 10, 20)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		urlCount++
	}
	if rows.Err() != nil || urlCount != 20 {
		t.Fatalf("prepared domain_urls page: %d rows, %v", urlCount, rows.Err())
	}
	if got := one[int64](t, c, "SELECT count(*) FROM domain_urls('iana.org', 1, 0, 1000)"); got != 48 {
		t.Fatalf("domain_urls listed %d URLs, want 48", got)
	}
	// the native hot path (SELECT * or a column list FROM f($n)) answers
	// exactly like the DuckDB path (any other shape, e.g. with a WHERE), in
	// text and binary
	for _, q := range [][2]string{
		{"SELECT * FROM domain_datasets($1)", "SELECT dataset_id, dataset, url_count FROM domain_datasets($1) WHERE true"},
		{"SELECT * FROM domain_urls($1, 1, 3, 25)", "SELECT url_id, url, ts FROM domain_urls($1, 1, 3, 25) WHERE true"},
		{"SELECT url, url_id AS id FROM domain_urls($1, 1, 0, 1000)", "SELECT url, url_id AS id FROM domain_urls($1, 1, 0, 1000) WHERE true"},
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
			nat, duck := allRows(t, c, mode, q[0], "iana.org"), allRows(t, c, mode, q[1], "iana.org")
			if len(nat) == 0 || fmt.Sprint(nat) != fmt.Sprint(duck) {
				t.Fatalf("%s (mode %v):\nnative %v\nduckdb %v", q[0], mode, nat, duck)
			}
		}
	}
	// a NULL argument would abort DuckDB inside duckdb-go's bind: refused,
	// whether a literal, a parameter or an expression DuckDB folds to NULL
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"SELECT * FROM domain_datasets(NULL)", nil},
		{"SELECT * FROM domain_datasets($1)", []any{nil}},
		{"SELECT * FROM domain_datasets(CAST(NULL AS VARCHAR))", nil},
		{"SELECT url FROM domain_urls(nullif('iana.org', 'iana.org'), 1, 0, 10) WHERE true", nil},
		{"SELECT * FROM domain_urls('iana.org', 1, 0, CAST(NULL AS BIGINT))", nil},
		{"SELECT * FROM domain_urls('iana.org', CASE WHEN $1 THEN 1 END, 0, 10)", []any{false}},
		// a quoted name, and a $n bound into COPY (...) TO STDOUT, which
		// aborted the server past checks of the outer statement only
		{`SELECT * FROM "Domain_Datasets"($1)`, []any{nil}},
		{"COPY (SELECT * FROM domain_datasets($1)) TO STDOUT", []any{nil}},
	} {
		_, err := c.Exec(ctx, q.sql, q.args...)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22004" {
			t.Fatalf("%s with NULL: %v, want SQLSTATE 22004", q.sql, err)
		}
	}
	// and a $n bound into a cursor's query
	if tx, err := c.Begin(ctx); err != nil {
		t.Fatal(err)
	} else {
		_, err := tx.Exec(ctx, "DECLARE cur CURSOR FOR SELECT * FROM domain_urls($1, 1, 0, 10)", nil)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22004" {
			t.Fatalf("DECLARE with a NULL $1: %v, want SQLSTATE 22004", err)
		}
		tx.Rollback(ctx)
	}
	// and an expression that is not NULL is the value it folds to
	if got := one[int64](t, c, "SELECT count(*) FROM domain_urls(lower('IANA.org'), 1, 0, 1000)"); got != 48 {
		t.Fatalf("domain_urls(lower(...)) listed %d URLs, want 48", got)
	}
	// the SQL equivalent of dhsi ingest, with server-side files
	cdx, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "shared", "cdx", "pywb-iana.cdxj"))
	var version string
	var written int64
	if err := c.QueryRow(ctx, "SELECT version, written FROM ingest('pywb-cdxj', '"+cdx+"')").Scan(&version, &written); err != nil || written == 0 {
		t.Fatalf("CALL ingest: %q %d %v", version, written, err)
	}
	if got := one[int64](t, c, "SELECT count(*) FROM datasets"); got != 2 {
		t.Fatalf("after CALL ingest the server lists %d datasets, want 2 at once", got)
	}
	if got := one[int64](t, c, "SELECT count(*) FROM urls WHERE domain = 'iana.org' AND dataset_id = 1"); got != 48 {
		t.Fatalf("the urls view has %d rows for iana.org, want 48", got)
	}
}

func allRows(t *testing.T, c *pgx.Conn, mode pgx.QueryExecMode, sql string, args ...any) [][]any {
	t.Helper()
	rows, err := c.Query(context.Background(), sql, append([]any{mode}, args...)...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if rows.Err() != nil {
		t.Fatalf("%s: %v", sql, rows.Err())
	}
	return out
}

// TestIngestDatasetPerFile loads several lists as one version, each its own
// dataset named after its file, and checks the index answers exactly like
// one ingest per list.
func TestIngestDatasetPerFile(t *testing.T) {
	ctx := context.Background()
	var lists []string
	for _, n := range []string{"pywb_sample_archive.txt", "ada_userbait.txt", "cdx_toolkit_api_mocks.txt"} {
		lists = append(lists, filepath.Join("..", "..", "testdata", "shared", "urls", n))
	}
	one, each := t.TempDir(), t.TempDir()
	var out strings.Builder
	if code := run(ctx, append([]string{"ingest", "--store", one, "--dataset-per-file"}, lists...), &out, io.Discard); code != 0 {
		t.Fatalf("dhsi ingest --dataset-per-file exit %d", code)
	}
	if got := strings.Count(out.String(), "published version"); got != 3 {
		t.Fatalf("want a summary per dataset, got:\n%s", out.String())
	}
	for _, l := range lists {
		if code := run(ctx, []string{"ingest", "--store", each, "--dataset", datasetNameOf(l), l}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("dhsi ingest %s exit %d", l, code)
		}
	}
	a, b := connect(t, startServe(t, "--store", one)), connect(t, startServe(t, "--store", each))
	for _, q := range []string{
		"SELECT dataset_id, dataset, urls, domains, files FROM datasets ORDER BY dataset_id",
		"SELECT domain, count(*) FROM urls GROUP BY ALL ORDER BY ALL",
		"SELECT * FROM domain_datasets('iana.org')",
		"SELECT url FROM domain_urls('iana.org', 1, 0, 1000)",
	} {
		if x, y := allRows(t, a, pgx.QueryExecModeSimpleProtocol, q), allRows(t, b, pgx.QueryExecModeSimpleProtocol, q); fmt.Sprint(x) != fmt.Sprint(y) || len(x) == 0 {
			t.Fatalf("%s:\none version: %v\nper dataset: %v", q, x, y)
		}
	}
	// an already ingested file is skipped, and a run with nothing new fails
	if code := run(ctx, append([]string{"ingest", "--store", one, "--dataset-per-file"}, lists...), io.Discard, io.Discard); code == 0 {
		t.Fatal("ingesting the same files again succeeded")
	}
}

// TestURLsViewOnOlderStore: the urls view reads a store written before
// lake files stored the domain as an offset into the URL (its files have a
// domain column and no domain_offset), and agrees with domain_datasets.
func TestURLsViewOnOlderStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "ingest", "testdata", "legacy-v2", "store"))); err != nil {
		t.Fatal(err)
	}
	c := connect(t, startServe(t, "--store", dir))
	if n := one[int64](t, c, "SELECT count(*) FROM urls WHERE domain IS NULL OR domain = ''"); n != 0 {
		t.Fatalf("%d rows of the urls view have no domain", n)
	}
	var domain string
	var n int64
	if err := c.QueryRow(ctx, "SELECT domain, count(*) FROM urls GROUP BY domain ORDER BY 2 DESC, 1 LIMIT 1").Scan(&domain, &n); err != nil {
		t.Fatal(err)
	}
	if want := one[int64](t, c, fmt.Sprintf("SELECT sum(url_count)::BIGINT FROM domain_datasets('%s')", domain)); n != want || n == 0 {
		t.Fatalf("urls view counts %d URLs of %s, domain_datasets %d", n, domain, want)
	}
}

// TestVersionNamesGrowPastGC: version names grow strictly for the life of
// a store, whatever gc removed (manifest M7; issue 17 §5).
func TestVersionNamesGrowPastGC(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := localfs.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < 6; i++ {
		f := filepath.Join(dir, fmt.Sprintf("l%d.txt", i))
		if err := os.WriteFile(f, []byte(fmt.Sprintf("https://v%d.example/\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code := run(ctx, []string{"ingest", "--store", filepath.Join(dir, "store"), "--dataset", "d", "--keep", "2", f}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("ingest %d: exit %d", i, code)
		}
		m, err := catalog.ReadManifest(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.CurrentVersion)
		if i == 2 {
			if code := run(ctx, []string{"gc", "--store", filepath.Join(dir, "store"), "--keep", "1", "--grace", "0s"}, io.Discard, io.Discard); code != 0 {
				t.Fatalf("gc: exit %d", code)
			}
		}
	}
	for i := 1; i < len(names); i++ {
		if names[i] <= names[i-1] {
			t.Fatalf("version %d %q does not sort after version %d %q (all: %v)", i, names[i], i-1, names[i-1], names)
		}
	}
}

// TestGCRemovesWhatCrashesLeave: staged puts and ingest scratch directories
// older than the grace period go; younger ones stay (issue 18 §4).
func TestGCRemovesWhatCrashesLeave(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if _, err := localfs.Open(filepath.Join(dir, "store")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	stalePut := filepath.Join(dir, "store", ".dhsi-tmp", "put-123")
	freshPut := filepath.Join(dir, "store", ".dhsi-tmp", "put-456")
	staleScratch := filepath.Join(tmp, "dhsi-ingest-1")
	freshScratch := filepath.Join(tmp, "dhsi-ingest-2")
	for _, d := range []string{staleScratch, freshScratch} {
		if err := os.MkdirAll(filepath.Join(d, "batch-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "batch-1", "part.parquet"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{stalePut, freshPut} {
		if err := os.WriteFile(f, []byte("half a put"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{stalePut, staleScratch, filepath.Join(staleScratch, "batch-1"), filepath.Join(staleScratch, "batch-1", "part.parquet")} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	if code := run(ctx, []string{"gc", "--store", filepath.Join(dir, "store"), "--dry-run"}, &out, io.Discard); code != 0 {
		t.Fatalf("gc --dry-run: exit %d", code)
	}
	if !strings.Contains(out.String(), "would delete 1 staged puts") || !strings.Contains(out.String(), "would delete 1 ingest scratch") {
		t.Errorf("gc --dry-run says %q", out.String())
	}
	if _, err := os.Stat(stalePut); err != nil {
		t.Error("gc --dry-run removed a staged put")
	}
	out.Reset()
	if code := run(ctx, []string{"gc", "--store", filepath.Join(dir, "store")}, &out, io.Discard); code != 0 {
		t.Fatalf("gc: exit %d", code)
	}
	for p, want := range map[string]bool{stalePut: false, freshPut: true, staleScratch: false, freshScratch: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("after gc, %s exists = %v, want %v (gc said %q)", p, err == nil, want, out.String())
		}
	}
}

// TestInputsThatAreNotWhatTheyClaim: an empty input publishes nothing
// unless asked; a UTF-8 byte-order mark is dropped; UTF-16 with a BOM is
// decoded; a binary file is refused by name (issue 17 §7).
func TestInputsThatAreNotWhatTheyClaim(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	st, err := localfs.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	current := func() string {
		m, err := catalog.ReadManifest(ctx, st)
		if err != nil {
			return ""
		}
		return m.CurrentVersion
	}
	ingestFile := func(dataset, file string, extra ...string) (int, string) {
		var errb strings.Builder
		code := run(ctx, append(append([]string{"ingest", "--store", storeDir, "--dataset", dataset}, extra...), file), io.Discard, &errb)
		return code, errb.String()
	}
	empty := write("empty.txt", nil)
	if code, msg := ingestFile("empty", empty); code != 1 || !strings.Contains(msg, "yielded no URL") || current() != "" {
		t.Errorf("an empty input: exit %d, %q, version %q", code, msg, current())
	}
	if code, msg := ingestFile("empty", empty, "--allow-empty"); code != 0 || current() == "" {
		t.Errorf("an empty input with --allow-empty: exit %d, %q", code, msg)
	}
	utf16 := []byte{0xFF, 0xFE}
	for _, r := range "https://utf16.example/a\nhttps://utf16.example/b\n" {
		utf16 = append(utf16, byte(r), 0)
	}
	binary := append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00"), make([]byte, 64)...)
	for _, c := range []struct {
		name string
		body []byte
		urls int64
		says string
	}{
		{"bom.txt", []byte("\xEF\xBB\xBFhttps://bom.example/a\nhttps://bom.example/b\n"), 2, ""},
		{"utf16.txt", utf16, 2, ""},
		{"ls.txt", binary, 0, "is not text: it has a NUL byte"},
	} {
		code, msg := ingestFile(strings.TrimSuffix(c.name, ".txt"), write(c.name, c.body))
		if c.says != "" {
			if code != 1 || !strings.Contains(msg, c.says) {
				t.Errorf("%s: exit %d, %q, want a refusal saying %q", c.name, code, msg, c.says)
			}
			continue
		}
		if code != 0 {
			t.Errorf("%s: exit %d, %q", c.name, code, msg)
		}
	}
	c := connect(t, startServe(t, "--store", storeDir))
	for domain, want := range map[string]int64{"bom.example": 2, "utf16.example": 2} {
		if got := one[int64](t, c, "SELECT coalesce(sum(url_count), 0)::BIGINT FROM domain_datasets('"+domain+"')"); got != want {
			t.Errorf("%s: %d URLs, want %d", domain, got, want)
		}
	}
	if got := one[int64](t, c, "SELECT count(*) FROM datasets WHERE dataset = 'ls'"); got != 0 {
		t.Error("the binary input created a dataset")
	}
}
