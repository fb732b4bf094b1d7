// Package postings owns the postings of one index version: for each
// (domain_id, dataset_id) pair, the spans of (parquet file, row group, rows)
// that hold its URLs, and the exact URL count. Postings are sharded by
// ShardOf; each shard is a pair of files, postings.idx (one fixed-size entry
// per domain, for binary search) and postings.dat (one payload per domain:
// its datasets, counts and spans). The layout is in docs/format/postings.md.
//
// Invariants, relied on by Reader and Merge:
//
//	P1. Entries are strictly increasing by domain_id, and a payload's
//	    datasets strictly increasing by dataset_id: a key (domain_id,
//	    dataset_id) appears at most once and one domain's keys are together.
//	P2. Payloads are contiguous in entry order: the first starts at 0, each
//	    starts where the previous ended, the last ends at dat_size.
//	P3. One key's spans are strictly increasing by (file_id, row_group):
//	    the order URLs are served in. Every span has rows >= 1, and a span
//	    whose first row is known ends within 2^32 rows (first + rows).
//	P4. A key's url_count == the sum of its spans' rows.
//	P5. Every idx block of `stride` entries and every payload carries a
//	    CRC-32C; a payload's CRC also covers its domain_id, so a payload
//	    read through the wrong entry fails its check instead of answering.
//
// A *Reader is immutable and safe for concurrent use.
package postings

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// Format constants; see docs/format/postings.md. Writers write Version;
// readers read it, version 3 (magic "PDX3": 20-byte entries, a byte more
// per key for its span count and row group) and version 2 (magic "PDX2",
// whose spans do not record their first row).
const (
	Magic         = "PDX4"
	Version       = 4
	magicV3       = "PDX3"
	magicV2       = "PDX2"
	headerSize    = 40
	entrySize     = 12 // domain_id u64, payload_offset u32 (version 4)
	sparseSize    = 16 // domain_id u64, block CRC-32C u32, block's first payload_offset u32 (version 4)
	entrySizeV3   = 20 // domain_id u64, payload_offset u64, payload_len u32 (versions 2, 3)
	sparseSizeV3  = 12 // domain_id u64, block CRC-32C u32 (versions 2, 3)
	minPayload    = 9  // CRC, dataset count, one dataset of one span
	DefaultStride = 256
	maxStride     = 1 << 16
	maxEntries    = 1 << 40
	// maxDat bounds a version-4 dat: payload offsets are 32 bits
	maxDat = 1<<32 - 1
)

// layoutOf is the idx entry and sparse entry sizes of a version.
func layoutOf(version uint32) (entry, sparse int) {
	if version >= 4 {
		return entrySize, sparseSize
	}
	return entrySizeV3, sparseSizeV3
}

// Sentinel errors, checked with errors.Is.
var (
	// ErrCorrupt marks bytes that break P1-P5 or fail a checksum.
	ErrCorrupt = errors.New("postings: corrupt postings")
	// ErrVersion marks a version this reader does not know.
	ErrVersion = errors.New("postings: unsupported version")
	// ErrInput marks writer input breaking P1 or P3.
	ErrInput = errors.New("postings: invalid input")
	// ErrDuplicateSpan marks a Merge whose sources list the same
	// (file_id, row_group) for one key: the same row group was indexed
	// twice, and summing or dropping either would be a guess.
	ErrDuplicateSpan = errors.New("postings: same row group in two sources")
)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// ShardOf is the shard holding domainID's postings when a version has
// `shards` shards (recorded by the caller, e.g. in the manifest). shards
// must be at least 1.
func ShardOf(domainID uint64, shards uint32) uint32 { return uint32(domainID % uint64(shards)) }

// Span is a run of one key's rows inside one Parquet row group.
type Span struct {
	FileID   uint32 // resolved through files.tsv
	RowGroup uint32 // index of the row group within the file
	Rows     uint32 // rows of this key in the row group, >= 1
	// First is the row of the row group where the run starts, when
	// HasFirst. A reader then goes straight to it; without it (version 2
	// postings, or lake files that carry a domain column) the reader
	// finds the run by scanning the group's domain column.
	First    uint32
	HasFirst bool
}

// Spans are one key's spans in serving order (P3).
type Spans []Span

// Rows is the total number of rows.
func (s Spans) Rows() uint64 {
	var n uint64
	for _, sp := range s {
		n += uint64(sp.Rows)
	}
	return n
}

