package dsdr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/index/internal/indextest"
)

type add struct {
	ds      uint32
	domains []uint32
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
		if err := w.Add(a.ds, roaring.BitmapOf(a.domains...)); err != nil {
			t.Fatalf("Add(%d): %v", a.ds, err)
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
	dense := make([]uint32, 70000)
	for i := range dense {
		dense[i] = uint32(i)
	}
	cases := []struct {
		name string
		n    uint64
		adds []add
	}{
		{"every dataset gets back its domains", 10, []add{{1, []uint32{0, 5, 9}}, {2, []uint32{3}}, {7, []uint32{0, 1, 2, 3}}}},
		{"a dataset without domains reads as an empty set", 3, []add{{1, nil}, {4, []uint32{2}}}},
		{"a file with no datasets is valid", 0, nil},
		{"a file with datasets but no domains is valid", 0, []add{{0, nil}, {1, nil}}},
		{"a dataset holding 70,000 domains round-trips", 70000, []add{{3, dense}}},
		{"dataset ids near the top of uint32 round-trip", 2, []add{{0, []uint32{1}}, {1<<32 - 1, []uint32{0}}}},
	}
	for _, c := range cases {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s (streaming writer %v)", c.name, streaming), func(t *testing.T) {
				b := writeFile(t, c.n, c.adds, streaming)
				if !bytes.Equal(b, writeFile(t, c.n, c.adds, !streaming)) {
					t.Fatal("streaming and in-memory writers produced different bytes")
				}
				r, err := Open(bytes.NewReader(b), int64(len(b)))
				if err != nil {
					t.Fatal(err)
				}
				if r.Len() != c.n {
					t.Fatalf("Len = %d, want %d", r.Len(), c.n)
				}
				var ids []uint32
				for _, a := range c.adds {
					ids = append(ids, a.ds)
					bm, ok, err := r.Get(a.ds)
					if err != nil || !ok {
						t.Fatalf("Get(%d): %v %v", a.ds, ok, err)
					}
					if !bm.Equals(roaring.BitmapOf(a.domains...)) {
						t.Fatalf("Get(%d) = %v, want %v", a.ds, bm.ToArray(), a.domains)
					}
				}
				if got := r.Datasets(); fmt.Sprint(got) != fmt.Sprint(ids) && !(len(got) == 0 && len(ids) == 0) {
					t.Fatalf("Datasets = %v, want %v", got, ids)
				}
				if _, ok, err := r.Get(12345); ok || err != nil {
					t.Fatalf("Get of a dataset without an entry: %v %v", ok, err)
				}
				if err := r.Verify(); err != nil {
					t.Fatalf("Verify: %v", err)
				}
			})
		}
	}
}

func TestWriterRejects(t *testing.T) {
	cases := []struct {
		name string
		n    uint64
		adds []add
	}{
		{"a dataset id repeated is rejected", 3, []add{{1, nil}, {1, nil}}},
		{"dataset ids going backwards are rejected", 3, []add{{2, nil}, {1, nil}}},
		{"a domain id at N is rejected", 3, []add{{1, []uint32{3}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter(&bytes.Buffer{}, c.n)
			var err error
			for _, a := range c.adds {
				if err = w.Add(a.ds, roaring.BitmapOf(a.domains...)); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrInput) {
				t.Fatalf("err = %v, want ErrInput", err)
			}
		})
	}
	t.Run("more domains than Roaring's uint32 ids is rejected", func(t *testing.T) {
		if err := NewWriter(&bytes.Buffer{}, MaxDomains+1).Close(); !errors.Is(err, ErrInput) {
			t.Fatalf("err = %v, want ErrInput", err)
		}
	})
}

func TestOpenRejects(t *testing.T) {
	good := writeFile(t, 4, []add{{1, []uint32{1}}, {2, []uint32{2, 3}}}, false)
	cases := []struct {
		name string
		edit func([]byte) []byte
		want error
	}{
		{"version 2 is rejected as unknown", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 2); return b }, ErrVersion},
		{"a wrong magic is corrupt", func(b []byte) []byte { b[0] = 'X'; return b }, ErrCorrupt},
		{"a truncated file is corrupt", func(b []byte) []byte { return b[:len(b)-1] }, ErrCorrupt},
		{"a dataset count that does not fit the size is corrupt", func(b []byte) []byte { b[16]++; return b }, ErrCorrupt},
		{"a non-zero reserved field is corrupt", func(b []byte) []byte { b[20] = 1; return b }, ErrCorrupt},
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
	t.Run("dataset ids out of order in a well-checksummed index are corrupt", func(t *testing.T) {
		// a writer that skipped S1: built by hand, CRCs recomputed
		var buf bytes.Buffer
		w := NewWriter(&buf, 4)
		w.Add(2, roaring.BitmapOf(1))
		w.last = 0
		w.Add(1, roaring.BitmapOf(2))
		w.Close()
		_, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("err = %v, want ErrCorrupt", err)
		}
	})
	t.Run("a bitmap holding a domain id at N is corrupt", func(t *testing.T) {
		var buf bytes.Buffer
		w := NewWriter(&buf, 4)
		w.Add(1, roaring.BitmapOf(3))
		w.n = 3 // the header says 3 domains
		w.Close()
		r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Get(1); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Get err = %v, want ErrCorrupt", err)
		}
	})
}

