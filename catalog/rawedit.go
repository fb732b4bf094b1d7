package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// A raw edit is how a lake file (layout 4, docs/format/lake.md "Raw
// URLs") stores a row's raw URL where it differs from the normalized url:
// the operations that rebuild it from url. Normalization mostly sorts a
// query's pairs, changes case, adds a path or drops a default port or a
// fragment, so nearly all of a raw URL is bytes of url: stored whole, raw
// URLs were a quarter of the lake on a crawl-shaped corpus; as edits, a
// byte or two each.
//
// An edit is a sequence of operations, each a uvarint h whose low two bits
// say what it is and whose rest, n = h >> 2, how much:
//
//	0 copy   n >= 1 bytes of url from cursor + d, where d is the zigzag
//	         varint that follows; the cursor (0 before the first
//	         operation) moves past them
//	1 insert the n >= 1 bytes that follow
//	2 query  url[cursor:q+1], q the index of url's '?', then url's n >= 2
//	         query pairs (split on '&') joined by '&' in the order of the
//	         permutation whose Lehmer code, a uvarint below n!, follows
//	         (n <= 20); the cursor moves to the end of url
//	3        reserved
//
// An edit holds at least one operation. Decoders reject what breaks these
// rules and an edit cut short (ErrRawEdit).

// ErrRawEdit marks a raw edit that does not decode against its URL.
var ErrRawEdit = errors.New("catalog: corrupt raw edit")

const (
	rawCopy   = 0
	rawInsert = 1
	rawQuery  = 2
	// rawMaxPairs bounds a query operation's pairs: 20! < 2^63.
	rawMaxPairs = 20
)

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
		op := at
		at += k
		n := h >> 2
		if n == 0 || n > uint64(len(url)+len(edit)) {
			return dst, fmt.Errorf("%w: operation of size %d at byte %d", ErrRawEdit, n, op)
		}
		switch h & 3 {
		case rawInsert:
			if n > uint64(len(edit)-at) {
				return dst, fmt.Errorf("%w: insert of %d bytes past the end", ErrRawEdit, n)
			}
			dst = append(dst, edit[at:at+int(n)]...)
			at += int(n)
		case rawCopy:
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
		case rawQuery:
			code, k := binary.Uvarint(edit[at:])
			if k <= 0 {
				return dst, fmt.Errorf("%w: bad query order at byte %d", ErrRawEdit, at)
			}
			at += k
			q := strings.IndexByte(url, '?')
			if q < 0 || q+1 < cursor || n < 2 || n > rawMaxPairs || uint64(strings.Count(url[q:], "&"))+1 != n || code >= factorial(int(n)) {
				return dst, fmt.Errorf("%w: query operation of %d pairs (order %d) at byte %d does not fit its URL", ErrRawEdit, n, code, op)
			}
			dst = append(dst, url[cursor:q+1]...)
			var pairs [rawMaxPairs]string
			rest := url[q+1:]
			for i := range int(n) {
				pairs[i], rest, _ = strings.Cut(rest, "&")
			}
			// the permutation from its Lehmer code: digit i picks the
			// code_i-th pair not yet used
			used := 0
			for i := range int(n) {
				f := factorial(int(n) - 1 - i)
				c := int(code / f)
				code %= f
				j := 0
				for ; j < rawMaxPairs; j++ { // code < n! keeps j below n
					if used&(1<<j) == 0 {
						if c == 0 {
							break
						}
						c--
					}
				}
				used |= 1 << j
				if i > 0 {
					dst = append(dst, '&')
				}
				dst = append(dst, pairs[j]...)
			}
			cursor = len(url)
		default:
			return dst, fmt.Errorf("%w: reserved operation at byte %d", ErrRawEdit, op)
		}
	}
	return dst, nil
}

func factorial(n int) uint64 {
	f := uint64(1)
	for i := 2; i <= n; i++ {
		f *= uint64(i)
	}
	return f
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

// Append appends the edit that rebuilds raw from url (raw != url) to dst.
// Where raw is url with its query pairs in another order (and perhaps
// more after them, such as a fragment), the edit starts with a query
// operation; the rest is greedy longest copies of url, preferring the
// copy that continues the previous one, and inserts.
func (e *RawEncoder) Append(dst []byte, url, raw string) []byte {
	cursor, j := 0, 0
	if n, code, end, ok := queryOrder(url, raw); ok {
		dst = binary.AppendUvarint(dst, uint64(n)<<2|rawQuery)
		dst = binary.AppendUvarint(dst, code)
		cursor, j = len(url), end
	}
	return e.appendOps(dst, url, raw, cursor, j)
}

// queryOrder reports whether raw starts with url up to its '?' followed by
// url's query pairs in another order, ending at raw[end] ('#' or the end);
// n is the number of pairs and code the order's Lehmer code.
func queryOrder(url, raw string) (n int, code uint64, end int, ok bool) {
	q := strings.IndexByte(url, '?')
	if q < 0 || len(raw) <= q || raw[:q+1] != url[:q+1] {
		return 0, 0, 0, false
	}
	n = strings.Count(url[q:], "&") + 1
	if n < 2 || n > rawMaxPairs {
		return 0, 0, 0, false
	}
	var pairs [rawMaxPairs]string
	rest := url[q+1:]
	for i := range n {
		pairs[i], rest, _ = strings.Cut(rest, "&")
	}
	end = len(raw)
	if h := strings.IndexByte(raw[q+1:], '#'); h >= 0 {
		end = q + 1 + h
	}
	rq := raw[q+1 : end]
	if len(rq) != len(url)-q-1 {
		return 0, 0, 0, false
	}
	used := 0
	for i := range n {
		var p string
		if i < n-1 {
			var found bool
			if p, rq, found = strings.Cut(rq, "&"); !found {
				return 0, 0, 0, false
			}
		} else {
			p = rq
		}
		// the first unused equal pair: equal pairs keep their order, so
		// every raw query has one code
		c := 0
		j := 0
		for ; j < n; j++ {
			if used&(1<<j) != 0 {
				continue
			}
			if pairs[j] == p {
				break
			}
			c++
		}
		if j == n {
			return 0, 0, 0, false
		}
		used |= 1 << j
		code += uint64(c) * factorial(n-1-i)
	}
	return n, code, end, true
}

// appendOps appends copies and inserts that rebuild raw[j:] from url with
// the cursor at cursor.
func (e *RawEncoder) appendOps(dst []byte, url, raw string, cursor, j int) []byte {
	if j == len(raw) {
		return dst
	}
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
	lit := -1 // where the pending insert starts in raw
	flush := func(end int) {
		if lit >= 0 {
			dst = binary.AppendUvarint(dst, uint64(end-lit)<<2|rawInsert)
			dst = append(dst, raw[lit:end]...)
			lit = -1
		}
	}
	for j < len(raw) {
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
		dst = binary.AppendUvarint(dst, uint64(best)<<2|rawCopy)
		dst = binary.AppendVarint(dst, int64(bestAt-cursor))
		cursor = bestAt + best
		j += best
	}
	flush(len(raw))
	return dst
}
