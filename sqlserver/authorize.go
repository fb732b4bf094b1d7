package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"

	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// The statement policy of sessions that are not an admin's. DuckDB's own
// guards (Engine.lockDown: no external access outside the lake, locked
// configuration, no extension loading) hold for every session; these checks
// close what they leave open, and run on the exact text DuckDB is given,
// before DuckDB prepares it:
//
//	P1. A statement's first keyword decides its kind; only queries (SELECT,
//	    WITH, VALUES, TABLE, FROM, DESCRIBE, SHOW, SUMMARIZE, PIVOT,
//	    EXPLAIN of one of these), CALL of a DHSI procedure the role may run,
//	    SQL PREPARE/EXECUTE of such a statement, and statements on TEMP
//	    objects of the session itself reach DuckDB. COPY to or from a file,
//	    ATTACH, DETACH, EXPORT, IMPORT, INSTALL, LOAD, PRAGMA, USE,
//	    CHECKPOINT, VACUUM, CREATE SECRET, SET of a DuckDB setting: refused.
//	P2. No table function but those on an allowlist may be named anywhere in
//	    the text: DuckDB's file readers (read_csv, read_parquet, glob,
//	    query, ...) would reach the lake's files, which DuckDB's guard
//	    allows because the urls view reads them.
//	P3. No string, and no quoted name that looks like a path, may stand
//	    where a relation goes (FROM 'x.parquet', DESCRIBE 'x.csv'): DuckDB
//	    reads those as files (replacement scans).
//	P4. DDL and DML reach only TEMP objects of the session, of the kind the
//	    statement names, and a TEMP object may not take the name of a shared
//	    one, created or renamed (a macro shadowing domain_datasets, a view
//	    shadowing datasets).
//	P5. What the session's TEMP views and macros expand to is bounded
//	    (expansion.go).
//	P6. What the statement expands to through built-in and TEMP macros
//	    and NOT MATERIALIZED CTEs is bounded (macros.go).
//
// All six read tokens of pgsql's lexer; L1 (stmtcount.go) makes sure
// DuckDB reads the same single statement. P2 also refuses the scalar
// functions of stackOverflowFunctions and sqlTextFunctions.
//
// Refusals carry SQLSTATE 42501 and name the role and what it lacks; they
// happen before anything runs, so the session and every shared object stay
// as they were.

// safeTableFunctions are DuckDB's table functions a non-admin may call:
// generators and catalog listings that read nothing outside the database.
var safeTableFunctions = map[string]bool{
	"range": true, "generate_series": true, "unnest": true, "repeat": true, "repeat_row": true,
	"json_each": true, "json_tree": true, "summary": true, "test_all_types": true,
	"duckdb_columns": true, "duckdb_constraints": true, "duckdb_dependencies": true,
	"duckdb_functions": true, "duckdb_indexes": true, "duckdb_keywords": true, "duckdb_schemas": true,
	"duckdb_sequences": true, "duckdb_tables": true, "duckdb_types": true, "duckdb_views": true,
	"duckdb_optimizers": true, "duckdb_variables": true,
	"duckdb_approx_database_count": true, "duckdb_memory": true,
	"pragma_table_info": true, "pragma_show": true, "pragma_version": true, "pragma_platform": true,
	"pragma_collations": true, "pg_timezone_names": true, "icu_calendar_names": true,
}

// sqlTextFunctions are DuckDB 1.5.5 scalar functions that parse, or parse,
// bind and plan, SQL given to them in a string: P1–P5 read tokens and never
// look inside a string, so a reader's json_serialize_plan('SELECT * FROM
// read_parquet(”<lake>/dataset_id=3/*/*.parquet”)') listed the files and
// the columns of a dataset hidden by a grant, and with optimize := true
// folded a refused json_structure() until the server ended with SIGSEGV.
// Non-admins may not name them (P2); json_deserialize_sql is in
// stackOverflowFunctions, and the table functions that run SQL text
// (query, query_table, json_execute_serialized_sql, sql_auto_complete)
// are not on safeTableFunctions.
var sqlTextFunctions = map[string]bool{"json_serialize_plan": true, "json_serialize_sql": true}

