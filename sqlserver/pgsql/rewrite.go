package pgsql

import "strings"

// Rewrite translates the PostgreSQL-only syntax that clients and their
// catalog queries send into SQL DuckDB parses, token by token, leaving every
// literal and comment untouched. Each rule is listed here and tested in
// rewrite_test.go:
//
//  1. OPERATOR(pg_catalog.~) becomes ~ (any operator, qualified or not).
//  2. COLLATE pg_catalog.default, COLLATE "default" and COLLATE "C" are
//     dropped: DuckDB has no such collations and the result is the same.
//  3. The pg_catalog. qualifier is dropped, so the name resolves through the
//     session's search_path, which ends in DHSI's catalog shim schema.
//  4. expr::regclass / ::regtype / ::regnamespace / ::regproc / ::regrole
//     become function calls: a string literal is looked up to an oid
//     (dhsi_regclass_oid('t')), anything else is shown as a name
//     (dhsi_regclass_name(c.oid)).
//  5. ::name and ::"char" become ::varchar.
//  6. Regex operators with a literal pattern keep PostgreSQL's "match
//     anywhere" meaning: DuckDB's ~ is a full match, so the pattern is wrapped
//     as (?s).*(?:pattern).*; ~* and !~* add the case-insensitive flag.
//  7. A set-returning function in FROM with a bare alias names its column
//     too, as in PostgreSQL: "generate_series(1, 3) s" becomes
//     "generate_series(1, 3) s(s)", so "s" can be used as a value. In a
//     select list ("unnest(a) attnum") the alias is a column alias and is
//     kept.
//  8. A string literal in PostgreSQL's array syntax cast to an array type,
//     '{1,2}'::int[], is given in DuckDB's list syntax, '["1", "2"]'::int[],
//     which is how pgx's simple protocol and psql users write arrays.
//  9. A string literal in bytea's hex format cast to bytea, '\xdead'::bytea,
//     is given in DuckDB's blob escapes, '\xde\xad'::bytea (DuckDB would
//     read "\xde" as one byte followed by the text "ad"). An uncast literal
//     keeps DuckDB's meaning: nothing says it is a bytea.
//  10. The information_schema. qualifier (bare or quoted) becomes
//     InfoSchema: DuckDB reserves the name information_schema in every
//     database, so DHSI's information_schema lives under another name.
//  11. PostgreSQL's JSON constructors become DuckDB's: json_build_object and
//     jsonb_build_object become json_object, json_build_array and
//     jsonb_build_array become json_array, json_agg and jsonb_agg become
//     json_group_array.
//  12. x = ANY(list) becomes list_contains(list, x) unless the list is a
//     subquery or a bare parameter: DuckDB plans ANY over a list as a
//     subquery, which it refuses in a LEFT JOIN condition ("a.attnum =
//     ANY(ix.indkey)" in SQLAlchemy's index reflection).
//  13. A scalar function that PostgreSQL lets stand in FROM (string_to_array,
//     regexp_split_to_array, parse_ident, current_schemas) becomes a one-row
//     subquery: "string_to_array(x, ',') s" becomes
//     "(SELECT string_to_array(x, ',') AS s) s", as Grafana writes it.
//  14. format('%s.%I', a, b) with a literal format becomes printf('%s.%s', a,
//     quote_ident(b)): DuckDB's format() uses {} placeholders; %I and %L
//     become quote_ident and quote_literal.
//  15. CAST(x AS regclass) (and the other object-identifier types) becomes
//     a call like rule 4's: a lookup of the oid unless x is a column or a
//     number, which are oids already.
//
// Rule 4 looks up any operand followed by ::oid, since a name is what
// PostgreSQL casts there: format('%I.%I', s, t)::regclass::oid. Rule 3 also
// drops a quoted "pg_catalog" qualifier, as HoneySQL writes it (Metabase).
//
// The result is only ever passed to DuckDB; the client's text is kept for
// error messages.
func Rewrite(toks []Token) []Token {
	toks = scalarFunctionsInFrom(aliasSetReturningFunctions(unwrapOperators(toks)))
	out := make([]Token, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		// Rule 2.
		if t.Is("COLLATE") {
			if j, ok := pgCollation(toks, i); ok {
				i = j
				continue
			}
		}
		// Rule 10.
		if (t.Kind == Ident || t.Kind == QIdent) && t.IdentName() == "information_schema" && !prevIsDot(out) {
			if j := NextSignificant(toks, i); j >= 0 && toks[j].Text == "." {
				out = append(out, Token{Kind: Ident, Text: InfoSchema, Pos: t.Pos})
				continue
			}
		}
		// Rule 11.
		if t.Kind == Ident {
			if fn, ok := jsonFunctions[strings.ToLower(t.Text)]; ok && !prevIsDot(out) {
				if j := NextSignificant(toks, i); j >= 0 && toks[j].Text == "(" {
					out = append(out, Token{Kind: Ident, Text: fn, Pos: t.Pos})
					continue
				}
			}
		}
		// Rule 3: pg_catalog . name (not the third part of a.b.c). DuckDB
		// folds a quoted name's case too: "PG_CATALOG".pg_settings was
		// DuckDB's own, with the server's host paths (sqlserver H1).
		if (t.Kind == Ident || t.Kind == QIdent) && strings.EqualFold(t.IdentName(), "pg_catalog") && !prevIsDot(out) {
			if j := NextSignificant(toks, i); j >= 0 && toks[j].Text == "." {
				if k := NextSignificant(toks, j); k >= 0 && (toks[k].Kind == Ident || toks[k].Kind == QIdent) {
					i = k - 1 // drop "pg_catalog" and "." (and the space between)
					continue
				}
			}
		}
		// Rules 4 and 5: casts.
		if t.Kind == Op && t.Text == "::" {
			j := NextSignificant(toks, i)
			if j >= 0 {
				k := j
				// skip a pg_catalog. qualifier on the type name
				if toks[k].Kind == Ident && strings.EqualFold(toks[k].Text, "pg_catalog") {
					if d := NextSignificant(toks, k); d >= 0 && toks[d].Text == "." {
						if n := NextSignificant(toks, d); n >= 0 {
							k = n
						}
					}
				}
				typ := toks[k].IdentName()
				if fn, ok := regTypes[typ]; ok && !isArrayAfter(toks, k) {
					start := operandStart(out)
					if start >= 0 {
						operand := append([]Token(nil), out[start:]...)
						out = out[:start]
						suffix := "_name"
						if sig := Significant(operand); len(sig) == 1 && sig[0].Kind == String || castTo(toks, k, "oid") {
							suffix = "_oid"
						}
						out = append(out, Token{Kind: Ident, Text: fn + suffix, Pos: t.Pos}, Token{Kind: Punct, Text: "("})
						out = append(out, operand...)
						out = append(out, Token{Kind: Punct, Text: ")"})
						i = k
						continue
					}
				}
				if typ == "name" || (toks[k].Kind == QIdent && typ == "char") {
					out = append(out, t, Token{Kind: Ident, Text: "varchar", Pos: toks[k].Pos})
					i = k
					continue
				}
				if k != j { // drop pg_catalog. on the type
					out = append(out, t)
					i = k - 1
					continue
				}
			}
		}
		// Rules 8 and 9.
		if t.Kind == String {
			if lit, ok := castLiteral(toks, i); ok {
				out = append(out, Token{Kind: String, Text: lit, Pos: t.Pos})
				continue
			}
		}
		// Rule 12.
		if t.Kind == Op && t.Text == "=" {
			if list, end, ok := anyList(toks, i); ok {
				if start := operandStart(out); start >= 0 {
					operand := append([]Token(nil), out[start:]...)
					out = out[:start]
					out = append(out, Token{Kind: Ident, Text: "list_contains", Pos: t.Pos}, Token{Kind: Punct, Text: "("})
					out = append(out, Rewrite(list)...)
					out = append(out, Token{Kind: Punct, Text: ","}, Token{Kind: Space, Text: " "})
					out = append(out, trimSpace(operand)...)
					out = append(out, Token{Kind: Punct, Text: ")"})
					i = end
					continue
				}
			}
		}
		// Rule 15.
		if t.Is("CAST") && !prevIsDot(out) {
			if call, end, ok := regCast(toks, i); ok {
				out = append(out, call...)
				i = end
				continue
			}
		}
		// Rule 14.
		if t.Kind == Ident && strings.EqualFold(t.Text, "format") && !prevIsDot(out) {
			if call, end, ok := pgFormat(toks, i); ok {
				out = append(out, call...)
				i = end
				continue
			}
		}
		// Rule 6.
		if t.Kind == Op && (t.Text == "~" || t.Text == "!~" || t.Text == "~*" || t.Text == "!~*") {
			if j := NextSignificant(toks, i); j >= 0 && toks[j].Kind == String {
				if lit, ok := wrapRegex(toks[j].Text, strings.HasSuffix(t.Text, "*")); ok {
					op := "~"
					if strings.HasPrefix(t.Text, "!") {
						op = "!~"
					}
					out = append(out, Token{Kind: Op, Text: op, Pos: t.Pos}, Token{Kind: Space, Text: " "}, Token{Kind: String, Text: lit, Pos: toks[j].Pos})
					i = j
					continue
				}
			}
		}
		out = append(out, t)
	}
	return out
}

