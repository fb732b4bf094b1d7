package sqlserver

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/internal/patmatch"
)

// The pattern operators replaced: DuckDB 1.5.5 answers them by recursive
// backtracking that no cancel reaches (internal/patmatch). Registering a
// function under a built-in's name replaces the built-in in the system
// catalog for every connection (measured: duckdb_functions() then lists
// only ours, and system.main."~~" calls ours); DuckDB's optimizer still
// turns a constant LIKE 'abc%', '%abc' or '%abc%' into prefix, suffix and
// contains before any of these is called, as it matches by name.
var patternFunctions = []struct {
	name   string
	kind   patmatch.Kind
	not    bool
	escape bool // a third argument: the escape character
}{
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

// registerPatternFuncs replaces DuckDB's LIKE, ILIKE and GLOB functions
// with patmatch's, whose time is linear in the string, for every
// connection of the database: admins' too, one set of answers for all.
func registerPatternFuncs(conn *sql.Conn) error {
	varchar, err := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	if err != nil {
		return err
	}
	boolean, err := duckdb.NewTypeInfo(duckdb.TYPE_BOOLEAN)
	if err != nil {
		return err
	}
	cache := &patternCache{m: map[patternKey]*patmatch.Pattern{}}
	for _, f := range patternFunctions {
		in := []duckdb.TypeInfo{varchar, varchar}
		if f.escape {
			in = append(in, varchar)
		}
		fn := &patternFunc{
			cfg:   duckdb.ScalarFuncConfig{InputTypeInfos: in, ResultTypeInfo: boolean},
			name:  f.name,
			kind:  f.kind,
			not:   f.not,
			cache: cache,
		}
		if err := duckdb.RegisterScalarUDF(conn, f.name, fn); err != nil {
			return fmt.Errorf("register %s: %w", f.name, err)
		}
	}
	return nil
}

type patternFunc struct {
	cfg   duckdb.ScalarFuncConfig
	name  string
	kind  patmatch.Kind
	not   bool
	cache *patternCache
}

func (f *patternFunc) Config() duckdb.ScalarFuncConfig { return f.cfg }

func (f *patternFunc) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (out any, err error) {
		// a panic in a DuckDB callback ends the process: one row's error
		defer func() {
			if r := recover(); r != nil {
				out, err = nil, fmt.Errorf("%s: internal error: %v", f.name, r)
			}
		}()
		s, _ := values[0].(string)
		pattern, _ := values[1].(string)
		escape := ""
		if len(values) > 2 {
			escape, _ = values[2].(string)
		}
		p, err := f.cache.get(f.kind, pattern, escape)
		if err != nil {
			return nil, err
		}
		ok, err := p.Match(s)
		if errors.Is(err, patmatch.ErrTooLarge) {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		return ok != f.not, err
	}}
}

type patternKey struct {
	kind            patmatch.Kind
	pattern, escape string
}

// patternCache keeps compiled patterns: a column of patterns compiles each
// distinct one once while it stays small, a constant one once.
type patternCache struct {
	mu sync.Mutex
	m  map[patternKey]*patmatch.Pattern
}

// patternCacheMax bounds the cache, patternCacheLen what it keeps: a
// compiled pattern holds 256 × ⌈tokens/64⌉ words, so at most about 3 MB.
const (
	patternCacheMax = 256
	patternCacheLen = 256
)

func (c *patternCache) get(kind patmatch.Kind, pattern, escape string) (*patmatch.Pattern, error) {
	k := patternKey{kind, pattern, escape}
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
	if len(pattern) <= patternCacheLen {
		c.mu.Lock()
		if len(c.m) >= patternCacheMax {
			clear(c.m)
		}
		c.m[k] = p
		c.mu.Unlock()
	}
	return p, nil
}
