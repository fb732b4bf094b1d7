package pgsql

import (
	"maps"
	"strconv"
	"strings"
)

// Lookup names a table function (or table macro) that returns exactly the
// rows of a view whose Column equals its one argument: the index behind
// the view. DuckDB cannot push a WHERE into a view over a table function,
// so without it "SELECT … FROM domains WHERE domain = $1" scans every row.
type Lookup struct {
	Column   string // lower case
	Function string
	// Narrow, when set, is a narrower function of two arguments: where
	// another top-level conjunct is Narrow.Column = value2 (value2 a
	// literal, a number or $n), the view becomes Narrow.Function(value,
	// value2), which returns exactly the rows with both (urls by domain
	// and dataset_id reads one dataset's postings, not every dataset's).
	// The WHERE clause stays whole.
	Narrow *Lookup
}

// clauseEnd are the keywords that end a WHERE clause at its level.
var clauseEnd = map[string]bool{
	"GROUP": true, "ORDER": true, "LIMIT": true, "OFFSET": true, "HAVING": true, "WINDOW": true,
	"QUALIFY": true, "UNION": true, "INTERSECT": true, "EXCEPT": true, "FETCH": true, "FOR": true,
	"RETURNING": true,
}

// PointLookups rewrites, in a statement that starts with SELECT or WITH
// (or EXPLAIN of one), each
//
//	FROM [public.]view [[AS] alias] WHERE … [view.|alias.]column = value …
//
// into FROM function(value) [AS] alias WHERE … (the same WHERE clause;
// none when the equality was all of it),
// when lookups names view, value is a string literal or a $n parameter
// (either may carry a cast to VARCHAR: valueTokens), and the comparison is one of the
// conjuncts of the clause: the clause has no OR or ANY/ALL/SOME outside
// parentheses (a BETWEEN's AND is its own), so every row it keeps has
// column = value, and the
// function returns all such rows. The statement's answer is unchanged. A view
// joined to anything (a comma or JOIN after it) is left alone. Without an
// alias the function keeps the view's name as its alias, so view.column
// still resolves.
//
// numberParam, when not nil, says which $n may be a Narrow value: one it
// refuses (a $n the client declared as text, whose value DuckDB would cast
// to the column's type by its own rules, where the function's BIGINT
// argument takes any integer) leaves the statement with the wider
// function, and the WHERE clause compares the column with the $n.
func PointLookups(toks []Token, lookups map[string]Lookup, numberParam func(n int) bool) []Token {
	if len(lookups) == 0 {
		return toks
	}
	first := NextSignificant(toks, -1)
	for first >= 0 && (toks[first].Is("EXPLAIN") || toks[first].Is("ANALYZE")) {
		first = NextSignificant(toks, first)
	}
	if first < 0 || !(toks[first].Is("SELECT") || toks[first].Is("WITH")) {
		return toks
	}
	// a CTE of a view's name hides the view (WITH urls AS (…) SELECT …
	// FROM urls WHERE domain = …): that FROM is the CTE's
	if shadowed := queryNames(toks); len(shadowed) > 0 {
		lookups = maps.Clone(lookups)
		for name := range shadowed {
			delete(lookups, name)
		}
		if len(lookups) == 0 {
			return toks
		}
	}
	var out []Token
	last := 0 // toks[last:] not yet copied to out
	for i := first; i >= 0 && i < len(toks); i = NextSignificant(toks, i) {
		if !toks[i].Is("FROM") {
			continue
		}
		r, ok := matchLookup(toks, i, lookups, numberParam)
		if !ok {
			continue
		}
		out = append(out, toks[last:r.start]...)
		fn := r.lookup.Function
		if r.value2 != nil {
			fn = r.lookup.Narrow.Function
		}
		call := func(out, value []Token) []Token {
			out = append(out, Token{Kind: Ident, Text: fn}, Token{Kind: Punct, Text: "("})
			out = append(out, value...)
			if r.value2 != nil {
				out = append(out, Token{Kind: Punct, Text: ","}, Token{Kind: Space, Text: " "})
				out = append(out, r.value2...)
			}
			return append(out, Token{Kind: Punct, Text: ")"})
		}
		if r.values == nil {
			out = call(out, r.value)
		} else {
			// the union's tokens are PointLookups' own (Pos -1), which the
			// native path requires of a union it answers (a client's own
			// union's NULL is 22004, not no row)
			out = append(out, Token{Kind: Punct, Text: "(", Pos: -1})
			for k, v := range r.values {
				if k > 0 {
					out = append(out, lookupWords(" UNION ALL ")...)
				}
				out = append(out, lookupWords("SELECT * FROM ")...)
				out = call(out, v)
				guarded := false
				for _, earlier := range r.values[:k] {
					if plainLiteral(v) && plainLiteral(earlier) {
						continue // two distinct literals (lookupValues)
					}
					if guarded {
						out = append(out, lookupWords(" AND ")...)
					} else {
						out = append(out, lookupWords(" WHERE ")...)
						guarded = true
					}
					// v differs from earlier, or earlier is NULL (no row of
					// its own); a NULL v keeps no row either way. Not "IS
					// DISTINCT FROM": a literal after FROM reads to the
					// statement checks as a file (sqlserver P3)
					out = append(out, lookupWords("(")...)
					out = append(out, v...)
					out = append(out, lookupWords(" <> ")...)
					out = append(out, earlier...)
					out = append(out, lookupWords(" OR ")...)
					out = append(out, earlier...)
					out = append(out, lookupWords(" IS NULL)")...)
				}
			}
			out = append(out, Token{Kind: Punct, Text: ")", Pos: -1})
		}
		if !r.aliased {
			out = append(out, Token{Kind: Space, Text: " "}, Token{Kind: Ident, Text: "AS"}, Token{Kind: Space, Text: " "}, toks[r.end-1])
		}
		last = r.end
		if r.only {
			// the function's rows are exactly those the WHERE keeps: the
			// clause goes, and "SELECT … FROM f($1) AS v" may be answered
			// natively (sqlserver.NativeFunction)
			out = append(out, toks[r.end:r.where]...)
			for r.where > r.end && toks[r.where-1].Kind == Space && len(out) > 0 && out[len(out)-1].Kind == Space {
				out = out[:len(out)-1]
				r.where--
			}
			last = r.clauseEnd
			if last < len(toks) && toks[last].Text != ")" && toks[last].Text != ";" && len(out) > 0 && out[len(out)-1].Kind != Space {
				out = append(out, Token{Kind: Space, Text: " "})
			}
		}
		i = last - 1
	}
	if out == nil {
		return toks
	}
	return append(out, toks[last:]...)
}

