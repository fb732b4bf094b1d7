package urlnorm

import (
	"bytes"
	"slices"
	"strings"
)

// appendPath appends the canonical path for p, which is empty or starts
// with '/' or '\'. Rules (docs/urlnorm.md §Path):
//   - '/' and '\' both separate segments (special schemes);
//   - "." and ".." segments, also spelled %2e, are removed per WHATWG: ".."
//     pops the previous segment (an empty one too), and a final "." or ".."
//     leaves a trailing slash;
//   - then runs of '/' collapse to one ("a//b" → "a/b"), so a trailing
//     slash stays;
//   - bytes in the WHATWG path percent-encode set are percent-encoded;
//     escapes are normalized by normEscapes;
//   - an empty result is "/".
func appendPath(dst []byte, p string) []byte {
	if plainPath(p) {
		return append(dst, p...)
	}
	return appendPathSegments(dst, p)
}

// appendPathSegments is appendPath, a segment at a time.
func appendPathSegments(dst []byte, p string) []byte {
	start := len(dst)
	if p != "" {
		p = p[1:] // the leading separator
		for {
			end := len(p)
			for i := 0; i < len(p); i++ {
				if p[i] == '/' || p[i] == '\\' {
					end = i
					break
				}
			}
			seg, last := p[:end], end == len(p)
			switch {
			case isDoubleDot(seg):
				dst = popSegment(dst, start, last)
			case isSingleDot(seg):
				if last {
					dst = append(dst, '/')
				}
			case seg == "":
				// Kept for now so ".." pops it as WHATWG does ("/a//.." is
				// "/a/"); collapsed below.
				dst = append(dst, '/')
			default:
				dst = append(dst, '/')
				dst = appendEscaped(dst, seg, pathEscapeSet)
			}
			if last {
				break
			}
			p = p[end+1:]
		}
	}
	// Collapse runs of '/' (the empty segments) in place.
	w := start
	for r := start; r < len(dst); r++ {
		if dst[r] == '/' && w > start && dst[w-1] == '/' {
			continue
		}
		dst[w] = dst[r]
		w++
	}
	dst = dst[:w]
	if len(dst) == start {
		dst = append(dst, '/')
	}
	return dst
}

// plainPath reports whether p is its own canonical path, as nearly every
// real path is: it starts with '/', and has no '\', no escape, no byte of
// the path percent-encode set, no empty segment and no segment that starts
// with '.' (so none is "." or ".."). appendPath would copy such a path
// unchanged, one segment at a time.
func plainPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case c == '/':
			if p[i-1] == '/' {
				return false
			}
		case c == '.':
			if p[i-1] == '/' {
				return false
			}
		case pathSpecial[c]:
			return false
		}
	}
	return true
}

// A byteSet marks the bytes a loop must stop at; the rest are copied as a
// run. Table lookups instead of a function call per byte make the common
// URL, which needs no encoding at all, a scan and one copy.
type byteSet [256]bool

// setOf is the set of the bytes in (nil: none) and also.
func setOf(in func(byte) bool, also ...byte) *byteSet {
	var s byteSet
	for c := range 256 {
		s[c] = in != nil && in(byte(c))
	}
	for _, c := range also {
		s[c] = true
	}
	return &s
}

var (
	// pathSpecial: what appendEscaped does more than copy in a path, and
	// the separators.
	pathSpecial = setOf(inPathEncodeSet, '%', '/', '\\')
	// The encode sets, with the '%' that appendEscaped normalizes.
	pathEscapeSet         = setOf(inPathEncodeSet, '%')
	specialQueryEscapeSet = setOf(inSpecialQueryEncodeSet, '%')
)

