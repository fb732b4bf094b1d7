package sqlserver

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// nativeGroup is a native statement's GROUP BY, as BI tools write one to
// summarize (issue 16):
//
//	SELECT {col | agg} [[AS] name], … FROM … [WHERE …] GROUP BY {col | n}, …
//	  [HAVING conditions on the select list's aggregates]
//	  [ORDER BY {name | col | n | agg} [ASC|DESC] [NULLS FIRST|LAST], …] [LIMIT n] [OFFSET n]
//
// with agg one of nativeagg.go's aggregates, each col of the select list
// one the statement groups by, and GROUP BY n the select list's n-th item,
// a column. The rows the WHERE keeps are grouped by the key columns' values,
// NULL one value among them (DuckDB's), in the order each group first
// appears (DuckDB promises none without ORDER BY); each group answers one
// row. ORDER BY sorts those rows as nativeSelect sorts a function's, by the
// output's names, the grouped columns, ordinals, or an aggregate written as
// in the select list; not by a sum (a HUGEINT). HAVING compares the
// select list's aggregates, written as there, as a WHERE compares columns
// (matchHaving). A HAVING on anything else, DISTINCT, ROLLUP, expressions
// and the rest go to DuckDB. TestNativeSelectAgreesWithDuckDB
// holds the two paths to the same answers.
type nativeGroup struct {
	keys  []int       // the FROM clause's columns grouped by
	items []groupItem // the select list
	aggs  []nativeAgg // its aggregates, in order
	cols  []NativeColumn
	// having: the HAVING clause over the grouped rows (nil: none)
	having *nativeSelect
	// out: ORDER BY, LIMIT and OFFSET over the grouped rows (nil: none)
	out *nativeSelect
}

// groupItem is an output column: a key column's value, or aggs[agg].
type groupItem struct {
	col int // the FROM clause's column; -1 for an aggregate
	agg int
}

// groupSel is one item of a grouped select list before it is bound.
type groupSel struct {
	ref   []pgsql.Token // a column reference, name or qual.name; nil for an aggregate
	agg   aggItem
	alias string
}

