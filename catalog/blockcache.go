package catalog

import (
	"context"
	"fmt"
	"github.com/dhsi/dhsi/internal/lru"
	"io"

	"github.com/dhsi/dhsi/store"
)

// blockSize is the unit of the remote read cache: a Parquet footer or a row
// group's column chunks are fetched as whole 256 KiB blocks.
const blockSize = 256 << 10

// blockCache is a bounded LRU of object blocks, keyed by object, ETag and
// block number (objects are immutable: M1). Its size limit holds whatever is
// read through it.
type blockCache = lru.Cache[blockKey, []byte]

type blockKey struct {
	key   string
	etag  store.ETag
	block int64
}

// DefaultBlockCacheBytes is the block cache of a server given no size.
const DefaultBlockCacheBytes = 256 << 20

// newBlockCache keeps up to limit bytes of blocks; limit <= 0 keeps none
// (every read is a ranged GET).
func newBlockCache(limit int64) *blockCache {
	return lru.New(limit, func(_ blockKey, data []byte) int64 { return int64(len(data)) }, nil)
}

// rangeReader reads an object through the block cache with ranged GETs.
type rangeReader struct {
	ctx   context.Context
	st    store.Store
	key   string
	size  int64
	etag  store.ETag
	cache *blockCache
	pos   int64
}

func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off+int64(n) < r.size {
		at := off + int64(n)
		b := at / blockSize
		data, err := r.block(b)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], data[at-b*blockSize:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (r *rangeReader) block(b int64) ([]byte, error) {
	k := blockKey{r.key, r.etag, b}
	if data, ok := r.cache.Get(k); ok {
		return data, nil
	}
	start := b * blockSize
	n := int64(blockSize)
	if start+n > r.size {
		n = r.size - start
	}
	rc, err := r.st.GetRange(r.ctx, r.key, start, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != n {
		return nil, fmt.Errorf("range %d+%d of %s returned %d bytes", start, n, r.key, len(data))
	}
	r.cache.Put(k, data)
	return data, nil
}

func (r *rangeReader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	return n, err
}

func (r *rangeReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		r.pos = off
	case io.SeekCurrent:
		r.pos += off
	case io.SeekEnd:
		r.pos = r.size + off
	}
	if r.pos < 0 {
		return 0, fmt.Errorf("seek before start")
	}
	return r.pos, nil
}