// InfoSchema is the schema that answers information_schema (rule 10); the
// server's catalog shim (sql/pg_catalog.sql) creates it.
const InfoSchema = "dhsi_sys.infoschema"

// jsonFunctions maps PostgreSQL's JSON constructors to DuckDB's (rule 11).
var jsonFunctions = map[string]string{
	"json_build_object": "json_object", "jsonb_build_object": "json_object",
	"json_build_array": "json_array", "jsonb_build_array": "json_array",
	"json_agg": "json_group_array", "jsonb_agg": "json_group_array",
}

// unwrapOperators applies rule 1 first, so the other rules see plain
// operators.
func unwrapOperators(toks []Token) []Token {
	out := make([]Token, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		if toks[i].Is("OPERATOR") {
			if j, op, ok := operatorCall(toks, i); ok {
				out = append(out, Token{Kind: Op, Text: op, Pos: toks[i].Pos})
				i = j
				continue
			}
		}
		out = append(out, toks[i])
	}
	return out
}

// setReturning are functions whose FROM-clause alias PostgreSQL also uses as
// the column name.
var setReturning = map[string]bool{"generate_series": true, "unnest": true, "generate_subscripts": true}

// aliasKeywords may follow a FROM item and are never an alias.
var aliasKeywords = map[string]bool{
	"WHERE": true, "JOIN": true, "LEFT": true, "RIGHT": true, "INNER": true, "FULL": true, "CROSS": true,
	"ON": true, "GROUP": true, "ORDER": true, "LIMIT": true, "OFFSET": true, "UNION": true, "EXCEPT": true,
	"INTERSECT": true, "WINDOW": true, "HAVING": true, "NATURAL": true, "USING": true, "WITH": true,
	"LATERAL": true, "FETCH": true, "FOR": true, "AS": true,
}

