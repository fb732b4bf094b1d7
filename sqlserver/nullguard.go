package sqlserver

import (
	"fmt"
	"slices"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// nullArgMessage is the error of a table function called with a NULL
// argument; duckSQLState maps it to SQLSTATE 22004 (null_value_not_allowed)
// when DuckDB raises it from guardNullArgs' CASE.
const nullArgMessage = "does not take NULL arguments"

// guardNullArgs rewrites, in the SQL sent to DuckDB, every argument of a
// call to one of funcs that is an expression — anything but a single
// literal or $n, which nullUnsafeArgs and Bind check — into
//
//	CASE WHEN (arg) IS NULL THEN error('f() does not take NULL arguments (argument n)') ELSE (arg) END
//
// duckdb-go reads a table function's arguments at bind time without asking
// whether they are NULL, and a NULL VARCHAR there throws a C++ exception
// through cgo that aborts the whole server ("Calling StringValue::Get on
// a NULL value"): domain_urls(CAST(NULL AS VARCHAR), 1, 0, 10) or
// domain_datasets((SELECT NULL)) did. DuckDB folds the CASE while binding,
// so a NULL becomes an ordinary error and a value passes through
// unchanged.
//
// The functions of point lookups (Config.PointLookups) stand for "WHERE
// column = value", which keeps no row for a NULL value: each of their
// arguments, $n included, becomes coalesce((arg), none) instead, none being
// the empty string for the first (the key: no domain is empty) and -1 for
// the others (dataset ids: none is negative). Bind's check of $n
// (nullUnsafeArgs) runs on the statement as the client wrote it, where the
// lookup's $n is no function argument.
func guardNullArgs(toks []pgsql.Token, funcs, lookups []string) []pgsql.Token {
	var out []pgsql.Token
	copied := 0 // toks[:copied] are in out
	// a $n of SQL PREPARE takes its value from SQL EXECUTE, which no Bind
	// checks: PREPARE p AS SELECT * FROM domain_datasets($1); EXECUTE
	// p(NULL) aborted the server
	first := pgsql.NextSignificant(toks, -1)
	sqlPrepare := first >= 0 && toks[first].Is("PREPARE")
	for i := 0; i < len(toks); i++ {
		// quoted names too: DuckDB matches function names without regard
		// to case or quotes ("domain_datasets"(NULL) aborted the server)
		name, ok := identName(toks[i])
		if !ok || !slices.Contains(funcs, name) {
			continue
		}
		args, closeAt := pgsql.CallArgs(toks, pgsql.NextSignificant(toks, i))
		if closeAt < 0 {
			continue
		}
		lookup := slices.Contains(lookups, name)
		for n, a := range args {
			a[0] = namedArgValue(toks, a) // name := value: the value
			if !lookup && simpleArg(toks[a[0]:a[1]], sqlPrepare) {
				continue
			}
			if out == nil {
				out = make([]pgsql.Token, 0, len(toks)+16)
			}
			out = append(out, toks[copied:a[0]]...)
			arg := toks[a[0]:a[1]]
			if lookup {
				// the key ('' is no domain), then dataset ids (-1 is none)
				none := "''"
				if n > 0 {
					none = "-1"
				}
				out = append(out, synth("coalesce(("))
				out = append(out, arg...)
				out = append(out, synth("), "+none+")"))
			} else {
				msg := fmt.Sprintf("%s() %s (argument %d is NULL)", name, nullArgMessage, n+1)
				out = append(out, synth("CASE WHEN ("))
				out = append(out, arg...)
				out = append(out, synth(") IS NULL THEN error('"+msg+"') ELSE ("))
				out = append(out, arg...)
				out = append(out, synth(") END"))
			}
			copied = a[1]
		}
		i = closeAt
	}
	if out == nil {
		return toks
	}
	return append(out, toks[copied:]...)
}

// namedArgValue is where the value of argument a starts: after "name :="
// (or "=>") for a named argument, else at its start.
func namedArgValue(toks []pgsql.Token, a [2]int) int {
	seen := 0
	for k := a[0]; k < a[1]; k++ {
		if toks[k].Kind == pgsql.Space || toks[k].Kind == pgsql.Comment {
			continue
		}
		switch seen {
		case 0:
			if toks[k].Kind != pgsql.Ident && toks[k].Kind != pgsql.QIdent {
				return a[0]
			}
		case 1:
			if toks[k].Text == ":=" || toks[k].Text == "=>" {
				return k + 1
			}
			return a[0]
		}
		seen++
	}
	return a[0]
}

// synth is a token of SQL text made here (it has no source position).
func synth(text string) pgsql.Token { return pgsql.Token{Kind: pgsql.Op, Text: text, Pos: -1} }

// simpleArg reports an argument that cannot hide a NULL from the token
// checks: one string, number, or $n that Bind checks (not one of SQL
// PREPARE).
func simpleArg(arg []pgsql.Token, sqlPrepare bool) bool {
	sig := pgsql.Significant(arg)
	if len(sig) != 1 {
		return false
	}
	switch sig[0].Kind {
	case pgsql.String, pgsql.Number:
		return true
	case pgsql.Param:
		return !sqlPrepare
	}
	return false
}
