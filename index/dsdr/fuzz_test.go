package dsdr

import (
	"bytes"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// FuzzOpen: arbitrary bytes never panic Open, Get or Verify, and what Get
// returns never holds a domain id at or above N.
func FuzzOpen(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 6000)
	w.Add(1, roaring.BitmapOf(1, 2, 3))
	rb := roaring.New()
	rb.AddRange(0, 5000)
	rb.RunOptimize()
	w.Add(4, rb)
	w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("DSDR\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for i, ds := range r.Datasets() {
			if i == 8 {
				break
			}
			if bm, ok, err := r.Get(ds); err == nil && ok {
				if !bm.IsEmpty() && uint64(bm.Maximum()) >= r.Len() {
					t.Fatalf("dataset %d holds %d, N = %d", ds, bm.Maximum(), r.Len())
				}
				bm.ToArray()
			}
		}
		r.Verify()
	})
}

// FuzzTransposeRoundTrip: a membership derived from the input, transposed,
// written and read back, gives every (domain, dataset) pair it was given
// and no other.
func FuzzTransposeRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 0, 255, 9, 7}, uint8(40))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		member := make([]*roaring.Bitmap, n)
		for i := range member {
			member[i] = roaring.New()
		}
		for i := 0; i+1 < len(data) && n > 0; i += 2 {
			member[int(data[i])%int(n)].Add(uint32(data[i+1]) * 16777619)
		}
		tr := NewTransposer(uint64(n))
		var registry []uint32
		seen := map[uint32]bool{}
		for d, bm := range member {
			if err := tr.Add(uint64(d), bm); err != nil {
				t.Fatal(err)
			}
			bm.Iterate(func(x uint32) bool {
				if !seen[x] {
					seen[x] = true
					registry = append(registry, x)
				}
				return true
			})
		}
		var buf bytes.Buffer
		if err := tr.Write(&buf, registry); err != nil {
			t.Fatal(err)
		}
		r, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		pairs := 0
		for _, ds := range r.Datasets() {
			bm, ok, err := r.Get(ds)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			bm.Iterate(func(d uint32) bool {
				if !member[d].Contains(ds) {
					t.Fatalf("domain %d in dataset %d's bitmap, not in the membership", d, ds)
				}
				pairs++
				return true
			})
		}
		want := 0
		for _, bm := range member {
			want += int(bm.GetCardinality())
		}
		if pairs != want {
			t.Fatalf("%d pairs read back, %d given", pairs, want)
		}
	})
}