// aliasSetReturningFunctions applies rule 7.
func aliasSetReturningFunctions(toks []Token) []Token {
	out := make([]Token, 0, len(toks)+4)
	inFrom := fromClauses(toks)
	for i := 0; i < len(toks); i++ {
		out = append(out, toks[i])
		if toks[i].Kind != Ident || !setReturning[strings.ToLower(toks[i].Text)] || !inFrom[i] {
			continue
		}
		open := NextSignificant(toks, i)
		if open < 0 || toks[open].Text != "(" {
			continue
		}
		end := matchingParen(toks, open)
		if end < 0 {
			continue
		}
		a := NextSignificant(toks, end)
		if a >= 0 && toks[a].Is("AS") {
			a = NextSignificant(toks, a)
		}
		if a < 0 || toks[a].Kind != Ident || aliasKeywords[toks[a].Upper()] {
			continue
		}
		if after := NextSignificant(toks, a); after >= 0 && toks[after].Text == "(" {
			continue // already has column aliases
		}
		out = append(out, toks[i+1:a+1]...)
		out = append(out, Token{Kind: Punct, Text: "("}, toks[a], Token{Kind: Punct, Text: ")"})
		i = a
	}
	return out
}

// fromClauses reports, for each token, whether it stands in a FROM clause
// at its own parenthesis depth (a FROM item, not a select-list entry or a
// condition).
func fromClauses(toks []Token) []bool {
	// the state of one parenthesis (or bracket) depth
	const (
		outside   = iota
		fromItems // after FROM, JOIN, a relation's USING, or a comma ending a join condition
		joinCond  // after ON or USING (...) of a join: an expression, until a comma or JOIN
	)
	out := make([]bool, len(toks))
	state := []uint8{outside}
	for i, t := range toks {
		top := len(state) - 1
		switch {
		case t.Text == "(" || t.Text == "[":
			out[i] = state[top] == fromItems
			state = append(state, outside)
			continue
		case t.Text == ")" || t.Text == "]":
			if top > 0 {
				state = state[:top]
			}
		case t.Text == "," && state[top] == joinCond:
			// "a JOIN b ON c, d": the comma ends the condition and d is the
			// next FROM item (a bracket or parenthesis inside c has its own
			// depth, so its commas do not count)
			state[top] = fromItems
		case t.Kind == Ident:
			switch t.Upper() {
			case "FROM", "JOIN":
				state[top] = fromItems
			case "ON":
				if state[top] == fromItems {
					state[top] = joinCond
				} else {
					state[top] = outside
				}
			case "USING":
				// JOIN ... USING (a, b) is a condition; DELETE ... USING t
				// and MERGE ... USING t name relations
				if n := NextSignificant(toks, i); n >= 0 && toks[n].Text == "(" && state[top] == fromItems {
					state[top] = joinCond
				} else {
					state[top] = fromItems
				}
			case "SELECT", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "UNION",
				"INTERSECT", "EXCEPT", "WINDOW", "RETURNING", "SET", "VALUES", "FETCH", "QUALIFY":
				if state[top] == fromItems && isAlias(toks, i) {
					break // "FROM datasets set, 'x.parquet'": an alias, not a clause
				}
				state[top] = outside
			}
		}
		out[i] = state[len(state)-1] == fromItems
	}
	return out
}

