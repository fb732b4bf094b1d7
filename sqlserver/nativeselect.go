package sqlserver

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// nativeSelect is what a native statement asks of its function's rows
// beyond the projection (issue 16: the shapes people and BI tools write):
//
//	… FROM f(args) [[AS] a] [WHERE c, or cs under AND, OR, NOT and parentheses]
//	  [ORDER BY {col | n} [ASC|DESC] [NULLS FIRST|LAST], …] [LIMIT n] [OFFSET n]
//
// with c one of col op value (op = <> != < <= > >=; value an integer
// literal for an integer column, a string literal for a VARCHAR one, or
// $n), col BETWEEN value AND value, col [NOT] IN (value, …), col [NOT]
// LIKE pattern (a VARCHAR column; a string literal or $n; no ESCAPE) or
// col IS [NOT] NULL; col a column of the FROM clause (nativefrom.go).
// Anything else goes to DuckDB. The semantics are DuckDB's for these
// types: a comparison with NULL is NULL, and so is NOT IN of a list holding
// a NULL when no value matches, and IN of one (three-valued logic, which
// AND, OR and NOT follow; WHERE keeps the rows it finds true); strings
// compare byte by byte; LIKE's % is any run of characters, _ one UTF-8
// character, and a backslash is itself (DuckDB has no default escape,
// unlike PostgreSQL); ORDER BY puts NULLs last unless told otherwise
// (DuckDB's default_null_order), and rows equal in every key keep the
// function's order. TestNativeSelectAgreesWithDuckDB holds the two paths
// to the same answers.
//
// Rows that say they are sorted by a column (SortedRows) are not scanned
// whole: conditions on that column bound the rows looked at by binary
// search (keyset paging, url > $last, costs the page, not the domain), and
// where no sort is needed the scan stops once LIMIT and OFFSET are met.
type nativeSelect struct {
	where []nativeCond
	// tree, when set, is how the WHERE combines where's conditions (OR,
	// NOT, parentheses); nil: they are ANDed
	tree          *boolNode
	order         []nativeOrder
	limit, offset int64 // -1: none
}

type nativeCond struct {
	col     int
	op      string // = <> < <= > >=, like, not like, in, not in, or "null" / "not null"
	val     nativeArg
	list    []nativeArg // in, not in: the values listed
	colType duckdb.Type
}

// args are the values the condition compares with.
func (c *nativeCond) args() []nativeArg {
	if c.list != nil {
		return c.list
	}
	return []nativeArg{c.val}
}

type nativeOrder struct {
	col        int
	desc       bool
	nullsFirst bool
}