// hostPathFunctions are DuckDB 1.5.5's table functions that show host
// paths (H1, hostpaths.go): settings, database files, the extension
// directory. Non-admins may not call them (P2); pg_settings and
// current_setting() answer for the settings, without those paths.
var hostPathFunctions = map[string]bool{"duckdb_settings": true, "duckdb_databases": true, "duckdb_extensions": true}

// systemViews are DuckDB 1.5.5 views over table functions P2 refuses:
// named without parentheses they passed it. Non-admins may not name them
// (P2), for the reason given.
var systemViews = map[string]string{
	// once an admin turned logging on, it showed a reader other users' SQL
	// and the files of a dataset hidden from it
	"duckdb_logs": "it shows other sessions' statements and the files they open",
	// database files: H1
	"duckdb_databases":     "it shows where the server keeps its files",
	"pragma_database_list": "it shows where the server keeps its files",
}

// systemCatalog is DuckDB's catalog of built-in objects. Qualified by it,
// a name skips the server's catalog shim: system.pg_catalog.pg_settings
// and system.pg_settings are DuckDB's own, with every host path (H1).
// Non-admins may name it only as system.main, which holds the functions
// and no view of settings (P2).
const systemCatalog = "system"

// stackOverflowFunctions are DuckDB 1.5.5 scalar and aggregate functions
// that recurse once per nesting level of their JSON argument on the
// thread's stack: a reader's json_structure(repeat('[', 100000) || ...)
// ended the whole process with SIGSEGV (measured, with json_contains and
// json_group_structure; the other json functions held at that depth).
// Non-admins may not name them (P2); nothing in the server can bound the
// nesting of a value DuckDB builds at run time.
var stackOverflowFunctions = map[string]bool{
	"json_structure": true, "json_group_structure": true, "json_contains": true, "json_merge_patch": true,
	"json_transform": true, "json_transform_strict": true, "from_json": true, "from_json_strict": true,
	"json_deserialize_sql": true,
}

// stackOverflowTypes are the type names whose casts recurse the same way
// (JSON cast to VARIANT, measured).
var stackOverflowTypes = map[string]bool{"variant": true}

// queryKeywords start statements that only read (P1).
var queryKeywords = map[string]bool{
	"SELECT": true, "WITH": true, "VALUES": true, "TABLE": true, "FROM": true, "DESCRIBE": true,
	"SHOW": true, "SUMMARIZE": true, "PIVOT": true, "UNPIVOT": true, "PIVOT_WIDER": true, "PIVOT_LONGER": true,
}

// relationKeywords are followed by a relation (P3).
var relationKeywords = map[string]bool{"DESCRIBE": true, "SUMMARIZE": true, "SHOW": true, "TABLE": true, "PIVOT": true, "UNPIVOT": true, "PIVOT_WIDER": true, "PIVOT_LONGER": true}

// lazy is a value read from DuckDB's catalog once, on first use, after
// start-up (the Init hooks have registered DHSI's functions by then): the
// table functions, table macros and pragmas (tableFunctions), the reserved
// words (reservedKeywords), the built-in macros' costs (builtinMacros).
type lazy[T any] struct {
	once sync.Once
	v    T
	err  error
}

// get returns the value, read on the first call.
func (l *lazy[T]) get(read func() (T, error)) (T, error) {
	l.once.Do(func() { l.v, l.err = read() })
	return l.v, l.err
}

// readNames reads a set of names: query returns one column of them.
func readNames(ctx context.Context, db *sql.DB, what, query string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names[n] = true
	}
	return names, rows.Err()
}

