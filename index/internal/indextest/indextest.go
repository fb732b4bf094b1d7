// Package indextest holds what the index packages' tests and benchmarks
// share: a ReaderAt that counts calls, an in-memory io.WriterAt, and a
// deterministic generator of realistic domains and dataset memberships.
// It is not a _test package because several packages' tests use it.
package indextest

import (
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
)

// CountingReaderAt counts ReadAt calls and bytes, so tests can assert how
// many round trips a lookup would cost against S3.
type CountingReaderAt struct {
	R     io.ReaderAt
	calls atomic.Int64
	bytes atomic.Int64
}

// ReadAt implements io.ReaderAt.
func (c *CountingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	n, err := c.R.ReadAt(p, off)
	c.bytes.Add(int64(n))
	return n, err
}

// Calls is the number of ReadAt calls so far.
func (c *CountingReaderAt) Calls() int64 { return c.calls.Load() }

// Bytes is the number of bytes read so far.
func (c *CountingReaderAt) Bytes() int64 { return c.bytes.Load() }

// Reset zeroes the counters.
func (c *CountingReaderAt) Reset() { c.calls.Store(0); c.bytes.Store(0) }

// File is an in-memory file implementing io.Writer and io.WriterAt, so the
// writers' streaming (header-patching) path can be tested without disk.
type File struct{ B []byte }

// Write appends p.
func (f *File) Write(p []byte) (int, error) { f.B = append(f.B, p...); return len(p), nil }

// WriteAt writes p at off, growing the file as needed.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("indextest: negative offset")
	}
	if end := int(off) + len(p); end > len(f.B) {
		f.B = append(f.B, make([]byte, end-len(f.B))...)
	}
	copy(f.B[off:], p)
	return len(p), nil
}

// Domains returns n sorted unique registered domains (eTLD+1-shaped, mean
// length about 14 bytes), the same for the same seed.
func Domains(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	tlds := []string{"com", "com", "com", "com", "net", "org", "de", "co.uk", "fr", "io", "ru", "com.br", "jp", "nl", "info"}
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	seen := make(map[string]struct{}, n)
	out := make([]string, 0, n)
	var sb strings.Builder
	for len(out) < n {
		sb.Reset()
		l := 3 + r.IntN(6) + r.IntN(6) // 3..13, peaked near 8
		for i := 0; i < l; i++ {
			c := alpha[r.IntN(26)]
			if r.IntN(8) == 0 {
				c = alpha[r.IntN(len(alpha))]
			}
			if i > 0 && i < l-1 && r.IntN(20) == 0 {
				c = '-'
			}
			sb.WriteByte(c)
		}
		sb.WriteByte('.')
		sb.WriteString(tlds[r.IntN(len(tlds))])
		d := sb.String()
		if _, ok := seen[d]; ok {
			continue
		}
		seen[d] = struct{}{}
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// Span mirrors postings.Span without importing it (postings' tests import
// this package).
type Span struct {
	FileID, RowGroup, Rows uint32
	First                  uint32 // the run's first row in the group, when HasFirst
	HasFirst               bool
}

// Posting is one (domain, dataset) pair with its spans.
type Posting struct {
	DomainID  uint64
	DatasetID uint32
	Spans     []Span
}

// Corpus generates a Zipf-ish membership: most domains are in one or two
// datasets, a few in all of them; low dataset ids are the big datasets.
type Corpus struct {
	Domains  int
	Datasets int
	Seed     uint64
}

// Each calls fn for every domain in domain_id order with its sorted
// dataset ids and, per dataset, its spans (1 to ~6, mean about 1.8; big
// postings span more row groups). The slices are reused between calls.
func (c Corpus) Each(fn func(domainID uint64, datasets []uint32, spans [][]Span)) {
	r := rand.New(rand.NewPCG(c.Seed, 42))
	kz := rand.NewZipf(r, 1.6, 1, uint64(c.Datasets-1)) // datasets per domain - 1
	dz := rand.NewZipf(r, 1.1, 2, uint64(c.Datasets-1)) // which dataset
	uz := rand.NewZipf(r, 1.2, 1, 5_000_000)            // URLs per posting - 1
	var ds []uint32
	var sp [][]Span
	inSet := make([]bool, c.Datasets)
	for d := 0; d < c.Domains; d++ {
		k := int(kz.Uint64()) + 1
		ds = ds[:0]
		for len(ds) < k {
			x := uint32(dz.Uint64())
			if inSet[x] {
				if r.IntN(4) == 0 { // the head is crowded: fall back to uniform
					x = uint32(r.IntN(c.Datasets))
					if inSet[x] {
						continue
					}
				} else {
					continue
				}
			}
			inSet[x] = true
			ds = append(ds, x)
		}
		slices.Sort(ds)
		for _, x := range ds {
			inSet[x] = false
		}
		sp = sp[:0]
		for _, x := range ds {
			urls := uz.Uint64() + 1
			n := 1 + int(urls/400_000)
			for r.IntN(3) == 0 && n < 6 { // later batches add row groups
				n++
			}
			file := uint32(x)*100_000 + uint32(r.IntN(1000))
			rg := uint32(r.IntN(20))
			s := make([]Span, 0, n)
			left := urls
			for i := 0; i < n; i++ {
				rows := left / uint64(n-i)
				if rows == 0 {
					rows = 1
				}
				if i == n-1 || rows > left {
					rows = left
				}
				if rows == 0 {
					break
				}
				left -= rows
				// three in four spans record their first row, as postings
				// written since version 3 do; the rest are older spans
				sp := Span{FileID: file, RowGroup: rg, Rows: uint32(rows)}
				if d%4 != 0 {
					sp.First, sp.HasFirst = uint32(left%16384), true
				}
				s = append(s, sp)
				if r.IntN(2) == 0 {
					file += 1 + uint32(r.IntN(50))
					rg = uint32(r.IntN(4))
				} else {
					rg++
				}
			}
			sp = append(sp, s)
		}
		fn(uint64(d), ds, sp)
	}
}