// Window returns the spans covering rows [offset, offset+limit) of s and
// how many rows of the first returned span precede offset. It returns no
// spans when limit is 0 or offset is past the end. A server paging URLs
// reads only the returned row groups, skips `skip` rows of the first and
// stops after `limit` rows.
func (s Spans) Window(offset, limit uint64) (w Spans, skip uint64) {
	if limit == 0 {
		return nil, 0
	}
	end := offset + limit
	if end < offset { // saturate instead of wrapping
		end = ^uint64(0)
	}
	var start uint64 // rows before s[i]
	i := 0
	for ; i < len(s); i++ {
		if offset < start+uint64(s[i].Rows) {
			break
		}
		start += uint64(s[i].Rows)
	}
	if i == len(s) {
		return nil, 0
	}
	j, pos := i, start
	for j < len(s) && pos < end {
		pos += uint64(s[j].Rows)
		j++
	}
	return s[i:j], offset - start
}

// Entry is one key's postings as a reader returns them: the key, its exact
// URL count and (for Payload) its spans, already checked against the
// payload's CRC.
type Entry struct {
	DomainID  uint64
	DatasetID uint32
	URLCount  uint64
	spans     Spans
}

func compareKey(d1 uint64, s1 uint32, d2 uint64, s2 uint32) int {
	if c := cmp.Compare(d1, d2); c != 0 {
		return c
	}
	return cmp.Compare(s1, s2)
}

func spanLess(a, b Span) int {
	if c := cmp.Compare(a.FileID, b.FileID); c != 0 {
		return c
	}
	return cmp.Compare(a.RowGroup, b.RowGroup)
}

// idxEntry is one postings.idx entry: a domain and where its payload is.
// A version-4 entry stores only the offset; its length is where the next
// payload starts (P2), read from the next entry or the sparse index.
type idxEntry struct {
	DomainID      uint64
	PayloadOffset uint64
	PayloadLen    uint32
}

// appendEntry appends e in the entry layout of version.
func appendEntry(b []byte, e idxEntry, version uint32) []byte {
	le := binary.LittleEndian
	b = le.AppendUint64(b, e.DomainID)
	if version >= 4 {
		return le.AppendUint32(b, uint32(e.PayloadOffset))
	}
	b = le.AppendUint64(b, e.PayloadOffset)
	return le.AppendUint32(b, e.PayloadLen)
}

// getEntryV3 decodes a version-2 or -3 entry.
func getEntryV3(b []byte) idxEntry {
	le := binary.LittleEndian
	return idxEntry{DomainID: le.Uint64(b[0:]), PayloadOffset: le.Uint64(b[8:]), PayloadLen: le.Uint32(b[16:])}
}

