// Package patmatch matches SQL LIKE, ILIKE and GLOB patterns in time
// linear in the string, with DuckDB 1.5.5's semantics.
//
// Why it exists: DuckDB 1.5.5 answers LIKE with a non-constant pattern,
// ILIKE, GLOB and the *_escape functions by recursive backtracking, in time
// that grows with the string's length to the power of the pattern's
// wildcards, and it checks for interrupts only between vectors: one reader's
// `repeat('a', 60) ILIKE repeat('%a', 12) || 'b'` ran past 60 s, past
// statement_timeout, past cancels and past SIGTERM (docs/security.md). The
// udf package installs this matcher in their place.
//
// Invariants:
//
//	M1. Same answers as DuckDB 1.5.5's own functions (checked against them,
//	    on random strings and patterns, by udf's tests):
//	    LIKE: % any bytes, _ one character (a lead byte and the continuation
//	    bytes after it), the escape character makes the next one literal, a
//	    pattern ending in the escape character is an error. ILIKE: the
//	    same after lowering string and pattern, character by character.
//	    GLOB: * any bytes, ? one byte, [set] one byte of the set ([!set]
//	    not in it; a ] first in the set is one of its members; a-b a range;
//	    an unclosed [ matches nothing), \ makes the next byte literal.
//	M2. A match costs O(len(s) × ⌈tokens/64⌉) word operations (a bit-parallel
//	    NFA, no backtracking); Match refuses strings whose cost would pass
//	    MaxWork, so no single row runs long enough to outlast a cancel.
package patmatch

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Kind is the pattern language.
type Kind uint8

const (
	Like  Kind = iota // % and _, an optional escape character
	ILike             // LIKE after lowering both sides
	Glob              // *, ?, [set], \
)

// MaxWork bounds one match (M2): string bytes × 64-token words of the
// pattern: a 64 MiB string against a pattern of up to 63 tokens, about
// a tenth of a second of one core.
const MaxWork = 1 << 26

// MaxTokens bounds the patterns matched by the NFA (those with _, ? or a
// set): its tables take 256 × ⌈tokens/64⌉ words, 2 MiB at this bound.
const MaxTokens = 1 << 16

// ErrTooLarge is returned by Match past MaxWork and by Compile past
// MaxTokens.
var ErrTooLarge = errors.New("pattern match too large")

// ErrEscape is returned by Compile for an escape of more than one byte
// (DuckDB's own message; its "character" is a byte: 'é' is refused).
var ErrEscape = errors.New("Invalid escape string. Escape string must be empty or one character.")

type tokKind uint8

const (
	tokByte tokKind = iota // the byte set of the token accepts one byte
	tokChar                // LIKE's _: one character
	tokStar                // % or *: any bytes
)

// ErrEscapeAtEnd is returned by Compile for a LIKE or ILIKE pattern that
// ends in its escape character (DuckDB's own message, as its functions
// give it for a pattern that is not a constant).
var ErrEscapeAtEnd = errors.New("Like pattern must not end with escape character!")

// token is one unit of a pattern.
type token struct {
	kind  tokKind
	set   [4]uint64 // bytes accepted by a tokByte that is no literal
	lit   byte      // the byte of a literal
	isLit bool
}

// Pattern is a compiled pattern; it is safe for concurrent use.
type Pattern struct {
	kind  Kind
	n     int          // tokens; state bit j: tokens before j matched
	words int          // words of a state: (n+1+63)/64
	masks [][]uint64   // per byte value: tokens of kind tokByte accepting it
	mask1 *[256]uint64 // masks' first words, for match1
	chars []uint64     // tokChar tokens
	stars []uint64     // tokStar tokens
	never bool
	// segs, for a pattern of literals and stars only: the literal runs
	// between its stars (segs[0] before the first, the last after the
	// last; one run for a pattern with no star)
	segs []string
}

