package dsdr

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/index/internal/indextest"
)

const benchDomains = 1_000_000

// The 1M-domain, 64-dataset file of dtdr's benchmark, transposed; built
// once per test binary.
var benchFile = sync.OnceValues(func() ([]byte, error) {
	tr := NewTransposer(benchDomains)
	var err error
	indextest.Corpus{Domains: benchDomains, Datasets: 64, Seed: 7}.Each(func(d uint64, ds []uint32, _ [][]indextest.Span) {
		if err == nil {
			err = tr.Add(d, roaring.BitmapOf(ds...))
		}
	})
	if err != nil {
		return nil, err
	}
	ids := make([]uint32, 64)
	for i := range ids {
		ids[i] = uint32(i)
	}
	var buf bytes.Buffer
	err = tr.Write(&buf, ids)
	return buf.Bytes(), err
})

// BenchmarkDSDR: Get of a big, a middling and a small dataset, and a set
// operation of the two biggest, with the file's size per domain.
func BenchmarkDSDR(b *testing.B) {
	file, err := benchFile()
	if err != nil {
		b.Fatal(err)
	}
	r, err := Open(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		b.Fatal(err)
	}
	for _, ds := range []uint32{1, 8, 60} {
		bm, _, _ := r.Get(ds)
		b.Run(fmt.Sprintf("get/dataset-%d/%d-domains", ds, bm.GetCardinality()), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, _, err := r.Get(ds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(file))/benchDomains, "fileB/domain")
		})
	}
	x, _, _ := r.Get(1)
	y, _, _ := r.Get(2)
	b.Run(fmt.Sprintf("andnot/%d-minus-%d-domains", x.GetCardinality(), y.GetCardinality()), func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			roaring.AndNot(x, y)
		}
	})
	b.Run("iterate-result", func(b *testing.B) {
		z := roaring.AndNot(x, y)
		buf := make([]uint32, 2048)
		for i := 0; i < b.N; i++ {
			it := z.ManyIterator()
			for it.NextMany(buf) > 0 {
			}
		}
		b.ReportMetric(float64(z.GetCardinality()), "domains")
	})
}