// isAlias reports whether the clause keyword at toks[i], met among FROM
// items, is a relation's alias instead: after AS, before a comma, and for
// SET and VALUES (unreserved words, which never start a clause among FROM
// items) anywhere there.
func isAlias(toks []Token, i int) bool {
	if toks[i].Is("SET") || toks[i].Is("VALUES") {
		return true
	}
	if p := prevSignificant(toks, i); p >= 0 && toks[p].Is("AS") {
		return true
	}
	n := NextSignificant(toks, i)
	return n >= 0 && toks[n].Text == ","
}

// prevSignificant returns the index of the last token before toks[i] that
// is neither space nor a comment, or -1 (NextSignificant's mirror).
func prevSignificant(toks []Token, i int) int {
	for j := i - 1; j >= 0; j-- {
		if toks[j].Kind != Space && toks[j].Kind != Comment {
			return j
		}
	}
	return -1
}

// anyList matches "= ANY (expr)" at the "=" toks[i], where expr is neither
// a subquery nor a bare parameter, and returns expr's tokens and the index
// of the closing parenthesis.
func anyList(toks []Token, i int) ([]Token, int, bool) {
	j := NextSignificant(toks, i)
	if j < 0 || !(toks[j].Is("ANY") || toks[j].Is("SOME")) {
		return nil, 0, false
	}
	open := NextSignificant(toks, j)
	if open < 0 || toks[open].Text != "(" {
		return nil, 0, false
	}
	first := NextSignificant(toks, open)
	if first < 0 || first >= len(toks) || toks[first].Is("SELECT") || toks[first].Is("VALUES") || toks[first].Is("WITH") || toks[first].Text == "(" {
		return nil, 0, false
	}
	depth := 0
	for k := open; k < len(toks); k++ {
		switch toks[k].Text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		}
		if depth == 0 {
			inner := toks[open+1 : k]
			if sig := Significant(inner); len(sig) == 1 && sig[0].Kind == Param {
				return nil, 0, false
			}
			return inner, k, true
		}
	}
	return nil, 0, false
}

