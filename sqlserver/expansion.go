package sqlserver

import (
	"context"
	"slices"
	"strings"

	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// P5, a bound on what a non-admin's TEMP views and macros expand to.
//
// DuckDB's binder expands a view or macro again wherever it is named,
// before the statement runs and without looking at statement_timeout or a
// cancel. A TEMP macro that names the one before it twice doubles with
// each one: measured as a reader, with statement_timeout 2 s, `m14(1)` of
// such a chain took 3.0 s to answer, `m20(1)` minutes; the same chain of
// views (`v16`, each a UNION ALL of the one before twice) 8.6 s.
//
//	P5. A non-admin's statement that names the session's TEMP views or
//	    macros may expand to at most maxTempExpansion tokens: each name
//	    counts the tokens of the object's definition plus, recursively,
//	    the expansion of every TEMP view or macro the definition names,
//	    once per time it is named (a cycle counts as too many). A CREATE
//	    is such a statement, so no object is ever created past the bound.
//
// DuckDB's catalog is too slow to read per statement (duckdb_functions()
// takes ~17 ms), so the session keeps the definitions it created itself,
// from the text it authorized, and lets them only grow: CREATE OR REPLACE
// and ALTER VIEW ... RENAME TO merge into what a name had (the larger token
// count, the larger count of each name it names), and DROP forgets
// nothing. Whatever a rolled-back transaction, a replacement or a rename
// left in DuckDB's catalog is then one of the definitions merged, so the
// bound holds for it. A definition counts every identifier it names, as a
// macro may name a TEMP object created after it. Statements that name
// nothing the session created as a TEMP view or macro pay one map lookup
// per identifier; statements with no such name (a long IN list, say) are
// not bounded here.

// maxTempExpansion bounds P5. Measured as above: a chain expanding to
// ~40,000 tokens bound in 0.5 s, ~160,000 in 3.0 s (macros), ~180,000 in
// 2.3 s (views).
const maxTempExpansion = 50_000

// tempDef is what P5 knows of a TEMP view or macro: the most tokens and,
// per identifier, the most times any definition of that name held.
type tempDef struct {
	tokens int
	names  map[string]int
}

// merge widens d, the definition of self, to cover one of tokens naming
// names, and reports whether d grew. Its own name is not counted: in a
// definition it is a column, an alias or a parameter, since DuckDB binds
// neither a view nor a macro that names itself (measured: "infinite
// recursion detected" for a view, "does not exist" for a macro), and
// counted it would be a cycle that refuses every statement naming a view
// with a column of its name.
func (d *tempDef) merge(self string, tokens int, names map[string]int) (grew bool) {
	if tokens > d.tokens {
		d.tokens, grew = tokens, true
	}
	for n, c := range names {
		if n != self && c > d.names[n] {
			d.names[n], grew = c, true
		}
	}
	return grew
}

// sqlPrepare is a SQL PREPARE of a non-admin that DuckDB ran: its tokens
// for P5 and P6 at EXECUTE, its text and the read epoch DuckDB bound it in
// (E1). It is recorded (notePrepared) only once DuckDB has run the PREPARE:
// a PREPARE DuckDB refuses, or one parsed and never executed, leaves
// DuckDB's statement of that name, and the record of it, as they were.
type sqlPrepare struct {
	toks  []pgsql.Token
	sql   string
	epoch uint64
}

// preparesName is the key of the name a SQL PREPARE statement gives
// (preparedKey).
func preparesName(toks []pgsql.Token) (string, bool) {
	if len(toks) > 1 && toks[0].Is("PREPARE") {
		return preparedKey(toks[1])
	}
	return "", false
}

// preparedKey is a prepared statement's name as DuckDB compares them: its
// text as written, quoted or not, with only A-Z folded (DuckDB keeps "Ä"
// and "ä" apart, and "K", the Kelvin sign, from "k"; Go's ToLower would
// join them, and one PREPARE would then replace the record of another: a
// review in stop 35).
func preparedKey(t pgsql.Token) (string, bool) {
	switch t.Kind {
	case pgsql.Ident:
		return asciiLower(t.Text), true
	case pgsql.QIdent:
		return asciiLower(t.IdentName()), true
	}
	return "", false
}

// asciiLower folds A-Z only.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// notePrepared records the SQL PREPARE p once DuckDB ran it, bound in
// epoch (sqlPrepare). Admins' are not checked, so not recorded.
func (s *session) notePrepared(p *prepared, epoch uint64) {
	// every statement without rows comes here: lex only a PREPARE
	if len(p.class.toks) == 0 || !p.class.toks[0].Is("PREPARE") {
		return
	}
	toks := pgsql.Significant(pgsql.Lex(p.duckSQL))
	name, ok := preparesName(toks)
	if !ok {
		return
	}
	if s.duckPrepared == nil {
		s.duckPrepared = map[string]bool{}
	}
	s.duckPrepared[name] = true // an admin's too: DISCARD ALL deallocates it
	if s.principal.Role == access.Admin {
		return
	}
	if s.sqlPrepared == nil {
		s.sqlPrepared = map[string]sqlPrepare{}
	}
	s.sqlPrepared[name] = sqlPrepare{toks: toks, sql: p.duckSQL, epoch: epoch}
}

// forgetPrepared drops the record of the statement DEALLOCATE name
// ended in DuckDB (the server sends DuckDB the name it drops here); ""
// drops them all.
func (s *session) forgetPrepared(name string) {
	if name == "" {
		clear(s.sqlPrepared)
		return
	}
	delete(s.sqlPrepared, asciiLower(name))
}

// pendingCreate is a CREATE of a TEMP view or macro that P1-P4 allowed:
// its name and the tokens after it (its definition).
type pendingCreate struct {
	name  string
	body  []pgsql.Token
	macro bool // a MACRO (or FUNCTION), not a VIEW
}

// expansionCheck runs P5 on a non-admin's statement (authorize ran P6 on
// its text, before L1) and, if it passes and creates a TEMP view or macro,
// records its definition. An EXECUTE is checked, by P6 and P5, as the
// statement its SQL PREPARE left in DuckDB (sqlPrepare). (DuckDB 1.5.5
// keeps a prepared statement's plan when a macro it names is replaced, but
// binds it again when a catalog object it reads changed, such as the urls
// view (a review, stop 35): the checks at EXECUTE and in openPortal hold
// either way.)
func (s *session) expansionCheck(ctx context.Context, toks []pgsql.Token) error {
	create := s.creating
	s.creating = nil
	if create != nil {
		toks = create.body // the name being created is no reference
	}
	// what an EXECUTE runs, EXPLAIN [ANALYZE] EXECUTE too, is the statement
	// prepared: P6 on it (authorize checked the EXECUTE's own text, and a
	// TEMP macro the prepared text calls may have grown since), and P5
	// below counts its names with the statement's own. The record is of
	// the PREPARE DuckDB holds (sqlPrepare): a statement that executes one
	// the session has no record of is refused, so the text checked is the
	// text that runs.
	if err := s.requireRecord(toks); err != nil {
		return err
	}
	for _, name := range executedNames(toks) {
		sp, ok := s.sqlPrepared[name]
		if !ok {
			continue
		}
		if err := s.builtinExpansionCheck(ctx, sp.toks); err != nil {
			return err
		}
		toks = append(slices.Clip(toks), sp.toks...)
	}
	if len(s.temps) > 0 {
		sizes := map[string]int{}
		total := 0
		for _, t := range toks {
			if name, ok := identName(t); ok && s.temps[name] != nil {
				total += s.expansionOf(name, sizes)
				if total > maxTempExpansion {
					return pgErrorf(codes.StatementTooComplex, "statement too complex: the TEMP views and macros it names expand to more than %d tokens (DuckDB expands one again wherever it is named, before statement_timeout applies)", maxTempExpansion)
				}
			}
		}
	}
	if create != nil {
		s.noteTemp(create.name, len(toks), identCounts(toks))
		if create.macro {
			if err := s.noteTempMacro(ctx, create.name, toks); err != nil {
				return err
			}
		}
	}
	return nil
}

// requireRecord refuses a statement that executes a SQL PREPARE the
// session has no record of (sqlPrepare): at Parse, and again when it runs,
// since DEALLOCATE may have ended the record between.
func (s *session) requireRecord(toks []pgsql.Token) error {
	if name, ok := executesStatement(toks); ok {
		if _, known := s.sqlPrepared[name]; !known {
			return pgErrorf(codes.InvalidSQLStatementName, "prepared statement %q does not exist", name)
		}
	}
	return nil
}

// executesStatement is the name a statement runs when it is EXECUTE name,
// or EXPLAIN [ANALYZE] [VERBOSE] or EXPLAIN (options) before one.
func executesStatement(toks []pgsql.Token) (string, bool) {
	i := 0
	if len(toks) > 0 && toks[0].Is("EXPLAIN") {
		i = 1
		if i < len(toks) && toks[i].Text == "(" { // EXPLAIN (options)
			end := pgsql.MatchingParen(toks, i)
			if end < 0 {
				return "", false
			}
			i = end + 1
		}
		for i < len(toks) && (toks[i].Is("ANALYZE") || toks[i].Is("ANALYSE") || toks[i].Is("VERBOSE")) {
			i++
		}
	}
	if i+1 < len(toks) && toks[i].Is("EXECUTE") {
		return preparedKey(toks[i+1])
	}
	return "", false
}

// executedNames are the statements of SQL PREPARE that toks runs: the
// statement's own (executesStatement), and an EXECUTE after "(" or FOR, as
// in COPY (EXECUTE p) TO STDOUT and DECLARE c CURSOR FOR EXECUTE p. (DuckDB
// takes EXECUTE nowhere else, not in a PREPARE.) Not the word anywhere: a
// column or table named execute ("SELECT 1 AS execute FROM t") is no
// EXECUTE, and treating it as one made such statements fail (X1's shape
// check, a review in stop 35).
func executedNames(toks []pgsql.Token) []string {
	var out []string
	if name, ok := executesStatement(toks); ok {
		out = append(out, name)
	}
	for i := 1; i+1 < len(toks); i++ {
		prev := toks[i-1]
		if toks[i].Is("EXECUTE") && (prev.Is("FOR") || prev.Kind == pgsql.Punct && prev.Text == "(") {
			if name, ok := preparedKey(toks[i+1]); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

// recheckExpansion applies P6 and P5 again to a statement prepared before
// the session's TEMP definitions last changed (prepared.temps).
func (s *session) recheckExpansion(ctx context.Context, duckSQL string) error {
	if s.principal.Role == access.Admin {
		return nil
	}
	toks := pgsql.Significant(pgsql.Lex(duckSQL))
	if err := s.builtinExpansionCheck(ctx, toks); err != nil {
		return err
	}
	return s.expansionCheck(ctx, toks)
}

// noteTemp merges a definition of the TEMP view or macro name.
func (s *session) noteTemp(name string, tokens int, names map[string]int) {
	if s.temps == nil {
		s.temps = map[string]*tempDef{}
	}
	d := s.temps[name]
	if d == nil {
		d = &tempDef{names: map[string]int{}}
		s.temps[name] = d
	}
	if d.merge(name, tokens, names) {
		s.tempsVersion++
	}
}

// renameTemp is ALTER VIEW from RENAME TO to: to may now hold from's
// definition, and from keeps it (the ALTER may yet roll back).
func (s *session) renameTemp(from, to string) {
	if d := s.temps[strings.ToLower(from)]; d != nil {
		s.noteTemp(strings.ToLower(to), d.tokens, d.names)
	}
}

// expansionOf is the tokens name expands to (P5), memoized in sizes;
// past maxTempExpansion, or in a cycle, it is maxTempExpansion+1.
func (s *session) expansionOf(name string, sizes map[string]int) int {
	const tooMany = maxTempExpansion + 1
	if n, ok := sizes[name]; ok {
		if n < 0 {
			return tooMany // a cycle: DuckDB refuses it, but not before expanding
		}
		return n
	}
	sizes[name] = -1
	d := s.temps[name]
	n := d.tokens
	for ref, times := range d.names {
		if s.temps[ref] == nil {
			continue
		}
		n += times * s.expansionOf(ref, sizes)
		if n > maxTempExpansion {
			n = tooMany
			break
		}
	}
	sizes[name] = n
	return n
}

// identCounts counts the identifiers of toks, by lower-case name.
func identCounts(toks []pgsql.Token) map[string]int {
	names := map[string]int{}
	for _, t := range toks {
		if name, ok := identName(t); ok {
			names[name]++
		}
	}
	return names
}

// identName is t's name in lower case when t is an identifier, quoted or
// not (DuckDB matches names without regard to case either way).
func identName(t pgsql.Token) (string, bool) {
	if t.Kind != pgsql.Ident && t.Kind != pgsql.QIdent {
		return "", false
	}
	return strings.ToLower(t.IdentName()), true
}