// queryNames are the names toks gives to queries: "name [(columns)] AS
// [NOT] [MATERIALIZED] (", a CTE's (or a CREATE … AS ('s), by their
// IdentName.
func queryNames(toks []Token) map[string]bool {
	sig := Significant(toks)
	var names map[string]bool
	for i := 0; i+2 < len(sig); i++ {
		if sig[i].Kind != Ident && sig[i].Kind != QIdent {
			continue
		}
		j := i + 1
		if sig[j].Text == "(" {
			if j = MatchingParen(sig, j); j < 0 {
				continue
			}
			j++
		}
		if j >= len(sig) || !sig[j].Is("AS") {
			continue
		}
		for j++; j < len(sig) && (sig[j].Is("NOT") || sig[j].Is("MATERIALIZED")); j++ {
		}
		if j < len(sig) && sig[j].Text == "(" {
			if names == nil {
				names = map[string]bool{}
			}
			names[sig[i].IdentName()] = true
		}
	}
	return names
}

type lookupMatch struct {
	start, end int // toks[start:end] is the view's name, replaced
	lookup     Lookup
	value      []Token
	// values, when set, are the values of an IN list or an OR of
	// equalities, two or more, each once (value is then nil)
	values  [][]Token
	value2  []Token // the Narrow column's value, when matched
	aliased bool
	// where is the WHERE token; when the equality is the clause's only
	// conjunct, the clause (up to clauseEnd, the token after it) goes too
	where, clauseEnd int
	only             bool
}