// trimSpace drops leading and trailing whitespace tokens.
func trimSpace(toks []Token) []Token {
	for len(toks) > 0 && toks[0].Kind == Space {
		toks = toks[1:]
	}
	for len(toks) > 0 && toks[len(toks)-1].Kind == Space {
		toks = toks[:len(toks)-1]
	}
	return toks
}

// regTypes maps PostgreSQL's object-identifier types to the shim functions
// that stand in for the casts.
var regTypes = map[string]string{
	"regclass":     "dhsi_regclass",
	"regtype":      "dhsi_regtype",
	"regnamespace": "dhsi_regnamespace",
	"regproc":      "dhsi_regproc",
	"regprocedure": "dhsi_regproc",
	"regrole":      "dhsi_regrole",
}

// NextSignificant is the index of the first token after i that is not
// whitespace or a comment, or -1.
func NextSignificant(toks []Token, i int) int {
	for j := i + 1; j < len(toks); j++ {
		if toks[j].Kind != Space && toks[j].Kind != Comment {
			return j
		}
	}
	return -1
}

func prevIsDot(out []Token) bool {
	j := prevSignificant(out, len(out))
	return j >= 0 && out[j].Text == "."
}

func isArrayAfter(toks []Token, k int) bool {
	j := NextSignificant(toks, k)
	return j >= 0 && toks[j].Text == "["
}

// operatorCall matches OPERATOR ( [schema .] op ) at toks[i] and returns the
// index of the closing parenthesis and the operator.
func operatorCall(toks []Token, i int) (int, string, bool) {
	j := NextSignificant(toks, i)
	if j < 0 || toks[j].Text != "(" {
		return 0, "", false
	}
	op := ""
	for k := j + 1; k < len(toks); k++ {
		switch {
		case toks[k].Kind == Space:
		case toks[k].Text == ")":
			return k, op, op != ""
		case toks[k].Kind == Op:
			op = toks[k].Text
		case toks[k].Kind == Ident || toks[k].Text == ".":
		default:
			return 0, "", false
		}
	}
	return 0, "", false
}

// pgCollation matches COLLATE followed by a PostgreSQL built-in collation
// name that DuckDB lacks, and returns the index of the last token consumed.
func pgCollation(toks []Token, i int) (int, bool) {
	j := NextSignificant(toks, i)
	if j < 0 {
		return 0, false
	}
	if toks[j].Kind == Ident && strings.EqualFold(toks[j].Text, "pg_catalog") {
		d := NextSignificant(toks, j)
		if d < 0 || toks[d].Text != "." {
			return 0, false
		}
		j = NextSignificant(toks, d)
		if j < 0 {
			return 0, false
		}
	}
	switch toks[j].IdentName() {
	case "default", "C", "POSIX", "c", "posix", "ucs_basic":
		return j, true
	}
	return 0, false
}

