// Package postings owns the postings of one index version: for each
// (domain_id, dataset_id) pair, the spans of (parquet file, row group, rows)
// that hold its URLs, and the exact URL count. Postings are sharded by
// ShardOf; each shard is a pair of files, postings.idx (fixed-size entries
// for binary search) and postings.dat (the payloads). The layout is in
// docs/format/postings.md.
//
// Invariants, relied on by Reader and Merge:
//
//	P1. Entries are strictly increasing by (domain_id, dataset_id), so one
//	    domain's entries are contiguous and a key appears at most once.
//	P2. Payloads are contiguous in entry order: the first starts at 0, each
//	    starts where the previous ended, the last ends at dat_size.
//	P3. A payload's spans are strictly increasing by (file_id, row_group):
//	    the order URLs are served in. Every span has rows >= 1.
//	P4. url_count == the sum of the payload's rows.
//	P5. Every idx block of `stride` entries and every payload carries a
//	    CRC-32C; a payload's CRC also covers its key, so a payload read
//	    through the wrong entry fails its check instead of answering.
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

// Format constants; see docs/format/postings.md.
const (
	Magic         = "PDX1"
	Version       = 1
	headerSize    = 40
	entrySize     = 32
	sparseSize    = 16 // domain_id u64, dataset_id u32, block CRC-32C u32
	minPayload    = 8  // CRC, span count, one 3-byte span
	DefaultStride = 256
	maxStride     = 1 << 16
	maxEntries    = 1 << 40
)

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

// Entry is one idx entry: a key, where its payload is, and its URL count.
type Entry struct {
	DomainID      uint64
	DatasetID     uint32
	PayloadOffset uint64
	PayloadLen    uint32
	URLCount      uint64
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

func putEntry(b []byte, e Entry) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], e.DomainID)
	le.PutUint32(b[8:], e.DatasetID)
	le.PutUint64(b[12:], e.PayloadOffset)
	le.PutUint32(b[20:], e.PayloadLen)
	le.PutUint64(b[24:], e.URLCount)
}

func getEntry(b []byte) Entry {
	le := binary.LittleEndian
	return Entry{
		DomainID:      le.Uint64(b[0:]),
		DatasetID:     le.Uint32(b[8:]),
		PayloadOffset: le.Uint64(b[12:]),
		PayloadLen:    le.Uint32(b[20:]),
		URLCount:      le.Uint64(b[24:]),
	}
}

func entryKey(b []byte) (uint64, uint32) {
	return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint32(b[8:])
}

// checkSpans enforces P3 on writer input.
func checkSpans(spans []Span) error {
	if len(spans) == 0 {
		return errors.New("no spans")
	}
	for i, s := range spans {
		if s.Rows == 0 {
			return fmt.Errorf("span %d has no rows", i)
		}
		if i > 0 && spanLess(spans[i-1], s) >= 0 {
			return fmt.Errorf("span %d (file %d, row group %d) is not after span %d (file %d, row group %d)",
				i, s.FileID, s.RowGroup, i-1, spans[i-1].FileID, spans[i-1].RowGroup)
		}
	}
	return nil
}

// appendPayload appends the payload of key: a CRC-32C of key and body,
// then the body: uvarint span count, then per span uvarint file_id delta,
// uvarint row_group (a delta minus one within the same file, absolute in a
// new file) and uvarint rows. Deltas keep the common case at 3 bytes a
// span; spans must satisfy P3.
func appendPayload(dst []byte, domainID uint64, datasetID uint32, spans []Span) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	var pf, pr uint32
	for i, s := range spans {
		if i == 0 || s.FileID != pf {
			dst = binary.AppendUvarint(dst, uint64(s.FileID-pf))
			dst = binary.AppendUvarint(dst, uint64(s.RowGroup))
		} else {
			dst = binary.AppendUvarint(dst, 0)
			dst = binary.AppendUvarint(dst, uint64(s.RowGroup-pr-1))
		}
		dst = binary.AppendUvarint(dst, uint64(s.Rows))
		pf, pr = s.FileID, s.RowGroup
	}
	binary.LittleEndian.PutUint32(dst[start:], payloadCRC(domainID, datasetID, dst[start+4:]))
	return dst
}

func payloadCRC(domainID uint64, datasetID uint32, body []byte) uint32 {
	var k [12]byte
	binary.LittleEndian.PutUint64(k[:], domainID)
	binary.LittleEndian.PutUint32(k[8:], datasetID)
	return binio.CRCUpdate(binio.CRC(k[:]), body)
}

// decodePayload checks a payload's CRC against its key and decodes it,
// enforcing P3 and P4.
func decodePayload(p []byte, domainID uint64, datasetID uint32, urlCount uint64) (Spans, error) {
	if len(p) < minPayload {
		return nil, corruptf("payload of %d bytes is too short", len(p))
	}
	if got, want := payloadCRC(domainID, datasetID, p[4:]), binary.LittleEndian.Uint32(p); got != want {
		return nil, corruptf("payload checksum %08x, want %08x", got, want)
	}
	body := p[4:]
	next := func() (uint32, bool) {
		v, n := binary.Uvarint(body)
		// Reject overlong varints (a zero final byte) so every payload has
		// exactly one encoding.
		if n <= 0 || v > 1<<32-1 || n > 1 && body[n-1] == 0 {
			return 0, false
		}
		body = body[n:]
		return uint32(v), true
	}
	count, ok := next()
	// Each span takes at least 3 bytes, which bounds the allocation.
	if !ok || count == 0 || uint64(count)*3 > uint64(len(body)) {
		return nil, corruptf("bad span count")
	}
	spans := make(Spans, count)
	var sum uint64
	for i := range spans {
		fd, ok1 := next()
		rg, ok2 := next()
		rows, ok3 := next()
		if !ok1 || !ok2 || !ok3 || rows == 0 {
			return nil, corruptf("span %d is malformed", i)
		}
		s := Span{FileID: fd, RowGroup: rg, Rows: rows}
		if i > 0 {
			prev := spans[i-1]
			if fd == 0 {
				if uint64(prev.RowGroup)+uint64(rg)+1 > 1<<32-1 {
					return nil, corruptf("span %d row group overflows", i)
				}
				s.FileID, s.RowGroup = prev.FileID, prev.RowGroup+rg+1
			} else {
				if uint64(prev.FileID)+uint64(fd) > 1<<32-1 {
					return nil, corruptf("span %d file id overflows", i)
				}
				s.FileID = prev.FileID + fd
			}
		}
		spans[i] = s
		sum += uint64(rows)
	}
	if len(body) != 0 {
		return nil, corruptf("%d bytes after the last span", len(body))
	}
	if sum != urlCount {
		return nil, corruptf("spans hold %d rows, url_count is %d", sum, urlCount)
	}
	return spans, nil
}