// matchLookup matches the rule of PointLookups at the FROM at toks[from].
func matchLookup(toks []Token, from int, lookups map[string]Lookup, numberParam func(n int) bool) (lookupMatch, bool) {
	var m lookupMatch
	i := NextSignificant(toks, from)
	if i < 0 || (toks[i].Kind != Ident && toks[i].Kind != QIdent) {
		return m, false
	}
	m.start = i
	if toks[i].IdentName() == "public" {
		if d := NextSignificant(toks, i); d > 0 && toks[d].Text == "." {
			if i = NextSignificant(toks, d); i < 0 || (toks[i].Kind != Ident && toks[i].Kind != QIdent) {
				return m, false
			}
		}
	}
	view := toks[i].IdentName()
	l, ok := lookups[view]
	if !ok {
		return m, false
	}
	m.lookup, m.end = l, i+1
	names := map[string]bool{view: true}
	j := NextSignificant(toks, i)
	if j > 0 && toks[j].Is("AS") {
		j = NextSignificant(toks, j)
		if j < 0 || (toks[j].Kind != Ident && toks[j].Kind != QIdent) {
			return m, false
		}
	}
	if j > 0 && (toks[j].Kind == QIdent || toks[j].Kind == Ident && !toks[j].Is("WHERE")) {
		if toks[j].Kind == Ident && (clauseEnd[toks[j].Upper()] || isJoinWord(toks[j])) {
			return m, false
		}
		names = map[string]bool{toks[j].IdentName(): true} // the alias hides the name
		m.aliased = true
		j = NextSignificant(toks, j)
	}
	if j < 0 || !toks[j].Is("WHERE") {
		return m, false
	}
	// the WHERE clause, up to what ends it at this level
	m.where, m.clauseEnd = j, len(toks)
	var conj [][]int // the significant token indexes of each top-level conjunct
	cur := []int{}
	depth := 0
	between := false // a BETWEEN whose AND is still to come
	topOr := false   // an OR outside parentheses: only an OR of equalities may match
	for k := NextSignificant(toks, j); k >= 0; k = NextSignificant(toks, k) {
		t := toks[k]
		if depth == 0 {
			if t.Text == ")" || t.Text == ";" || t.Kind == Ident && clauseEnd[t.Upper()] {
				m.clauseEnd = k
				break
			}
			if t.Is("ANY") || t.Is("ALL") || t.Is("SOME") {
				return m, false
			}
			topOr = topOr || t.Is("OR")
			switch {
			case t.Is("BETWEEN"):
				// x [NOT] BETWEEN [SYMMETRIC] a AND b is one conjunct: the
				// next AND at this level is its own (a and b are b_exprs,
				// which hold no AND outside parentheses)
				between = true
			case t.Is("AND") && between:
				between = false
			case t.Is("AND"):
				conj, cur = append(conj, cur), []int{}
				continue
			}
		}
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		}
		cur = append(cur, k)
	}
	conj = append(conj, cur)
	if topOr {
		// the clause holds an OR outside parentheses: it matches only as a
		// whole OR of equalities (AND binds tighter, so one conjunct)
		if len(conj) != 1 {
			return m, false
		}
		values, ok := orValues(toks, conj[0], l.Column, names)
		if !ok {
			return m, false
		}
		m.values, m.only = values, true
		if len(values) == 1 {
			m.value, m.values = values[0], nil
		}
		return m, true
	}
	narrow := func(i int) {
		if l.Narrow == nil {
			return
		}
		for k, c2 := range conj {
			if k == i {
				continue
			}
			if v2, ok := equalsValue(toks, c2, l.Narrow.Column, names, true); ok {
				if len(v2) == 1 && v2[0].Kind == Param && numberParam != nil {
					if n, err := strconv.Atoi(v2[0].Text[1:]); err != nil || !numberParam(n) {
						return
					}
				}
				m.value2 = v2
				return
			}
		}
	}
	for i, c := range conj {
		if v, ok := equalsValue(toks, c, l.Column, names, false); ok {
			m.value, m.only = v, len(conj) == 1
			narrow(i)
			return m, true
		}
	}
	for i, c := range conj {
		values, ok := inValues(toks, c, l.Column, names)
		if !ok {
			values, ok = orValues(toks, parenthesized(toks, c), l.Column, names)
		}
		if ok {
			m.values, m.only = values, len(conj) == 1
			if len(values) == 1 {
				m.value, m.values = values[0], nil
			}
			narrow(i)
			return m, true
		}
	}
	return m, false
}