// appendNonSpecialPath appends the path of a URL with a non-special
// scheme, as the WHATWG path state does for one (docs/urlnorm.md, "Other
// schemes"):
//   - only '/' separates segments ('\' is an ordinary byte);
//   - "." and ".." segments (also spelled %2e) are removed as in
//     appendPath;
//   - empty segments stay ("/a//b" is not "/a/b": the path is the scheme's
//     to interpret, a gopher selector, a git repository);
//   - bytes in the path percent-encode set are percent-encoded; existing
//     escapes are kept as they are, hex case included;
//   - an empty path stays empty ("gopher://h" has no "/").
func appendNonSpecialPath(dst []byte, p string) []byte {
	if p == "" {
		return dst
	}
	start := len(dst)
	p = p[1:] // the leading '/'
	for {
		end := strings.IndexByte(p, '/')
		last := end < 0
		if last {
			end = len(p)
		}
		seg := p[:end]
		switch {
		case isDoubleDot(seg):
			dst = popSegment(dst, start, last)
		case isSingleDot(seg):
			if last {
				dst = append(dst, '/')
			}
		default:
			dst = append(dst, '/')
			dst = appendEncoded(dst, seg, inPathEncodeSet)
		}
		if last {
			break
		}
		p = p[end+1:]
	}
	if len(dst) == start {
		dst = append(dst, '/')
	}
	return dst
}