// matchNativeTail parses what follows the FROM clause; ok is false for
// anything but the shape above.
func matchNativeTail(toks []pgsql.Token, scope *nativeScope, proj []projected) (sel *nativeSelect, ok bool, err error) {
	sel = &nativeSelect{limit: -1, offset: -1}
	// ORDER BY names the select list's names before the function's columns
	// (DuckDB, PostgreSQL): "SELECT url AS ts … ORDER BY ts" sorts by url
	outputCol := func(i int) (col, next int, found bool) {
		if i >= len(toks) || toks[i].Kind != pgsql.Ident && toks[i].Kind != pgsql.QIdent || i+1 < len(toks) && toks[i+1].Text == "." {
			return -1, i, false
		}
		for _, p := range proj {
			if strings.EqualFold(p.name, toks[i].IdentName()) { // DuckDB: names match without regard to case
				return p.col, i + 1, true
			}
		}
		return -1, i, false
	}
	column := func(i int) (col, next int) { return scope.resolve(toks, i) }
	// value reads a condition's value for a column of type t: $n, or a
	// literal of t's kind (an integer, a standard string); anything else,
	// and columns of other types (times: DuckDB's casts), are DuckDB's
	value := func(v pgsql.Token, t duckdb.Type) (nativeArg, bool) {
		if t != duckdb.TYPE_VARCHAR && !isIntegerType(t) {
			return nativeArg{}, false
		}
		switch {
		case v.Kind == pgsql.Param:
			n, ok := paramNumber(v)
			return nativeArg{param: n}, ok
		case v.Kind == pgsql.Number && isIntegerType(t):
			x, err := compareValue(v.Text, t)
			return nativeArg{value: x}, err == nil
		case v.Kind == pgsql.String && t == duckdb.TYPE_VARCHAR:
			s, ok := v.StandardString()
			return nativeArg{value: s}, ok
		}
		return nativeArg{}, false
	}
	// cond reads one condition at toks[i]: its leaves (two for BETWEEN,
	// which is x >= a AND x <= b in DuckDB and PostgreSQL)
	cond := func(i int) (conds []nativeCond, next int, ok bool) {
		col, j := column(i)
		if col < 0 || j >= len(toks) {
			return nil, i, false
		}
		c := nativeCond{col: col, colType: scope.cols[col].Type}
		switch t := toks[j]; {
		case t.Is("IS") && j+1 < len(toks) && toks[j+1].Is("NULL"):
			c.op, i = "null", j+2
		case t.Is("IS") && j+2 < len(toks) && toks[j+1].Is("NOT") && toks[j+2].Is("NULL"):
			c.op, i = "not null", j+3
		case t.Kind == pgsql.Op && (t.Text == "=" || t.Text == "<>" || t.Text == "!=" || t.Text == "<" || t.Text == "<=" || t.Text == ">" || t.Text == ">=") ||
			t.Is("LIKE") || t.Is("NOT") && j+1 < len(toks) && toks[j+1].Is("LIKE"):
			c.op = strings.Replace(t.Text, "!=", "<>", 1)
			switch {
			case t.Is("LIKE"):
				c.op = "like"
			case t.Is("NOT"):
				c.op, j = "not like", j+1
			}
			if j+1 >= len(toks) || strings.HasSuffix(c.op, "like") && c.colType != duckdb.TYPE_VARCHAR {
				return nil, i, false
			}
			if c.val, ok = value(toks[j+1], c.colType); !ok {
				return nil, i, false
			}
			i = j + 2
		case t.Is("BETWEEN") && j+3 < len(toks) && toks[j+2].Is("AND"):
			low, hi := c, c
			low.op, hi.op = ">=", "<="
			var ok1, ok2 bool
			low.val, ok1 = value(toks[j+1], c.colType)
			hi.val, ok2 = value(toks[j+3], c.colType)
			return []nativeCond{low, hi}, j + 4, ok1 && ok2
		// x [NOT] IN (v, …): a list of values, literals or $n
		case t.Is("IN") || t.Is("NOT") && j+1 < len(toks) && toks[j+1].Is("IN"):
			c.op = "in"
			if t.Is("NOT") {
				c.op, j = "not in", j+1
			}
			if j+1 >= len(toks) || toks[j+1].Text != "(" {
				return nil, i, false
			}
			for j += 2; ; j += 2 {
				if j+1 >= len(toks) {
					return nil, i, false
				}
				v, ok := value(toks[j], c.colType)
				if !ok {
					return nil, i, false
				}
				c.list = append(c.list, v)
				if toks[j+1].Text == ")" {
					break
				}
				if toks[j+1].Text != "," {
					return nil, i, false
				}
			}
			i = j + 2
		default:
			return nil, i, false
		}
		return []nativeCond{c}, i, true
	}
	// the WHERE clause: conditions under AND, OR, NOT and parentheses
	// (boolNode), each leaf one of sel.where
	type parser func(i int) (*boolNode, int, bool)
	// chain parses next {word next}: the operands of AND, or of OR
	chain := func(word string, op byte, next parser) parser {
		return func(i int) (*boolNode, int, bool) {
			n, i, ok := next(i)
			for ok && i < len(toks) && toks[i].Is(word) {
				var m *boolNode
				if m, i, ok = next(i + 1); ok {
					n = n.join(op, m)
				}
			}
			return n, i, ok
		}
	}
	var or, not parser
	or = chain("OR", '|', chain("AND", '&', func(i int) (*boolNode, int, bool) { return not(i) }))
	depth := 0 // NOTs and parentheses open here
	not = func(i int) (*boolNode, int, bool) {
		// deeper nesting is DuckDB's (and its checks'): the parser and
		// eval recurse once a level, and a reader's 1.7 million NOTs
		// overflowed the goroutine's stack, which ends the process
		if depth++; depth > maxBoolDepth {
			return nil, i, false
		}
		defer func() { depth-- }()
		switch {
		case i < len(toks) && toks[i].Is("NOT"):
			n, i, ok := not(i + 1)
			return &boolNode{op: '!', kids: []*boolNode{n}}, i, ok
		case i < len(toks) && toks[i].Text == "(":
			n, i, ok := or(i + 1)
			if !ok || i >= len(toks) || toks[i].Text != ")" {
				return nil, i, false
			}
			return n, i + 1, true
		}
		conds, i, ok := cond(i)
		if !ok {
			return nil, i, false
		}
		var n *boolNode
		for _, c := range conds {
			n = n.join('&', &boolNode{op: 'c', leaf: len(sel.where)})
			sel.where = append(sel.where, c)
		}
		return n, i, true
	}
	i := 0
	if i < len(toks) && toks[i].Is("WHERE") {
		tree, next, ok := or(i + 1)
		if !ok {
			return nil, false, nil
		}
		if !tree.flat() {
			sel.tree = tree
		}
		i = next
	}
	if i+1 < len(toks) && toks[i].Is("ORDER") && toks[i+1].Is("BY") {
		for i += 2; ; i++ {
			col, j, found := outputCol(i)
			if !found {
				col, j = column(i)
			}
			if i < len(toks) && toks[i].Kind == pgsql.Number {
				// ORDER BY 2: the select list's second column
				n, err := strconv.Atoi(toks[i].Text)
				switch {
				case err != nil || n < 1:
					col = -1
				case proj != nil && n <= len(proj):
					col = proj[n-1].col
				case proj == nil && n <= len(scope.cols):
					col = n - 1
				default:
					col = -1 // DuckDB says it is out of range
				}
				j = i + 1
			}
			if col < 0 {
				return nil, false, nil
			}
			o := nativeOrder{col: col}
			if j < len(toks) && (toks[j].Is("ASC") || toks[j].Is("DESC")) {
				o.desc, j = toks[j].Is("DESC"), j+1
			}
			if j+1 < len(toks) && toks[j].Is("NULLS") && (toks[j+1].Is("FIRST") || toks[j+1].Is("LAST")) {
				o.nullsFirst, j = toks[j+1].Is("FIRST"), j+2
			}
			// a column sorted by already never decides again: a reader's
			// 20,000 repeats of one asked the sort for 75 GB of keys
			if !slices.ContainsFunc(sel.order, func(x nativeOrder) bool { return x.col == o.col }) {
				sel.order = append(sel.order, o)
			}
			if i = j; i < len(toks) && toks[i].Text == "," {
				continue
			}
			break
		}
	}
	for i < len(toks) && (toks[i].Is("LIMIT") || toks[i].Is("OFFSET")) {
		if i+1 >= len(toks) || toks[i+1].Kind != pgsql.Number {
			return nil, false, nil
		}
		n, err := strconv.ParseInt(toks[i+1].Text, 10, 64)
		if err != nil || n < 0 {
			return nil, false, nil // DuckDB says what is wrong with it
		}
		if toks[i].Is("LIMIT") && sel.limit < 0 {
			sel.limit = n
		} else if toks[i].Is("OFFSET") && sel.offset < 0 {
			sel.offset = n
		} else {
			return nil, false, nil
		}
		i += 2
	}
	if i != len(toks) {
		return nil, false, nil
	}
	if len(sel.where) == 0 && len(sel.order) == 0 && sel.limit < 0 && sel.offset < 0 {
		return nil, true, nil
	}
	return sel, true, nil
}

