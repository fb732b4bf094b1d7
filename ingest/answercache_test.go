package ingest

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store/localfs"
)

// TestDomainDatasetsAnswersAreKeptPerVersion: a domain_datasets answer is
// kept for the version it was read from and the principal who asked
// (catalog's datasetsCache), so the same principal's second lookup is a
// hit, another principal's is not, and a published version answers
// afresh.
func TestDomainDatasetsAnswersAreKeptPerVersion(t *testing.T) {
	ctx := context.Background()
	st, _ := localfs.Open(t.TempDir())
	list := filepath.Join(testdata, "urls", "pywb_sample_archive.txt")
	if _, err := Run(ctx, Options{Store: st, Dataset: "first", Files: []string{list}}); err != nil {
		t.Fatal(err)
	}
	x, err := catalog.OpenURLIndexWith(ctx, st, catalog.URLIndexOptions{RowCacheBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	answers := func() catalog.CacheStats {
		for _, s := range x.CacheStats() {
			if s.Name == "datasets" {
				return s
			}
		}
		t.Fatal("no datasets cache in CacheStats")
		return catalog.CacheStats{}
	}
	names := func(snap *catalog.Snapshot, scope string) []string {
		got, err := snap.DomainDatasetsCached("iana.org", scope)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range got {
			out = append(out, d.Dataset)
		}
		return out
	}
	first := x.Current()
	a, b := names(first, "alice"), names(first, "alice")
	if !slices.Equal(a, []string{"first"}) || !slices.Equal(a, b) {
		t.Fatalf("iana.org's datasets: %v, then %v", a, b)
	}
	if s := answers(); s.Hits != 1 || s.Misses != 1 || s.Entries != 1 || s.Used > s.Limit || s.Limit != (16<<20)/16 {
		t.Fatalf("after two lookups: %+v", s)
	}
	// another principal's lookup is not served from alice's (C2)
	if got := names(first, "bob"); !slices.Equal(got, a) {
		t.Fatalf("iana.org's datasets for bob: %v", got)
	}
	if s := answers(); s.Hits != 1 || s.Misses != 2 || s.Entries != 2 {
		t.Fatalf("after bob's lookup: %+v", s)
	}
	if _, err := Run(ctx, Options{Store: st, Dataset: "second", Files: []string{list}}); err != nil {
		t.Fatal(err)
	}
	if changed, err := x.Refresh(ctx); err != nil || !changed {
		t.Fatalf("refresh: %v %v", changed, err)
	}
	if got := names(x.Current(), "alice"); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("iana.org's datasets in the new version: %v", got)
	}
	// the pinned earlier version still answers as it did
	if got := names(first, "alice"); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("iana.org's datasets in the earlier version: %v", got)
	}
	if s := answers(); s.Entries != 3 || s.Hits != 2 {
		t.Fatalf("after a publish: %+v", s)
	}
}
