package postings

import (
	"fmt"
	"slices"
)

// Merge writes into dst the union of srcs' postings, in key order: the
// incremental-update case, an older version's shard plus a new batch's.
// Keys present in several sources get one payload (design §6, fragmented
// postings are compacted): their spans concatenated in source order, then
// sorted by (file_id, row_group). The same row group under one key in two
// sources fails with ErrDuplicateSpan. Merge only adds to dst; the caller closes it.
//
// A domain only one source holds, in dst's format version, is copied as
// stored, its CRC checked (P5): an ingest adds a dataset to a fifth of a
// shard's domains, and decoding and encoding the others again was most of
// the merge (BenchmarkMerge). The copy is the bytes dst would write for it,
// since a payload has one encoding (decodePayloadOf).
//
// Memory is one idx block per source plus one domain's entries; sources
// are scanned once, and each domain costs O(len(srcs)) to pick, which is
// right for the handful of sources a compaction merges.
func Merge(dst *Writer, srcs ...*Reader) error {
	cs := make([]*domainCursor, len(srcs))
	for i, s := range srcs {
		cs[i] = &domainCursor{r: s}
		if err := cs[i].next(); err != nil {
			return fmt.Errorf("postings: merge: %w", err)
		}
	}
	var at []*domainCursor // the sources holding the domain, in source order
	for {
		var lo *domainCursor
		for _, c := range cs {
			if c.ok && (lo == nil || c.id < lo.id) {
				lo = c
			}
		}
		if lo == nil {
			return nil
		}
		d := lo.id
		at = at[:0]
		for _, c := range cs {
			if c.ok && c.id == d {
				at = append(at, c)
			}
		}
		if len(at) == 1 && at[0].r.version == dst.version {
			if err := dst.addPayload(d, at[0].payload); err != nil {
				return fmt.Errorf("postings: merge: %w", err)
			}
		} else if err := mergeDomain(dst, d, at); err != nil {
			return err
		}
		for _, c := range at {
			if err := c.next(); err != nil {
				return fmt.Errorf("postings: merge: %w", err)
			}
		}
	}
}

// mergeDomain decodes domain d's payloads in the sources at (in source
// order) and adds its keys to dst, a key held by several sources with
// their spans together.
func mergeDomain(dst *Writer, d uint64, at []*domainCursor) error {
	decoded := make([][]Entry, 0, len(at))
	var spans Spans
	for _, c := range at {
		es, err := decodePayload(c.payload, d, c.r.version)
		if err != nil {
			return fmt.Errorf("postings: merge: payload of domain %d: %w", d, err)
		}
		decoded = append(decoded, es)
	}
	for {
		// the least dataset left in any source (each source's are
		// increasing, P1)
		ds, found := uint32(0), false
		for _, es := range decoded {
			if len(es) > 0 && (!found || es[0].DatasetID < ds) {
				ds, found = es[0].DatasetID, true
			}
		}
		if !found {
			return nil
		}
		spans = spans[:0]
		from := 0
		for i, es := range decoded {
			if len(es) > 0 && es[0].DatasetID == ds {
				spans = append(spans, es[0].spans...)
				decoded[i] = es[1:]
				from++
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