func isIntegerType(t duckdb.Type) bool {
	switch t {
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT,
		duckdb.TYPE_UTINYINT, duckdb.TYPE_USMALLINT, duckdb.TYPE_UINTEGER, duckdb.TYPE_UBIGINT:
		return true
	}
	return false
}

// compareValue converts a literal or a parameter's value to what a cell of
// type t compares with: int64, uint64 or string.
func compareValue(v any, t duckdb.Type) (any, error) {
	s, isString := v.(string)
	if b, ok := v.([]byte); ok {
		s, isString = string(b), true
	}
	switch {
	case t == duckdb.TYPE_VARCHAR:
		if isString {
			return s, nil
		}
		return nil, pgErrorf(codes.DatatypeMismatch, "a %T compared with a text column", v)
	case t == duckdb.TYPE_UBIGINT || t == duckdb.TYPE_UINTEGER || t == duckdb.TYPE_USMALLINT || t == duckdb.TYPE_UTINYINT:
		if isString {
			n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return nil, pgErrorf(codes.InvalidTextRepresentation, "invalid input syntax for an unsigned integer: %q", s)
			}
			return n, nil
		}
	default:
		if isString {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return nil, pgErrorf(codes.InvalidTextRepresentation, "invalid input syntax for type bigint: %q", s)
			}
			return n, nil
		}
	}
	if n, ok := toInt64(v); ok {
		if t == duckdb.TYPE_UBIGINT || t == duckdb.TYPE_UINTEGER || t == duckdb.TYPE_USMALLINT || t == duckdb.TYPE_UTINYINT {
			if n < 0 {
				return nil, pgErrorf(codes.NumericValueOutOfRange, "%d is out of range for an unsigned integer", n)
			}
			return uint64(n), nil
		}
		return n, nil
	}
	return nil, pgErrorf(codes.DatatypeMismatch, "a %T compared with an integer column", v)
}