func entryKey(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// checkSpans enforces P3 on writer input.
func checkSpans(spans []Span) error {
	if len(spans) == 0 {
		return errors.New("no spans")
	}
	for i, s := range spans {
		if s.Rows == 0 {
			return fmt.Errorf("span %d has no rows", i)
		}
		if s.HasFirst && uint64(s.First)+uint64(s.Rows) > 1<<32 {
			return fmt.Errorf("span %d runs past row 2^32 of its row group", i)
		}
		if i > 0 && spanLess(spans[i-1], s) >= 0 {
			return fmt.Errorf("span %d (file %d, row group %d) is not after span %d (file %d, row group %d)",
				i, s.FileID, s.RowGroup, i-1, spans[i-1].FileID, spans[i-1].RowGroup)
		}
	}
	return nil
}

// keySpans is one dataset of a domain payload.
type keySpans struct {
	datasetID uint32
	spans     Spans
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// appendPayload appends a domain's payload: a CRC-32C of domain_id and
// body, then the body — uvarint dataset count, then per dataset (P1 order)
// uvarint dataset_id delta (absolute for the first, else id − previous − 1),
// uvarint url_count, uvarint span count, and the spans: zigzag file_id
// delta from the previous span of the payload, uvarint row_group (delta
// minus one after a span of the same key in the same file, else absolute),
// in version 3 uvarint first_field (0: not recorded, else first row + 1),
// and uvarint rows, omitted when the key has one span (it is url_count).
// Version 2 has no first_field. Version 4 folds a flag into url_count and
// one into the file delta: url_count << 1 | (more than one span), the span
// count following only when set; zigzag(file delta) << 1 | (row_group field
// is not 0), the row_group field following only when set. Most keys have
// one span in row group 0, so that saves two bytes a key.
func appendPayload(dst []byte, domainID uint64, keys []keySpans, version uint32) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, uint64(len(keys)))
	var prevDS uint32
	var prevFile int64
	for k, ks := range keys {
		if k == 0 {
			dst = binary.AppendUvarint(dst, uint64(ks.datasetID))
		} else {
			dst = binary.AppendUvarint(dst, uint64(ks.datasetID-prevDS-1))
		}
		prevDS = ks.datasetID
		multi := len(ks.spans) > 1
		if version >= 4 {
			dst = binary.AppendUvarint(dst, ks.spans.Rows()<<1|b2u(multi))
			if multi {
				dst = binary.AppendUvarint(dst, uint64(len(ks.spans)))
			}
		} else {
			dst = binary.AppendUvarint(dst, ks.spans.Rows())
			dst = binary.AppendUvarint(dst, uint64(len(ks.spans)))
		}
		for i, sp := range ks.spans {
			rg := uint64(sp.RowGroup)
			if i > 0 && sp.FileID == ks.spans[i-1].FileID {
				rg = uint64(sp.RowGroup - ks.spans[i-1].RowGroup - 1)
			}
			if fz := zigzag(int64(sp.FileID) - prevFile); version >= 4 {
				dst = binary.AppendUvarint(dst, fz<<1|b2u(rg != 0))
				if rg != 0 {
					dst = binary.AppendUvarint(dst, rg)
				}
			} else {
				dst = binary.AppendUvarint(dst, fz)
				dst = binary.AppendUvarint(dst, rg)
			}
			if version >= 3 {
				first := uint64(0)
				if sp.HasFirst {
					first = uint64(sp.First) + 1
				}
				dst = binary.AppendUvarint(dst, first)
			}
			if multi {
				dst = binary.AppendUvarint(dst, uint64(sp.Rows))
			}
			prevFile = int64(sp.FileID)
		}
	}
	binary.LittleEndian.PutUint32(dst[start:], payloadCRC(domainID, dst[start+4:]))
	return dst
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func payloadCRC(domainID uint64, body []byte) uint32 {
	var k [8]byte
	binary.LittleEndian.PutUint64(k[:], domainID)
	return binio.CRCUpdate(binio.CRC(k[:]), body)
}

// checkPayloadCRC checks the CRC of payload p (at least 4 bytes), which
// covers domainID (P5).
func checkPayloadCRC(p []byte, domainID uint64) error {
	if got, want := payloadCRC(domainID, p[4:]), binary.LittleEndian.Uint32(p); got != want {
		return corruptf("payload checksum %08x, want %08x", got, want)
	}
	return nil
}

// decodePayload checks a payload's CRC against its domain and decodes it,
// enforcing P1 (datasets), P3 and P4. version is the shard's (2 to 4).
func decodePayload(p []byte, domainID uint64, version uint32) ([]Entry, error) {
	return decodePayloadOf(p, domainID, version, -1)
}

// Values of decodePayloadOf's only that name no dataset.
const (
	allEntries   = -1 // every entry, with its spans
	countsNoSpan = -2 // every entry, without spans (DatasetCountsOf)
)

// decodePayloadOf is decodePayload keeping only the entry of dataset only
// (every entry when only < 0; their spans too unless only is countsNoSpan).
// The others are checked all the same but not kept: a lookup of one
// (domain, dataset) used to allocate the spans of every dataset of the
// domain, a third of a first page's allocations.
func decodePayloadOf(p []byte, domainID uint64, version uint32, only int64) ([]Entry, error) {
	if len(p) < minPayload {
		return nil, corruptf("payload of %d bytes is too short", len(p))
	}
	if err := checkPayloadCRC(p, domainID); err != nil {
		return nil, err
	}
	body := p[4:]
	next := func(limit uint64) (uint64, bool) {
		v, n := binary.Uvarint(body)
		// Reject overlong varints (a zero final byte) so every payload has
		// exactly one encoding.
		if n <= 0 || v > limit || n > 1 && body[n-1] == 0 {
			return 0, false
		}
		body = body[n:]
		return v, true
	}
	const u32 = 1<<32 - 1
	// a dataset takes at least 4 bytes (id, count, a span's file and first
	// fields; 5 before version 4), which bounds the allocation
	minDataset, minSpan := uint64(5), uint64(2)
	if version >= 4 {
		minDataset = 4
	}
	count, ok := next(u32)
	if !ok || count == 0 || count*minDataset > uint64(len(body)) {
		return nil, corruptf("bad dataset count")
	}
	var out []Entry
	if only < 0 {
		out = make([]Entry, 0, count)
	}
	var prevFile int64
	var prevDS uint64
	for k := range count {
		dsField, ok1 := next(u32)
		countLimit := uint64(1<<63 - 1)
		if version >= 4 {
			countLimit = 1<<64 - 1 // url_count << 1 | flag
		}
		urlCount, ok2 := next(countLimit)
		nSpans, ok3 := uint64(1), true
		if version >= 4 {
			multi := urlCount&1 == 1
			urlCount >>= 1
			// a flagged key has 2 spans or more, so each payload has one
			// encoding
			if multi {
				if nSpans, ok3 = next(u32); nSpans < 2 {
					ok3 = false
				}
			}
		} else {
			nSpans, ok3 = next(u32)
		}
		// each span takes at least 2 bytes
		if !ok1 || !ok2 || !ok3 || urlCount == 0 || nSpans == 0 || nSpans*minSpan > uint64(len(body)) {
			return nil, corruptf("dataset %d is malformed", k)
		}
		ds := dsField
		if k > 0 {
			ds = prevDS + dsField + 1
			if ds > u32 {
				return nil, corruptf("dataset %d id overflows", k)
			}
		}
		prevDS = ds
		keep := only < 0 || ds == uint64(only)
		var spans Spans
		if keep && only != countsNoSpan {
			spans = make(Spans, nSpans)
		}
		var sum uint64
		var prev Span
		for i := range nSpans {
			fz, ok1 := next(1<<64 - 1)
			var rg uint64
			ok2 := true
			if version >= 4 {
				hasRG := fz&1 == 1
				fz >>= 1
				// a flagged field is not 0, so each payload has one encoding
				if hasRG {
					if rg, ok2 = next(u32); rg == 0 {
						ok2 = false
					}
				}
			} else {
				rg, ok2 = next(u32)
			}
			if !ok1 || !ok2 {
				return nil, corruptf("dataset %d span %d is malformed", k, i)
			}
			fid := prevFile + unzigzag(fz)
			if fid < 0 || fid > u32 {
				return nil, corruptf("dataset %d span %d file id out of range", k, i)
			}
			var first uint64
			if version >= 3 {
				f, ok := next(u32 + 1)
				if !ok {
					return nil, corruptf("dataset %d span %d first row is malformed", k, i)
				}
				first = f
			}
			rows := urlCount
			if nSpans > 1 {
				r, ok := next(u32)
				if !ok || r == 0 {
					return nil, corruptf("dataset %d span %d rows", k, i)
				}
				rows = r
			} else if rows > u32 {
				return nil, corruptf("dataset %d: %d rows in one span", k, rows)
			}
			s := Span{FileID: uint32(fid), RowGroup: uint32(rg), Rows: uint32(rows)}
			if first > 0 {
				if first-1+rows > 1<<32 {
					return nil, corruptf("dataset %d span %d runs past row 2^32", k, i)
				}
				s.First, s.HasFirst = uint32(first-1), true
			}
			if i > 0 {
				if s.FileID == prev.FileID {
					if uint64(prev.RowGroup)+rg+1 > u32 {
						return nil, corruptf("dataset %d span %d row group overflows", k, i)
					}
					s.RowGroup = prev.RowGroup + uint32(rg) + 1
				} else if s.FileID < prev.FileID {
					return nil, corruptf("dataset %d span %d is out of order", k, i)
				}
			}
			if spans != nil {
				spans[i] = s
			}
			prev = s
			sum += rows
			prevFile = fid
		}
		if sum != urlCount {
			return nil, corruptf("dataset %d: spans hold %d rows, url_count is %d", k, sum, urlCount)
		}
		if keep {
			out = append(out, Entry{DomainID: domainID, DatasetID: uint32(ds), URLCount: urlCount, spans: spans})
		}
	}
	if len(body) != 0 {
		return nil, corruptf("%d bytes after the last dataset", len(body))
	}
	return out, nil
}