// operandStart finds where the operand of a postfix :: cast begins in the
// already-emitted tokens: a literal, a parameter, an identifier chain
// (a.b.c), a parenthesised group optionally preceded by a function name, or
// any of those followed by earlier casts (x::oid::regclass).
func operandStart(out []Token) int {
	j := len(out) - 1
	skip := func() {
		for j >= 0 && (out[j].Kind == Space || out[j].Kind == Comment) {
			j--
		}
	}
	for {
		skip()
		if j < 0 {
			return -1
		}
		switch {
		case out[j].Text == ")" || out[j].Text == "]":
			depth := 0
		match:
			for ; j >= 0; j-- {
				switch out[j].Text {
				case ")", "]":
					depth++
				case "(", "[":
					depth--
				}
				if depth == 0 {
					break match
				}
			}
			if j < 0 {
				return -1
			}
			// a function name before "("
			k := j - 1
			for k >= 0 && out[k].Kind == Space {
				k--
			}
			if k >= 0 && (out[k].Kind == Ident || out[k].Kind == QIdent) && out[j].Text == "(" {
				j = k
				j = chainStart(out, j)
			}
		case out[j].Kind == String || out[j].Kind == Number || out[j].Kind == Param:
		case out[j].Kind == Ident || out[j].Kind == QIdent:
			j = chainStart(out, j)
		default:
			return -1
		}
		// earlier cast: <operand> :: type <here>
		k := prevSignificant(out, j)
		if k >= 0 && out[k].Text == "::" {
			j = k - 1
			continue
		}
		return j
	}
}

// chainStart walks back over an a.b.c identifier chain ending at out[j].
func chainStart(out []Token, j int) int {
	for j >= 2 && out[j-1].Text == "." && (out[j-2].Kind == Ident || out[j-2].Kind == QIdent) {
		j -= 2
	}
	return j
}

// wrapRegex turns a PostgreSQL regex literal into one whose full match equals
// the original's partial match.
func wrapRegex(lit string, insensitive bool) (string, bool) {
	prefix := ""
	body := lit
	if strings.HasPrefix(body, "E'") || strings.HasPrefix(body, "e'") {
		prefix = body[:1]
		body = body[1:]
	}
	if !strings.HasPrefix(body, "'") || !strings.HasSuffix(body, "'") || len(body) < 2 {
		return "", false
	}
	flags := "(?s)"
	if insensitive {
		flags = "(?is)"
	}
	return prefix + "'" + flags + ".*(?:" + body[1:len(body)-1] + ").*'", true
}

// castLiteral applies rules 8 and 9 to the string literal toks[i] and returns
// its replacement.
func castLiteral(toks []Token, i int) (string, bool) {
	body, ok := toks[i].StandardString()
	if !ok {
		return "", false // E'', B'', X'', $$ and unterminated literals are kept
	}
	j := NextSignificant(toks, i)
	if j < 0 || toks[j].Text != "::" {
		return "", false
	}
	k := NextSignificant(toks, j)
	if k >= 0 && toks[k].Kind == Ident && strings.EqualFold(toks[k].Text, "pg_catalog") {
		if d := NextSignificant(toks, k); d >= 0 && toks[d].Text == "." {
			k = NextSignificant(toks, d)
		}
	}
	if k < 0 || (toks[k].Kind != Ident && toks[k].Kind != QIdent) {
		return "", false
	}
	name := toks[k].IdentName()
	// the rest of a multi-word type name (double precision, character
	// varying) and a modifier, then "[" for an array type
	m := NextSignificant(toks, k)
	for n := 0; n < 3 && m >= 0 && toks[m].Kind == Ident && !toks[m].Is("AS"); n++ {
		m = NextSignificant(toks, m)
	}
	if m >= 0 && toks[m].Text == "(" {
		for m >= 0 && toks[m].Text != ")" {
			m = NextSignificant(toks, m)
		}
		if m >= 0 {
			m = NextSignificant(toks, m)
		}
	}
	isArray := m >= 0 && toks[m].Text == "["
	switch {
	case isArray && strings.HasPrefix(strings.TrimLeft(body, " \t\n\r"), "{"):
		if l, ok := ArrayToList(body); ok {
			return quoteLiteral(l), true
		}
	case !isArray && name == "bytea" && isHexBytea(body):
		var b strings.Builder
		for p := 2; p < len(body); p += 2 {
			b.WriteString(`\x`)
			b.WriteString(body[p : p+2])
		}
		return quoteLiteral(b.String()), true
	}
	return "", false
}