// SortedRows are NativeRows that know their order: SortedBy(col) is true
// when the rows' values of col are strictly ascending in byte order (or
// numerically) with no NULL. nativeSelect then bounds its scan by the
// conditions on col and skips a sort whose first key is col ascending.
type SortedRows interface {
	NativeRows
	SortedBy(col int) bool
}

// apply filters, orders and cuts rows; params are the portal's converted
// values for the $n the conditions use.
func (sel *nativeSelect) apply(stop *stopCheck, rows NativeRows, params func(n int, t duckdb.Type) (any, error)) (NativeRows, error) {
	// vals[k]: where[k]'s value, converted (a *likePattern, an inList);
	// nil for a NULL, which makes the condition NULL
	vals := make([]any, len(sel.where))
	null := false // a condition that is never true
	for k, c := range sel.where {
		if c.op == "null" || c.op == "not null" {
			continue
		}
		if c.list != nil {
			in := inList{}
			for _, a := range c.list {
				v := a.value
				if a.param != 0 {
					var err error
					if v, err = params(a.param, c.colType); err != nil {
						return nil, err
					}
				}
				if v == nil {
					in.null = true
				} else {
					in.vals = append(in.vals, v)
				}
			}
			null = null || in.null && c.op == "not in" || len(in.vals) == 0 && c.op == "in"
			vals[k] = in.indexed()
			continue
		}
		v := c.val.value
		if c.val.param != 0 {
			var err error
			if v, err = params(c.val.param, c.colType); err != nil {
				return nil, err
			}
		}
		if v == nil {
			null = true
			continue
		}
		if c.op == "like" || c.op == "not like" {
			v = compileLike(v.(string))
		}
		vals[k] = v
	}
	if null && sel.tree == nil {
		return pickedRows{rows, nil}, nil // one of the ANDed conditions is never true
	}
	// the rows to look at, and whether the function's order is the answer's
	lo, hi := 0, rows.Len()
	sorted, _ := rows.(SortedRows)
	inOrder := len(sel.order) == 0
	if sorted != nil {
		if len(sel.order) > 0 && !sel.order[0].desc && sorted.SortedBy(sel.order[0].col) {
			inOrder = true // strictly ascending: later keys never decide
		}
		if sel.tree == nil {
			lo, hi = sel.bounds(sorted, vals, lo, hi)
		}
	}
	stopAt := -1 // rows enough, when no sort follows
	if inOrder && sel.limit >= 0 {
		stopAt = int(min(rowsWanted(sel.limit, sel.offset), int64(hi-lo)))
	}
	// a row's work grows with the IN lists' values and the LIKE patterns'
	// lengths (likeMatch: a pass over the pattern, per URL byte at worst)
	cost := 1 + len(sel.where)/8 // 200,000 conditions once ran 12 s past a 1 s timeout
	for _, v := range vals {
		switch x := v.(type) {
		case inList:
			if x.set == nil {
				cost += len(x.vals) / 8
			}
		case *likePattern:
			cost += len(x.pattern) / 8
		}
	}
	stop.weigh(cost)
	room := min(hi-lo, max(stopAt, 16))
	if stop.limit > 0 {
		// N1 bounds the positions kept, and so what is asked of the heap up
		// front: LIMIT 1000000000 over 50M rows once sized this for every
		// row the function returned (381 MB)
		room = min(room, stop.limit*indexOnly+1)
	}
	idx := make([]int, 0, room)
	row := 0 // the row leaf tests
	leaf := func(k int) truth { return sel.where[k].test(rows.Cell(row, sel.where[k].col), vals[k]) }
rows:
	for r := lo; r < hi && len(idx) != stopAt; r++ {
		if stop.stop() {
			return nil, stop.err
		}
		if sel.tree != nil {
			if row = r; sel.tree.eval(leaf) != truthTrue {
				continue
			}
		} else {
			for k := range sel.where {
				if sel.where[k].test(rows.Cell(r, sel.where[k].col), vals[k]) != truthTrue {
					continue rows
				}
			}
		}
		if idx = append(idx, r); stop.over(len(idx), true) {
			return nil, ErrNativeTooLarge // N1
		}
	}
	if !inOrder {
		if k := rowsWanted(sel.limit, sel.offset); sel.limit >= 0 && k <= int64(len(idx)/2) {
			if stop.over(int(k), false) {
				return nil, ErrNativeTooLarge // N1: the heap's rows
			}
			idx = sel.topRows(stop, rows, idx, int(k))
		} else {
			if stop.over(len(idx), false) {
				return nil, ErrNativeTooLarge // N1: the sort's keys
			}
			idx = sel.sortRows(stop, rows, idx)
		}
		if stop.err != nil {
			return nil, stop.err
		}
	}
	if sel.offset > 0 {
		idx = idx[min(int64(len(idx)), sel.offset):]
	}
	if sel.limit >= 0 && int64(len(idx)) > sel.limit {
		idx = idx[:sel.limit]
	}
	return picked(rows, idx), nil
}