// appendEncoded percent-encodes the bytes of s in the set and copies every
// other byte, '%' and existing escapes included (the WHATWG
// percent-encoding, without DHSI's escape normalization).
func appendEncoded(dst []byte, s string, enc func(byte) bool) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; enc(c) {
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// isSingleDot: "." or "%2e", case-insensitive (WHATWG single-dot segment).
func isSingleDot(s string) bool {
	return s == "." || len(s) == 3 && s[0] == '%' && s[1] == '2' && s[2]|0x20 == 'e'
}

// isDoubleDot: "..", ".%2e", "%2e.", "%2e%2e", case-insensitive.
func isDoubleDot(s string) bool {
	switch len(s) {
	case 2:
		return s == ".."
	case 4:
		return s[0] == '.' && isSingleDot(s[1:]) || s[3] == '.' && isSingleDot(s[:3])
	case 6:
		return isSingleDot(s[:3]) && isSingleDot(s[3:])
	}
	return false
}

// inPathEncodeSet is the WHATWG path percent-encode set: C0 controls,
// space, '"', '#', '<', '>', '?', '`', '{', '}', DEL and non-ASCII bytes.
func inPathEncodeSet(c byte) bool {
	if c <= 0x20 || c >= 0x7F {
		return true
	}
	switch c {
	case '"', '#', '<', '>', '?', '`', '{', '}':
		return true
	}
	return false
}

// inSpecialQueryEncodeSet is the WHATWG special-query percent-encode set:
// the query percent-encode set and the apostrophe.
func inSpecialQueryEncodeSet(c byte) bool {
	return c == '\'' || inQueryEncodeSet(c)
}

// inQueryEncodeSet is the WHATWG query percent-encode set, used for the
// query of a non-special URL: C0 controls, space, '"', '#', '<', '>', DEL
// and non-ASCII bytes.
func inQueryEncodeSet(c byte) bool {
	if c <= 0x20 || c >= 0x7F {
		return true
	}
	switch c {
	case '"', '#', '<', '>':
		return true
	}
	return false
}

const upperHex = "0123456789ABCDEF"

// appendEscaped percent-encodes bytes in the set and normalizes existing
// escapes ("normEscapes"): an escape of an unreserved character (ALPHA,
// DIGIT, '-', '.', '_', '~') is decoded, since RFC 3986 §6.2.2.2 makes the
// two spellings equivalent and real lists mix "~" and "%7E"; other escapes
// get upper-case hex. A '%' not followed by two hex digits is kept as is
// (WHATWG does). Decoding is skipped when the decoded hex digit would
// complete a stray '%' before it into a new escape ("%%341" must not become
// "%41", or normalizing twice would differ).
//
// stop is enc's set with '%' added (pathEscapeSet, specialQueryEscapeSet):
// the bytes between two of them are copied as one run.
func appendEscaped(dst []byte, s string, stop *byteSet) []byte {
	for i := 0; i < len(s); i++ {
		run := i
		for i < len(s) && !stop[s[i]] {
			i++
		}
		dst = append(dst, s[run:i]...)
		if i == len(s) {
			break
		}
		c := s[i]
		if d, ok := appendNormEscape(dst, s[i:]); ok {
			dst = d
			i += 2
			continue
		}
		if c != '%' {
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// appendNormEscape appends the escape s starts with, normalized as
// appendEscaped says, and reports whether s starts with one ('%' and two
// hex digits).
func appendNormEscape(dst []byte, s string) ([]byte, bool) {
	if len(s) < 3 || s[0] != '%' || !isHex(s[1]) || !isHex(s[2]) {
		return dst, false
	}
	v := unhex(s[1])<<4 | unhex(s[2])
	if isUnreserved(v) && !(isHex(v) && strayPercentBefore(dst)) {
		return append(dst, v), true
	}
	return append(dst, '%', upperHex[v>>4], upperHex[v&15]), true
}

// strayPercentBefore reports whether dst ends with a '%' or a '%' and one
// hex digit that are not an escape: the next hex digit would complete them.
// A complete escape in dst is always three bytes "%XX", so a '%' in the
// last two bytes cannot start one.
func strayPercentBefore(dst []byte) bool {
	n := len(dst)
	return n >= 1 && dst[n-1] == '%' || n >= 2 && dst[n-2] == '%' && isHex(dst[n-1])
}

func isUnreserved(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// maxStackPairs bounds the query pairs sorted without a heap allocation.
const maxStackPairs = 32

// appendQuery appends the canonical query (without '?'): encoded with the
// special-query set and normEscapes, split on '&', empty pairs dropped,
// pairs stably sorted by key (the bytes before the first '='), so
// duplicate keys keep their order. '+' and "%20" are left as they are:
// which of them means a space is up to the server.
func appendQuery(dst []byte, q string) []byte {
	start := len(dst)
	dst = appendEscaped(dst, q, specialQueryEscapeSet)
	enc := dst[start:]

	// Pair boundaries, as offsets into enc.
	var stack [maxStackPairs][2]int32
	pairs := stack[:0]
	sorted, empties := true, false
	for i := 0; i <= len(enc); {
		j := i
		for j < len(enc) && enc[j] != '&' {
			j++
		}
		if j == i {
			empties = true
		} else {
			if n := len(pairs); n > 0 && keyCmp(enc, pairs[n-1], [2]int32{int32(i), int32(j)}) > 0 {
				sorted = false
			}
			pairs = append(pairs, [2]int32{int32(i), int32(j)})
		}
		i = j + 1
	}
	if sorted && !empties {
		return dst
	}
	if !sorted {
		// A stable sort: only a strictly smaller key moves left.
		slices.SortStableFunc(pairs, func(a, b [2]int32) int { return keyCmp(enc, a, b) })
	}
	var tmpStack [512]byte
	tmp := append(tmpStack[:0], enc...)
	dst = dst[:start]
	for k, p := range pairs {
		if k > 0 {
			dst = append(dst, '&')
		}
		dst = append(dst, tmp[p[0]:p[1]]...)
	}
	return dst
}

// keyCmp compares the keys of two pairs bytewise.
func keyCmp(enc []byte, a, b [2]int32) int {
	return bytes.Compare(pairKey(enc[a[0]:a[1]]), pairKey(enc[b[0]:b[1]]))
}

func pairKey(p []byte) []byte {
	for i, c := range p {
		if c == '=' {
			return p[:i]
		}
	}
	return p
}

// popSegment applies ".." to a path written from start: it drops the last
// segment (each is stored as "/seg"), and a ".." that ends the path leaves
// its directory's slash.
func popSegment(dst []byte, start int, last bool) []byte {
	for len(dst) > start && dst[len(dst)-1] != '/' {
		dst = dst[:len(dst)-1]
	}
	if len(dst) > start {
		dst = dst[:len(dst)-1]
	}
	if last {
		dst = append(dst, '/')
	}
	return dst
}