// isHexBytea reports whether s is bytea's hex input format: \x and pairs of
// hex digits.
func isHexBytea(s string) bool {
	if len(s) < 2 || s[0] != '\\' || (s[1] != 'x' && s[1] != 'X') || len(s)%2 != 0 {
		return false
	}
	for i := 2; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// castTo reports whether the type name at toks[k] is followed by ::typ.
func castTo(toks []Token, k int, typ string) bool {
	j := NextSignificant(toks, k)
	if j < 0 || toks[j].Text != "::" {
		return false
	}
	n := NextSignificant(toks, j)
	return n >= 0 && toks[n].IdentName() == typ
}

// scalarInFrom are scalar functions PostgreSQL accepts as FROM items (rule 13).
var scalarInFrom = map[string]bool{"string_to_array": true, "regexp_split_to_array": true, "parse_ident": true, "current_schemas": true}

// scalarFunctionsInFrom applies rule 13.
func scalarFunctionsInFrom(toks []Token) []Token {
	inFrom := fromClauses(toks)
	out := make([]Token, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.Kind != Ident || !scalarInFrom[strings.ToLower(t.Text)] || !inFrom[i] || prevIsDot(out) {
			out = append(out, t)
			continue
		}
		end := matchingParen(toks, NextSignificant(toks, i))
		if end < 0 {
			out = append(out, t)
			continue
		}
		a := NextSignificant(toks, end)
		if a >= 0 && toks[a].Is("AS") {
			a = NextSignificant(toks, a)
		}
		if a < 0 || toks[a].Kind != Ident || aliasKeywords[toks[a].Upper()] {
			out = append(out, t)
			continue
		}
		alias := toks[a]
		out = append(out, Token{Kind: Punct, Text: "("}, Token{Kind: Ident, Text: "SELECT"}, Token{Kind: Space, Text: " "})
		out = append(out, toks[i:end+1]...)
		out = append(out, Token{Kind: Space, Text: " "}, Token{Kind: Ident, Text: "AS"}, Token{Kind: Space, Text: " "}, alias,
			Token{Kind: Punct, Text: ")"}, Token{Kind: Space, Text: " "}, alias)
		i = a
	}
	return out
}

// matchingParen returns the index of the ")" closing the "(" at toks[open],
// or -1.
func matchingParen(toks []Token, open int) int {
	if open < 0 || toks[open].Text != "(" {
		return -1
	}
	depth := 0
	for k := open; k < len(toks); k++ {
		switch toks[k].Text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// CallArgs splits the arguments of the call whose "(" is toks[open] at its
// top-level commas (not those inside nested parentheses or brackets). It
// returns each argument's token range [from, to) and the index of the
// closing parenthesis; end is -1 when toks[open] is not a "(" that closes.
// A call with nothing between its parentheses has no arguments.
func CallArgs(toks []Token, open int) (args [][2]int, end int) {
	end = matchingParen(toks, open)
	if end < 0 {
		return nil, -1
	}
	if len(Significant(toks[open+1:end])) == 0 {
		return nil, end
	}
	depth, start := 0, open+1
	for k := open + 1; k < end; k++ {
		switch toks[k].Text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ",":
			if depth == 0 {
				args = append(args, [2]int{start, k})
				start = k + 1
			}
		}
	}
	return append(args, [2]int{start, end}), end
}

// pgFormat applies rule 14 to the call format(...) at toks[i], returning the
// replacement tokens and the index of the closing parenthesis.
func pgFormat(toks []Token, i int) ([]Token, int, bool) {
	ranges, end := CallArgs(toks, NextSignificant(toks, i))
	if end < 0 || len(ranges) == 0 {
		return nil, 0, false
	}
	args := make([][]Token, len(ranges))
	for n, r := range ranges {
		args[n] = toks[r[0]:r[1]]
	}
	f := Significant(args[0])
	if len(f) != 1 || f[0].Kind != String || !strings.HasPrefix(f[0].Text, "'") {
		return nil, 0, false
	}
	lit := f[0].Text
	var spec []byte
	var b strings.Builder
	for k := 0; k < len(lit); k++ {
		if lit[k] != '%' {
			b.WriteByte(lit[k])
			continue
		}
		if k+1 >= len(lit) {
			return nil, 0, false
		}
		k++
		switch lit[k] {
		case '%':
			b.WriteString("%%")
		case 's', 'I', 'L':
			b.WriteString("%s")
			spec = append(spec, lit[k])
		default:
			return nil, 0, false // positional or width specifiers: left to DuckDB
		}
	}
	if len(spec) != len(args)-1 {
		return nil, 0, false
	}
	out := []Token{{Kind: Ident, Text: "printf", Pos: toks[i].Pos}, {Kind: Punct, Text: "("}, {Kind: String, Text: b.String()}}
	for n, a := range args[1:] {
		out = append(out, Token{Kind: Punct, Text: ","}, Token{Kind: Space, Text: " "})
		a = Rewrite(trimSpace(a))
		wrap := map[byte]string{'I': "quote_ident", 'L': "quote_literal"}[spec[n]]
		if wrap == "" {
			out = append(out, a...)
			continue
		}
		out = append(out, Token{Kind: Ident, Text: wrap}, Token{Kind: Punct, Text: "("})
		out = append(out, a...)
		out = append(out, Token{Kind: Punct, Text: ")"})
	}
	return append(out, Token{Kind: Punct, Text: ")"}), end, true
}

// regCast applies rule 15 to CAST(...) at toks[i], returning the replacement
// and the index of the closing parenthesis.
func regCast(toks []Token, i int) ([]Token, int, bool) {
	open := NextSignificant(toks, i)
	end := matchingParen(toks, open)
	if end < 0 {
		return nil, 0, false
	}
	inner := toks[open+1 : end]
	sig := Significant(inner)
	if len(sig) < 3 {
		return nil, 0, false
	}
	typ := sig[len(sig)-1]
	fn, ok := regTypes[typ.IdentName()]
	if !ok {
		return nil, 0, false
	}
	as := len(sig) - 2
	if len(sig) >= 5 && sig[len(sig)-2].Text == "." && sig[len(sig)-3].IdentName() == "pg_catalog" {
		as = len(sig) - 4
	}
	if !sig[as].Is("AS") {
		return nil, 0, false
	}
	// the operand: the tokens before that AS, at depth 0 of the CAST
	cut := -1
	for k := range inner {
		if inner[k].Pos == sig[as].Pos && inner[k].Text == sig[as].Text {
			cut = k
		}
	}
	if cut < 0 {
		return nil, 0, false
	}
	operand := trimSpace(inner[:cut])
	suffix := "_oid"
	if os := Significant(operand); len(os) == 1 && os[0].Kind == Number ||
		len(os) > 0 && (os[len(os)-1].Kind == Ident || os[len(os)-1].Kind == QIdent) && chainStart(os, len(os)-1) == 0 {
		suffix = "_name"
	}
	out := []Token{{Kind: Ident, Text: fn + suffix, Pos: toks[i].Pos}, {Kind: Punct, Text: "("}}
	out = append(out, Rewrite(operand)...)
	return append(out, Token{Kind: Punct, Text: ")"}), end, true
}

// FromClauses reports, for each token, whether it stands in a FROM clause
// at its own parenthesis depth: where a name is a relation (a table, a view,
// or — to DuckDB — a file path given as a string).
func FromClauses(toks []Token) []bool { return fromClauses(toks) }

// MatchingParen returns the index of the ")" closing the "(" at toks[open],
// or -1.
func MatchingParen(toks []Token, open int) int { return matchingParen(toks, open) }

// FirstTopLevel returns the index of the first token at parenthesis depth 0
// for which match is true, or -1.
func FirstTopLevel(toks []Token, match func(i int, t Token) bool) int {
	depth := 0
	for i, t := range toks {
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 && match(i, t) {
			return i
		}
	}
	return -1
}
