package ingest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pqfile "github.com/apache/arrow-go/v18/parquet/file"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/urlnorm"
)

// TestRawAndTimestampsServed: domain_urls returns each row's raw URL and
// timestamp where the input had them and none where it did not, in row
// groups that hold both kinds of rows and in row groups whose statistics
// say a column is all null (which the reader then skips); timestamps of
// whole seconds (ts_seconds) and finer ones (ts) alike, also through
// DuckDB as the urls view reads them.
func TestRawAndTimestampsServed(t *testing.T) {
	ctx := context.Background()
	type want struct {
		raw string
		ts  time.Time
	}
	wants := map[string]map[string]want{} // domain → normalized URL → raw, ts
	var lines []string
	base := time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC)
	for d := range 60 {
		domain := fmt.Sprintf("d%02d.example", d)
		wants[domain] = map[string]want{}
		for i := range 5 {
			url := fmt.Sprintf("http://%s/p/%d", domain, i)
			w := want{}
			rec := map[string]any{"url": url}
			if d%4 == 0 { // upper case: the raw URL differs from its normal form
				rec["url"] = strings.Replace(url, "http://"+domain, "HTTP://"+strings.ToUpper(domain), 1)
				w.raw = rec["url"].(string)
			}
			if d%3 == 0 {
				w.ts = base.Add(time.Duration(d*10+i) * time.Minute)
				if d%9 == 0 { // not a whole second: stored in µs, as ts
					w.ts = w.ts.Add(123456 * time.Microsecond)
				}
				rec["timestamp"] = w.ts.Format(time.RFC3339Nano)
			}
			wants[domain][url] = w
			b, _ := json.Marshal(rec)
			lines = append(lines, string(b))
		}
	}
	input := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	storeDir := t.TempDir()
	st, err := localfs.Open(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Run(ctx, Options{Store: st, Dataset: "mixed", Files: []string{input}, RowGroupRows: 8, PageRows: 4, PrefixWidth: 1, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}

	// the files must hold both kinds of row group for the test to mean anything
	allNull := map[string][2]int{} // column → row groups all null, row groups with values
	files, _ := filepath.Glob(filepath.Join(storeDir, "urls", "*", "*", "*.parquet"))
	for _, p := range files {
		r, err := pqfile.OpenParquetFile(p, false)
		if err != nil {
			t.Fatal(err)
		}
		for rg := range r.NumRowGroups() {
			g := r.RowGroup(rg)
			for _, name := range []string{"raw_edit", "ts", "ts_seconds"} {
				md, err := g.MetaData().ColumnChunk(r.MetaData().Schema.ColumnIndexByName(name))
				if err != nil {
					t.Fatal(err)
				}
				s, err := md.Statistics()
				if err != nil || s == nil || !s.HasNullCount() {
					t.Fatalf("%s row group %d: no null count for %s (%v)", p, rg, name, err)
				}
				n := allNull[name]
				if s.NullCount() == g.NumRows() {
					n[0]++
				} else {
					n[1]++
				}
				allNull[name] = n
			}
		}
		r.Close()
	}
	for _, name := range []string{"raw_edit", "ts", "ts_seconds"} {
		if n := allNull[name]; n[0] == 0 || n[1] == 0 {
			t.Fatalf("%s: %d row groups all null, %d with values; want some of each", name, n[0], n[1])
		}
	}

	for _, rowCache := range []int64{0, 1 << 20} {
		x, err := catalog.OpenURLIndexWith(ctx, st, catalog.URLIndexOptions{RowCacheBytes: rowCache})
		if err != nil {
			t.Fatal(err)
		}
		snap := x.Current()
		for domain, urls := range wants {
			rows, total, err := snap.DomainURLs(ctx, domain, sum.DatasetID, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			if total != uint64(len(urls)) || len(rows) != len(urls) {
				t.Fatalf("%s: %d rows (total %d), want %d", domain, len(rows), total, len(urls))
			}
			for _, r := range rows {
				w, ok := urls[r.URL]
				switch {
				case !ok:
					t.Fatalf("%s: unexpected URL %s", domain, r.URL)
				case r.Raw != w.raw:
					t.Fatalf("%s: raw %q, want %q", r.URL, r.Raw, w.raw)
				case r.HasTS != !w.ts.IsZero() || (r.HasTS && !r.TS.Equal(w.ts)):
					t.Fatalf("%s: ts %v (%v), want %v", r.URL, r.TS, r.HasTS, w.ts)
				case w.raw != "" && r.URLID != urlnorm.URLID(w.raw):
					t.Fatalf("%s: url_id is not the hash of the raw URL", r.URL)
				}
			}
		}
	}

	// DuckDB, with the columns as the urls view reads them
	db := lakeDB(t)
	rows, err := db.Query(`SELECT url, `+LakeTSSQL+` FROM read_parquet(?)`, filepath.Join(storeDir, "urls", "*", "*", "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var u string
		var ts sql.NullTime
		if err := rows.Scan(&u, &ts); err != nil {
			t.Fatal(err)
		}
		d, _, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
		if w := wants[d][u].ts; ts.Valid != !w.IsZero() || ts.Valid && !ts.Time.Equal(w) {
			t.Fatalf("DuckDB reads the ts of %s as %v, want %v", u, ts, w)
		}
		n++
	}
	if err := rows.Err(); err != nil || n != 300 {
		t.Fatalf("DuckDB read %d rows: %v", n, err)
	}
}
