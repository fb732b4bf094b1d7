// Package lru is the bounded least-recently-used map behind every cache of
// the server: the URL index's (remote blocks, open readers, decoded rows)
// and the domain records' (parsed shards).
package lru

import (
	"container/list"
	"sync"
)

// Cache is a bounded least-recently-used map. Each entry has a cost (bytes,
// or 1 to count entries).
//
// INVARIANT: used <= limit after every put, used being the sum of the held
// entries' costs. An entry costing more than the whole limit is not kept
// and evicts nothing; a limit <= 0 keeps nothing.
type Cache[K comparable, V any] struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	lru     *list.List // of *lruEntry[K, V], most recent first
	items   map[K]*list.Element
	costOf  func(K, V) int64
	evicted func(V) // called under the lock for each value evicted; may be nil
	// counters for metrics (Stats), under mu
	hits, misses, evictions int64
}

// Stats is what one cache did since the process started.
type Stats struct {
	Name                    string // block, row, reader
	Hits, Misses, Evictions int64
	Used, Limit             int64 // cost held and its bound (bytes; entries for readers)
	Entries                 int
}

// Stats reports the cache under name; a nil cache reports nothing done.
func (c *Cache[K, V]) Stats(name string) Stats {
	if c == nil {
		return Stats{Name: name}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Name: name, Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Used: c.used, Limit: c.limit, Entries: len(c.items)}
}

type lruEntry[K comparable, V any] struct {
	k    K
	v    V
	cost int64
}

// New returns a cache bounded by limit; costOf prices an entry, evicted (may
// be nil) is called under the cache's lock for each value evicted.
func New[K comparable, V any](limit int64, costOf func(K, V) int64, evicted func(V)) *Cache[K, V] {
	return &Cache[K, V]{limit: limit, lru: list.New(), items: map[K]*list.Element{}, costOf: costOf, evicted: evicted}
}

// Get returns the value under k and marks it used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		c.misses++ // a cache of limit 0 misses every time
		return zero, false
	}
	c.hits++
	c.lru.MoveToFront(e)
	return e.Value.(*lruEntry[K, V]).v, true
}

// Put keeps v under k unless k is held already, and returns what k holds
// afterwards: v (loaded false), or the value that got there first (loaded
// true), which callers racing to fill the same key then share.
func (c *Cache[K, V]) Put(k K, v V) (held V, loaded bool) {
	if c == nil || c.limit <= 0 {
		return v, false
	}
	cost := c.costOf(k, v)
	if cost > c.limit {
		return v, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		return e.Value.(*lruEntry[K, V]).v, true
	}
	c.items[k] = c.lru.PushFront(&lruEntry[K, V]{k: k, v: v, cost: cost})
	c.used += cost
	for c.used > c.limit {
		e := c.lru.Back()
		old := e.Value.(*lruEntry[K, V])
		c.lru.Remove(e)
		delete(c.items, old.k)
		c.used -= old.cost
		c.evictions++
		if c.evicted != nil {
			c.evicted(old.v)
		}
	}
	return v, false
}

// Remove drops k's entry, if held (not counted as an eviction).
func (c *Cache[K, V]) Remove(k K) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.lru.Remove(e)
		delete(c.items, k)
		c.used -= e.Value.(*lruEntry[K, V]).cost
	}
}

// Limit is the cache's bound; a nil cache's is 0.
func (c *Cache[K, V]) Limit() int64 {
	if c == nil {
		return 0
	}
	return c.limit
}
