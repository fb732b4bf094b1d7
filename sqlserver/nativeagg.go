package sqlserver

import (
	"math/big"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// nativeAgg is one aggregate of a native statement whose select list is
// aggregates only, without GROUP BY:
//
//	SELECT agg [[AS] name] [, …] FROM f(args) [[AS] a] [WHERE …]
//
// with agg one of count(*), count(col), sum(col), min(col), max(col); col a
// column of the function, bare or qualified by the alias; sum of an integer
// column, min and max of an integer or VARCHAR one. The answer is DuckDB's:
// one row; count BIGINT, sum HUGEINT (NULL over no value), min and max of
// the column's type (NULL over no value); NULLs are skipped; strings
// compare byte by byte. A column without an alias is named as DuckDB names
// it, "count_star()" or "fn(col)" with col as written, and only where
// DuckDB would write col without quotes (keywords are quoted:
// plainName). TestNativeSelectAgreesWithDuckDB holds the two paths to
// the same answers. Anything else, ORDER BY, LIMIT and OFFSET of the row
// among it, is DuckDB's.
type nativeAgg struct {
	fn   string // count, sum, min, max
	col  int    // the function's column; -1 for count(*)
	name string
	typ  duckdb.Type // the result's
}

// aggItem is an aggregate of the select list before the function's columns
// are known.
type aggItem struct {
	fn        string
	star      bool
	qual, col pgsql.Token // qual.Text is "" without a qualifier
	alias     string      // "" without one (matchAlias names none "")
}

// matchAggregateList recognises a select list of aggregates alone and
// returns them with the statement with "*" in their place; items is nil
// and toks unchanged for any other select list.
func matchAggregateList(toks []pgsql.Token, keywords map[string]bool) (items []aggItem, rest []pgsql.Token) {
	i := 1
	for {
		it, j, ok := matchAggItem(toks, i, keywords)
		if !ok {
			return nil, toks
		}
		items = append(items, it)
		if j < len(toks) && toks[j].Text == "," {
			i = j + 1
			continue
		}
		if j >= len(toks) || !toks[j].Is("FROM") {
			return nil, toks
		}
		return items, append([]pgsql.Token{toks[0], {Kind: pgsql.Op, Text: "*"}}, toks[j:]...)
	}
}

// matchAggItem matches one aggregate of a select list at toks[i], with
// its alias; next is the index after it (a comma or FROM).
func matchAggItem(toks []pgsql.Token, i int, keywords map[string]bool) (it aggItem, next int, ok bool) {
	if i+3 >= len(toks) || toks[i].Kind != pgsql.Ident || toks[i+1].Text != "(" {
		return it, i, false
	}
	it.fn = strings.ToLower(toks[i].Text)
	switch it.fn {
	case "count", "sum", "min", "max":
	default:
		return it, i, false
	}
	j := i + 2
	switch {
	case it.fn == "count" && toks[j].Text == "*":
		it.star, j = true, j+1
	case toks[j].Kind == pgsql.Ident && j+3 < len(toks) && toks[j+1].Text == "." && toks[j+2].Kind == pgsql.Ident:
		it.qual, it.col, j = toks[j], toks[j+2], j+3
	case toks[j].Kind == pgsql.Ident:
		it.col, j = toks[j], j+1
	default:
		return it, i, false
	}
	if j >= len(toks) || toks[j].Text != ")" {
		return it, i, false
	}
	j++
	if j < len(toks) && toks[j].Text != "," && !toks[j].Is("FROM") {
		name, n, ok := matchAlias(toks[j:], keywords)
		if !ok || n == 0 {
			return it, i, false
		}
		it.alias, j = name, j+n
	}
	return it, j, true
}

// resolveAggregates binds items to fn's columns; ok is false where the
// native path cannot answer as DuckDB does.
func resolveAggregates(items []aggItem, scope *nativeScope, keywords map[string]bool) (aggs []nativeAgg, ok bool) {
	for _, it := range items {
		a := nativeAgg{fn: it.fn, col: -1, name: it.alias}
		if it.star {
			a.typ = duckdb.TYPE_BIGINT
			if it.alias == "" {
				a.name = "count_star()"
			}
			aggs = append(aggs, a)
			continue
		}
		ref := []pgsql.Token{it.col}
		if it.qual.Text != "" {
			ref = []pgsql.Token{it.qual, {Kind: pgsql.Punct, Text: "."}, it.col}
		}
		if a.col, _ = scope.resolve(ref, 0); a.col < 0 {
			return nil, false
		}
		colType := scope.cols[a.col].Type
		switch {
		case a.fn == "count":
			a.typ = duckdb.TYPE_BIGINT
		case a.fn == "sum" && isIntegerType(colType):
			a.typ = duckdb.TYPE_HUGEINT
		case (a.fn == "min" || a.fn == "max") && (isIntegerType(colType) || colType == duckdb.TYPE_VARCHAR):
			a.typ = colType
		default:
			return nil, false // sum of a string, min of a time: DuckDB's
		}
		if it.alias == "" {
			written := it.col.Text
			if it.qual.Text != "" {
				if !plainName(it.qual.Text, keywords) {
					return nil, false
				}
				written = it.qual.Text + "." + written
			}
			if !plainName(it.col.Text, keywords) {
				return nil, false
			}
			a.name = a.fn + "(" + written + ")"
		}
		aggs = append(aggs, a)
	}
	return aggs, true
}

// plainName: DuckDB writes name without quotes in a column's name
// (KeywordHelper::RequiresQuotes, capitals allowed): letters, '_', digits
// after the first, and no keyword. Without DuckDB's keywords nothing is.
func plainName(name string, keywords map[string]bool) bool {
	if keywords == nil || name == "" || keywords[strings.ToLower(name)] {
		return false
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// aggregateRow computes aggs over rows: the one row of the answer, in the
// Go types duckdb-go gives for the result's types.
func aggregateRow(stop *stopCheck, aggs []nativeAgg, fnCols []NativeColumn, rows NativeRows) ([]any, error) {
	states := make([]aggState, len(aggs))
	for r := range rows.Len() {
		if stop.stop() {
			return nil, stop.err
		}
		for k := range aggs {
			aggs[k].add(&states[k], rows, r)
		}
	}
	out := make([]any, len(aggs))
	for k := range aggs {
		out[k] = aggs[k].result(&states[k], fnCols)
	}
	return out, nil
}

// aggState is an aggregate's value so far.
type aggState struct {
	rows, count int64 // rows seen; non-NULL values among them
	sum         *big.Int
	best        NativeValue // min or max so far
}

// add adds row r of rows to st.
func (a *nativeAgg) add(st *aggState, rows NativeRows, r int) {
	st.rows++
	if a.col < 0 {
		return // count(*)
	}
	v := rows.Cell(r, a.col)
	if v.kind == nvNull {
		return
	}
	st.count++
	switch a.fn {
	case "sum":
		if st.sum == nil {
			st.sum = new(big.Int)
		}
		if v.kind == nvUint {
			st.sum.Add(st.sum, new(big.Int).SetUint64(v.n))
		} else {
			st.sum.Add(st.sum, big.NewInt(int64(v.n)))
		}
	case "min", "max":
		if st.best.kind == nvNull {
			st.best = v
		} else if c := compareCells(v, st.best); a.fn == "min" && c < 0 || a.fn == "max" && c > 0 {
			st.best = v
		}
	}
}

// result is the aggregate's answer from st.
func (a *nativeAgg) result(st *aggState, fnCols []NativeColumn) any {
	switch {
	case a.col < 0:
		return st.rows
	case a.fn == "count":
		return st.count
	case a.fn == "sum":
		if st.sum != nil {
			return st.sum
		}
	case st.best.kind != nvNull:
		return st.best.Value(fnCols[a.col].Type)
	}
	return nil
}