// maxLookupValues bounds the values of an IN list or an OR that
// PointLookups turns into a union of lookups; a longer list is left to a
// scan. maxLookupParams bounds its $n values, each of whose branches
// compares itself with every value before it.
const (
	maxLookupValues = 256
	maxLookupParams = 32 // $n and casts
)

// inValues matches one conjunct: [name.]column IN (v1, v2, …), each value
// as equalsValue takes it; the values come back each once (lookupValues).
func inValues(toks []Token, c []int, column string, names map[string]bool) ([][]Token, bool) {
	in := -1
	for n, k := range c {
		if toks[k].Is("IN") {
			in = n
			break
		}
	}
	if in < 0 || !isColumn(toks, c[:in], column, names) {
		return nil, false
	}
	rest := c[in+1:]
	if len(rest) < 3 || toks[rest[0]].Text != "(" || toks[rest[len(rest)-1]].Text != ")" {
		return nil, false
	}
	var values [][]Token
	item := []int{}
	for _, k := range rest[1:] {
		if t := toks[k]; t.Text == "," || t.Text == ")" {
			v, ok := valueTokens(toks, item, false)
			if !ok {
				return nil, false // a subquery, an expression, a NULL, a nested list
			}
			values = append(values, v)
			item = []int{}
			continue
		}
		item = append(item, k)
	}
	return lookupValues(values)
}

// parenthesized is c without one pair of parentheses around all of it, or
// nil when c is not one parenthesized expression.
func parenthesized(toks []Token, c []int) []int {
	if len(c) < 2 || toks[c[0]].Text != "(" || toks[c[len(c)-1]].Text != ")" {
		return nil
	}
	depth := 0
	for n, k := range c {
		switch toks[k].Text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 && n != len(c)-1 {
				return nil // (a) OR (b): two groups, not one
			}
		}
	}
	return c[1 : len(c)-1]
}

// orValues matches column = v1 OR column = v2 …: each term, split at the
// ORs outside parentheses, an equality as equalsValue takes it, or such an
// OR in parentheses.
func orValues(toks []Token, c []int, column string, names map[string]bool) ([][]Token, bool) {
	if len(c) == 0 {
		return nil, false
	}
	var values [][]Token
	term := []int{}
	depth := 0
	flush := func() bool {
		if v, ok := equalsValue(toks, term, column, names, false); ok {
			values = append(values, v)
		} else if inner := parenthesized(toks, term); inner != nil {
			vs, ok := orValues(toks, inner, column, names)
			if !ok {
				return false
			}
			values = append(values, vs...)
		} else {
			return false
		}
		term = []int{}
		return true
	}
	for _, k := range c {
		t := toks[k]
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && t.Is("OR"):
			if !flush() {
				return nil, false
			}
			continue
		case depth == 0 && (t.Is("AND") || t.Is("NOT")):
			return nil, false
		}
		term = append(term, k)
	}
	if !flush() {
		return nil, false
	}
	return lookupValues(values)
}

