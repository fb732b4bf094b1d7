package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

func TestLakeWriter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := newLakeWriter(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	ts := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	// 3 domains in two prefixes; big.example spans several row groups
	for i := 0; i < 5000; i++ {
		u := fmt.Sprintf("https://big.example/p/%05d", i)
		w.add("big.example", "aa", uint64(i+1), u, u, ts)
	}
	w.add("small.example", "aa", 9001, "https://small.example/", "HTTPS://small.example", ts)
	w.add("small.example", "aa", 9001, "https://small.example/", "HTTPS://small.example", ts.Add(time.Hour)) // duplicate
	w.add("other.example", "bb", 9002, "https://other.example/x", "https://other.example/x", time.Time{})
	files, cols, written, err := w.finish(ctx, filepath.Join(dir, "out"), "part-v1", 2048)
	if err != nil {
		t.Fatal(err)
	}
	if written != 5002 || len(cols) != 0 || len(files) != 2 {
		t.Fatalf("written %d, collisions %v, files %d", written, cols, len(files))
	}
	aa := files[0]
	if aa.Prefix != "aa" || aa.Rows != 5001 || aa.RowGroups < 3 {
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
	if total != 5000 || len(aa.Spans["small.example"]) != 1 || aa.Spans["small.example"][0].Rows != 1 {
		t.Fatalf("spans: big=%d small=%+v", total, aa.Spans["small.example"])
	}
}