func (e *Engine) tableFunctions(ctx context.Context) (map[string]bool, error) {
	return e.tfNames.get(func() (map[string]bool, error) {
		return readNames(ctx, e.db, "table functions", `SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE function_type IN ('table', 'table_macro', 'pragma')`)
	})
}

// reservedKeywords lists DuckDB's reserved words.
func (e *Engine) reservedKeywords(ctx context.Context) (map[string]bool, error) {
	return e.reserved.get(func() (map[string]bool, error) {
		return readNames(ctx, e.db, "reserved keywords", `SELECT lower(keyword_name) FROM duckdb_keywords() WHERE keyword_category = 'reserved'`)
	})
}

// keywords lists all of DuckDB's keywords, of every category: DuckDB
// quotes each of them where it writes a name (nativeagg.go, plainName).
func (e *Engine) keywords(ctx context.Context) (map[string]bool, error) {
	return e.allKeywords.get(func() (map[string]bool, error) {
		return readNames(ctx, e.db, "keywords", `SELECT lower(keyword_name) FROM duckdb_keywords()`)
	})
}

func (s *session) deny(what, needs string) error {
	return pgErrorf(codes.InsufficientPrivilege, "%s", (&access.Denied{Principal: s.principal, What: what, Needs: needs}).Error())
}

// authorize applies P1–P4 to the tokens DuckDB will be given.
func (s *session) authorize(ctx context.Context, duckSQL string) error {
	if strings.IndexByte(duckSQL, 0) >= 0 {
		// DuckDB reads a C string, so it would see only the text before
		// the NUL, and the checks below the whole; PostgreSQL refuses it too
		return invalidByte(0)
	}
	if s.principal.Role == access.Admin {
		return nil
	}
	s.creating = nil // P5: set by authorizeCreate for this statement only
	toks := pgsql.Significant(pgsql.Lex(duckSQL))
	if len(toks) == 0 {
		return nil
	}
	// L1: DuckDB retries a text it cannot parse with every Unicode space
	// outside quotes turned into an ASCII one, where this lexer (and
	// PostgreSQL's) reads those bytes as part of an identifier: "FROM\u00a0
	// read_parquet(...)" was one name here and a file read there
	for _, t := range toks {
		if t.Kind == pgsql.Ident && hasUnicodeSpace(t.Text) {
			return pgErrorf(codes.Syntax, "a Unicode space (such as U+00A0) outside a quoted literal: use an ASCII space")
		}
	}
	// P6 before L1: DuckDB's parser, which L1 runs, already copies a
	// simple CASE's operand once per WHEN (macros.go)
	if err := s.builtinExpansionCheck(ctx, toks); err != nil {
		return err
	}
	// L1 (stmtcount.go): the checks read one statement; DuckDB must too
	if n, err := s.srv.engine.stmts.count(duckSQL); err != nil {
		return err
	} else if n > 1 {
		return pgErrorf(codes.Syntax, "DuckDB reads %d statements in this text where the server reads one: send them one at a time", n)
	}
	if err := s.authorizeNames(ctx, toks); err != nil {
		return err
	}
	if err := s.authorizeKind(ctx, toks); err != nil {
		return err
	}
	return s.expansionCheck(ctx, toks)
}