// lookupValues keeps each value once: literals by the string they stand
// for (DuckDB compares VARCHARs byte by byte), $n and casts by their text
// (PointLookups compares them with the others at run time). False when
// there are more than the bounds allow.
func lookupValues(values [][]Token) ([][]Token, bool) {
	seen := map[string]bool{}
	var out [][]Token
	params := 0
	for _, v := range values {
		key := "$" + Join(v)
		if plainLiteral(v) {
			s, _ := v[0].StandardString()
			key = "'" + s
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if !plainLiteral(v) {
			params++
		}
		out = append(out, v)
	}
	if len(out) == 0 || len(out) > maxLookupValues || params > maxLookupParams {
		return nil, false
	}
	return out, true
}

// plainLiteral: v is one standard string literal, which lookupValues
// compares by the string it stands for; any other value ($n, a cast) is
// compared at run time.
func plainLiteral(v []Token) bool {
	_, ok := v[0].StandardString()
	return ok && len(v) == 1
}

// lookupWords are the tokens of a fragment of SQL PointLookups writes,
// at no position of the client's text.
func lookupWords(sql string) []Token {
	toks := Lex(sql)
	for i := range toks {
		toks[i].Pos = -1
	}
	return toks
}

func isJoinWord(t Token) bool {
	switch t.Upper() {
	case "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "POSITIONAL", "ASOF", "ANTI", "SEMI", "LATERAL", "USING", "ON", "TABLESAMPLE", "USING SAMPLE":
		return true
	}
	return false
}

// equalsValue matches one conjunct: [name.]column = value, or value =
// [name.]column; value is a standard string literal or $n, with an
// optional ::type (or, with number, an integer literal).
func equalsValue(toks []Token, c []int, column string, names map[string]bool, number bool) ([]Token, bool) {
	eq := -1
	for n, k := range c {
		if toks[k].Text == "=" {
			if eq >= 0 {
				return nil, false
			}
			eq = n
		}
	}
	if eq < 0 {
		return nil, false
	}
	left, right := c[:eq], c[eq+1:]
	if isColumn(toks, left, column, names) {
		return valueTokens(toks, right, number)
	}
	if isColumn(toks, right, column, names) {
		return valueTokens(toks, left, number)
	}
	return nil, false
}

func isColumn(toks []Token, side []int, column string, names map[string]bool) bool {
	name := func(t Token) string {
		if t.Kind != Ident && t.Kind != QIdent {
			return "\x00"
		}
		return t.IdentName()
	}
	switch len(side) {
	case 1:
		return name(toks[side[0]]) == column
	case 3:
		return names[name(toks[side[0]])] && toks[side[1]].Text == "." && name(toks[side[2]]) == column
	}
	return false
}

// valueTokens accepts one side of an equality as a lookup's argument: a
// string literal (or, with number, an integer literal that fits the narrow
// function's BIGINT) or $n, optionally cast to a type the argument takes:
// VARCHAR, or with number a signed integer type, which DuckDB widens to
// BIGINT. A cast to any other type would become the argument's type, and
// the function of that signature does not exist (42883): the statement is
// then left to scan.
func valueTokens(toks []Token, side []int, number bool) ([]Token, bool) {
	if len(side) == 0 {
		return nil, false
	}
	v := toks[side[0]]
	if number {
		if v.Kind != Param && (v.Kind != Number || !fitsInteger(v.Text)) {
			return nil, false
		}
	} else if _, ok := v.StandardString(); !ok && v.Kind != Param {
		return nil, false
	}
	switch {
	case len(side) == 1:
	case len(side) == 3 && toks[side[1]].Text == "::" && toks[side[2]].Kind == Ident &&
		argumentCast(toks[side[2]].Text, number, v.Kind == Param):
	default:
		return nil, false
	}
	out := make([]Token, 0, len(side))
	for _, k := range side {
		out = append(out, toks[k])
	}
	return out, true
}

// fitsInteger: text is an integer literal DuckDB types as an integer
// (digits, with _ between them, within BIGINT).
func fitsInteger(text string) bool {
	n, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64)
	return err == nil && n >= 0
}

// argumentCast: a cast to typ keeps a lookup argument of a type its
// function takes, VARCHAR or (number) a signed integer type, under one of
// DuckDB's names for it. A $n's cast only to INTEGER: the function's $n is
// described to the client as the column's int4 (DuckDB cannot type it), so
// "$2::bigint" would make pgx refuse a value past int4 that the scan, which
// describes it as int8, answers.
func argumentCast(typ string, number, param bool) bool {
	switch strings.ToLower(typ) {
	case "text", "varchar", "string":
		return !number
	case "int", "integer", "int4", "int32", "signed":
		return number
	case "bigint", "int8", "int64", "long", "smallint", "int2", "int16", "short", "tinyint", "int1":
		return number && !param
	}
	return false
}
