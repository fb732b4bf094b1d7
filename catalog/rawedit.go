package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A raw edit is how a lake file (layout 4, docs/format/lake.md "raw_edit")
// stores a row's raw URL where it differs from the normalized url: the
// operations that rebuild it from url. Normalization mostly reorders a
// query's pairs, changes case or drops a default port or a fragment, so
// nearly all of a raw URL is copies of url: stored whole, raw URLs were a
// quarter of the lake on a crawl-shaped corpus; as edits, a few bytes each.
//
// An edit is a sequence of operations, each a uvarint h:
//
//	h even: copy h>>1 (>= 1) bytes of url from cursor + d, where d is the
//	        zigzag varint that follows and cursor is where the previous
//	        copy ended (0 before the first); the cursor moves past them
//	h odd:  insert the h>>1 (>= 1) bytes that follow
//
// An edit holds at least one operation. Decoders reject a zero-length
// operation, a copy outside url and an edit cut short (ErrRawEdit).

// ErrRawEdit marks a raw edit that does not decode against its URL.
var ErrRawEdit = errors.New("catalog: corrupt raw edit")

// AppendRaw appends to dst the raw URL that edit rebuilds from url.
func AppendRaw(dst []byte, url string, edit []byte) ([]byte, error) {
	if len(edit) == 0 {
		return dst, fmt.Errorf("%w: empty", ErrRawEdit)
	}
	cursor := 0
	for at := 0; at < len(edit); {
		h, k := binary.Uvarint(edit[at:])
		if k <= 0 {
			return dst, fmt.Errorf("%w: bad operation at byte %d", ErrRawEdit, at)
		}
		at += k
		n := h >> 1
		if n == 0 || n > uint64(len(url)+len(edit)) {
			return dst, fmt.Errorf("%w: operation of %d bytes at byte %d", ErrRawEdit, n, at-k)
		}
		if h&1 == 1 {
			if n > uint64(len(edit)-at) {
				return dst, fmt.Errorf("%w: insert of %d bytes past the end", ErrRawEdit, n)
			}
			dst = append(dst, edit[at:at+int(n)]...)
			at += int(n)
			continue
		}
		d, k := binary.Varint(edit[at:])
		if k <= 0 {
			return dst, fmt.Errorf("%w: bad copy offset at byte %d", ErrRawEdit, at)
		}
		at += k
		start := int64(cursor) + d
		if start < 0 || start+int64(n) > int64(len(url)) {
			return dst, fmt.Errorf("%w: copy of %d bytes from %d outside a URL of %d", ErrRawEdit, n, start, len(url))
		}
		dst = append(dst, url[start:start+int64(n)]...)
		cursor = int(start) + int(n)
	}
	return dst, nil
}

// RawEncoder writes raw edits. Its tables are reused from URL to URL; it
// is not safe for concurrent use.
type RawEncoder struct {
	head []int32 // hash of 4 bytes → last position in url + 1 (0: none)
	prev []int32 // position → previous position with its hash + 1
}

// rawMinCopy is the shortest copy an edit makes: a copy costs 2 bytes, a
// literal byte one, so shorter matches are inserted.
const rawMinCopy = 4

// rawMaxChain bounds the candidates tried per position (URLs are short;
// the bound only guards a pathological URL of repeated bytes).
const rawMaxChain = 64

func rawHash(s string, i int, mask uint32) uint32 {
	v := uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
	return (v * 2654435761) >> 16 & mask
}

// Append appends the edit that rebuilds raw from url (raw != url) to dst:
// greedy longest copies of url, preferring the copy that continues the
// previous one, and inserts for the rest.
func (e *RawEncoder) Append(dst []byte, url, raw string) []byte {
	size := 64
	for size < 2*len(url) && size < 1<<16 {
		size <<= 1
	}
	mask := uint32(size - 1)
	if cap(e.head) < size {
		e.head = make([]int32, size)
	}
	head := e.head[:size]
	clear(head)
	if cap(e.prev) < len(url) {
		e.prev = make([]int32, len(url))
	}
	prev := e.prev[:len(url)]
	for i := 0; i+rawMinCopy <= len(url); i++ {
		h := rawHash(url, i, mask)
		prev[i] = head[h]
		head[h] = int32(i + 1)
	}
	match := func(at, j int) int {
		n := 0
		for at+n < len(url) && j+n < len(raw) && url[at+n] == raw[j+n] {
			n++
		}
		return n
	}
	cursor, lit := 0, -1 // lit: where the pending insert starts in raw
	flush := func(end int) {
		if lit >= 0 {
			dst = binary.AppendUvarint(dst, uint64(end-lit)<<1|1)
			dst = append(dst, raw[lit:end]...)
			lit = -1
		}
	}
	for j := 0; j < len(raw); {
		best, bestAt := 0, 0
		if cursor < len(url) {
			best, bestAt = match(cursor, j), cursor
		}
		if j+rawMinCopy <= len(raw) {
			for c, tries := head[rawHash(raw, j, mask)], 0; c != 0 && tries < rawMaxChain; c, tries = prev[c-1], tries+1 {
				if n := match(int(c-1), j); n > best {
					best, bestAt = n, int(c-1)
				}
			}
		}
		if best < rawMinCopy {
			if lit < 0 {
				lit = j
			}
			j++
			continue
		}
		flush(j)
		dst = binary.AppendUvarint(dst, uint64(best)<<1)
		dst = binary.AppendVarint(dst, int64(bestAt-cursor))
		cursor = bestAt + best
		j += best
	}
	flush(len(raw))
	return dst
}