// authorizeNames applies P2 and P3 to every token of the statement.
func (s *session) authorizeNames(ctx context.Context, toks []pgsql.Token) error {
	tfs, err := s.srv.engine.tableFunctions(ctx)
	if err != nil {
		return err
	}
	inFrom := pgsql.FromClauses(toks)
	for i, t := range toks {
		switch t.Kind {
		case pgsql.Ident, pgsql.QIdent:
			name := strings.ToLower(t.IdentName())
			if i+1 < len(toks) && toks[i+1].Text == "(" && sqlTextFunctions[name] {
				return s.deny("call "+name+"() (it parses, binds and plans the SQL in its string argument, where these checks do not look)", "the admin role")
			}
			if i+1 < len(toks) && toks[i+1].Text == "(" && stackOverflowFunctions[name] {
				return s.deny("call "+name+"() (DuckDB overflows its stack on deeply nested JSON there, which ends the server)", "the admin role")
			}
			if i+1 < len(toks) && toks[i+1].Text == "(" && hostPathFunctions[name] {
				return s.deny("call "+name+"() (it shows where the server keeps its files; pg_settings and current_setting() show the settings)", "the admin role")
			}
			if name == "current_setting" && i > 0 && toks[i-1].Text == "." {
				// qualified, it is DuckDB's own, which shows every setting
				// (H1); unqualified, the server's (pg_catalog. is dropped
				// before these checks)
				return s.deny("call a qualified current_setting() (DuckDB's own shows where the server keeps its files; current_setting() unqualified answers)", "the admin role")
			}
			if why, ok := systemViews[name]; ok {
				return s.deny("read the view "+name+" ("+why+")", "the admin role")
			}
			if name == systemCatalog && i+2 < len(toks) && toks[i+1].Text == "." && (i == 0 || toks[i-1].Text != ".") && toks[i+2].IdentName() != "main" {
				return s.deny("name DuckDB's system catalog but as system.main (its pg_catalog shows where the server keeps its files; pg_catalog. names the server's)", "the admin role")
			}
			if stackOverflowTypes[name] {
				return s.deny("use the type "+name+" (DuckDB overflows its stack casting deeply nested JSON to it, which ends the server)", "the admin role")
			}
			if i+1 < len(toks) && toks[i+1].Text == "(" && tfs[name] && !safeTableFunctions[name] && !s.srv.readerFunctions[name] {
				if role, ok := s.srv.cfg.Procedures[name]; ok {
					if s.principal.AtLeast(role) {
						continue
					}
					return s.deny("run "+name+"()", "the "+role.String()+" role")
				}
				return s.deny("call the table function "+name+"() (it can read the server's files or change its configuration)", "the admin role")
			}
			if t.Kind == pgsql.QIdent && (inFrom[i] || afterRelationKeyword(toks, i)) && looksLikePath(name) {
				return s.deny(fmt.Sprintf("read %s as a relation (DuckDB would read it as a file)", t.Text), "the admin role")
			}
		case pgsql.String:
			if inFrom[i] || afterRelationKeyword(toks, i) {
				return s.deny("read a string as a relation (DuckDB would read it as a file)", "the admin role")
			}
		}
	}
	return nil
}

// hasUnicodeSpace reports a space or format character beyond ASCII:
// Unicode's White_Space (which holds every space, line and paragraph
// separator, and NEL) and format characters (the zero widths, the
// byte-order mark): a superset of what DuckDB strips.
func hasUnicodeSpace(s string) bool {
	for _, r := range s {
		if r >= 0x80 && (unicode.IsSpace(r) || unicode.Is(unicode.Cf, r)) {
			return true
		}
	}
	return false
}

func afterRelationKeyword(toks []pgsql.Token, i int) bool {
	return i > 0 && relationKeywords[toks[i-1].Upper()]
}

func looksLikePath(name string) bool {
	return strings.ContainsAny(name, "./\\*?:~")
}