// rowsWanted is LIMIT plus OFFSET (limit >= 0), saturating: LIMIT and
// OFFSET near 2^63 overflowed into a negative count, and topRows' make
// panicked on it.
func rowsWanted(limit, offset int64) int64 {
	offset = max(offset, 0)
	if limit > math.MaxInt64-offset {
		return math.MaxInt64
	}
	return limit + offset
}

// inList is an IN list's values, converted, and whether it held a NULL;
// a long one is a set too, so a row costs a lookup, not a pass over the
// list (an IN of 200,000 literals over one domain's 66k URLs took 155 s).
type inList struct {
	vals []any
	null bool
	// set, when len(vals) > inSetFrom: each value's appendGroupKey, which
	// a cell shares exactly when compareCell finds the two equal (an
	// integer whatever its Go type)
	set map[string]bool
}

const inSetFrom = 16

func (in inList) indexed() inList {
	if len(in.vals) <= inSetFrom {
		return in
	}
	in.set = make(map[string]bool, len(in.vals))
	for _, v := range in.vals {
		cell := nativeValueOf(v)
		if cell.kind == nvNull {
			return inList{vals: in.vals, null: in.null} // not a type the set knows
		}
		in.set[string(appendGroupKey(nil, cell))] = true
	}
	return in
}

// has reports whether cell (not NULL) equals one of the list's values.
func (in inList) has(cell NativeValue) bool {
	if in.set != nil {
		var buf [64]byte
		return in.set[string(appendGroupKey(buf[:0], cell))]
	}
	for _, w := range in.vals {
		if compareCell(cell, w) == 0 {
			return true
		}
	}
	return false
}

// truth is SQL's three-valued logic.
type truth uint8

const (
	truthFalse truth = iota
	truthNull
	truthTrue
)

func truthOf(b bool) truth {
	if b {
		return truthTrue
	}
	return truthFalse
}

// test is the condition on cell, with its converted value v (nil: NULL).
func (c *nativeCond) test(cell NativeValue, v any) truth {
	switch c.op {
	case "null":
		return truthOf(cell.kind == nvNull)
	case "not null":
		return truthOf(cell.kind != nvNull)
	}
	if cell.kind == nvNull {
		return truthNull
	}
	switch x := v.(type) {
	case nil:
		return truthNull
	case inList:
		// x IN (…) is true if x equals one, else NULL if the list holds
		// a NULL, else false; NOT IN the negation
		if x.has(cell) {
			return truthOf(c.op == "in")
		}
		if x.null {
			return truthNull
		}
		return truthOf(c.op == "not in")
	case *likePattern:
		return truthOf(x.match(cell.s) == (c.op == "like"))
	}
	cmp := compareCell(cell, v)
	return truthOf(c.op == "=" && cmp == 0 || c.op == "<>" && cmp != 0 || c.op == "<" && cmp < 0 ||
		c.op == "<=" && cmp <= 0 || c.op == ">" && cmp > 0 || c.op == ">=" && cmp >= 0)
}

// maxBoolDepth bounds the nesting of NOT and parentheses a native WHERE
// takes; people and BI tools write a few levels.
const maxBoolDepth = 64

