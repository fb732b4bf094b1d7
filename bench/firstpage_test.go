package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/store/localfs"
)

// BenchmarkFirstPage measures Snapshot.DomainURLs in process, for the
// first 1000-URL page of the generator's Zipf queries on a 1M-URL store
// (of the simple corpus, or the realistic one with -args -shape
// realistic, whose raw URLs differ from 18% of the URLs):
// "miss" with no row cache, so every page is read from its lake file's row
// group (the cost of a query on a domain not queried lately), "hit" with
// the default row cache after one pass over the queries.
func BenchmarkFirstPage(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	corp, err := GenerateShaped(dir, 1_000_000, 20_000, 4, Shape(*firstPageShape))
	if err != nil {
		b.Fatal(err)
	}
	storeDir := b.TempDir()
	st, err := localfs.Open(storeDir)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]uint32, len(corp.Files))
	for i, f := range corp.Files {
		s, err := ingest.Run(ctx, ingest.Options{Store: st, Dataset: fmt.Sprintf("d%02d", i), Files: []string{f}, WorkDir: b.TempDir(), PageRows: *firstPageRows})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = s.DatasetID
	}
	var bytes int64
	filepath.Walk(storeDir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			bytes += fi.Size()
		}
		return nil
	})
	b.Logf("store: %.1f bytes per URL", float64(bytes)/float64(corp.URLs))
	queries := corp.Queries(20000, 1)
	for _, c := range []struct {
		name     string
		rowCache int64
	}{{"miss", 0}, {"hit", catalog.DefaultRowCacheBytes}} {
		b.Run(c.name, func(b *testing.B) {
			x, err := catalog.OpenURLIndexWith(ctx, st, catalog.URLIndexOptions{RowCacheBytes: c.rowCache})
			if err != nil {
				b.Fatal(err)
			}
			snap := x.Current()
			page := func(q Query) int {
				rows, _, err := snap.DomainURLs(ctx, q.Domain, ids[q.Dataset], 0, 1000)
				if err != nil {
					b.Fatal(err)
				}
				return len(rows)
			}
			for _, q := range queries { // opens every file; fills the row cache
				page(q)
			}
			rows := 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				rows += page(queries[i%len(queries)])
			}
			// CPU time counts the garbage collector's work on other cores,
			// which wall time per op hides on an idle machine
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
		})
	}
}

// firstPageRows sets the lake's page size for BenchmarkFirstPage, to weigh
// page size against bytes per URL (go test -bench FirstPage -args
// -page-rows 1024 -v: the store's bytes per URL are logged).
var firstPageRows = flag.Int("page-rows", 0, "rows per lake page in BenchmarkFirstPage (0: ingest's default)")

// firstPageShape is the corpus of BenchmarkFirstPage.
var firstPageShape = flag.String("shape", string(ShapeSimple), "URL shape of BenchmarkFirstPage's corpus: simple or realistic")

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
