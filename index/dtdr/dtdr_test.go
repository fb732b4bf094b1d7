package dtdr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/index/internal/indextest"
)

type add struct {
	id  uint64
	set []uint32
}

func writeFile(t testing.TB, n uint64, adds []add, streaming bool) []byte {
	t.Helper()
	var f indextest.File
	var buf bytes.Buffer
	var w *Writer
	if streaming {
		w = NewWriter(&f, n)
	} else {
		w = NewWriter(&buf, n)
	}
	for _, a := range adds {
		if err := w.Add(a.id, roaring.BitmapOf(a.set...)); err != nil {
			t.Fatalf("Add(%d): %v", a.id, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if streaming {
		return f.B
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	many := make([]uint32, 64)
	for i := range many {
		many[i] = uint32(i)
	}
	cases := []struct {
		name string
		n    uint64
		adds []add
	}{
		{"every domain gets back its datasets", 3, []add{{0, []uint32{1, 5}}, {1, []uint32{2}}, {2, []uint32{0, 1, 2, 3}}}},
		{"a skipped domain reads as an empty set", 3, []add{{0, []uint32{1}}, {2, []uint32{9}}}},
		{"domains after the last Add read as empty sets", 5, []add{{1, []uint32{7}}}},
		{"an explicitly empty bitmap is allowed", 2, []add{{0, nil}, {1, []uint32{3}}}},
		{"a file with no domains is valid", 0, nil},
		{"a domain in all 64 datasets round-trips", 1, []add{{0, many}}},
		{"dataset ids near the top of uint32 round-trip", 2, []add{{0, []uint32{0, 1 << 31, 1<<32 - 1}}}},
	}
	for _, c := range cases {
		for _, streaming := range []bool{false, true} {
			for _, load := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s (streaming writer %v, index loaded %v)", c.name, streaming, load), func(t *testing.T) {
					b := writeFile(t, c.n, c.adds, streaming)
					if !bytes.Equal(b, writeFile(t, c.n, c.adds, !streaming)) {
						t.Fatal("streaming and in-memory writers produced different bytes")
					}
					r, err := OpenWith(bytes.NewReader(b), int64(len(b)), Options{LoadIndex: load})
					if err != nil {
						t.Fatal(err)
					}
					if r.Len() != c.n {
						t.Fatalf("Len = %d, want %d", r.Len(), c.n)
					}
					want := make([][]uint32, c.n)
					for _, a := range c.adds {
						want[a.id] = a.set
					}
					for id := uint64(0); id < c.n; id++ {
						bm, err := r.Get(id)
						if err != nil {
							t.Fatalf("Get(%d): %v", id, err)
						}
						if !bm.Equals(roaring.BitmapOf(want[id]...)) {
							t.Fatalf("Get(%d) = %v, want %v", id, bm.ToArray(), want[id])
						}
					}
					if _, err := r.Get(c.n); !errors.Is(err, ErrOutOfRange) {
						t.Fatalf("Get(N) err = %v, want ErrOutOfRange", err)
					}
					if err := r.Verify(); err != nil {
						t.Fatalf("Verify: %v", err)
					}
				})
			}
		}
	}
}

func TestWriterRejects(t *testing.T) {
	cases := []struct {
		name string
		n    uint64
		ids  []uint64
	}{
		{"an id repeated is rejected", 3, []uint64{1, 1}},
		{"ids going backwards are rejected", 3, []uint64{2, 1}},
		{"an id at N is rejected", 3, []uint64{3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter(&bytes.Buffer{}, c.n)
			var err error
			for _, id := range c.ids {
				if err = w.Add(id, roaring.BitmapOf(1)); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrInput) {
				t.Fatalf("err = %v, want ErrInput", err)
			}
		})
	}
}

func TestOpenRejects(t *testing.T) {
	good := writeFile(t, 2, []add{{0, []uint32{1}}, {1, []uint32{2}}}, false)
	cases := []struct {
		name string
		edit func([]byte) []byte
		want error
	}{
		{"version 2 is rejected as unknown", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 2); return b }, ErrVersion},
		{"a wrong magic is corrupt", func(b []byte) []byte { b[0] = 'X'; return b }, ErrCorrupt},
		{"a truncated file is corrupt", func(b []byte) []byte { return b[:len(b)-1] }, ErrCorrupt},
		{"a domain count that does not fit the size is corrupt", func(b []byte) []byte { b[8]++; return b }, ErrCorrupt},
		{"an empty file is corrupt", func(b []byte) []byte { return nil }, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(bytes.Clone(good))
			_, err := Open(bytes.NewReader(b), int64(len(b)))
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// A flipped bit anywhere is caught with the index loaded, and without it
// no Get ever returns a wrong set: it errors or answers correctly.
func TestBitFlipsNeverGiveWrongAnswers(t *testing.T) {
	adds := []add{{0, []uint32{1, 2}}, {1, nil}, {2, []uint32{5, 1000, 70000}}}
	good := writeFile(t, 3, adds, false)
	want := []*roaring.Bitmap{roaring.BitmapOf(1, 2), roaring.New(), roaring.BitmapOf(5, 1000, 70000)}
	for i := range good {
		for bit := 0; bit < 8; bit++ {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			caught := false
			if r, err := OpenWith(bytes.NewReader(b), int64(len(b)), Options{LoadIndex: true}); err != nil {
				caught = true
			} else {
				for id := range uint64(3) {
					if _, err := r.Get(id); err != nil {
						caught = true
					}
				}
			}
			if !caught {
				t.Fatalf("flip byte %d bit %d not detected with the index loaded", i, bit)
			}
			r, err := Open(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				continue
			}
			for id := range uint64(3) {
				if bm, err := r.Get(id); err == nil && !bm.Equals(want[id]) {
					t.Fatalf("flip byte %d bit %d: Get(%d) = %v, want %v", i, bit, id, bm.ToArray(), want[id].ToArray())
				}
			}
		}
	}
}

func TestGetReadAtCalls(t *testing.T) {
	var adds []add
	for i := range uint64(100) {
		adds = append(adds, add{i, []uint32{uint32(i), uint32(i * 3)}})
	}
	b := writeFile(t, 100, adds, false)
	cases := []struct {
		name        string
		load        bool
		openCalls   int64
		callsPerGet int64
	}{
		{"without the index a Get reads the entry, then the bitmap", false, 1, 2},
		{"with the index loaded a Get reads only the bitmap", true, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cr := &indextest.CountingReaderAt{R: bytes.NewReader(b)}
			r, err := OpenWith(cr, int64(len(b)), Options{LoadIndex: c.load})
			if err != nil {
				t.Fatal(err)
			}
			if cr.Calls() != c.openCalls {
				t.Fatalf("Open made %d reads, want %d", cr.Calls(), c.openCalls)
			}
			cr.Reset()
			for id := range uint64(100) {
				if _, err := r.Get(id); err != nil {
					t.Fatal(err)
				}
			}
			if cr.Calls() != 100*c.callsPerGet {
				t.Fatalf("100 Gets made %d reads, want %d", cr.Calls(), 100*c.callsPerGet)
			}
		})
	}
}