// boolNode is a WHERE clause's shape: a condition (op 'c', where[leaf]),
// or AND ('&'), OR ('|'), NOT ('!') of its kids.
type boolNode struct {
	op   byte
	leaf int
	kids []*boolNode
}

// join is n op m, flattening a chain of one operator; a nil n is m.
func (n *boolNode) join(op byte, m *boolNode) *boolNode {
	if n == nil {
		return m
	}
	if n.op == op {
		n.kids = append(n.kids, m)
		return n
	}
	return &boolNode{op: op, kids: []*boolNode{n, m}}
}

// flat: the tree is conditions ANDed, which nativeSelect answers without
// it (and bounds on a sorted column).
func (n *boolNode) flat() bool {
	if n.op == 'c' {
		return true
	}
	if n.op != '&' {
		return false
	}
	for _, k := range n.kids {
		if k.op != 'c' {
			return false
		}
	}
	return true
}

// eval is the clause's truth for a row whose conditions leaf answers.
func (n *boolNode) eval(leaf func(k int) truth) truth {
	switch n.op {
	case 'c':
		return leaf(n.leaf)
	case '!':
		return truthTrue - n.kids[0].eval(leaf)
	}
	// AND is the least of its kids' truths (false < NULL < true), OR the
	// greatest; each stops at the value that decides it
	t, decides := truthTrue, truthFalse
	if n.op == '|' {
		t, decides = truthFalse, truthTrue
	}
	for _, k := range n.kids {
		if v := k.eval(leaf); n.op == '&' && v < t || n.op == '|' && v > t {
			t = v
		}
		if t == decides {
			break
		}
	}
	return t
}

// keyedRow is a row of a sort with its ORDER BY cells, read once.
type keyedRow struct {
	row  int
	keys []NativeValue
}

// intKeyedRow is a row of a sort by one integer column.
type intKeyedRow struct {
	key int64
	row int
}

// sortRows orders idx, rows of rows in ascending order, by sel.order;
// rows that tie keep the function's order (the row number breaks ties, so
// the sort need not be stable). Each row's keys are read once: sorting
// domain_datasets' 64 rows by url_count called Cell twice per comparison
// through sort.SliceStable's reflective swaps, a third of the server's
// CPU for the person-written shape at 1 client.
func (sel *nativeSelect) sortRows(stop *stopCheck, rows NativeRows, idx []int) []int {
	if sel.sortByOneInt(stop, rows, idx) {
		return idx
	}
	nk := len(sel.order)
	keys := make([]NativeValue, len(idx)*nk)
	ks := make([]keyedRow, len(idx))
	for i, r := range idx {
		if stop.stop() {
			return idx
		}
		k := keys[i*nk : (i+1)*nk : (i+1)*nk]
		sel.readKeys(rows, r, k)
		ks[i] = keyedRow{row: r, keys: k}
	}
	slices.SortFunc(ks, func(a, b keyedRow) int {
		if stop.stop() {
			return 0
		}
		return sel.compareKeyed(&a, &b)
	})
	for i, k := range ks {
		idx[i] = k.row
	}
	return idx
}

// readKeys reads row r's ORDER BY cells into keys, in order.
func (sel *nativeSelect) readKeys(rows NativeRows, r int, keys []NativeValue) {
	for j, o := range sel.order {
		keys[j] = rows.Cell(r, o.col)
	}
}

// compareKeyed is the order of sortRows and topRows: by the ORDER BY keys,
// then by row number, so no two rows tie.
func (sel *nativeSelect) compareKeyed(a, b *keyedRow) int {
	for j, o := range sel.order {
		if c := o.compare(&a.keys[j], &b.keys[j]); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.row, b.row)
}

