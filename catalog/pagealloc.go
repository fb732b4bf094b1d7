package catalog

import (
	"math/bits"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
)

// pageAllocator recycles the buffers arrow-go allocates to read a lake
// page (the compressed page, the decompressed page, level and bit-width
// scratch). With Go's allocator each first page that misses the row cache
// allocated ~0.3 MB that became garbage at once, and collecting it cost
// about half again the query's own CPU time.
//
// Invariants:
//   - A buffer is returned to a pool only by Free, which arrow-go calls when
//     a column chunk reader is closed (readColumn's release): nothing may
//     still point into it then. Values that alias a page (PLAIN byte arrays)
//     are copied out before release.
//   - Allocate hands out zeroed memory, like Go's allocator: arrow-go may
//     rely on it, and a recycled buffer must not leak another query's page.
//   - Pools are per power-of-two size class, minPooledClass to
//     maxPooledClass; other sizes are plain make and are never pooled. A
//     sync.Pool is emptied by the garbage collector, so idle memory is
//     bounded by what two GC cycles leave.
type pageAllocator struct {
	pools [maxPooledClass + 1]sync.Pool // of *[]byte, by log2(cap)
}

const (
	minPooledClass = 12 // 4 KiB
	maxPooledClass = 24 // 16 MiB: a page is well under it (docs/format/lake.md)
)

var lakePageAllocator = &pageAllocator{}

// sizeClass is the smallest c with 1<<c >= size.
func sizeClass(size int) int {
	if size <= 1 {
		return 0
	}
	return bits.Len(uint(size - 1))
}

func (a *pageAllocator) Allocate(size int) []byte {
	c := sizeClass(size)
	if c < minPooledClass || c > maxPooledClass {
		return make([]byte, size)
	}
	if p, ok := a.pools[c].Get().(*[]byte); ok {
		b := (*p)[:cap(*p)]
		clear(b)
		return b[:size]
	}
	return make([]byte, size, 1<<c)
}

func (a *pageAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size] // the tail is zero or this owner's own bytes
	}
	// b is not freed: values read from the page it held may still point
	// into it (arrow-go grows a page buffer for the next page while the
	// caller holds the last one's values); the garbage collector takes it
	nb := a.Allocate(size)
	copy(nb, b)
	return nb
}

func (a *pageAllocator) Free(b []byte) {
	c := bits.Len(uint(cap(b))) - 1
	if c < minPooledClass || c > maxPooledClass || cap(b) != 1<<c {
		return
	}
	if poisonFreed {
		// a value still pointing into a freed page then reads 0xdb bytes
		// at once, not only when another query happens to reuse it
		b = b[:cap(b)]
		for i := range b {
			b[i] = 0xdb
		}
	}
	b = b[:0]
	a.pools[c].Put(&b)
}

// poisonFreed is set in test binaries (this package's and every package
// whose tests read lake files), so that a use after release fails tests.
var poisonFreed = testing.Testing()

var _ memory.Allocator = (*pageAllocator)(nil)

// lakeReadProps are the reader properties of lake files: page buffers from
// lakePageAllocator, and a stream that reads only the pages a query seeks
// to. arrow-go's default copies a whole column chunk (~150 KB of URLs)
// into a fresh buffer for every column a query opens.
func lakeReadProps() *parquet.ReaderProperties {
	p := parquet.NewReaderProperties(lakePageAllocator)
	p.BufferedStreamEnabled = true
	p.BufferSize = 16 << 10 // arrow-go peeks 16 KB for a page header: a smaller buffer is regrown at once
	return p
}
