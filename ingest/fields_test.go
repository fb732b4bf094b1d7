package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store/localfs"
)

// readFields returns each URL of domain in dataset with its kept fields,
// as "url v1 v2 ...", and the dataset's columns as "name:type ...".
func readFields(t *testing.T, root, dataset, domain string) ([]string, string) {
	t.Helper()
	ctx := context.Background()
	st, err := localfs.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	x, err := catalog.OpenURLIndex(ctx, st, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := x.Current()
	ds, ok := snap.Datasets.ByName(dataset)
	if !ok {
		t.Fatalf("no dataset %s", dataset)
	}
	rows, _, cols, err := snap.DomainURLFields(ctx, domain, ds.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		s := r.URL
		for _, v := range r.Fields {
			s += fmt.Sprintf(" %v", catalog.FieldValue(v))
		}
		out = append(out, s)
	}
	var cs []string
	for _, c := range cols {
		cs = append(cs, c.Name+":"+c.Type)
	}
	return out, strings.Join(cs, " ")
}

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKeepColumns (issue 17 §1): --keep-columns keeps the named columns of
// JSON lines, CSV and Parquet inputs, typed as declared or inferred from
// every value; a duplicate URL keeps its latest capture's fields; a value
// that does not cast rejects its line; a dataset's columns grow with later
// ingests but never change type; an unknown column stops the ingest before
// anything is written.
func TestKeepColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	root := filepath.Join(dir, "store")
	st, err := localfs.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ingest := func(dataset string, keep string, files ...string) (Summary, error) {
		var ks []KeepColumn
		if keep != "" {
			if ks, err = ParseKeepColumns(keep); err != nil {
				return Summary{}, err
			}
		}
		return Run(ctx, Options{Store: st, Dataset: dataset, Files: files, KeepColumns: ks, WorkDir: t.TempDir(), Force: true})
	}

	// an unknown column: nothing written, not even a dataset id
	csv := write(t, dir, "a.csv", "url,lang\nhttps://a.example/1,en\n")
	if _, err := ingest("a", "lang,colour", csv); err == nil || !strings.Contains(err.Error(), `no column "colour"`) {
		t.Fatalf("unknown column: %v", err)
	}
	for _, d := range []string{"datasets", "urls", "index", "ingest"} {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			t.Fatalf("an ingest refused for an unknown column wrote %s/", d)
		}
	}
	for _, bad := range []string{"url", "ts:int64", "Lang", "dhsi_x", "status:string", "n:int128", "-x", "9x", "a.b", `a"b`, "a b"} {
		if _, err := ParseKeepColumns(bad); err == nil {
			t.Errorf("--keep-columns %s is accepted", bad)
		}
	}
	// CDXJ's keys with '-' (Common Crawl's mime-detected) keep their name
	if ks, err := ParseKeepColumns("mime-detected,content-length:int64"); err != nil || len(ks) != 2 || ks[0].Name != "mime-detected" || ks[1] != (KeepColumn{"content-length", "int64"}) {
		t.Errorf("--keep-columns mime-detected,content-length:int64: %v %v", ks, err)
	}

	// JSON lines, inferred: int64, double, bool, timestamp, string; the
	// duplicate keeps the later line's fields
	jl := write(t, dir, "a.jsonl", `{"url": "https://a.example/1", "n": 3, "x": 1.5, "ok": true, "when": "2024-01-02T03:04:05Z", "lang": "en", "ts": "2024-01-01T00:00:00Z"}
{"url": "https://a.example/2", "n": 4, "x": 2, "ok": false, "when": "2024-02-03", "lang": 7}
{"url": "https://a.example/1", "n": 5, "x": null, "ok": true, "lang": "fr", "ts": "2024-06-01T00:00:00Z"}
`)
	if _, err := ingest("a", "n,x,ok,when,lang", jl); err != nil {
		t.Fatal(err)
	}
	rows, cols := readFields(t, root, "a", "a.example")
	if cols != "n:int64 x:double ok:bool when:timestamp lang:string" {
		t.Fatalf("columns %s", cols)
	}
	if got := strings.Join(rows, "\n"); got != "https://a.example/1 5 <nil> true <nil> fr\nhttps://a.example/2 4 2 false 2024-02-03T00:00:00Z 7" {
		t.Fatalf("rows:\n%s", got)
	}

	// a later ingest adds a column (the earlier rows read NULL) and keeps
	// the dataset's types; a declared type that differs is refused
	if _, err := ingest("a", "n:string", csv); err == nil || !strings.Contains(err.Error(), "never changes type") {
		t.Fatalf("retyped column: %v", err)
	}
	csv2 := write(t, dir, "b.csv", "url,n,note\nhttps://a.example/3,9,hello\nhttps://a.example/4,nine,x\n")
	sum, err := ingest("a", "n,note", csv2)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rejected["bad-field"] != 1 {
		t.Fatalf("a value that is not an int64 in an int64 column: rejects %v", sum.Rejected)
	}
	rows, cols = readFields(t, root, "a", "a.example")
	if cols != "n:int64 x:double ok:bool when:timestamp lang:string note:string" {
		t.Fatalf("columns after adding one: %s", cols)
	}
	if got := strings.Join(rows, "\n"); got != "https://a.example/1 5 <nil> true <nil> fr <nil>\nhttps://a.example/2 4 2 false 2024-02-03T00:00:00Z 7 <nil>\nhttps://a.example/3 9 <nil> <nil> <nil> <nil> hello" {
		t.Fatalf("rows:\n%s", got)
	}

	// Parquet: types from the values DuckDB gives
	pq := filepath.Join(dir, "in.parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`COPY (SELECT 'http://p.example/' || i AS url, i::INTEGER AS k, i / 2 AS half, 'v' || i AS label, TIMESTAMP '2024-01-01' + to_seconds(i) AS seen FROM range(3) t(i)) TO '` + pq + `' (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest("p", "k,half,label,seen", pq); err != nil {
		t.Fatal(err)
	}
	rows, cols = readFields(t, root, "p", "p.example")
	if cols != "k:int64 half:double label:string seen:timestamp" || len(rows) != 3 || rows[1] != "http://p.example/1 1 0.5 v1 2024-01-01T00:00:01Z" {
		t.Fatalf("parquet: %s\n%s", cols, strings.Join(rows, "\n"))
	}

	// CDX: the fixed fields, "-" as NULL
	cdx := write(t, dir, "c.cdx", " CDX N b a m s k r M S V g\ncom,c)/ 20240101000000 http://c.com/ text/html 200 ABC - - 10 20 f.warc.gz\ncom,c)/x 20240101000000 http://c.com/x warc/revisit - DEF - - 11 21 f.warc.gz\n")
	if _, err := ingest("c", "", cdx); err != nil {
		t.Fatal(err)
	}
	rows, cols = readFields(t, root, "c", "c.com")
	if cols != "status:int32 mime:string digest:string length:int64 offset:int64 filename:string" ||
		strings.Join(rows, "\n") != "http://c.com/ 200 text/html ABC 10 20 f.warc.gz\nhttp://c.com/x <nil> warc/revisit DEF 11 21 f.warc.gz" {
		t.Fatalf("cdx: %s\n%s", cols, strings.Join(rows, "\n"))
	}
	// --keep-columns on a plain list is refused
	list := write(t, dir, "l.txt", "https://l.example/\n")
	if _, err := ingest("l", "lang", list); err == nil || !strings.Contains(err.Error(), "plain list") {
		t.Fatalf("--keep-columns on a list: %v", err)
	}
}