// authorizeKind applies P1 and P4.
func (s *session) authorizeKind(ctx context.Context, toks []pgsql.Token) error {
	kw := func(i int) string {
		if i < len(toks) {
			return toks[i].Upper()
		}
		return ""
	}
	first := kw(0)
	switch {
	case first == "" && toks[0].Text == "(":
		return nil // (SELECT ...) UNION ...
	case first == "WITH":
		// WITH ... INSERT/UPDATE/DELETE: the statement after the CTEs decides
		dml := pgsql.FirstTopLevel(toks, func(i int, t pgsql.Token) bool {
			switch t.Upper() {
			case "INSERT", "UPDATE", "DELETE", "MERGE":
				return i > 0
			}
			return false
		})
		if dml > 0 {
			return s.authorizeKind(ctx, toks[dml:])
		}
		return nil
	case queryKeywords[first]:
		return nil
	case first == "EXPLAIN":
		i := 1
		for kw(i) == "ANALYZE" || kw(i) == "ANALYSE" || kw(i) == "VERBOSE" {
			i++
		}
		if i < len(toks) && toks[i].Text == "(" {
			if end := pgsql.MatchingParen(toks, i); end > 0 {
				i = end + 1
			}
		}
		if i >= len(toks) {
			return nil
		}
		return s.authorizeKind(ctx, toks[i:])
	case first == "CALL":
		if len(toks) < 2 {
			return nil
		}
		name := strings.ToLower(toks[len(toks)-1].IdentName())
		if i := callName(toks); i > 0 {
			name = strings.ToLower(toks[i].IdentName())
		}
		role, ok := s.srv.cfg.Procedures[name]
		if !ok {
			return s.deny("CALL "+name+" (only DHSI's procedures are open to non-admins)", "the admin role")
		}
		if !s.principal.AtLeast(role) {
			return s.deny("run "+name+"()", "the "+role.String()+" role")
		}
		return nil
	case first == "PREPARE":
		for i, t := range toks {
			if t.Is("AS") && i+1 < len(toks) {
				return s.authorizeKind(ctx, toks[i+1:])
			}
		}
		return nil
	case first == "EXECUTE":
		return nil // the statement was checked when it was prepared
	case first == "CREATE":
		return s.authorizeCreate(ctx, toks)
	case first == "DROP":
		i := 1
		obj := kw(i)
		kind, ok := tempKinds[obj]
		if !ok {
			return s.deny("DROP "+obj, "the admin role")
		}
		i++
		if obj == "MACRO" && kw(i) == "TABLE" {
			i++ // DROP MACRO TABLE name
		}
		if kw(i) == "IF" && kw(i+1) == "EXISTS" {
			i += 2
		}
		for i < len(toks) {
			end, err := s.requireTemp(ctx, toks, i, kind, "DROP "+obj)
			if err != nil {
				return err
			}
			i = end
			if i < len(toks) && toks[i].Text == "," {
				i++
				continue
			}
			break
		}
		return nil
	case first == "INSERT":
		i := 1
		if kw(i) == "OR" {
			i += 2
		}
		if kw(i) == "INTO" {
			i++
		}
		_, err := s.requireTemp(ctx, toks, i, "table", "INSERT INTO")
		return err
	case first == "UPDATE", first == "TRUNCATE", first == "DELETE", first == "MERGE":
		i := 1
		if kw(i) == "FROM" || kw(i) == "TABLE" || kw(i) == "INTO" {
			i++
		}
		_, err := s.requireTemp(ctx, toks, i, "table", first)
		return err
	case first == "ALTER":
		switch kw(1) {
		case "TABLE", "VIEW", "SEQUENCE":
			i := 2
			if kw(i) == "IF" && kw(i+1) == "EXISTS" {
				i += 2
			}
			end, err := s.requireTemp(ctx, toks, i, tempKinds[kw(1)], "ALTER "+kw(1))
			if err != nil {
				return err
			}
			// RENAME TO: the new name may not shadow a shared object either
			// (P4), or a later DROP MACRO of that name would pass as a TEMP
			// object's and drop the shared one
			if kw(end) == "RENAME" && kw(end+1) == "TO" {
				if parts, _ := qualifiedName(toks, end+2); len(parts) > 0 {
					name := parts[len(parts)-1]
					shared, err := s.sharedName(ctx, name)
					if err != nil {
						return err
					}
					if shared {
						return s.deny(fmt.Sprintf("rename a TEMP %s to %q: it would shadow a shared object of that name", strings.ToLower(kw(1)), name), "the admin role")
					}
					if kw(1) == "VIEW" {
						if from, _ := qualifiedName(toks, i); len(from) > 0 {
							s.renameTemp(from[len(from)-1], name) // P5
						}
					}
				}
			}
			return nil
		}
		return s.deny("ALTER "+kw(1), "the admin role")
	case first == "COMMENT":
		return s.deny("COMMENT ON shared objects", "the admin role")
	case first == "SET" || first == "RESET":
		return s.deny(first+" "+strings.ToLower(kw(1))+" (only PostgreSQL session settings are open to non-admins)", "the admin role")
	}
	return s.deny(first+" statements", "the admin role")
}