// topRows is sortRows for ORDER BY … LIMIT: the first k rows of idx in
// that order, found with a heap of k rows, so it holds k rows' keys rather
// than every row's. A sort of a web-scale domain's URLs by url DESC
// LIMIT 10 keeps ten decoded URLs alive, not millions (strings that the
// urls view's row budget would otherwise have let go), in n log k.
func (sel *nativeSelect) topRows(stop *stopCheck, rows NativeRows, idx []int, k int) []int {
	if k == 0 {
		return idx[:0]
	}
	nk := len(sel.order)
	h := topHeap{sel: sel, rows: make([]keyedRow, 0, k)} // h.rows[0]: the last kept in the order
	cand := keyedRow{keys: make([]NativeValue, nk)}
	for _, r := range idx {
		if stop.stop() {
			return idx[:0]
		}
		cand.row = r
		sel.readKeys(rows, r, cand.keys)
		switch {
		case len(h.rows) < k:
			heap.Push(&h, keyedRow{row: r, keys: slices.Clone(cand.keys)})
		case sel.compareKeyed(&cand, &h.rows[0]) < 0:
			h.rows[0].row = r
			copy(h.rows[0].keys, cand.keys)
			heap.Fix(&h, 0)
		}
	}
	slices.SortFunc(h.rows, func(a, b keyedRow) int { return sel.compareKeyed(&a, &b) })
	out := idx[:len(h.rows)] // idx is read no more
	for i, kr := range h.rows {
		out[i] = kr.row
	}
	return out
}

// topHeap is a max-heap in sel's order (container/heap).
type topHeap struct {
	sel  *nativeSelect
	rows []keyedRow
}

func (h *topHeap) Len() int           { return len(h.rows) }
func (h *topHeap) Less(i, j int) bool { return h.sel.compareKeyed(&h.rows[i], &h.rows[j]) > 0 }
func (h *topHeap) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *topHeap) Push(x any)         { h.rows = append(h.rows, x.(keyedRow)) }
func (h *topHeap) Pop() any {
	last := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return last
}

// compare orders two cells of the column by o: its direction, and NULLs
// first or last as o says whichever the direction.
func (o nativeOrder) compare(x, y *NativeValue) int {
	if xn, yn := x.kind == nvNull, y.kind == nvNull; xn || yn {
		switch {
		case xn == yn:
			return 0
		case xn == o.nullsFirst:
			return -1
		}
		return 1
	}
	c := compareCells(*x, *y)
	if o.desc {
		return -c
	}
	return c
}

