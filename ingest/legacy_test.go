package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/urlnorm"
)

// TestLegacyStoreServesAndGrows: a store written before postings version 3
// (lake files that store the domain per row; spans without first rows)
// answers exactly as its URL lists say; then an ingest adds a dataset and
// more URLs to an old one, so one key's spans mix both versions and the
// lake mixes both file layouts, and every answer still matches — through
// the server's index and through DuckDB reading the lake.
func TestLegacyStoreServesAndGrows(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join("testdata", "legacy-v2")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(src, "store"))); err != nil {
		t.Fatal(err)
	}
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	norm, err := urlnorm.NewNormalizer(urlnorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(src, "legacy-a.txt"), filepath.Join(src, "legacy-b.txt")
	want := map[string]map[string]map[string]bool{}
	addBruteForce(t, norm, want, "legacy-a", a)
	addBruteForce(t, norm, want, "legacy-b", b)
	checkBothCacheModes(t, ctx, st, want, true)

	// legacy-b gains legacy-a's URLs in new files; legacy-c is new
	for _, in := range []struct{ dataset, file string }{{"legacy-b", a}, {"legacy-c", b}} {
		if _, err := Run(ctx, Options{Store: st, Dataset: in.dataset, Files: []string{in.file}, Normalizer: norm, RowGroupRows: 8, PageRows: 4, WorkDir: t.TempDir()}); err != nil {
			t.Fatalf("ingest %s into %s: %v", in.file, in.dataset, err)
		}
		addBruteForce(t, norm, want, in.dataset, in.file)
	}
	checkBothCacheModes(t, ctx, st, want, false)

	// DuckDB over both layouts at once, as the urls view reads them: the
	// raw URL from the old files' raw and the new files' raw_edit is a line
	// of the dataset's lists
	lines := map[string]map[string]bool{}
	for _, in := range []struct{ dataset, file string }{{"legacy-a", a}, {"legacy-b", b}, {"legacy-b", a}, {"legacy-c", b}} {
		body, err := os.ReadFile(in.file)
		if err != nil {
			t.Fatal(err)
		}
		if lines[in.dataset] == nil {
			lines[in.dataset] = map[string]bool{}
		}
		for _, l := range strings.Split(string(body), "\n") {
			lines[in.dataset][strings.TrimSpace(l)] = true
		}
	}
	db := lakeDB(t)
	ix, err := catalog.OpenURLIndex(ctx, st, 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := ix.Current()
	names := map[uint32]string{}
	for _, ds := range x.Datasets.Datasets {
		names[ds.ID] = ds.Name
	}
	var paths []string
	for _, p := range x.FilePaths() {
		paths = append(paths, "'"+strings.ReplaceAll(filepath.Join(dir, filepath.FromSlash(p)), "'", "''")+"'")
	}
	rows, err := db.QueryContext(ctx, `SELECT dataset_id::INTEGER, `+LakeDomainSQL+`, url, coalesce(`+LakeRawSQL+`, url) FROM read_parquet([`+strings.Join(paths, ", ")+`], hive_partitioning = true, union_by_name = true)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n, edited := 0, 0
	for rows.Next() {
		var id uint32
		var d, u, raw string
		if err := rows.Scan(&id, &d, &u, &raw); err != nil {
			t.Fatal(err)
		}
		if !want[names[id]][d][u] {
			t.Fatalf("DuckDB reads (%s, %s, %s), which the lists do not have", names[id], d, u)
		}
		if !lines[names[id]][raw] {
			t.Fatalf("DuckDB reads the raw URL of %s in %s as %q, which the lists do not have", u, names[id], raw)
		}
		if raw != u {
			edited++
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, byDomain := range want {
		for _, us := range byDomain {
			total += len(us)
		}
	}
	if n != total || edited == 0 {
		t.Fatalf("DuckDB reads %d rows (%d raw URLs not their URL), the lists hold %d", n, edited, total)
	}
}