// Compile compiles pattern; escape is "" or one byte (LIKE and ILIKE
// only).
func Compile(kind Kind, pattern, escape string) (*Pattern, error) {
	if len(escape) > 1 {
		return nil, ErrEscape
	}
	if kind == ILike {
		pattern = lower(pattern)
	}
	var toks []token
	lit := func(b byte) token { return token{lit: b, isLit: true} }
	star := func() {
		if len(toks) == 0 || toks[len(toks)-1].kind != tokStar {
			toks = append(toks, token{kind: tokStar})
		}
	}
	// a GLOB that matches nothing (M1): a dangling \ or an unclosed set
	never := &Pattern{kind: kind, never: true}
	if kind == Glob {
		for i := 0; i < len(pattern); i++ {
			switch c := pattern[i]; c {
			case '*':
				star()
			case '?':
				toks = append(toks, token{set: [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}})
			case '\\':
				if i+1 >= len(pattern) {
					return never, nil
				}
				i++
				toks = append(toks, lit(pattern[i]))
			case '[':
				t, end, ok := globSet(pattern, i+1)
				if !ok {
					return never, nil
				}
				toks = append(toks, t)
				i = end
			default:
				toks = append(toks, lit(c))
			}
		}
	} else {
		for i := 0; i < len(pattern); i++ {
			c := pattern[i]
			switch {
			case escape != "" && strings.HasPrefix(pattern[i:], escape):
				i += len(escape)
				if i >= len(pattern) {
					return nil, ErrEscapeAtEnd
				}
				_, size := utf8.DecodeRuneInString(pattern[i:])
				for k := 0; k < size; k++ {
					toks = append(toks, lit(pattern[i+k]))
				}
				i += size - 1
			case c == '%':
				star()
			case c == '_':
				toks = append(toks, token{kind: tokChar})
			default:
				toks = append(toks, lit(c))
			}
		}
	}
	p := &Pattern{kind: kind, n: len(toks)}
	// literal-and-star patterns (no _, ?, or set) also keep their literal
	// runs, for the segment search of matchSegments
	segs, literalOnly := []string{""}, true
	var run []byte
	for _, t := range toks {
		switch {
		case t.kind == tokStar:
			segs[len(segs)-1] = string(run)
			segs, run = append(segs, ""), run[:0]
		case t.isLit:
			run = append(run, t.lit)
		default:
			literalOnly = false
		}
	}
	p.words = (p.n + 1 + 63) / 64
	if literalOnly {
		segs[len(segs)-1] = string(run)
		// Match needs no state: strings.Index compares a run of up to
		// 64 bytes at each place at most, a longer one by Rabin-Karp
		p.segs, p.words = segs, 1
		return p, nil
	}
	if p.n > MaxTokens {
		return nil, fmt.Errorf("%w: %d characters and wildcards where _, ? or a set is among them (at most %d)", ErrTooLarge, p.n, MaxTokens)
	}
	p.masks = make([][]uint64, 256)
	backing := make([]uint64, 256*p.words)
	for b := range p.masks {
		p.masks[b] = backing[b*p.words : (b+1)*p.words]
	}
	p.chars = make([]uint64, p.words)
	p.stars = make([]uint64, p.words)
	for j, t := range toks {
		w, bit := j>>6, uint64(1)<<(j&63)
		switch t.kind {
		case tokChar:
			p.chars[w] |= bit
		case tokStar:
			p.stars[w] |= bit
		default:
			if t.isLit {
				p.masks[t.lit][w] |= bit
				continue
			}
			for b := 0; b < 256; b++ {
				if t.set[b>>6]&(1<<(b&63)) != 0 {
					p.masks[b][w] |= bit
				}
			}
		}
	}
	p.mask1 = new([256]uint64)
	for b := range p.masks {
		p.mask1[b] = p.masks[b][0]
	}
	return p, nil
}

// globSet reads a [set] whose body starts at i; it returns the token, the
// index of its closing ], and false for an unclosed set.
func globSet(pattern string, i int) (t token, end int, ok bool) {
	negate := false
	if i < len(pattern) && pattern[i] == '!' {
		negate = true
		i++
	}
	var set [4]uint64
	add := func(lo, hi byte) {
		for b := int(lo); b <= int(hi); b++ {
			set[b>>6] |= 1 << (b & 63)
		}
	}
	first := true
	for ; i < len(pattern); i++ {
		c := pattern[i]
		if c == ']' && !first {
			if negate {
				for k := range set {
					set[k] = ^set[k]
				}
			}
			t.set = set
			return t, i, true
		}
		first = false
		if i+2 < len(pattern) && pattern[i+1] == '-' && pattern[i+2] != ']' {
			add(c, pattern[i+2])
			i += 2
			continue
		}
		add(c, c)
	}
	return t, 0, false
}

// Match reports whether s matches p.
func (p *Pattern) Match(s string) (bool, error) {
	ok, _, err := p.MatchScratch(s, nil)
	return ok, err
}

// Work is what matching s costs, in MaxWork's unit.
func (p *Pattern) Work(s string) uint64 { return uint64(len(s)) * uint64(p.words) }

