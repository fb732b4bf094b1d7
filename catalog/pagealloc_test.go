package catalog

import "testing"

func TestPageAllocatorRecyclesZeroedBuffers(t *testing.T) {
	a := &pageAllocator{}
	b := a.Allocate(5000)
	if len(b) != 5000 || cap(b) != 8192 {
		t.Fatalf("Allocate(5000): len %d cap %d, want 5000 and the 8 KiB class", len(b), cap(b))
	}
	for i := range b[:cap(b)] {
		b[:cap(b)][i] = 0xff
	}
	a.Free(b)
	if !poisonFreed || b[:cap(b)][4999] != 0xdb {
		t.Fatalf("a freed buffer is not poisoned in tests: a use after release could pass unseen")
	}
	// sync.Pool may or may not hand the same buffer back; either way it
	// must come back zeroed, up to its capacity (Reallocate grows into it)
	for range 100 {
		c := a.Allocate(6000)
		for i, v := range c[:cap(c)] {
			if v != 0 {
				t.Fatalf("recycled buffer has %#x at %d", v, i)
			}
		}
		a.Free(c)
	}
	if small := a.Allocate(100); len(small) != 100 {
		t.Fatalf("small allocation: len %d", len(small))
	}
	a.Free(make([]byte, 5000)) // not a class size: ignored
	a.Free(nil)
	g := a.Reallocate(20000, a.Allocate(5000))
	if len(g) != 20000 || cap(g) != 32768 {
		t.Fatalf("Reallocate: len %d cap %d", len(g), cap(g))
	}
	if huge := a.Allocate(64 << 20); len(huge) != 64<<20 {
		t.Fatalf("above the largest class: len %d", len(huge))
	}
}