// sortByOneInt sorts idx as sortRows does when the order is one column
// whose cells are all signed integers (url_count, dataset_id), and reports
// whether it did.
func (sel *nativeSelect) sortByOneInt(stop *stopCheck, rows NativeRows, idx []int) bool {
	if len(sel.order) != 1 {
		return false
	}
	col, desc := sel.order[0].col, sel.order[0].desc
	ks := make([]intKeyedRow, len(idx))
	for i, r := range idx {
		if stop.stop() {
			return true // idx as it was: the caller returns stop.err
		}
		v := rows.Cell(r, col)
		if v.kind != nvInt {
			return false
		}
		ks[i] = intKeyedRow{key: int64(v.n), row: r}
	}
	slices.SortFunc(ks, func(a, b intKeyedRow) int {
		if stop.stop() {
			return 0
		}
		if a.key != b.key {
			if (a.key < b.key) != desc {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.row, b.row)
	})
	for i, k := range ks {
		idx[i] = k.row
	}
	return true
}

// bounds narrows [lo, hi) to the rows of sorted that the conditions on a
// column it is sorted by can keep: no row outside passes them.
func (sel *nativeSelect) bounds(rows SortedRows, vals []any, lo, hi int) (int, int) {
	for k, c := range sel.where {
		if !rows.SortedBy(c.col) {
			continue
		}
		// the first row whose value is at least (or, strict, above) v
		from := func(v any, strict bool) int {
			return lo + sort.Search(hi-lo, func(i int) bool {
				cmp := compareCell(rows.Cell(lo+i, c.col), v)
				return cmp > 0 || cmp == 0 && !strict
			})
		}
		switch v := vals[k]; c.op {
		case "=":
			lo, hi = from(v, false), from(v, true)
		case ">":
			lo = from(v, true)
		case ">=":
			lo = from(v, false)
		case "<":
			hi = from(v, false)
		case "<=":
			hi = from(v, true)
		case "like":
			p := v.(*likePattern)
			if p.prefix == "" {
				continue
			}
			lo = from(p.prefix, false)
			hi = lo + sort.Search(hi-lo, func(i int) bool {
				s := rows.Cell(lo+i, c.col).s
				return !strings.HasPrefix(s, p.prefix) // sorted: those with the prefix come first
			})
		}
		if hi < lo {
			hi = lo
		}
	}
	return lo, hi
}

// likePattern is a LIKE pattern as DuckDB reads one without ESCAPE: %
// any run of characters, _ one UTF-8 character, every other byte itself.
type likePattern struct {
	pattern string
	prefix  string // the bytes every match starts with (before any wildcard)
	// onlyPrefix: the pattern is prefix%, the shape of a URL prefix
	onlyPrefix bool
}

func compileLike(p string) *likePattern {
	// a run of % matches what one does; likeMatch steps over every % of
	// the pattern for every row, so a reader's literal of 200,000 of them
	// took 16 s over one domain's 66k URLs
	for strings.Contains(p, "%%") {
		p = strings.ReplaceAll(p, "%%", "%")
	}
	l := &likePattern{pattern: p, prefix: p}
	if i := strings.IndexAny(p, "%_"); i >= 0 {
		l.prefix = p[:i]
		l.onlyPrefix = p[i:] == "%"
	}
	return l
}

func (l *likePattern) match(s string) bool {
	if l.onlyPrefix {
		return strings.HasPrefix(s, l.prefix)
	}
	return likeMatch(s, l.pattern)
}

// likeMatch is the classic wildcard match: on a mismatch, the last % seen
// takes one more character and the rest of the pattern is tried again
// (taking more at an earlier % never helps once a later one matched).
func likeMatch(s, p string) bool {
	si, pi := 0, 0
	star, starS := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '%':
			star, starS = pi, si
			pi++
		case pi < len(p) && p[pi] == '_':
			_, w := utf8.DecodeRuneInString(s[si:])
			si += w
			pi++
		case pi < len(p) && p[pi] == s[si]:
			si++
			pi++
		case star >= 0:
			_, w := utf8.DecodeRuneInString(s[starS:])
			starS += w
			si, pi = starS, star+1
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '%' {
		pi++
	}
	return pi == len(p)
}

// compareCell compares a non-NULL cell with a value compareValue made.
func compareCell(c NativeValue, v any) int {
	switch x := v.(type) {
	case int64:
		if c.kind == nvUint {
			if x < 0 {
				return 1
			}
			return cmp3(c.n, uint64(x))
		}
		return cmp3(int64(c.n), x)
	case uint64:
		if c.kind == nvInt && int64(c.n) < 0 {
			return -1
		}
		return cmp3(c.n, x)
	case string:
		return strings.Compare(c.s, x)
	}
	return 0
}

// compareCells compares two non-NULL cells of one column.
func compareCells(a, b NativeValue) int {
	switch a.kind {
	case nvInt:
		return cmp3(int64(a.n), int64(b.n))
	case nvUint:
		return cmp3(a.n, b.n)
	case nvString:
		return strings.Compare(a.s, b.s)
	case nvTime:
		return a.t.Compare(b.t)
	}
	return 0
}

func cmp3[T int64 | uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pickedRows is rows in the order, and with only the rows, idx names.
type pickedRows struct {
	rows NativeRows
	idx  []int
}

func (p pickedRows) Len() int                      { return len(p.idx) }
func (p pickedRows) Cell(row, col int) NativeValue { return p.rows.Cell(p.idx[row], col) }

// pickedCells is pickedRows over rows that are RowCells.
type pickedCells struct {
	pickedRows
	bulk RowCells
}

func (p pickedCells) Cells(row int, cols []int, dst []NativeValue) {
	p.bulk.Cells(p.idx[row], cols, dst)
}

// picked is rows in the order idx gives, RowCells when rows is.
func picked(rows NativeRows, idx []int) NativeRows {
	if bulk, ok := rows.(RowCells); ok {
		return pickedCells{pickedRows{rows, idx}, bulk}
	}
	return pickedRows{rows, idx}
}

// boxedRows is a Run's [][]any as NativeRows.
type boxedRows [][]any

func (b boxedRows) Len() int                      { return len(b) }
func (b boxedRows) Cell(row, col int) NativeValue { return nativeValueOf(b[row][col]) }

// nativeValueOf is v, a value in the Go types duckdb-go gives, as a cell
// (NULL for a type no cell holds).
func nativeValueOf(v any) NativeValue {
	switch x := v.(type) {
	case string:
		return NativeString(x)
	case time.Time:
		return NativeTime(x)
	case uint8:
		return NativeUint(uint64(x))
	case uint16:
		return NativeUint(uint64(x))
	case uint32:
		return NativeUint(uint64(x))
	case uint64:
		return NativeUint(x)
	case nil:
		return NativeNull()
	}
	if n, ok := toInt64(v); ok {
		return NativeInt(n)
	}
	return NativeNull()
}
