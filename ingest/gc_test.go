package ingest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

func TestGCKeepsWhatTheKeptVersionsNeed(t *testing.T) {
	ctx := context.Background()
	st, _ := localfs.Open(t.TempDir())
	for _, n := range []string{"cdx_toolkit_api_mocks", "pywb_sample_archive", "cc_main_2024_30_cdx00187"} {
		if _, err := Run(ctx, Options{Store: st, Dataset: n, Files: []string{filepath.Join(testdata, "urls", n+".txt")}}); err != nil {
			t.Fatal(err)
		}
	}
	before := countObjects(t, st)
	t.Run("a grace period protects young objects", func(t *testing.T) {
		res, err := catalog.GC(ctx, st, 1, time.Hour, false)
		if err != nil || res.Deleted != 0 || res.Young == 0 {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("old versions' unshared files go; the current version still answers", func(t *testing.T) {
		res, err := catalog.GC(ctx, st, 1, 0, false)
		if err != nil || res.Deleted == 0 || len(res.KeptVersions) != 1 {
			t.Fatalf("%+v %v", res, err)
		}
		if after := countObjects(t, st); after >= before {
			t.Fatalf("objects %d → %d", before, after)
		}
		x, err := catalog.OpenURLIndex(ctx, st, 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap := x.Current()
		for _, ds := range snap.Datasets.Datasets {
			if ds.Name == "pywb_sample_archive" {
				rows, total, err := snap.DomainURLs(ctx, "iana.org", ds.ID, 0, 100)
				if err != nil || total != 48 || len(rows) != 48 {
					t.Fatalf("after gc: %d rows of %d, %v", len(rows), total, err)
				}
			}
		}
		// the reverse file is the kept version's too (a server would
		// rebuild a missing one in memory: look at the store itself)
		if _, err := st.Head(ctx, snap.Version.DatasetToDomainsRoar); snap.Version.DatasetToDomainsRoar == "" || err != nil {
			t.Fatalf("after gc, the dataset→domains file %q: %v", snap.Version.DatasetToDomainsRoar, err)
		}
		for _, ds := range snap.Datasets.Datasets {
			if bm, ok, err := snap.DatasetDomainIDs(ctx, ds.ID); err != nil || !ok || int64(bm.GetCardinality()) != ds.Domains {
				t.Fatalf("after gc, dataset %s: %v %v, want %d domains", ds.Name, ok, err, ds.Domains)
			}
		}
	})
}

func countObjects(t *testing.T, st store.Store) int {
	n := 0
	for _, p := range []string{"index/", "urls/", "ingest/"} {
		st.List(context.Background(), p, func(store.Attrs) error { n++; return nil })
	}
	return n
}
