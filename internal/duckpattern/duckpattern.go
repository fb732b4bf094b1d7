// Package duckpattern puts internal/patmatch in place of DuckDB's LIKE,
// ILIKE and GLOB functions, which DuckDB 1.5.5 answers by backtracking past
// every cancel, through DuckDB's C API (internal/duckcapi).
//
// Invariant D1: no string of a chunk is kept past the call (duckcapi C2):
// patterns are cloned before the cache keeps them, and patmatch keeps no
// reference to what it compiles or matches.
package duckpattern

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/dhsi/dhsi/internal/duckcapi"
	"github.com/dhsi/dhsi/internal/patmatch"
)

// Func is one function replaced.
type Func struct {
	Name   string
	Kind   patmatch.Kind
	Not    bool // the negation: NOT LIKE
	Escape bool // a third argument: the escape character
}

// Funcs are DuckDB 1.5.5's functions that match by backtracking.
var Funcs = []Func{
	{"~~", patmatch.Like, false, false},
	{"!~~", patmatch.Like, true, false},
	{"~~*", patmatch.ILike, false, false},
	{"!~~*", patmatch.ILike, true, false},
	{"~~~", patmatch.Glob, false, false},
	{"like_escape", patmatch.Like, false, true},
	{"not_like_escape", patmatch.Like, true, true},
	{"ilike_escape", patmatch.ILike, false, true},
	{"not_ilike_escape", patmatch.ILike, true, true},
}

var cache = NewCache()

// MaxChunkWork bounds the matches of one chunk (up to 2,048 rows), in
// patmatch.MaxWork's unit: DuckDB looks for a cancel only between chunks,
// so a chunk of rows each just under patmatch's bound ran for minutes
// (40 rows of 65,000 bytes against 65,000 _ took 27 s past a 2 s timeout).
// About a second of a core; a chunk of URLs takes a thousandth of it.
const MaxChunkWork = 4 * patmatch.MaxWork

// Register replaces Funcs on the database of conn, for every connection.
func Register(conn *sql.Conn) error {
	var fns []duckcapi.Func
	for _, f := range Funcs {
		params := []duckcapi.Type{duckcapi.Varchar, duckcapi.Varchar}
		if f.Escape {
			params = append(params, duckcapi.Varchar)
		}
		fns = append(fns, duckcapi.Func{Name: f.Name, Params: params, Result: duckcapi.Boolean,
			Chunk: func(in *duckcapi.Chunk, out *duckcapi.Output) error { return matchChunk(f, in, out) }})
	}
	return duckcapi.Register(conn, fns...)
}

// matchChunk answers one chunk.
func matchChunk(f Func, in *duckcapi.Chunk, out *duckcapi.Output) error {
	result := out.Bools()
	var scratch []byte // ILIKE's lowered strings
	var last struct {
		pattern, escape string
		p               *patmatch.Pattern
	}
	var work uint64
	for row := 0; row < in.Rows(); row++ {
		if in.Skip(row) {
			continue
		}
		s, pattern := in.String(0, row), in.String(1, row)
		escape := ""
		if f.Escape {
			escape = in.String(2, row)
		}
		p := last.p
		if p == nil || pattern != last.pattern || escape != last.escape {
			var err error
			if p, err = cache.Get(f.Kind, pattern, escape); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			last.pattern, last.escape, last.p = pattern, escape, p
		}
		if work += p.Work(s); work > MaxChunkWork {
			return fmt.Errorf("%s: %w: one chunk of %d rows past %d (bytes × 64-token words)", f.Name, patmatch.ErrTooLarge, in.Rows(), uint64(MaxChunkWork))
		}
		var ok bool
		var err error
		ok, scratch, err = p.MatchScratch(s, scratch)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		result[row] = ok != f.Not
	}
	return nil
}

// Cache keeps compiled patterns: a column of patterns compiles each
// distinct one once while they are few, a constant one once.
type Cache struct {
	mu sync.Mutex
	m  map[cacheKey]*patmatch.Pattern
}

type cacheKey struct {
	kind            patmatch.Kind
	pattern, escape string
}

// cacheMax bounds the cache, cacheLen what it keeps: a compiled pattern
// holds up to 256 × ⌈tokens/64⌉ words, so at most about 3 MB in all.
const (
	cacheMax = 256
	cacheLen = 256
)

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[cacheKey]*patmatch.Pattern{}} }

// Get returns pattern compiled.
func (c *Cache) Get(kind patmatch.Kind, pattern, escape string) (*patmatch.Pattern, error) {
	k := cacheKey{kind, pattern, escape}
	c.mu.Lock()
	p, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := patmatch.Compile(kind, pattern, escape)
	if err != nil {
		return nil, err
	}
	if len(pattern) <= cacheLen {
		k.pattern, k.escape = strings.Clone(pattern), strings.Clone(escape) // D1
		c.mu.Lock()
		if len(c.m) >= cacheMax {
			clear(c.m)
		}
		c.m[k] = p
		c.mu.Unlock()
	}
	return p, nil
}
