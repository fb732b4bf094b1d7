package catalog

import (
	"container/list"
	"sync"
)

// rowCache keeps decoded runs of URL rows — one domain's rows in one row
// group of one lake file — so a hot domain's pages are served without
// decompressing and decoding the row group again. Lake files are immutable
// (M1), so an entry never goes stale; it is keyed by the file's key, the
// row group and the domain.
//
// INVARIANT: bytes <= limit after every insert (the sum of the entries'
// estimated sizes); a run larger than the whole limit is not kept.
type rowCache struct {
	mu    sync.Mutex
	limit int64
	bytes int64
	lru   *list.List // of *rowRun, most recent first
	items map[runKey]*list.Element
}

type runKey struct {
	file   string
	rg     int
	domain string
}

type rowRun struct {
	key  runKey
	rows []URLRow // shared with readers: never modified
	size int64
}

// maxCachedRun is the longest run kept: a longer run is decoded per page
// (only its rows of the page), which is cheaper than decoding it whole.
const maxCachedRun = 16384

func newRowCache(limit int64) *rowCache {
	return &rowCache{limit: limit, lru: list.New(), items: map[runKey]*list.Element{}}
}

func (c *rowCache) get(k runKey) ([]URLRow, bool) {
	if c == nil || c.limit <= 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*rowRun).rows, true
}

func (c *rowCache) put(k runKey, rows []URLRow) {
	if c == nil || c.limit <= 0 {
		return
	}
	size := int64(len(k.file)+len(k.domain)) + 64
	for i := range rows {
		size += int64(len(rows[i].URL)+len(rows[i].Raw)) + urlRowOverhead
	}
	if size > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return // decoded concurrently
	}
	c.items[k] = c.lru.PushFront(&rowRun{key: k, rows: rows, size: size})
	c.bytes += size
	for c.bytes > c.limit {
		e := c.lru.Back()
		old := e.Value.(*rowRun)
		c.lru.Remove(e)
		delete(c.items, old.key)
		c.bytes -= old.size
	}
}

// urlRowOverhead is a URLRow's size beside its strings' bytes: two string
// headers, an id, a time.Time and a flag.
const urlRowOverhead = 72
