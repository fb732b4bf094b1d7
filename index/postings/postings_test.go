package postings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/dhsi/dhsi/index/internal/binio"
	"github.com/dhsi/dhsi/index/internal/indextest"
)

type posting struct {
	d     uint64
	ds    uint32
	spans Spans
}

type shard struct{ idx, dat []byte }

func (s shard) open(t testing.TB, o Options) *Reader {
	t.Helper()
	r, err := OpenWith(bytes.NewReader(s.idx), int64(len(s.idx)), bytes.NewReader(s.dat), int64(len(s.dat)), o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return r
}

func writeShard(t testing.TB, ps []posting, stride uint32, streaming bool) shard {
	t.Helper()
	var f indextest.File
	var ib, db bytes.Buffer
	var w *Writer
	var err error
	if streaming {
		w, err = NewWriterConfig(&f, &db, Config{SparseStride: stride})
	} else {
		w, err = NewWriterConfig(&ib, &db, Config{SparseStride: stride})
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if err := w.Add(p.d, p.ds, p.spans); err != nil {
			t.Fatalf("Add(%d, %d): %v", p.d, p.ds, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if streaming {
		return shard{f.B, db.Bytes()}
	}
	return shard{ib.Bytes(), db.Bytes()}
}

// sp is a span whose first row is not recorded (as in version 2).
func sp(file, rowGroup, rows uint32) Span { return Span{FileID: file, RowGroup: rowGroup, Rows: rows} }

// spAt is a span starting at row first of its row group.
func spAt(file, rowGroup, rows, first uint32) Span {
	return Span{FileID: file, RowGroup: rowGroup, Rows: rows, First: first, HasFirst: true}
}

func corpus(domains int) []posting {
	var ps []posting
	indextest.Corpus{Domains: domains, Datasets: 64, Seed: 7}.Each(func(d uint64, ds []uint32, sp [][]indextest.Span) {
		for i, x := range ds {
			s := make(Spans, len(sp[i]))
			for j, v := range sp[i] {
				s[j] = Span(v)
			}
			ps = append(ps, posting{d, x, s})
		}
	})
	return ps
}

func TestWindow(t *testing.T) {
	s := Spans{sp(1, 0, 10), sp(1, 1, 5), sp(2, 0, 20)}
	cases := []struct {
		name          string
		offset, limit uint64
		want          Spans
		skip          uint64
	}{
		{"the first page inside the first span returns only it", 0, 5, s[:1], 0},
		{"a page ending exactly at a span boundary does not include the next span", 0, 10, s[:1], 0},
		{"a page crossing a boundary returns both spans", 8, 4, s[:2], 8},
		{"an offset at a span start skips nothing in it", 10, 1, s[1:2], 0},
		{"an offset inside the last span skips into it", 20, 100, s[2:], 5},
		{"a page covering everything returns all spans", 0, 35, s, 0},
		{"an offset at the end returns nothing", 35, 10, nil, 0},
		{"an offset past the end returns nothing", 1000, 10, nil, 0},
		{"a zero limit returns nothing", 3, 0, nil, 0},
		{"a huge limit does not overflow", 12, ^uint64(0), s[1:], 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, skip := s.Window(c.offset, c.limit)
			if !slices.Equal(got, c.want) || skip != c.skip {
				t.Fatalf("Window(%d, %d) = %v, %d; want %v, %d", c.offset, c.limit, got, skip, c.want, c.skip)
			}
		})
	}
	if got, _ := Spans(nil).Window(0, 10); got != nil {
		t.Fatal("empty spans returned a window")
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		keys []keySpans
	}{
		{"one span in file zero row group zero", []keySpans{{0, Spans{sp(0, 0, 1)}}}},
		{"consecutive row groups of one file", []keySpans{{4, Spans{sp(5, 0, 100), sp(5, 1, 100), sp(5, 2, 3)}}}},
		{"row groups with gaps across files", []keySpans{{4, Spans{sp(5, 7, 1), sp(5, 9, 2), sp(9, 0, 3), sp(70000, 3, 4)}}}},
		{"datasets whose files go down", []keySpans{{1, Spans{sp(900, 0, 2)}}, {2, Spans{sp(3, 1, 1), sp(3, 2, 5)}}, {1<<32 - 1, Spans{sp(0, 0, 1)}}}},
		{"the largest values of every field", []keySpans{{4, Spans{sp(0, 1<<32-2, 1<<32-1), sp(0, 1<<32-1, 1), sp(1<<32-1, 1<<32-1, 1<<32-1)}}}},
		{"first rows, known and not", []keySpans{{2, Spans{spAt(7, 0, 30, 16354), spAt(7, 1, 12, 0), sp(8, 0, 3)}}, {3, Spans{spAt(7, 2, 1, 0)}}}},
		{"the largest first row", []keySpans{{4, Spans{spAt(0, 0, 1, 1<<32-2), spAt(0, 1, 1<<32-1, 1)}}}},
	}
	for _, c := range cases {
		for _, version := range []uint32{2, Version} {
			t.Run(fmt.Sprintf("%s/v%d", c.name, version), func(t *testing.T) {
				p := appendPayload(nil, 3, c.keys, version)
				got, err := decodePayload(p, 3, version)
				if err != nil || len(got) != len(c.keys) {
					t.Fatalf("decode = %+v, %v; want %+v", got, err, c.keys)
				}
				for i, k := range c.keys {
					want := k.spans
					if version == 2 { // version 2 does not record first rows
						want = slices.Clone(want)
						for j := range want {
							want[j].First, want[j].HasFirst = 0, false
						}
					}
					if got[i].DatasetID != k.datasetID || got[i].URLCount != k.spans.Rows() || !slices.Equal(got[i].spans, want) {
						t.Fatalf("key %d = %+v, want %+v", i, got[i], want)
					}
				}
				if _, err := decodePayload(p, 4, version); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("payload read under another domain: err = %v, want ErrCorrupt", err)
				}
			})
		}
	}
}

// TestOlderShardsRead: shards of versions 2 (spans without first rows)
// and 3 (20-byte entries, span counts and row groups always written) read,
// and merge into a current shard.
func TestOlderShardsRead(t *testing.T) {
	for _, version := range []uint32{2, 3} {
		t.Run(fmt.Sprintf("version %d", version), func(t *testing.T) {
			ps := corpus(50)
			var ib, db bytes.Buffer
			w, err := NewWriterConfig(&ib, &db, Config{version: version})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if err := w.Add(p.d, p.ds, p.spans); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("PDX%d", version); string(ib.Bytes()[:4]) != want {
				t.Fatalf("magic %q, want %q", ib.Bytes()[:4], want)
			}
			for _, o := range []Options{{}, {LoadIndex: true}} {
				old := shard{ib.Bytes(), db.Bytes()}.open(t, o)
				if old.FormatVersion() != version {
					t.Fatalf("FormatVersion = %d", old.FormatVersion())
				}
				if err := old.Verify(); err != nil {
					t.Fatal(err)
				}
				for _, p := range ps {
					e, ok, err := old.Lookup(p.d, p.ds)
					if err != nil || !ok {
						t.Fatalf("Lookup(%d, %d) = %v, %v", p.d, p.ds, ok, err)
					}
					got, _ := old.Payload(e)
					for i, s := range got {
						want := p.spans[i]
						if version == 2 {
							want.First, want.HasFirst = 0, false
						}
						if s != want {
							t.Fatalf("span %d of (%d, %d) = %+v, want %+v", i, p.d, p.ds, s, want)
						}
					}
				}
			}
			// a newer batch (with first rows) merged with the old shard
			old := shard{ib.Bytes(), db.Bytes()}.open(t, Options{})
			newer := []posting{{ps[0].d, ps[0].ds, Spans{spAt(1<<31, 0, 5, 100)}}}
			var mi, md bytes.Buffer
			mw := NewWriter(&mi, &md)
			if err := Merge(mw, old, writeShard(t, newer, 0, false).open(t, Options{})); err != nil {
				t.Fatal(err)
			}
			if err := mw.Close(); err != nil {
				t.Fatal(err)
			}
			m := shard{mi.Bytes(), md.Bytes()}.open(t, Options{LoadIndex: true})
			e, _, _ := m.Lookup(ps[0].d, ps[0].ds)
			got, _ := m.Payload(e)
			want := append(slices.Clone(ps[0].spans), newer[0].spans[0])
			if version == 2 {
				for i := range len(want) - 1 {
					want[i].First, want[i].HasFirst = 0, false
				}
			}
			if !slices.Equal(got, want) || m.FormatVersion() != Version {
				t.Fatalf("merged spans %+v (version %d), want %+v", got, m.FormatVersion(), want)
			}
			// the same postings in version 4 take less room (version 2
			// had no first rows to write)
			if mi.Len() >= ib.Len() || version == 3 && md.Len() >= db.Len() {
				t.Errorf("version %d shard: idx %d dat %d bytes; merged into version %d: %d and %d", version, ib.Len(), db.Len(), Version, mi.Len(), md.Len())
			}
		})
	}
}

func TestWriterRejects(t *testing.T) {
	ok := Spans{sp(1, 1, 1)}
	cases := []struct {
		name string
		ps   []posting
	}{
		{"a key equal to the previous key is rejected", []posting{{1, 2, ok}, {1, 2, ok}}},
		{"a smaller dataset id of the same domain is rejected", []posting{{1, 2, ok}, {1, 1, ok}}},
		{"a smaller domain id is rejected", []posting{{2, 0, ok}, {1, 9, ok}}},
		{"a key without spans is rejected", []posting{{1, 1, nil}}},
		{"spans out of order are rejected", []posting{{1, 1, Spans{sp(2, 0, 1), sp(1, 0, 1)}}}},
		{"the same row group twice is rejected", []posting{{1, 1, Spans{sp(2, 0, 1), sp(2, 0, 1)}}}},
		{"a span with no rows is rejected", []posting{{1, 1, Spans{sp(2, 0, 0)}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter(&bytes.Buffer{}, &bytes.Buffer{})
			var err error
			for _, p := range c.ps {
				if err = w.Add(p.d, p.ds, p.spans); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrInput) {
				t.Fatalf("err = %v, want ErrInput", err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("a rejected Add broke the writer: %v", err)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	ps := corpus(300)
	edge := []posting{{0, 5, Spans{sp(1, 1, 1)}}, {1, 0, Spans{sp(1, 2, 2)}}, {1, 1, Spans{sp(2, 0, 3)}},
		{3, 7, Spans{sp(3, 0, 4)}}, {3, 8, Spans{sp(3, 1, 5)}}, {3, 9, Spans{sp(3, 2, 6)}}, {9, 1, Spans{sp(4, 0, 7)}}}
	cases := []struct {
		name   string
		ps     []posting
		stride uint32
	}{
		{"a generated shard round-trips with the default stride", ps, DefaultStride},
		{"a generated shard round-trips with blocks of seven", ps, 7},
		{"domains starting mid-block and at block starts are found with blocks of one", edge, 1},
		{"domains spanning block boundaries are found with blocks of two", edge, 2},
		{"an empty shard round-trips", nil, DefaultStride},
	}
	for _, c := range cases {
		for _, streaming := range []bool{false, true} {
			for _, load := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s (streaming writer %v, index loaded %v)", c.name, streaming, load), func(t *testing.T) {
					s := writeShard(t, c.ps, c.stride, streaming)
					if o := writeShard(t, c.ps, c.stride, !streaming); !bytes.Equal(o.idx, s.idx) || !bytes.Equal(o.dat, s.dat) {
						t.Fatal("streaming and in-memory writers produced different bytes")
					}
					r := s.open(t, Options{LoadIndex: load})
					checkShard(t, r, c.ps)
				})
			}
		}
	}
}

func checkShard(t *testing.T, r *Reader, ps []posting) {
	t.Helper()
	domains := map[uint64]bool{}
	for _, p := range ps {
		domains[p.d] = true
	}
	if r.Len() != uint64(len(domains)) {
		t.Fatalf("Len = %d domains, want %d", r.Len(), len(domains))
	}
	n := 0
	for _, err := range r.All() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(ps) {
		t.Fatalf("All yields %d keys, want %d", n, len(ps))
	}
	byDomain := map[uint64][]posting{}
	for _, p := range ps {
		byDomain[p.d] = append(byDomain[p.d], p)
		e, ok, err := r.Lookup(p.d, p.ds)
		if err != nil || !ok {
			t.Fatalf("Lookup(%d, %d) = %v, %v", p.d, p.ds, ok, err)
		}
		if e.URLCount != p.spans.Rows() {
			t.Fatalf("Lookup(%d, %d) url_count = %d, want %d", p.d, p.ds, e.URLCount, p.spans.Rows())
		}
		got, err := r.Payload(e)
		if err != nil || !slices.Equal(got, p.spans) {
			t.Fatalf("Payload(%d, %d) = %v, %v; want %v", p.d, p.ds, got, err, p.spans)
		}
		if _, ok, err := r.Lookup(p.d, p.ds+1); ok && !slices.ContainsFunc(ps, func(q posting) bool { return q.d == p.d && q.ds == p.ds+1 }) || err != nil {
			t.Fatalf("Lookup(%d, %d) of an absent key = %v, %v", p.d, p.ds+1, ok, err)
		}
	}
	for d := uint64(0); d < 320; d++ {
		es, err := r.DatasetsOf(d)
		if err != nil {
			t.Fatalf("DatasetsOf(%d): %v", d, err)
		}
		want := byDomain[d]
		if len(es) != len(want) {
			t.Fatalf("DatasetsOf(%d) has %d entries, want %d", d, len(es), len(want))
		}
		for i := range es {
			if es[i].DatasetID != want[i].ds || es[i].URLCount != want[i].spans.Rows() {
				t.Fatalf("DatasetsOf(%d)[%d] = %+v, want dataset %d", d, i, es[i], want[i].ds)
			}
		}
		// the counts alone: the same datasets and counts, no spans to hand out
		cs, err := r.DatasetCountsOf(d)
		if err != nil || len(cs) != len(es) {
			t.Fatalf("DatasetCountsOf(%d): %d entries, %v; DatasetsOf has %d", d, len(cs), err, len(es))
		}
		for i := range cs {
			if cs[i].DomainID != es[i].DomainID || cs[i].DatasetID != es[i].DatasetID || cs[i].URLCount != es[i].URLCount {
				t.Fatalf("DatasetCountsOf(%d)[%d] = %+v, DatasetsOf's %+v", d, i, cs[i], es[i])
			}
			if _, err := r.Payload(cs[i]); err == nil {
				t.Fatalf("Payload of DatasetCountsOf(%d)[%d] gave spans it did not read", d, i)
			}
		}
	}
	if _, ok, err := r.Lookup(^uint64(0), 0); ok || err != nil {
		t.Fatalf("Lookup after the last key = %v, %v", ok, err)
	}
	if err := r.Verify(); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestReadAtCalls(t *testing.T) {
	ps := corpus(2000)
	s := writeShard(t, ps, DefaultStride, false)
	cases := []struct {
		name                   string
		load                   bool
		openCalls, lookupCalls int64
	}{
		{"Open reads the header and the sparse index; a Lookup reads one block", false, 2, 1},
		{"with the index loaded Open reads it all and a Lookup reads nothing", true, 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ci := &indextest.CountingReaderAt{R: bytes.NewReader(s.idx)}
			cd := &indextest.CountingReaderAt{R: bytes.NewReader(s.dat)}
			r, err := OpenWith(ci, int64(len(s.idx)), cd, int64(len(s.dat)), Options{LoadIndex: c.load})
			if err != nil {
				t.Fatal(err)
			}
			if ci.Calls()+cd.Calls() != c.openCalls {
				t.Fatalf("Open made %d reads, want %d", ci.Calls()+cd.Calls(), c.openCalls)
			}
			ci.Reset()
			for _, p := range ps[:100] {
				e, _, err := r.Lookup(p.d, p.ds)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Payload(e); err != nil {
					t.Fatal(err)
				}
			}
			if ci.Calls() != 100*c.lookupCalls || cd.Calls() != 100 {
				t.Fatalf("100 lookups made %d idx and %d dat reads, want %d and 100", ci.Calls(), cd.Calls(), 100*c.lookupCalls)
			}
		})
	}
}

func TestOpenRejects(t *testing.T) {
	good := writeShard(t, corpus(20), 4, false)
	fixHeader := func(b []byte) { binary.LittleEndian.PutUint32(b[36:], binio.CRC(b[:36])) }
	cases := []struct {
		name string
		edit func(s shard) shard
		want error
	}{
		{"version 5 is rejected as unknown", func(s shard) shard {
			binary.LittleEndian.PutUint32(s.idx[4:], 5)
			fixHeader(s.idx)
			return s
		}, ErrVersion},
		{"magic PDX5 is rejected as unknown", func(s shard) shard {
			copy(s.idx, "PDX5")
			binary.LittleEndian.PutUint32(s.idx[4:], 5)
			fixHeader(s.idx)
			return s
		}, ErrVersion},
		{"version 3 under version 4's magic is rejected", func(s shard) shard {
			binary.LittleEndian.PutUint32(s.idx[4:], 3)
			fixHeader(s.idx)
			return s
		}, ErrVersion},
		{"a dat file of another size is corrupt", func(s shard) shard { s.dat = s.dat[:len(s.dat)-1]; return s }, ErrCorrupt},
		{"a truncated idx is corrupt", func(s shard) shard { s.idx = s.idx[:len(s.idx)-1]; return s }, ErrCorrupt},
		{"a zero stride is corrupt", func(s shard) shard {
			binary.LittleEndian.PutUint32(s.idx[24:], 0)
			fixHeader(s.idx)
			return s
		}, ErrCorrupt},
		{"a version 1 shard asks for a rebuild", func(s shard) shard { copy(s.idx, "PDX1"); return s }, ErrVersion},
		{"a header bit flip is corrupt", func(s shard) shard { s.idx[9] ^= 1; return s }, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.edit(shard{bytes.Clone(good.idx), bytes.Clone(good.dat)})
			_, err := Open(bytes.NewReader(s.idx), int64(len(s.idx)), bytes.NewReader(s.dat), int64(len(s.dat)))
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// Any flipped bit in idx or dat surfaces as an error by the time every
// key has been looked up and its payload read; none yields a wrong answer.
func TestBitFlipsAreDetected(t *testing.T) {
	ps := corpus(8)
	good := writeShard(t, ps, 3, false)
	for _, inIdx := range []bool{true, false} {
		n := len(good.dat)
		if inIdx {
			n = len(good.idx)
		}
		for i := 0; i < n; i++ {
			for bit := 0; bit < 8; bit++ {
				s := shard{bytes.Clone(good.idx), bytes.Clone(good.dat)}
				if inIdx {
					s.idx[i] ^= 1 << bit
				} else {
					s.dat[i] ^= 1 << bit
				}
				if !flipCaught(s, ps) {
					t.Fatalf("flip of bit %d of byte %d (idx %v) went unnoticed", bit, i, inIdx)
				}
			}
		}
	}
}

func flipCaught(s shard, ps []posting) bool {
	r, err := Open(bytes.NewReader(s.idx), int64(len(s.idx)), bytes.NewReader(s.dat), int64(len(s.dat)))
	if err != nil {
		return true
	}
	caught := false
	for _, p := range ps {
		e, ok, err := r.Lookup(p.d, p.ds)
		if err != nil || !ok {
			caught = caught || err != nil
			if !ok && err == nil {
				panic("a flipped bit made a key vanish without an error")
			}
			continue
		}
		sp, err := r.Payload(e)
		if err != nil {
			caught = true
			continue
		}
		if !slices.Equal(sp, p.spans) || e.URLCount != p.spans.Rows() {
			panic(fmt.Sprintf("wrong answer for (%d, %d)", p.d, p.ds))
		}
	}
	return caught
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name    string
		sources [][]posting
		want    []posting
		err     error
	}{
		{"disjoint sources interleave by key", [][]posting{
			{{1, 1, Spans{sp(1, 0, 1)}}, {3, 0, Spans{sp(1, 1, 2)}}},
			{{1, 2, Spans{sp(2, 0, 3)}}, {2, 9, Spans{sp(2, 1, 4)}}},
		}, []posting{{1, 1, Spans{sp(1, 0, 1)}}, {1, 2, Spans{sp(2, 0, 3)}}, {2, 9, Spans{sp(2, 1, 4)}}, {3, 0, Spans{sp(1, 1, 2)}}}, nil},
		{"an equal key gets one payload with its spans re-sorted", [][]posting{
			{{5, 5, Spans{sp(10, 0, 1), sp(12, 3, 2)}}},
			{{5, 5, Spans{sp(11, 0, 4), sp(12, 4, 8)}}},
		}, []posting{{5, 5, Spans{sp(10, 0, 1), sp(11, 0, 4), sp(12, 3, 2), sp(12, 4, 8)}}}, nil},
		{"three sources sharing a key all contribute", [][]posting{
			{{5, 5, Spans{sp(3, 0, 1)}}}, {{5, 5, Spans{sp(1, 0, 1)}}}, {{5, 5, Spans{sp(2, 0, 1)}}, {6, 0, Spans{sp(2, 1, 1)}}},
		}, []posting{{5, 5, Spans{sp(1, 0, 1), sp(2, 0, 1), sp(3, 0, 1)}}, {6, 0, Spans{sp(2, 1, 1)}}}, nil},
		{"an empty source leaves the other unchanged", [][]posting{nil, {{1, 1, Spans{sp(1, 0, 1)}}}},
			[]posting{{1, 1, Spans{sp(1, 0, 1)}}}, nil},
		{"the same row group under one key in two sources is an error", [][]posting{
			{{5, 5, Spans{sp(10, 0, 1)}}}, {{5, 5, Spans{sp(10, 0, 1)}}},
		}, nil, ErrDuplicateSpan},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var srcs []*Reader
			for i, ps := range c.sources {
				srcs = append(srcs, writeShard(t, ps, uint32(1+i), false).open(t, Options{}))
			}
			var ib, db bytes.Buffer
			w := NewWriter(&ib, &db)
			err := Merge(w, srcs...)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err = %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checkShard(t, shard{ib.Bytes(), db.Bytes()}.open(t, Options{}), c.want)
		})
	}
}

func TestMergeOfSplitCorpusEqualsCorpus(t *testing.T) {
	ps := corpus(500)
	// Split every key's spans between an "old" and a "new" source, the
	// incremental-update case.
	var old, fresh []posting
	for i, p := range ps {
		k := len(p.spans) / 2
		if i%3 == 0 {
			k = len(p.spans)
		}
		if k > 0 {
			old = append(old, posting{p.d, p.ds, p.spans[:k]})
		}
		if k < len(p.spans) {
			fresh = append(fresh, posting{p.d, p.ds, p.spans[k:]})
		}
	}
	var ib, db bytes.Buffer
	w := NewWriter(&ib, &db)
	if err := Merge(w, writeShard(t, old, 5, false).open(t, Options{}), writeShard(t, fresh, 256, true).open(t, Options{LoadIndex: true})); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	whole := writeShard(t, ps, DefaultStride, false)
	if !bytes.Equal(ib.Bytes(), whole.idx) || !bytes.Equal(db.Bytes(), whole.dat) {
		t.Fatal("merging the halves did not reproduce the whole shard byte for byte")
	}
}

// TestMergeCopiesDomainsOfOneSource: a domain only one source holds is
// copied as stored, one in several is merged, a source of an older version
// is encoded again; whichever way, the result is the shard written whole,
// byte for byte.
func TestMergeCopiesDomainsOfOneSource(t *testing.T) {
	ps := corpus(2000)
	for _, version := range []uint32{3, Version} {
		t.Run(fmt.Sprintf("old source in version %d", version), func(t *testing.T) {
			// by domain: a third only in old, a third only in fresh, a
			// third with its keys split between them
			var old, fresh []posting
			for _, p := range ps {
				switch p.d % 3 {
				case 0:
					old = append(old, p)
				case 1:
					fresh = append(fresh, p)
				default:
					if p.ds%2 == 0 {
						old = append(old, p)
					} else {
						fresh = append(fresh, p)
					}
				}
			}
			var oi, od bytes.Buffer
			ow, err := NewWriterConfig(&oi, &od, Config{SparseStride: 7, version: version})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range old {
				if err := ow.Add(p.d, p.ds, p.spans); err != nil {
					t.Fatal(err)
				}
			}
			if err := ow.Close(); err != nil {
				t.Fatal(err)
			}
			var ib, db bytes.Buffer
			w := NewWriter(&ib, &db)
			if err := Merge(w, shard{oi.Bytes(), od.Bytes()}.open(t, Options{}), writeShard(t, fresh, 300, true).open(t, Options{})); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			whole := writeShard(t, ps, DefaultStride, false)
			if !bytes.Equal(ib.Bytes(), whole.idx) || !bytes.Equal(db.Bytes(), whole.dat) {
				t.Fatal("the merge is not the shard written whole, byte for byte")
			}
		})
	}
	// a copied payload that fails its CRC fails the merge
	s := writeShard(t, ps[:50], 4, false)
	s.dat = slices.Clone(s.dat)
	s.dat[len(s.dat)-1] ^= 1
	var ib, db bytes.Buffer
	if err := Merge(NewWriter(&ib, &db), s.open(t, Options{})); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("merging a shard with a flipped payload bit: %v, want ErrCorrupt", err)
	}
}

func TestShardOf(t *testing.T) {
	cases := []struct {
		name   string
		domain uint64
		shards uint32
		want   uint32
	}{
		{"one shard holds everything", 12345, 1, 0},
		{"the shard is the domain id modulo the shard count", 2049, 1024, 1},
		{"the largest domain id maps inside the range", ^uint64(0), 1000, uint32(^uint64(0) % 1000)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ShardOf(c.domain, c.shards); got != c.want {
				t.Fatalf("ShardOf = %d, want %d", got, c.want)
			}
		})
	}
}
