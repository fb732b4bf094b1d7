package postings

import (
	"fmt"
	"iter"
	"slices"
)

// Merge writes into dst the union of srcs' postings, in key order: the
// incremental-update case, an older version's shard plus a new batch's.
// Keys present in several sources get one payload (design §6, fragmented
// postings are compacted): their spans concatenated in source order, then
// sorted by (file_id, row_group). The same row group under one key in two
// sources fails with ErrDuplicateSpan. Merge only adds to dst; the caller closes it.
//
// Memory is one idx block per source plus one key's spans; sources are
// scanned once, and each key costs O(len(srcs)) to pick, which is right for
// the handful of sources a compaction merges.
func Merge(dst *Writer, srcs ...*Reader) error {
	type cursor struct {
		src  *Reader
		next func() (Entry, error, bool)
		stop func()
		cur  Entry
		ok   bool
	}
	cs := make([]*cursor, 0, len(srcs))
	defer func() {
		for _, c := range cs {
			c.stop()
		}
	}()
	advance := func(c *cursor) error {
		e, err, ok := c.next()
		if err != nil {
			return fmt.Errorf("postings: merge: %w", err)
		}
		c.cur, c.ok = e, ok
		return nil
	}
	for _, s := range srcs {
		next, stop := iter.Pull2(s.All())
		c := &cursor{src: s, next: next, stop: stop}
		cs = append(cs, c)
		if err := advance(c); err != nil {
			return err
		}
	}
	var spans Spans
	for {
		var lo *cursor
		for _, c := range cs {
			if c.ok && (lo == nil || compareKey(c.cur.DomainID, c.cur.DatasetID, lo.cur.DomainID, lo.cur.DatasetID) < 0) {
				lo = c
			}
		}
		if lo == nil {
			return nil
		}
		d, ds := lo.cur.DomainID, lo.cur.DatasetID
		spans = spans[:0]
		from := 0 // number of sources contributing
		for _, c := range cs {
			if !c.ok || c.cur.DomainID != d || c.cur.DatasetID != ds {
				continue
			}
			p, err := c.src.Payload(c.cur)
			if err != nil {
				return fmt.Errorf("postings: merge: %w", err)
			}
			spans = append(spans, p...)
			from++
			if err := advance(c); err != nil {
				return err
			}
		}
		if from > 1 {
			slices.SortStableFunc(spans, spanLess)
			for i := 1; i < len(spans); i++ {
				if spanLess(spans[i-1], spans[i]) == 0 {
					return fmt.Errorf("%w: key (%d, %d), file %d row group %d", ErrDuplicateSpan, d, ds, spans[i].FileID, spans[i].RowGroup)
				}
			}
		}
		if err := dst.Add(d, ds, spans); err != nil {
			return fmt.Errorf("postings: merge: %w", err)
		}
	}
}
