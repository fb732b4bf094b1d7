package sqlserver

import (
	"context"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// Drivers and BI tools ask the session about itself on connect and on pool
// checkout: SQLAlchemy `select pg_catalog.version()`, Grafana
// `SELECT current_setting('server_version_num')`, DBeaver
// `SELECT current_database(), session_user`, SQLAlchemy and DBeaver
// `SELECT current_schema()`, psql `SELECT pg_backend_pid()`.
// Through DuckDB each cost 150–400 µs (2,300–7,100 statements/s at one
// client against PostgreSQL's 17,600–35,500, wirebench); their answers are
// the session's own state, which Go holds, so matchSessionValues answers a
// SELECT list of them without DuckDB, with DuckDB's column names and types
// (TestNativeSelectAgreesWithDuckDB compares the two paths).

// sessionValue is one select-list item the session answers itself.
type sessionValue struct {
	name string // the column as DuckDB names it
	typ  duckdb.Type
	// value computes the cell when the statement runs: a setting may
	// change between a prepare and an execute
	value func(s *session) any
}

// matchSessionValues matches SELECT item [[AS] alias] [, ...] where every
// item is one of: [pg_catalog.]version(), current_setting('name') of a
// parameter the session keeps, pg_backend_pid(), current_database(),
// current_schema(), current_user, session_user, a standard string
// literal, or NULL.
func (s *session) matchSessionValues(toks []pgsql.Token, keywords map[string]bool) *nativeCall {
	if len(toks) < 2 || !toks[0].Is("SELECT") {
		return nil
	}
	var items []sessionValue
	rest := toks[1:]
	for {
		v, n := s.sessionItem(rest)
		if n == 0 {
			return nil
		}
		rest = rest[n:]
		// an alias
		if len(rest) > 0 && rest[0].Text != "," {
			name, n, ok := matchAlias(rest, keywords)
			if !ok || n == 0 {
				return nil // FROM, WHERE, an operator: DuckDB's business
			}
			v.name, rest = name, rest[n:]
		}
		items = append(items, v)
		if len(rest) == 0 {
			break
		}
		if rest[0].Text != "," {
			return nil // FROM, WHERE, an operator: DuckDB's business
		}
		rest = rest[1:]
	}
	fn := NativeFunction{Run: func(context.Context, []any) ([][]any, error) {
		row := make([]any, len(items))
		for i, it := range items {
			row[i] = it.value(s)
		}
		return [][]any{row}, nil
	}}
	for _, it := range items {
		fn.Columns = append(fn.Columns, NativeColumn{Name: it.name, Type: it.typ})
	}
	return &nativeCall{name: "session_value", fn: fn}
}

// sessionItem matches one item at the start of toks and returns it with
// the number of tokens it took (0: not one).
func (s *session) sessionItem(toks []pgsql.Token) (sessionValue, int) {
	if len(toks) == 0 {
		return sessionValue{}, 0
	}
	t := toks[0]
	if t.Kind == pgsql.String {
		lit, ok := t.StandardString()
		if !ok {
			return sessionValue{}, 0
		}
		return sessionValue{name: t.Text, typ: duckdb.TYPE_VARCHAR, value: func(*session) any { return lit }}, 1
	}
	if t.Kind != pgsql.Ident {
		return sessionValue{}, 0
	}
	// NULL (a keyword, which the tokenizer gives as an identifier): typed
	// as the DuckDB path sends it, int4
	if t.Upper() == "NULL" && (len(toks) == 1 || toks[1].Text != "(" && toks[1].Text != ".") {
		return sessionValue{name: "NULL", typ: duckdb.TYPE_INTEGER, value: func(*session) any { return nil }}, 1
	}
	// current_user and session_user take no parentheses
	if len(toks) == 1 || toks[1].Text != "(" && toks[1].Text != "." {
		switch t.Upper() {
		case "CURRENT_USER", "SESSION_USER":
			return sessionValue{name: strings.ToLower(t.Text), typ: duckdb.TYPE_VARCHAR, value: func(s *session) any { return s.user }}, 1
		}
		return sessionValue{}, 0
	}
	used := 0
	name := t.Upper()
	if toks[1].Text == "." {
		// pg_catalog.version() only: DuckDB names the others by their
		// qualified text, which this does not reproduce
		if !t.Is("pg_catalog") || len(toks) < 5 || !toks[2].Is("version") {
			return sessionValue{}, 0
		}
		toks, used, name = toks[2:], 2, "VERSION"
	}
	if len(toks) < 3 || toks[1].Text != "(" {
		return sessionValue{}, 0
	}
	if toks[2].Text == ")" {
		switch name {
		case "VERSION":
			return sessionValue{name: `"version"()`, typ: duckdb.TYPE_VARCHAR, value: func(*session) any { return versionBanner }}, used + 3
		case "PG_BACKEND_PID":
			return sessionValue{name: "pg_backend_pid()", typ: duckdb.TYPE_INTEGER, value: func(s *session) any { return int32(s.pid) }}, used + 3
		case "CURRENT_SCHEMA":
			// the schema DuckDB resolves names in: the first of the
			// search path it was given (SET search_path refuses a schema
			// that does not exist)
			return sessionValue{name: "current_schema()", typ: duckdb.TYPE_VARCHAR, value: func(s *session) any {
				return clientSchemas(s.settings.searchPathSchemas())[0]
			}}, used + 3
		case "CURRENT_DATABASE":
			return sessionValue{name: "current_database()", typ: duckdb.TYPE_VARCHAR, value: func(s *session) any { return s.srv.engine.Name }}, used + 3
		}
		return sessionValue{}, 0
	}
	// current_setting('name') of a parameter the session keeps; DuckDB's
	// own settings (memory_limit, ...) stay with DuckDB
	if name != "CURRENT_SETTING" || used > 0 || len(toks) < 4 || toks[2].Kind != pgsql.String || toks[3].Text != ")" {
		return sessionValue{}, 0
	}
	param, ok := toks[2].StandardString()
	param = strings.ToLower(param)
	if _, kept := s.settings.get(param); !ok || !kept {
		return sessionValue{}, 0
	}
	return sessionValue{name: "current_setting(" + toks[2].Text + ")", typ: duckdb.TYPE_VARCHAR, value: func(s *session) any {
		v, _ := s.settings.get(param)
		return v
	}}, 4
}
