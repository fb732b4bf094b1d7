package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// testLake returns a lake writer over a temporary work directory.
func testLake(t *testing.T) (*lakeWriter, string) {
	dir := t.TempDir()
	w, err := newLakeWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
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
	files, cols, written, err := w.finish(ctx, filepath.Join(dir, "out"), "part-v1", 2048)
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
	for _, s := range aa.Spans["big.example"] {
		total += int(s.Rows)
		if int(s.RowGroup) <= last {
			t.Fatalf("spans not in row-group order: %+v", aa.Spans["big.example"])
		}
		last = int(s.RowGroup)
	}
	if total != 5000 || len(aa.Spans["small.example"]) != 1 || aa.Spans["small.example"][0] != (groupRows{RowGroup: 2, Rows: 1}) {
		t.Fatalf("spans: big=%d small=%+v", total, aa.Spans["small.example"])
	}

	// DuckDB reads the files as the urls view does, sorted (L1), deduplicated
	// (L2), and with the row groups the spans say (L3)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	glob := filepath.Join(dir, "out", "*", "*.parquet")
	var n, sorted int64
	if err := db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE prev IS NULL OR (domain, url) > prev) FROM (
		SELECT domain, url, lag((domain, url)) OVER (PARTITION BY domain_prefix ORDER BY file_row_number) AS prev
		FROM read_parquet(?, hive_partitioning = true, file_row_number = true))`, glob).Scan(&n, &sorted); err != nil {
		t.Fatal(err)
	}
	if n != 5002 || sorted != n {
		t.Fatalf("duckdb reads %d rows, %d in order", n, sorted)
	}
	var raw string
	var got time.Time
	if err := db.QueryRow(`SELECT raw, ts FROM read_parquet(?) WHERE domain = 'small.example'`, glob).Scan(&raw, &got); err != nil {
		t.Fatal(err)
	}
	if raw != "HTTPS://small.example" || !got.Equal(ts.Add(time.Hour)) {
		t.Fatalf("merged duplicate: raw %q ts %v", raw, got)
	}
	var groups int64
	if err := db.QueryRow(`SELECT count(DISTINCT row_group_id) FROM parquet_metadata(?)`, aa.LocalPath).Scan(&groups); err != nil || groups != 3 {
		t.Fatalf("row groups %d %v", groups, err)
	}
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
	_, cols, written, err := w.finish(ctx, filepath.Join(dir, "out"), "part-v1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if written != 3 || len(cols) != 1 || cols[0].A != "https://a.example/1" || cols[0].B != "https://b.example/2" {
		t.Fatalf("written %d, collisions %+v", written, cols)
	}
}