// matchGrouped matches a statement with GROUP BY; nil for any other, or
// one DuckDB must answer.
func matchGrouped(toks []pgsql.Token, fns map[string]NativeFunction, views map[string]string, keywords map[string]bool) *nativeCall {
	// the select list, up to FROM
	var sels []groupSel
	i := 1
	for {
		var s groupSel
		if it, j, ok := matchAggItem(toks, i, keywords); ok {
			s.agg, i = it, j
		} else {
			j := i
			if j+2 < len(toks) && toks[j+1].Text == "." {
				j += 2
			}
			if j >= len(toks) || toks[i].Kind != pgsql.Ident && toks[i].Kind != pgsql.QIdent || toks[j].Kind != pgsql.Ident && toks[j].Kind != pgsql.QIdent {
				return nil
			}
			s.ref, i = toks[i:j+1], j+1
			if i < len(toks) && toks[i].Text != "," && !toks[i].Is("FROM") {
				name, n, ok := matchAlias(toks[i:], keywords)
				if !ok || n == 0 {
					return nil
				}
				s.alias, i = name, i+n
			}
		}
		sels = append(sels, s)
		if i < len(toks) && toks[i].Text == "," {
			i++
			continue
		}
		if i >= len(toks) || !toks[i].Is("FROM") {
			return nil
		}
		break
	}
	src, tail := matchFrom(toks[i+1:], fns, views, keywords)
	if src == nil || src.nullArg != nil {
		return nil // a NULL literal argument: DuckDB's guard answers it
	}
	g := -1
	for k := 0; k+1 < len(tail); k++ {
		if tail[k].Is("GROUP") && tail[k+1].Is("BY") {
			g = k
			break
		}
	}
	if g < 0 {
		return nil
	}
	where, ok, err := matchNativeTail(tail[:g], &src.scope, nil)
	if err != nil || !ok || where != nil && (len(where.order) > 0 || where.limit >= 0 || where.offset >= 0) {
		return nil
	}
	grp := &nativeGroup{}
	// the select list bound: columns, and aggregates as nativeagg binds them
	var aggItems []aggItem
	for _, s := range sels {
		if s.ref == nil {
			aggItems = append(aggItems, s.agg)
		}
	}
	if grp.aggs, ok = resolveAggregates(aggItems, &src.scope, keywords); !ok {
		return nil
	}
	outScope := nativeScope{}
	var proj []projected
	nAgg := 0
	for _, s := range sels {
		it := groupItem{col: -1}
		var c NativeColumn
		qual := ""
		if s.ref != nil {
			col, n := src.scope.resolve(s.ref, 0)
			if col < 0 || n != len(s.ref) {
				return nil
			}
			it.col, c = col, src.scope.cols[col]
			qual = src.scope.quals[col]
			if s.alias != "" {
				c.Name = s.alias
			}
		} else {
			it.agg, nAgg = nAgg, nAgg+1
			a := grp.aggs[it.agg]
			c = NativeColumn{Name: a.name, Type: a.typ}
		}
		grp.items = append(grp.items, it)
		grp.cols = append(grp.cols, c)
		outScope.cols = append(outScope.cols, NativeColumn{Name: c.Name, Type: c.Type})
		outScope.quals = append(outScope.quals, qual)
		proj = append(proj, projected{col: len(proj), name: c.Name})
	}
	// GROUP BY {col | n}, …: each column of the select list must be one
	k := g + 2
	for {
		if k >= len(tail) {
			return nil
		}
		col := -1
		if tail[k].Kind == pgsql.Number {
			n, err := strconv.Atoi(tail[k].Text)
			if err != nil || n < 1 || n > len(grp.items) || grp.items[n-1].col < 0 {
				return nil // out of range, or an aggregate: DuckDB's error
			}
			col, k = grp.items[n-1].col, k+1
		} else {
			col, k = src.scope.resolve(tail, k)
			if col < 0 {
				return nil
			}
		}
		if !slices.Contains(grp.keys, col) { // a repeat groups nothing further
			grp.keys = append(grp.keys, col)
		}
		if k < len(tail) && tail[k].Text == "," {
			k++
			continue
		}
		break
	}
	for _, it := range grp.items {
		found := it.col < 0
		for _, key := range grp.keys {
			found = found || key == it.col
		}
		if !found {
			return nil // "must appear in the GROUP BY clause": DuckDB's error
		}
	}
	rest := tail[k:]
	if len(rest) > 0 && rest[0].Is("HAVING") {
		end := pgsql.FirstTopLevel(rest, func(_ int, t pgsql.Token) bool { return t.Is("ORDER") || t.Is("LIMIT") || t.Is("OFFSET") })
		if end < 0 {
			end = len(rest)
		}
		if grp.having, ok = matchHaving(rest[1:end], sels, grp.cols); !ok {
			return nil
		}
		rest = rest[end:]
	}
	rest = orderByAggregates(rest, sels)
	if grp.out, ok, err = matchNativeTail(rest, &outScope, proj); err != nil || !ok {
		return nil
	}
	if grp.out != nil {
		if len(grp.out.where) > 0 {
			return nil
		}
		for _, o := range grp.out.order {
			if grp.cols[o.col].Type == duckdb.TYPE_HUGEINT {
				return nil // a sum: its cells are boxed *big.Int, which the sort does not compare
			}
		}
	}
	nc := &nativeCall{name: src.name, fn: src.fn, args: src.args, sel: where, used: make([]bool, len(src.fn.Columns)), group: grp}
	for _, key := range grp.keys {
		nc.used[key] = true
	}
	for _, a := range grp.aggs {
		if a.col >= 0 {
			nc.used[a.col] = true
		}
	}
	if where != nil {
		for _, c := range where.where {
			nc.used[c.col] = true
		}
	}
	return nc
}

// orderByAggregates replaces, in ORDER BY, an aggregate written as one of
// the select list's (count(*), sum(d.url_count)) with that item's ordinal:
// the select list's column is what DuckDB sorts by.
func orderByAggregates(toks []pgsql.Token, sels []groupSel) []pgsql.Token {
	out := make([]pgsql.Token, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		if n, end := selectListAggregate(toks, i, sels); n > 0 {
			out = append(out, pgsql.Token{Kind: pgsql.Number, Text: strconv.Itoa(n)})
			i = end
			continue
		}
		out = append(out, toks[i])
	}
	return out
}

// selectListAggregate: the aggregate call at toks[i] is written as the
// select list's n-th item (but for case), and end is its ")"; n is 0 for
// anything else.
func selectListAggregate(toks []pgsql.Token, i int, sels []groupSel) (n, end int) {
	if toks[i].Kind != pgsql.Ident || i+1 >= len(toks) || toks[i+1].Text != "(" {
		return 0, i
	}
	if end = pgsql.MatchingParen(toks, i+1); end < 0 {
		return 0, i
	}
	call := append(append([]pgsql.Token(nil), toks[i:end+1]...), pgsql.Token{Kind: pgsql.Ident, Text: "FROM"})
	it, _, ok := matchAggItem(call, 0, nil)
	if !ok {
		return 0, i
	}
	for n, s := range sels {
		a := s.agg
		if s.ref == nil && a.fn == it.fn && a.star == it.star && strings.EqualFold(a.qual.Text, it.qual.Text) && strings.EqualFold(a.col.Text, it.col.Text) {
			return n + 1, end
		}
	}
	return 0, i
}

