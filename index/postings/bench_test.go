package postings

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/dhsi/dhsi/index/internal/indextest"
)

const benchDomains = 1_000_000

type benchShard struct {
	shard
	keys   []posting // spans omitted
	starts []int     // starts[d] = index in keys of domain d's first key
	spans  int
}

// One shard holding every posting of 1M domains x 64 datasets: the worst
// case for the binary search (a real version splits it over S shards).
// Built once per stride per test binary.
var benchShards sync.Map

func getBenchShard(b *testing.B, stride uint32) *benchShard {
	if v, ok := benchShards.Load(stride); ok {
		return v.(*benchShard)
	}
	bs := &benchShard{}
	var ib, db bytes.Buffer
	w, _ := NewWriterConfig(&ib, &db, Config{SparseStride: stride})
	indextest.Corpus{Domains: benchDomains, Datasets: 64, Seed: 7}.Each(func(d uint64, ds []uint32, sp [][]indextest.Span) {
		bs.starts = append(bs.starts, len(bs.keys))
		for i, x := range ds {
			s := make(Spans, len(sp[i]))
			for j, v := range sp[i] {
				s[j] = Span(v)
			}
			if err := w.Add(d, x, s); err != nil {
				panic(err)
			}
			bs.keys = append(bs.keys, posting{d: d, ds: x})
			bs.spans += len(s)
		}
	})
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	bs.idx, bs.dat = ib.Bytes(), db.Bytes()
	benchShards.Store(stride, bs)
	return bs
}

func BenchmarkPostingsLookup(b *testing.B) {
	for _, c := range []struct {
		name    string
		stride  uint32
		opts    Options
		payload bool
		domain  bool
	}{
		{"lookup/stride-256/idx-by-range", 256, Options{}, false, false},
		{"lookup+payload/stride-256/idx-by-range", 256, Options{}, true, false},
		{"lookup+payload/stride-1024/idx-by-range", 1024, Options{}, true, false},
		{"lookup+payload/stride-256/idx-loaded", 256, Options{LoadIndex: true}, true, false},
		{"datasets-of/stride-256/idx-by-range", 256, Options{}, false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			bs := getBenchShard(b, c.stride)
			r := rand.New(rand.NewPCG(1, 2))
			z := rand.NewZipf(r, 1.1, 1, benchDomains-1)
			qs := make([]posting, 1<<16)
			for i := range qs {
				d := (z.Uint64() * 2654435761) % benchDomains
				lo, hi := bs.starts[d], len(bs.keys)
				if d+1 < benchDomains {
					hi = bs.starts[d+1]
				}
				qs[i] = bs.keys[lo+r.IntN(hi-lo)]
			}
			ci := &indextest.CountingReaderAt{R: bytes.NewReader(bs.idx)}
			cd := &indextest.CountingReaderAt{R: bytes.NewReader(bs.dat)}
			rd, err := OpenWith(ci, int64(len(bs.idx)), cd, int64(len(bs.dat)), c.opts)
			if err != nil {
				b.Fatal(err)
			}
			ci.Reset()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := qs[i&(len(qs)-1)]
				if c.domain {
					if es, err := rd.DatasetsOf(q.d); err != nil || len(es) == 0 {
						b.Fatal(err)
					}
					continue
				}
				e, ok, err := rd.Lookup(q.d, q.ds)
				if err != nil || !ok {
					b.Fatal(fmt.Sprint(ok, err))
				}
				if c.payload {
					if _, err := rd.Payload(e); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(ci.Calls()+cd.Calls())/float64(b.N), "reads/op")
			b.ReportMetric(float64(ci.Bytes()+cd.Bytes())/float64(b.N), "readB/op")
			n := float64(len(bs.keys))
			b.ReportMetric(float64(len(bs.idx)+len(bs.dat))/n, "fileB/posting")
			b.ReportMetric(float64(len(bs.dat))/n, "datB/posting")
			b.ReportMetric(float64(bs.spans)/n, "spans/posting")
			b.ReportMetric(n/benchDomains, "postings/domain")
		})
	}
}

// BenchmarkMerge is an incremental ingest's merge: a shard of 20,000
// domains in 63 datasets, and a new dataset holding a fifth of them (the
// realistic corpus' 156k-URL dataset touches 22% of its domains).
func BenchmarkMerge(b *testing.B) {
	var old, fresh []posting
	indextest.Corpus{Domains: 20000, Datasets: 63, Seed: 7}.Each(func(d uint64, ds []uint32, sp [][]indextest.Span) {
		for i, x := range ds {
			s := make(Spans, len(sp[i]))
			for j, v := range sp[i] {
				s[j] = Span(v)
			}
			old = append(old, posting{d, x, s})
		}
		if d%5 == 0 {
			fresh = append(fresh, posting{d, 64, Spans{spAt(1<<20+uint32(d%1000), 0, 3, 17)}})
		}
	})
	o, f := writeShard(b, old, DefaultStride, false), writeShard(b, fresh, DefaultStride, false)
	b.SetBytes(int64(len(o.dat) + len(o.idx)))
	b.ReportAllocs()
	for b.Loop() {
		var ib, db bytes.Buffer
		w := NewWriter(&ib, &db)
		if err := Merge(w, o.open(b, Options{}), f.open(b, Options{})); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
