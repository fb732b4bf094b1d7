package dtdr

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/index/internal/indextest"
)

const benchDomains = 1_000_000

// The 1M-domain, 64-dataset file is built once per test binary.
var benchFile = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, benchDomains)
	indextest.Corpus{Domains: benchDomains, Datasets: 64, Seed: 7}.Each(func(d uint64, ds []uint32, _ [][]indextest.Span) {
		if err := w.Add(d, roaring.BitmapOf(ds...)); err != nil {
			panic(err)
		}
	})
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
})

func BenchmarkDTDRGet(b *testing.B) {
	file := benchFile()
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, benchDomains-1)
	ids := make([]uint64, 1<<16)
	for i := range ids {
		ids[i] = (z.Uint64() * 2654435761) % benchDomains // popular ids scattered
	}
	for _, c := range []struct {
		name string
		opts Options
	}{{"index-by-range", Options{}}, {"index-loaded", Options{LoadIndex: true}}} {
		b.Run(c.name, func(b *testing.B) {
			cr := &indextest.CountingReaderAt{R: bytes.NewReader(file)}
			rd, err := OpenWith(cr, int64(len(file)), c.opts)
			if err != nil {
				b.Fatal(err)
			}
			cr.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := rd.Get(ids[i&(len(ids)-1)]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cr.Calls())/float64(b.N), "reads/op")
			b.ReportMetric(float64(cr.Bytes())/float64(b.N), "readB/op")
			b.ReportMetric(float64(len(file))/benchDomains, "fileB/domain")
		})
	}
}