// havingMark names an output column in the HAVING clause matchHaving
// hands nativeSelect: a name no statement can hold, as the protocol ends a
// query's text at its first NUL.
const havingMark = "\x00output "

// matchHaving matches a HAVING clause whose operands are aggregates of the
// select list, written as there (count(*) > 1), under AND, OR, NOT and
// parentheses, compared as a WHERE compares a column: the conditions over
// the grouped rows' columns cols. A name (an alias, a grouped column) is
// DuckDB's to bind; so is a sum, whose cells are boxed *big.Int.
func matchHaving(toks []pgsql.Token, sels []groupSel, cols []NativeColumn) (*nativeSelect, bool) {
	keyword := func(t pgsql.Token) bool {
		return t.Is("AND") || t.Is("OR") || t.Is("NOT") || t.Is("IN") || t.Is("BETWEEN") || t.Is("IS") || t.Is("NULL") || t.Is("LIKE")
	}
	marked := []pgsql.Token{{Kind: pgsql.Ident, Text: "WHERE"}}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if n, end := selectListAggregate(toks, i, sels); n > 0 {
			if cols[n-1].Type == duckdb.TYPE_HUGEINT {
				return nil, false
			}
			marked = append(marked, pgsql.Token{Kind: pgsql.QIdent, Text: `"` + havingMark + strconv.Itoa(n) + `"`})
			i = end
			continue
		}
		if t.Kind == pgsql.QIdent || t.Kind == pgsql.Ident && !keyword(t) {
			return nil, false // a name, or a call of anything else: DuckDB's to bind
		}
		marked = append(marked, t)
	}
	scope := nativeScope{cols: make([]NativeColumn, len(cols)), quals: make([]string, len(cols))}
	for n, c := range cols {
		scope.cols[n] = NativeColumn{Name: havingMark + strconv.Itoa(n+1), Type: c.Type}
	}
	sel, ok, err := matchNativeTail(marked, &scope, nil)
	if err != nil || !ok || sel == nil || len(sel.order) > 0 || sel.limit >= 0 || sel.offset >= 0 {
		return nil, false
	}
	return sel, true
}

// groupRows groups rows by g.keys and answers a row per group, in the
// order groups first appear: the Go types duckdb-go gives for g.cols. Each
// group keeps its aggregates' state, not its rows: memory grows with the
// groups.
func (g *nativeGroup) groupRows(stop *stopCheck, fnCols []NativeColumn, rows NativeRows) ([][]any, error) {
	index := map[string]int{}
	var first []int // each group's first row
	var states []aggState
	var key, prev []byte
	n := -1 // the group of the row before, whose key is prev
	for r := range rows.Len() {
		if stop.stop() {
			return nil, stop.err
		}
		key = key[:0]
		for _, c := range g.keys {
			key = appendGroupKey(key, rows.Cell(r, c))
		}
		// rows come in runs of one group (a domain's URLs, dataset by
		// dataset): the row before's group spares a lookup (the map was a
		// third of a GROUP BY dataset_id's time)
		if n < 0 || !bytes.Equal(key, prev) {
			prev = append(prev[:0], key...)
			if m, ok := index[string(key)]; ok {
				n = m
			} else {
				n = len(first)
				if stop.over(n+1, false) {
					return nil, ErrNativeTooLarge // N1: the groups' keys and states
				}
				index[string(key)] = n
				first = append(first, r)
				states = append(states, make([]aggState, len(g.aggs))...)
			}
		}
		st := states[n*len(g.aggs) : (n+1)*len(g.aggs)]
		for k := range g.aggs {
			g.aggs[k].add(&st[k], rows, r)
		}
	}
	out := make([][]any, len(first))
	for n, r := range first {
		st := states[n*len(g.aggs) : (n+1)*len(g.aggs)]
		row := make([]any, len(g.items))
		for k, it := range g.items {
			if it.col >= 0 {
				row[k] = rows.Cell(r, it.col).Value(fnCols[it.col].Type)
			} else {
				row[k] = g.aggs[it.agg].result(&st[it.agg], fnCols)
			}
		}
		out[n] = row
	}
	return out, nil
}

// appendGroupKey appends an encoding of v that equals another's exactly
// when the two cells are one group's: NULL one value, a non-negative
// integer one whether NativeInt or NativeUint made it.
func appendGroupKey(b []byte, v NativeValue) []byte {
	kind := v.kind
	if kind == nvUint && int64(v.n) >= 0 {
		kind = nvInt
	}
	b = append(b, byte(kind))
	switch kind {
	case nvNull:
		return b
	case nvString:
		b = binary.AppendUvarint(b, uint64(len(v.s)))
		return append(b, v.s...)
	case nvTime:
		return binary.AppendUvarint(binary.AppendVarint(b, v.t.Unix()), uint64(v.t.Nanosecond()))
	}
	return binary.BigEndian.AppendUint64(b, v.n)
}