// MatchScratch is Match that lowers an ASCII string for ILIKE into scratch,
// grown as needed and returned, instead of a new string each time.
func (p *Pattern) MatchScratch(s string, scratch []byte) (bool, []byte, error) {
	if p.never {
		return false, scratch, nil
	}
	if len(s) > 0 && p.Work(s) > MaxWork {
		return false, scratch, fmt.Errorf("%w: a %d-byte string against a %d-token pattern (at most %d bytes × 64-token words)", ErrTooLarge, len(s), p.n, MaxWork)
	}
	if p.kind == ILike {
		s, scratch = lowerInto(s, scratch)
	}
	if p.segs != nil {
		return p.matchSegments(s), scratch, nil
	}
	if p.words == 1 {
		return p.match1(s), scratch, nil
	}
	return p.matchN(s), scratch, nil
}

// matchSegments is Match for literal-and-star patterns: the first run
// at the start, the last at the end, each one between at its leftmost place
// after the one before (a star takes any bytes, so the leftmost place
// leaves the most room to the rest).
func (p *Pattern) matchSegments(s string) bool {
	segs := p.segs
	if len(segs) == 1 {
		return s == segs[0]
	}
	first, last := segs[0], segs[len(segs)-1]
	if len(s) < len(first)+len(last) || s[:len(first)] != first || s[len(s)-len(last):] != last {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return true
}

// match1 is Match for patterns of at most 63 tokens: a state in one word.
func (p *Pattern) match1(s string) bool {
	stars, chars, masks := p.stars[0], p.chars[0], p.mask1
	st := uint64(1)
	st |= (st & stars) << 1 // no two stars in a row: one step closes
	var pend [5]uint64      // states reached at i+k by a _ (k ≤ 4)
	pending := false
	for i := 0; i < len(s); i++ {
		next := (st&masks[s[i]])<<1 | st&stars
		if ch := st & chars; ch != 0 {
			if k := charLen(s, i); k == 1 {
				next |= ch << 1
			} else {
				pend[k] |= ch << 1
				pending = true
			}
		}
		if pending {
			next |= pend[1]
			pend[1], pend[2], pend[3], pend[4] = pend[2], pend[3], pend[4], 0
			pending = pend[1]|pend[2]|pend[3] != 0
		}
		st = next | (next&stars)<<1
		if st == 0 && !pending {
			return false
		}
	}
	return st&(1<<p.n) != 0
}

// matchN is Match for longer patterns: match1 over words.
func (p *Pattern) matchN(s string) bool {
	w := p.words
	st := make([]uint64, w)
	next := make([]uint64, w)
	var pend [5][]uint64
	for k := range pend {
		pend[k] = make([]uint64, w)
	}
	st[0] = 1
	closureN(st, p.stars)
	for i := 0; i < len(s); i++ {
		m := p.masks[s[i]]
		var carry, chars uint64
		for x := 0; x < w; x++ {
			v := st[x] & m[x]
			next[x] = v<<1 | carry | st[x]&p.stars[x]
			carry = v >> 63
			chars |= st[x] & p.chars[x]
		}
		if chars != 0 {
			to := pend[charLen(s, i)]
			var cc uint64
			for x := 0; x < w; x++ {
				ch := st[x] & p.chars[x]
				to[x] |= ch<<1 | cc
				cc = ch >> 63
			}
		}
		for x := 0; x < w; x++ {
			st[x] = next[x] | pend[1][x]
		}
		closureN(st, p.stars)
		used := pend[1]
		copy(pend[1:], pend[2:])
		clear(used)
		pend[4] = used
		alive := false
		for x := 0; x < w && !alive; x++ {
			alive = st[x]|pend[1][x]|pend[2][x]|pend[3][x] != 0
		}
		if !alive {
			return false
		}
	}
	return st[p.n>>6]&(1<<(p.n&63)) != 0
}

// closureN adds, for every star token in st, the token after it.
func closureN(st, stars []uint64) {
	var carry uint64
	for x := range st {
		v := st[x] & stars[x]
		st[x] |= v<<1 | carry
		carry = v >> 63
	}
}

// charLen is how many bytes LIKE's _ takes at s[i]: the byte and the
// continuation bytes after it (M1), at most 4.
func charLen(s string, i int) int {
	n := 1
	for i+n < len(s) && n < 4 && s[i+n]&0xC0 == 0x80 {
		n++
	}
	return n
}

// lowerInto is lower, into scratch when s is ASCII; the string it returns
// lives no longer than scratch's next use.
func lowerInto(s string, scratch []byte) (string, []byte) {
	scratch = scratch[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return lower(s), scratch
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		scratch = append(scratch, c)
	}
	return unsafe.String(unsafe.SliceData(scratch), len(scratch)), scratch
}

// lower lowers s character by character as ILIKE does (M1).
func lower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
