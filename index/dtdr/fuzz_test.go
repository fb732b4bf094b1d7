package dtdr

import (
	"bytes"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
)

// FuzzOpen: arbitrary bytes never panic Open, Get or Verify.
func FuzzOpen(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf, 3)
	w.Add(0, roaring.BitmapOf(1, 2, 3))
	rb := roaring.New()
	rb.AddRange(0, 5000)
	rb.RunOptimize()
	w.Add(2, rb)
	w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("DTDR\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, load := range []bool{false, true} {
			r, err := OpenWith(bytes.NewReader(b), int64(len(b)), Options{LoadIndex: load})
			if err != nil {
				continue
			}
			for id := uint64(0); id < min(r.Len(), 8); id++ {
				if bm, err := r.Get(id); err == nil {
					bm.GetCardinality()
					bm.ToArray()
				}
			}
			r.Verify()
		}
	})
}

// FuzzRoundTrip: bitmaps derived from the input round-trip exactly.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 0, 255, 255, 255, 255, 9}, uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		want := make([]*roaring.Bitmap, n)
		for i := range want {
			want[i] = roaring.New()
		}
		for i := 0; i+4 <= len(data) && n > 0; i += 5 {
			v := uint32(data[i])<<24 | uint32(data[i+1])<<16 | uint32(data[i+2])<<8 | uint32(data[i+3])
			d := 0
			if i+4 < len(data) {
				d = int(data[i+4]) % int(n)
			}
			want[d].Add(v)
			if v%7 == 0 {
				want[d].AddRange(uint64(v), min(uint64(v)+uint64(v%5000), 1<<32))
				want[d].RunOptimize()
			}
		}
		var buf bytes.Buffer
		w := NewWriter(&buf, uint64(n))
		for i, bm := range want {
			if err := w.Add(uint64(i), bm); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := OpenWith(bytes.NewReader(buf.Bytes()), int64(buf.Len()), Options{LoadIndex: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, bm := range want {
			got, err := r.Get(uint64(i))
			if err != nil || !got.Equals(bm) {
				t.Fatalf("Get(%d) = %v, %v", i, got, err)
			}
		}
	})
}
