package postings

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"testing"
)

// FuzzDecodePayload: arbitrary payload bytes never panic, and whatever
// decodes re-encodes to the same bytes (each version's encoding is
// canonical).
func FuzzDecodePayload(f *testing.F) {
	for _, v := range []uint32{2, 3, Version} {
		f.Add(appendPayload(nil, 1, []keySpans{{2, Spans{sp(1, 0, 5), sp(1, 1, 6), sp(4, 0, 7)}}, {5, Spans{spAt(3, 2, 1, 9)}}}, v))
	}
	f.Add([]byte{0, 0, 0, 0, 1, 0, 1, 1, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) >= 4 { // give the CRC a chance to match
			binary.LittleEndian.PutUint32(p, payloadCRC(1, p[4:]))
		}
		for _, version := range []uint32{2, 3, Version} {
			es, err := decodePayload(p, 1, version)
			// decoding one dataset checks the payload as a whole: it fails
			// exactly when decoding all fails, and keeps that dataset's entry
			for _, only := range []int64{0, 2, 5} {
				one, err1 := decodePayloadOf(p, 1, version, only)
				if (err == nil) != (err1 == nil) {
					t.Fatalf("version %d: decodePayloadOf(%d): %v, decodePayload: %v", version, only, err1, err)
				}
				var want []Entry
				for _, e := range es {
					if int64(e.DatasetID) == only {
						want = append(want, e)
					}
				}
				if err == nil && !reflect.DeepEqual(one, want) {
					t.Fatalf("version %d: decodePayloadOf(%d) = %+v, want %+v", version, only, one, want)
				}
			}
			if err != nil {
				continue
			}
			keys := make([]keySpans, len(es))
			for i, e := range es {
				keys[i] = keySpans{e.DatasetID, e.spans}
				if checkSpans(e.spans) != nil || e.spans.Rows() != e.URLCount || (i > 0 && es[i-1].DatasetID >= e.DatasetID) {
					t.Fatalf("version %d: decoded %+v breaks P1/P3/P4", version, es)
				}
				w, skip := e.spans.Window(e.URLCount/2, e.URLCount/3+1)
				if len(w) > 0 && skip >= uint64(w[0].Rows) {
					t.Fatalf("Window skip %d past its first span %v", skip, w[0])
				}
			}
			if got := appendPayload(nil, 1, keys, version); !bytes.Equal(got, p) {
				t.Fatalf("version %d: decoded %+v re-encodes to %x, not %x", version, es, got, p)
			}
		}
	})
}

// FuzzOpen: arbitrary idx and dat bytes never panic any Reader method.
func FuzzOpen(f *testing.F) {
	s := writeShard(f, corpus(10), 3, false)
	f.Add(s.idx, s.dat)
	for _, v := range []uint32{2, 3} {
		var ib, db bytes.Buffer
		w, _ := NewWriterConfig(&ib, &db, Config{SparseStride: 3, version: v})
		for _, p := range corpus(10) {
			w.Add(p.d, p.ds, p.spans)
		}
		w.Close()
		f.Add(ib.Bytes(), db.Bytes())
	}
	f.Add([]byte("PDX4"), []byte{})
	f.Add([]byte("PDX3"), []byte{})
	f.Add([]byte("PDX2"), []byte{})
	f.Fuzz(func(t *testing.T, idx, dat []byte) {
		for _, load := range []bool{false, true} {
			r, err := OpenWith(bytes.NewReader(idx), int64(len(idx)), bytes.NewReader(dat), int64(len(dat)), Options{LoadIndex: load})
			if err != nil {
				continue
			}
			for d := range uint64(4) {
				es, _ := r.DatasetsOf(d)
				for _, e := range es {
					r.Payload(e)
				}
				r.DatasetCountsOf(d)
				if e, ok, err := r.Lookup(d, 1); ok && err == nil {
					r.Payload(e)
				}
			}
			r.Verify()
		}
	})
}

// FuzzRoundTrip: postings derived from the input write, read and merge
// back exactly.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, stride uint8) {
		var ps []posting
		var d uint64
		var ds uint32
		for i := 0; i+3 <= len(data); i += 3 {
			if data[i]&1 == 1 {
				d += uint64(data[i]>>1) + 1
				ds = 0
			}
			ds += uint32(data[i+1]) + 1
			n := int(data[i+2]%4) + 1
			spans := make(Spans, n)
			for j := range spans {
				spans[j] = Span{FileID: uint32(data[i+2]) + uint32(j/2), RowGroup: uint32(j), Rows: uint32(data[i+1])*1000 + 1}
				if data[i]&2 != 0 {
					spans[j].First, spans[j].HasFirst = uint32(data[i])*100, true
				}
			}
			ps = append(ps, posting{d, ds, spans})
		}
		s := writeShard(t, ps, uint32(stride)+1, stride%2 == 0)
		r := s.open(t, Options{})
		for _, p := range ps {
			e, ok, err := r.Lookup(p.d, p.ds)
			if !ok || err != nil {
				t.Fatalf("Lookup(%d, %d) = %v, %v", p.d, p.ds, ok, err)
			}
			got, err := r.Payload(e)
			if err != nil || !slices.Equal(got, p.spans) {
				t.Fatalf("Payload = %v, %v", got, err)
			}
		}
		if err := r.Verify(); err != nil {
			t.Fatal(err)
		}
		var ib, db bytes.Buffer
		w := NewWriter(&ib, &db)
		if err := Merge(w, r, s.open(t, Options{LoadIndex: true})); err == nil && len(ps) > 0 {
			t.Fatal("merging a shard with itself did not report duplicate row groups")
		}
		// split between two sources by the input's bits (whole domains,
		// copied, or keys of one domain in both, merged): the merge is the
		// shard written whole
		var a, c []posting
		for i, p := range ps {
			if data[3*i]&4 != 0 {
				a = append(a, p)
			} else {
				c = append(c, p)
			}
		}
		ib.Reset()
		db.Reset()
		w = NewWriter(&ib, &db)
		if err := Merge(w, writeShard(t, a, uint32(stride)%5+1, false).open(t, Options{}), writeShard(t, c, 3, true).open(t, Options{})); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		whole := writeShard(t, ps, DefaultStride, false)
		if !bytes.Equal(ib.Bytes(), whole.idx) || !bytes.Equal(db.Bytes(), whole.dat) {
			t.Fatal("merging a split shard is not the shard written whole")
		}
	})
}