// callName finds the procedure name of CALL [schema.]name(...).
func callName(toks []pgsql.Token) int {
	for i := 1; i < len(toks); i++ {
		if toks[i].Text == "(" {
			return i - 1
		}
	}
	return -1
}

// authorizeCreate lets non-admins create TEMP tables, views, macros and
// sequences that shadow nothing shared (P4).
func (s *session) authorizeCreate(ctx context.Context, toks []pgsql.Token) error {
	i := 1
	if toks[i].Is("OR") && i+1 < len(toks) && toks[i+1].Is("REPLACE") {
		i += 2
	}
	temp := false
	if i < len(toks) && (toks[i].Is("TEMP") || toks[i].Is("TEMPORARY")) {
		temp = true
		i++
	}
	obj := ""
	if i < len(toks) {
		obj = toks[i].Upper()
	}
	switch obj {
	case "TABLE", "VIEW", "MACRO", "FUNCTION", "SEQUENCE":
	default:
		return s.deny("CREATE "+obj+" (non-admins may create TEMP tables, views, macros and sequences)", "the admin role")
	}
	if !temp {
		return s.deny("CREATE "+obj+" outside its session (non-admins may create TEMP objects only)", "the admin role")
	}
	i++
	if i+2 < len(toks) && toks[i].Is("IF") && toks[i+1].Is("NOT") && toks[i+2].Is("EXISTS") {
		i += 3
	}
	parts, _ := qualifiedName(toks, i)
	if len(parts) == 0 {
		return nil // DuckDB reports the syntax error
	}
	if len(parts) > 1 && !(strings.EqualFold(parts[0], "temp") && (len(parts) == 2 || strings.EqualFold(parts[1], "main"))) {
		return s.deny("CREATE "+obj+" "+strings.Join(parts, ".")+" (non-admins may create TEMP objects only)", "the admin role")
	}
	name := parts[len(parts)-1]
	shared, err := s.sharedName(ctx, name)
	if err != nil {
		return err
	}
	if shared {
		return s.deny(fmt.Sprintf("create a TEMP %s named %q: it would shadow a shared object of that name", strings.ToLower(obj), name), "the admin role")
	}
	if obj != "TABLE" && obj != "SEQUENCE" {
		// P5: the definition is the rest of the text
		_, end := qualifiedName(toks, i)
		s.creating = &pendingCreate{name: strings.ToLower(name), body: toks[end:], macro: obj == "MACRO" || obj == "FUNCTION"}
	}
	return nil
}

// qualifiedName reads a dotted name at toks[i]; end is the index after it.
func qualifiedName(toks []pgsql.Token, i int) (parts []string, end int) {
	for i < len(toks) && (toks[i].Kind == pgsql.Ident || toks[i].Kind == pgsql.QIdent) {
		parts = append(parts, toks[i].IdentName())
		i++
		if i < len(toks) && toks[i].Text == "." {
			i++
			continue
		}
		break
	}
	return parts, i
}

