package ingest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/urlnorm"
)

// TestIndexMatchesBruteForce is the correctness proof: ingest each
// real URL list as its own dataset, then for every domain compare
// domain_datasets and the full domain_urls listing with a recomputation
// straight from the raw files (an in-memory group-by that shares only the
// normalizer with ingest: no Parquet, postings, dictionary or DuckDB).
func TestIndexMatchesBruteForce(t *testing.T) {
	ctx := context.Background()
	paths, _ := filepath.Glob(filepath.Join(testdata, "urls", "*.txt"))
	if len(paths) == 0 {
		t.Fatalf("no URL lists under %s", testdata)
	}
	sort.Strings(paths)
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testIndexMatchesBruteForce(t, ctx, st, paths)
}

func testIndexMatchesBruteForce(t *testing.T, ctx context.Context, st store.Store, paths []string) {
	norm, err := urlnorm.NewNormalizer(urlnorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]map[string]bool{}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".txt")
		addBruteForce(t, norm, want, name, p)
		// pages of 64 rows: a first page decodes from its run's page
		if _, err := Run(ctx, Options{Store: st, Dataset: name, Files: []string{p}, Normalizer: norm, RowGroupRows: 2048, PageRows: 64, WorkDir: t.TempDir()}); err != nil {
			t.Fatalf("ingest %s: %v", p, err)
		}
	}
	checkBothCacheModes(t, ctx, st, want, true)
}

// addBruteForce adds the URLs of the list at path to want[dataset] (domain
// → set of normalized URLs), normalized as ingest would.
func addBruteForce(t *testing.T, norm *urlnorm.Normalizer, want map[string]map[string]map[string]bool, dataset, path string) {
	t.Helper()
	if want[dataset] == nil {
		want[dataset] = map[string]map[string]bool{}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, err := norm.Parse(line)
		if err != nil {
			continue
		}
		if want[dataset][u.Domain] == nil {
			want[dataset][u.Domain] = map[string]bool{}
		}
		want[dataset][u.Domain][u.Normalized] = true
	}
}

// checkBothCacheModes compares the store's current index with want, read
// through a fresh server-side index each way.
//
// Listings are in URL order within each ingest's files (postings P3);
// sorted asks for one order overall, which holds when each dataset came
// from one ingest.
func checkBothCacheModes(t *testing.T, ctx context.Context, st store.Store, want map[string]map[string]map[string]bool, sorted bool) {
	t.Helper()
	// with the row cache (whole runs decoded, pages sliced from them) and
	// without it (each page decodes only its rows, seeking in the row group)
	for _, mode := range []struct {
		rowCache int64
		page     int64
	}{{64 << 20, 1000}, {0, 777}} {
		x, err := catalog.OpenURLIndexWith(ctx, st, catalog.URLIndexOptions{BlockCacheBytes: 64 << 20, RowCacheBytes: mode.rowCache})
		if err != nil {
			t.Fatal(err)
		}
		checkIndexAgainst(t, ctx, x.Current(), want, mode.page, sorted)
	}
	// readers at once, without the row cache: page buffers are recycled
	// from one query to the next (catalog's pageAllocator), so a buffer
	// handed back while a reader still used it would show up here
	x, err := catalog.OpenURLIndexWith(ctx, st, catalog.URLIndexOptions{BlockCacheBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("concurrent", func(t *testing.T) {
		for i := range 4 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				checkIndexAgainst(t, ctx, x.Current(), want, int64(300+97*i), sorted)
			})
		}
	})
}

func checkIndexAgainst(t *testing.T, ctx context.Context, snap *catalog.Snapshot, want map[string]map[string]map[string]bool, page int64, sorted bool) {
	t.Helper()
	ids := map[string]uint32{}
	for _, ds := range snap.Datasets.Datasets {
		ids[ds.Name] = ds.ID
	}
	// every domain of every dataset
	domains := map[string]bool{}
	for _, byDomain := range want {
		for d := range byDomain {
			domains[d] = true
		}
	}
	checked, urls := 0, 0
	for d := range domains {
		got, err := snap.DomainDatasets(d)
		if err != nil {
			t.Fatal(err)
		}
		gotCounts := map[string]uint64{}
		for _, g := range got {
			gotCounts[g.Dataset] = g.URLCount
		}
		for name, byDomain := range want {
			if uint64(len(byDomain[d])) != gotCounts[name] {
				t.Fatalf("domain %s dataset %s: index says %d URLs, brute force %d", d, name, gotCounts[name], len(byDomain[d]))
			}
			if len(byDomain[d]) == 0 {
				continue
			}
			// the full listing, in pages, equals the brute-force set
			var listed []string
			for off := int64(0); ; off += page {
				rows, total, err := snap.DomainURLs(ctx, d, ids[name], off, page)
				if err != nil {
					t.Fatalf("domain_urls(%s, %s, %d): %v", d, name, off, err)
				}
				if total != uint64(len(byDomain[d])) {
					t.Fatalf("domain_urls(%s, %s) total %d, want %d", d, name, total, len(byDomain[d]))
				}
				for _, r := range rows {
					listed = append(listed, r.URL)
					if r.URLID != urlnorm.URLID(r.URL) && r.Raw == "" {
						t.Fatalf("url_id of %s is not the xxh3 of its raw URL", r.URL)
					}
				}
				if int64(len(rows)) < page {
					break
				}
			}
			if sorted && !sort.StringsAreSorted(listed) {
				t.Fatalf("domain_urls(%s, %s) is not in stable URL order", d, name)
			}
			if len(listed) != len(byDomain[d]) {
				t.Fatalf("domain_urls(%s, %s) listed %d URLs, want %d", d, name, len(listed), len(byDomain[d]))
			}
			for _, u := range listed {
				if !byDomain[d][u] {
					t.Fatalf("domain_urls(%s, %s) lists %s, which the raw file does not have", d, name, u)
				}
			}
			urls += len(listed)
		}
		checked++
	}
	t.Logf("%d domains across %d datasets: domain_datasets and full domain_urls listings (%d URLs, pages of %d) match the brute force", checked, len(want), urls, page)
}

// TestIndexMatchesBruteForceOnS3 runs the same proof against a real S3
// server, where the lake is read by byte ranges through the block cache.
// It uses the smaller lists to keep the suite fast.
func TestIndexMatchesBruteForceOnS3(t *testing.T) {
	ctx := context.Background()
	var paths []string
	for _, n := range []string{"cc_main_2024_30_cdx00187", "cdx_toolkit_api_mocks", "pywb_sample_archive", "ada_userbait"} {
		paths = append(paths, filepath.Join(testdata, "urls", n+".txt"))
	}
	st, _ := s3test.Start(t).NewStore(t)
	testIndexMatchesBruteForce(t, ctx, st, paths)
}
