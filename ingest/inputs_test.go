package ingest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testdata = "../testdata/shared" // a copy of shared/testdata kept in the repository (testdata/shared/README.md)

func scanAll(t *testing.T, path string, format Format) ([]Record, []Reject) {
	t.Helper()
	var recs []Record
	var rejs []Reject
	err := Scan(context.Background(), path, format, func(r Record) error { recs = append(recs, r); return nil }, func(r Reject) { rejs = append(rejs, r) })
	if err != nil {
		t.Fatal(err)
	}
	return recs, rejs
}

func TestScanRealInputs(t *testing.T) {
	if _, err := os.Stat(testdata); err != nil {
		t.Fatalf("shared test data missing at %s: %v", testdata, err)
	}
	cases := []struct {
		name      string
		file      string
		minRecs   int
		firstURL  string
		firstTS   string
		wantReaps int
	}{
		{"Common Crawl CDXJ lines give their url and timestamp", "cdx/cc-main-2024-30-cdx-00187.cdxj", 1140, "https://bibliotheque.missiondefrance.fr/index.php?lvl=bulletin_display&id=319", "2024-07-16T15:31:55Z", 0},
		{"classic CDX with a header line gives the original URL", "cdx/pywb-iana.cdx", 10, "http://www.iana.org/", "2014-01-26T20:06:24Z", 0},
		{"pywb CDXJ gives the same URLs", "cdx/pywb-iana.cdxj", 10, "http://www.iana.org/", "2014-01-26T20:06:24Z", 0},
		{"a plain list gives one URL per line", "urls/ada_kasztp.txt", 47940, "https://www.sec.gov/edgar.shtml", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, rejs := scanAll(t, filepath.Join(testdata, c.file), "")
			if len(recs) < c.minRecs || len(rejs) != c.wantReaps {
				t.Fatalf("%d records, %d rejects (%v)", len(recs), len(rejs), rejs)
			}
			if recs[0].URL != c.firstURL {
				t.Fatalf("first URL %q", recs[0].URL)
			}
			if c.firstTS != "" && recs[0].TS.Format(time.RFC3339) != c.firstTS {
				t.Fatalf("first timestamp %v", recs[0].TS)
			}
		})
	}
}

func TestScanFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	t.Run("CSV finds the url and timestamp columns by name", func(t *testing.T) {
		recs, rejs := scanAll(t, write("a.csv", "id,URL,fetch_time\n1,http://a.example/,2024-01-02T03:04:05Z\n2,,x\n"), "")
		if len(recs) != 1 || recs[0].URL != "http://a.example/" || recs[0].TS.Year() != 2024 || len(rejs) != 1 || rejs[0].Reason != "no-url" {
			t.Fatalf("%+v %+v", recs, rejs)
		}
	})
	t.Run("JSON lines with a bad line reject that line only", func(t *testing.T) {
		recs, rejs := scanAll(t, write("a.jsonl", `{"url":"http://a.example/","ts":"20240102030405"}`+"\n{oops\n"+`{"uri":"http://b.example/"}`+"\n"), "")
		if len(recs) != 2 || len(rejs) != 1 || rejs[0].Source != "a.jsonl:2" || !strings.Contains(rejs[0].Detail, "JSON") {
			t.Fatalf("%+v %+v", recs, rejs)
		}
	})
	t.Run("a list skips comments and blank lines", func(t *testing.T) {
		recs, _ := scanAll(t, write("l.txt", "# header\n\nhttp://a.example/\n  http://b.example/  \n"), "")
		if len(recs) != 2 || recs[1].URL != "http://b.example/" {
			t.Fatalf("%+v", recs)
		}
	})
}

func TestScanParquet(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`COPY (SELECT 'http://a.example/' || i AS URL, TIMESTAMP '2024-01-01' + to_seconds(i) AS fetch_time FROM range(3) t(i)) TO '` + path + `' (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	recs, rejs := scanAll(t, path, "")
	if len(recs) != 3 || len(rejs) != 0 || recs[2].URL != "http://a.example/2" || recs[2].TS.Second() != 2 {
		t.Fatalf("%+v %+v", recs, rejs)
	}
}
