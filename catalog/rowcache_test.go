package catalog

import (
	"strings"
	"testing"
)

func TestRowCacheStaysWithinItsLimit(t *testing.T) {
	run := func(n int) []URLRow {
		rows := make([]URLRow, n)
		for i := range rows {
			rows[i].URL = "https://example.com/" + strings.Repeat("x", 28) // 48 bytes
		}
		return rows
	}
	c := newRowCache(100 << 10)
	for i := 0; i < 200; i++ {
		c.Put(runKey{"urls/f.parquet", i, "example.com"}, run(50))
		if st := c.Stats("row"); st.Used > st.Limit {
			t.Fatalf("after %d puts the cache holds %d bytes, over its limit %d", i+1, st.Used, st.Limit)
		}
	}
	if _, ok := c.Get(runKey{"urls/f.parquet", 0, "example.com"}); ok {
		t.Error("the oldest run survived 200 puts into a cache that holds about 16")
	}
	if rows, ok := c.Get(runKey{"urls/f.parquet", 199, "example.com"}); !ok || len(rows) != 50 {
		t.Errorf("the newest run: %d rows, %v", len(rows), ok)
	}
	// a run larger than the whole cache is not kept, and evicts nothing
	before := c.Stats("row").Entries
	c.Put(runKey{"urls/g.parquet", 0, "big.example"}, run(5000))
	if _, ok := c.Get(runKey{"urls/g.parquet", 0, "big.example"}); ok || c.Stats("row").Entries != before {
		t.Errorf("an oversized run was cached (or evicted others): %d -> %d entries", before, c.Stats("row").Entries)
	}
	// off
	off := newRowCache(0)
	off.Put(runKey{"a", 0, "b"}, run(1))
	if _, ok := off.Get(runKey{"a", 0, "b"}); ok {
		t.Error("a zero-size cache kept a run")
	}
}