// requireTemp allows the statement only when the relation named at toks[i]
// is a TEMP object of this session (P4): "temp.x", or an unqualified x that
// exists in temp (DuckDB resolves temp before every other schema).
func (s *session) requireTemp(ctx context.Context, toks []pgsql.Token, i int, kind, what string) (int, error) {
	parts, end := qualifiedName(toks, i)
	if len(parts) == 0 {
		return end, s.deny(what+" of this object", "the admin role")
	}
	if toks[i].Kind == pgsql.Ident {
		// a reserved word is never a bare name: read as one, "DROP MACRO
		// TABLE x" once checked a TEMP table called "table" and dropped the
		// shared macro x
		reserved, err := s.srv.engine.reservedKeywords(ctx)
		if err != nil {
			return end, err
		}
		if reserved[strings.ToLower(toks[i].Text)] {
			return end, s.deny(fmt.Sprintf("%s %s ... (the server could not tell which object it names)", what, toks[i].Text), "the admin role")
		}
	}
	name := parts[len(parts)-1]
	if len(parts) > 1 {
		if strings.EqualFold(parts[0], "temp") && (len(parts) == 2 || strings.EqualFold(parts[1], "main")) {
			return end, nil
		}
		return end, s.deny(fmt.Sprintf("%s %s (non-admins change only TEMP objects of their own session)", what, strings.Join(parts, ".")), "the admin role")
	}
	ok, err := s.tempName(ctx, name, kind)
	if err != nil {
		return end, err
	}
	if !ok {
		return end, s.deny(fmt.Sprintf("%s %s (non-admins change only TEMP objects of their own session)", what, name), "the admin role")
	}
	return end, nil
}

// tempKinds maps the object word of DROP and ALTER to the kind of TEMP
// object it must name (tempName).
var tempKinds = map[string]string{"TABLE": "table", "VIEW": "view", "MACRO": "function", "FUNCTION": "function", "SEQUENCE": "sequence"}

// tempName reports whether this session has a TEMP object of kind (table,
// view, sequence or function) called name. The kind matters: DuckDB looks
// up DROP MACRO x among functions only, so a TEMP table x must not let it
// through to a shared macro x.
func (s *session) tempName(ctx context.Context, name, kind string) (bool, error) {
	return s.catalogHas(ctx, `SELECT count(*) FROM (
		SELECT 'table' AS k, table_name AS n FROM duckdb_tables() WHERE database_name = 'temp'
		UNION ALL SELECT 'view', view_name FROM duckdb_views() WHERE database_name = 'temp' AND NOT internal
		UNION ALL SELECT 'sequence', sequence_name FROM duckdb_sequences() WHERE database_name = 'temp'
		UNION ALL SELECT 'function', function_name FROM duckdb_functions() WHERE database_name = 'temp'
	) WHERE lower(n) = lower($1) AND k = '`+kind+`'`, name)
}

// sharedName reports whether a shared relation or any function is called
// name (a TEMP object of that name would shadow it for this session).
func (s *session) sharedName(ctx context.Context, name string) (bool, error) {
	return s.catalogHas(ctx, `SELECT count(*) FROM (
		SELECT table_name AS n FROM duckdb_tables() WHERE database_name <> 'temp'
		UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name <> 'temp'
		UNION ALL SELECT function_name FROM duckdb_functions() WHERE database_name <> 'temp'
	) WHERE lower(n) = lower($1)`, name)
}

func (s *session) catalogHas(ctx context.Context, query, name string) (bool, error) {
	rows, err := s.duck.QueryContext(ctx, query, []driver.NamedValue{{Ordinal: 1, Value: name}})
	if err != nil {
		return false, err
	}
	defer rows.Close()
	vals := make([]driver.Value, 1)
	if err := rows.Next(vals); err != nil && err != io.EOF {
		return false, err
	}
	n, _ := vals[0].(int64)
	return n > 0, nil
}

// allowedSetting reports whether a non-admin may SET or RESET name: the
// PostgreSQL session settings the server keeps itself (and custom
// "a.b" names), never a DuckDB setting, which is global to every session.
func (s *session) allowedSetting(name string) error {
	if s.principal.Role == access.Admin {
		return nil
	}
	lname := strings.ToLower(name)
	if s.settings.known(lname) || strings.Contains(lname, ".") {
		return nil
	}
	return s.deny(fmt.Sprintf("set %q (a DuckDB setting is global to every session)", name), "the admin role")
}