// A flipped bit anywhere is caught: by Open, or by the Get of the bitmap
// it lands in; no Get ever returns a wrong set.
func TestBitFlipsNeverGiveWrongAnswers(t *testing.T) {
	adds := []add{{1, []uint32{1, 2}}, {3, nil}, {4, []uint32{5, 1000, 70000}}}
	good := writeFile(t, 70001, adds, false)
	want := map[uint32]*roaring.Bitmap{}
	for _, a := range adds {
		want[a.ds] = roaring.BitmapOf(a.domains...)
	}
	for i := range good {
		for bit := 0; bit < 8; bit++ {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			r, err := Open(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				continue
			}
			caught := false
			for ds, w := range want {
				bm, ok, err := r.Get(ds)
				if err != nil || !ok {
					caught = true
					continue
				}
				if !bm.Equals(w) {
					t.Fatalf("flip byte %d bit %d: Get(%d) = %v, want %v", i, bit, ds, bm.ToArray(), w.ToArray())
				}
			}
			if !caught {
				t.Fatalf("flip byte %d bit %d not detected", i, bit)
			}
		}
	}
}

func TestGetReadsOnce(t *testing.T) {
	var adds []add
	for i := range uint32(100) {
		adds = append(adds, add{i * 2, []uint32{i, i * 3}})
	}
	b := writeFile(t, 300, adds, false)
	cr := &indextest.CountingReaderAt{R: bytes.NewReader(b)}
	r, err := Open(cr, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if cr.Calls() != 2 {
		t.Fatalf("Open made %d reads, want 2 (header, index)", cr.Calls())
	}
	cr.Reset()
	for _, a := range adds {
		if _, _, err := r.Get(a.ds); err != nil {
			t.Fatal(err)
		}
	}
	if cr.Calls() != 100 {
		t.Fatalf("100 Gets made %d reads, want 100", cr.Calls())
	}
}

// The transpose of a domain → datasets membership equals the brute-force
// answer, dataset by dataset, on a realistic corpus.
func TestTransposeEqualsBruteForce(t *testing.T) {
	const domains, datasets = 20000, 16
	var member [][]uint32
	indextest.Corpus{Domains: domains, Datasets: datasets, Seed: 3}.Each(func(d uint64, ds []uint32, _ [][]indextest.Span) {
		member = append(member, slices.Clone(ds))
	})
	tr := NewTransposer(domains)
	for d, ds := range member {
		if err := tr.Add(uint64(d), roaring.BitmapOf(ds...)); err != nil {
			t.Fatal(err)
		}
	}
	registry := []uint32{datasets + 5} // a dataset with no domain
	for ds := range uint32(datasets) {
		registry = append(registry, ds)
	}
	var buf bytes.Buffer
	if err := tr.Write(&buf, registry); err != nil {
		t.Fatal(err)
	}
	r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Datasets()) != datasets+1 {
		t.Fatalf("%d entries, want %d", len(r.Datasets()), datasets+1)
	}
	for _, ds := range registry {
		want := roaring.New()
		for d, in := range member {
			for _, x := range in {
				if x == ds {
					want.Add(uint32(d))
				}
			}
		}
		got, ok, err := r.Get(ds)
		if err != nil || !ok || !got.Equals(want) {
			t.Fatalf("dataset %d: %d domains (%v %v), brute force %d", ds, got.GetCardinality(), ok, err, want.GetCardinality())
		}
	}
	t.Logf("%d domains, %d datasets: %d bytes, %.2f B/domain", domains, datasets, buf.Len(), float64(buf.Len())/domains)

	t.Run("ByDomain transposes it back, and its transpose is the same file", func(t *testing.T) {
		back, err := r.ByDomain()
		if err != nil {
			t.Fatal(err)
		}
		if back.Len() != domains {
			t.Fatalf("%d domains, want %d", back.Len(), domains)
		}
		for d, ds := range member {
			got, err := back.Get(uint64(d))
			if err != nil || !slices.Equal(got.ToArray(), roaring.BitmapOf(ds...).ToArray()) {
				t.Fatalf("domain %d: %v %v, want %v", d, got.ToArray(), err, ds)
			}
		}
		if _, err := back.Get(domains); !errors.Is(err, ErrInput) {
			t.Fatalf("a domain id past the end: %v, want ErrInput", err)
		}
		var again bytes.Buffer
		if err := Transpose(&again, back, registry); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
			t.Fatalf("the transpose of ByDomain differs from the file (%v)", err)
		}
	})

	t.Run("a membership naming a dataset the registry lacks is refused", func(t *testing.T) {
		if err := tr.Write(&bytes.Buffer{}, registry[2:]); !errors.Is(err, ErrInput) {
			t.Fatalf("err = %v, want ErrInput", err)
		}
	})
	t.Run("domain ids must increase", func(t *testing.T) {
		tr := NewTransposer(10)
		tr.Add(5, nil)
		if err := tr.Add(5, roaring.BitmapOf(1)); !errors.Is(err, ErrInput) {
			t.Fatalf("err = %v, want ErrInput", err)
		}
	})
}

// The set operations DHSI answers are Roaring's, on what Get returns: a
// check that decoding leaves nothing shared between two bitmaps.
func TestGetReturnsIndependentBitmaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var a, b []uint32
	for i := range uint32(5000) {
		if rng.IntN(2) == 0 {
			a = append(a, i)
		}
		if rng.IntN(3) == 0 {
			b = append(b, i)
		}
	}
	f := writeFile(t, 5000, []add{{1, a}, {2, b}}, false)
	r, _ := Open(bytes.NewReader(f), int64(len(f)))
	x, _, _ := r.Get(1)
	y, _, _ := r.Get(2)
	x.AndNot(y)
	again, _, _ := r.Get(1)
	if !again.Equals(roaring.BitmapOf(a...)) {
		t.Fatal("modifying a returned bitmap changed what Get returns")
	}
}
