package sqlserver

import (
	"cmp"
	"context"
	"slices"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// The FROM clause of a native statement (issue 16: what people and BI
// tools write, the join of domain_datasets with the datasets view among
// it):
//
//	FROM item [[AS] a]
//	  [ {[INNER] JOIN | LEFT [OUTER] JOIN} item [[AS] b] {ON x = y [AND …] | USING (col, …)}
//	  | NATURAL JOIN item [[AS] b] ]
//
// item is a native function's call, f(args), or a view that a native
// function of no argument answers (Config.NativeViews: datasets is
// dhsi_datasets()), bare or as public.view. ON compares a column of each
// side for equality; the two have one type, an integer or VARCHAR one.
// The two items become one NativeFunction (joinFunctions): the left's
// columns then the right's, the left's arguments then the right's, so the
// rest of the native path (projection, WHERE, ORDER BY, aggregates, the
// wire) is the same for one item and two. Column references bind as
// DuckDB binds them (nativeScope). Anything else goes to DuckDB.
//
// The join's semantics are DuckDB's: an inner join keeps the pairs whose
// keys are equal, NULL equal to nothing; LEFT keeps every left row, with
// NULLs where no right row matches. Without ORDER BY the rows come in the
// left's order, each with its matches in the right's; DuckDB promises no
// order there either. TestNativeSelectAgreesWithDuckDB holds the two paths
// to the same answers.

// nativeFrom is a matched FROM clause.
type nativeFrom struct {
	name    string // for metrics: the function's name, or "l JOIN r"
	fn      NativeFunction
	args    []nativeArg
	nullArg error // a NULL literal argument: refused once the statement matched
	scope   nativeScope
}

// nativeScope binds a native statement's column references: the columns
// of its FROM items, each under its item's qualifier.
type nativeScope struct {
	cols  []NativeColumn
	quals []string // per column: its item's alias, or its name as written
	// hidden: per column, the right side of a USING or NATURAL join's
	// key, which "*" leaves out and a bare name does not reach (it names
	// the left one); nil for none
	hidden []bool
}

// resolve reads a column reference at toks[i], name or qual.name. col is
// -1 where the scope names no column, or two (DuckDB reports the
// ambiguity or answers otherwise).
func (sc *nativeScope) resolve(toks []pgsql.Token, i int) (col, next int) {
	isName := func(t pgsql.Token) bool { return t.Kind == pgsql.Ident || t.Kind == pgsql.QIdent }
	if i >= len(toks) || !isName(toks[i]) {
		return -1, i
	}
	if bareNoColumn(toks[i]) {
		// DuckDB's parser refuses a bare reserved word as a column or a
		// qualifier (SELECT filename, offset FROM urls …), where the
		// native path answered; after a dot it is a name (u.offset)
		return -1, i
	}
	qual, name := "", toks[i].IdentName()
	if i+1 < len(toks) && toks[i+1].Text == "." {
		if i+2 >= len(toks) || !isName(toks[i+2]) {
			return -1, i
		}
		qual, name, i = name, toks[i+2].IdentName(), i+2
	}
	col = -1
	for c, nc := range sc.cols {
		if nc.Name != name || qual == "" && sc.hidden != nil && sc.hidden[c] || qual != "" && !strings.EqualFold(sc.quals[c], qual) {
			continue
		}
		if col >= 0 {
			return -1, i // ambiguous
		}
		col = c
	}
	return col, i + 1
}

// duckNoColumn are the words DuckDB 1.5 never reads as a bare column
// name: its reserved words (true, false and null among them, which are
// literals) and the type_function words its parser refuses there (left,
// full, is, …; not columns, generated, map, struct or try_cast).
// TestNoColumnWordsAreDuckDBs holds the list to DuckDB's parser. A kept
// field may be named any of them (catalog/fields.go), and quoted or
// qualified it is a name.
var duckNoColumn = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric both case cast
		check collate column constraint create default deferrable desc describe distinct do else end
		except false fetch for foreign from group having in initially intersect into lambda lateral
		leading limit not null offset on only or order pivot pivot_longer pivot_wider placing primary
		qualify references returning select show some summarize symmetric table then to trailing true
		union unique unpivot using variadic when where window with
		anti asof at authorization binary by collation concurrently cross freeze full glob ilike inner
		is isnull join left like natural notnull outer overlaps positional right semi similar
		tablesample unpack verbose`) {
		m[w] = true
	}
	return m
}()

// bareNoColumn: t is a bare word DuckDB reads as no column (duckNoColumn).
func bareNoColumn(t pgsql.Token) bool {
	return t.Kind == pgsql.Ident && duckNoColumn[strings.ToLower(t.Text)]
}

// itemScope is the scope of one FROM item's columns, qualified by qual.
func itemScope(cols []NativeColumn, qual string) nativeScope {
	quals := make([]string, len(cols))
	for c := range quals {
		quals[c] = qual
	}
	return nativeScope{cols: cols, quals: quals}
}

// star is what "*" selects: every column but the hidden ones.
func (sc *nativeScope) star() []projected {
	if sc.hidden == nil {
		return nil // every column, as declared
	}
	var out []projected
	for c, nc := range sc.cols {
		if !sc.hidden[c] {
			out = append(out, projected{col: c, name: nc.Name})
		}
	}
	return out
}

// fromItem is one item of a FROM clause.
type fromItem struct {
	name string // the function's, lower case
	fn   NativeFunction
	args []nativeArg
	qual string
}

// matchFrom matches the FROM clause at the start of toks (after FROM);
// rest is what follows it. from is nil for any other clause.
func matchFrom(toks []pgsql.Token, fns map[string]NativeFunction, views map[string]string, keywords map[string]bool) (from *nativeFrom, rest []pgsql.Token) {
	l, i, nullArg, ok := matchFromItem(toks, 0, fns, views, keywords)
	if !ok {
		return nil, nil
	}
	from = &nativeFrom{name: l.name, fn: l.fn, args: l.args, nullArg: nullArg, scope: itemScope(l.fn.Columns, l.qual)}
	natural, leftJoin := false, false
	switch {
	case i < len(toks) && toks[i].Is("JOIN"):
		i++
	case i+1 < len(toks) && toks[i].Is("INNER") && toks[i+1].Is("JOIN"),
		i+1 < len(toks) && toks[i].Is("NATURAL") && toks[i+1].Is("JOIN"):
		natural, i = toks[i].Is("NATURAL"), i+2
	case i+1 < len(toks) && toks[i].Is("LEFT") && toks[i+1].Is("JOIN"):
		leftJoin, i = true, i+2
	case i+2 < len(toks) && toks[i].Is("LEFT") && toks[i+1].Is("OUTER") && toks[i+2].Is("JOIN"):
		leftJoin, i = true, i+3
	default:
		return from, toks[i:]
	}
	r, i, rNull, ok := matchFromItem(toks, i, fns, views, keywords)
	if !ok || strings.EqualFold(l.qual, r.qual) {
		return nil, nil // the same name twice: DuckDB's error
	}
	if l.fn.TakesNull || r.fn.TakesNull {
		return nil, nil // a union of lookups stands alone (joinFunctions knows nothing of TakesNull)
	}
	if nullArg == nil {
		nullArg = rNull
	}
	nl := len(l.fn.Columns)
	sc := from.scope
	sc.cols, sc.quals = concat(sc.cols, r.fn.Columns), concat(sc.quals, itemScope(r.fn.Columns, r.qual).quals)
	var keys [][2]int
	hideRight := func(lc, rc int) bool {
		if sc.hidden == nil {
			sc.hidden = make([]bool, len(sc.cols))
		}
		if sc.hidden[nl+rc] {
			return false // USING (a, a): DuckDB's error
		}
		sc.hidden[nl+rc] = true
		keys = append(keys, [2]int{lc, rc})
		return true
	}
	switch {
	case natural:
		for lc, c := range l.fn.Columns {
			for rc, d := range r.fn.Columns {
				if c.Name == d.Name {
					hideRight(lc, rc)
				}
			}
		}
	case i < len(toks) && toks[i].Is("USING"):
		if i+1 >= len(toks) || toks[i+1].Text != "(" {
			return nil, nil
		}
		for i += 2; ; i += 2 {
			if i+1 >= len(toks) || toks[i].Kind != pgsql.Ident && toks[i].Kind != pgsql.QIdent || bareNoColumn(toks[i]) {
				return nil, nil // USING (url, offset): DuckDB's syntax error
			}
			named := func(c NativeColumn) bool { return c.Name == toks[i].IdentName() }
			lc, rc := slices.IndexFunc(l.fn.Columns, named), slices.IndexFunc(r.fn.Columns, named)
			if lc < 0 || rc < 0 || !hideRight(lc, rc) {
				return nil, nil
			}
			if toks[i+1].Text == ")" {
				i += 2
				break
			}
			if toks[i+1].Text != "," {
				return nil, nil
			}
		}
	case i < len(toks) && toks[i].Is("ON"):
		for i++; ; i++ {
			a, j := sc.resolve(toks, i)
			if a < 0 || j >= len(toks) || toks[j].Text != "=" {
				return nil, nil
			}
			b, k := sc.resolve(toks, j+1)
			if b < 0 || (a < nl) == (b < nl) {
				return nil, nil // both of one side: a filter, DuckDB's
			}
			if a > b {
				a, b = b, a
			}
			if !slices.Contains(keys, [2]int{a, b - nl}) {
				keys = append(keys, [2]int{a, b - nl})
			}
			if i = k; i < len(toks) && toks[i].Is("AND") {
				continue
			}
			break
		}
	default:
		return nil, nil // a join without a condition
	}
	if len(keys) == 0 {
		return nil, nil // NATURAL JOIN of nothing in common: DuckDB's
	}
	for _, k := range keys {
		lt, rt := l.fn.Columns[k[0]].Type, r.fn.Columns[k[1]].Type
		if lt != rt || lt != duckdb.TYPE_VARCHAR && !isIntegerType(lt) {
			return nil, nil // DuckDB's casts
		}
	}
	fn, ok := joinFunctions(l.fn, r.fn, keys, leftJoin)
	if !ok {
		return nil, nil
	}
	kind := " JOIN "
	if leftJoin {
		kind = " LEFT JOIN "
	}
	return &nativeFrom{name: l.name + kind + r.name, fn: fn, args: concat(l.args, r.args), nullArg: nullArg, scope: sc}, toks[i:]
}

// fromItemEnds end a FROM item where an alias could stand.
var fromItemEnds = []string{"JOIN", "INNER", "LEFT", "NATURAL", "ON", "USING", "WHERE", "GROUP", "ORDER", "LIMIT", "OFFSET"}

// matchFromItem matches f(args) or a native view at toks[i], with its
// alias; next is the index after it.
func matchFromItem(toks []pgsql.Token, i int, fns map[string]NativeFunction, views map[string]string, keywords map[string]bool) (item fromItem, next int, nullArg error, ok bool) {
	if i >= len(toks) {
		return item, i, nil, false
	}
	if toks[i].Text == "(" {
		// a union of lookups (nativeunion.go)
		if item, i, ok = matchUnionItem(toks, i, fns); !ok {
			return item, i, nil, false
		}
	} else if toks[i].Kind == pgsql.Ident && i+1 < len(toks) && toks[i+1].Text == "(" {
		item.name = strings.ToLower(toks[i].Text)
		item.qual = item.name
		fn, found := fns[item.name]
		if !found {
			return item, i, nil, false
		}
		end := pgsql.MatchingParen(toks, i+1)
		if end < 0 {
			return item, i, nil, false
		}
		item.fn = fn
		if item.args, nullArg, ok = matchCallArgs(toks[i+2:end], item.name, fn); !ok {
			return item, i, nil, false
		}
		i = end + 1
	} else {
		if i+2 < len(toks) && (toks[i].Kind == pgsql.Ident || toks[i].Kind == pgsql.QIdent) && toks[i].IdentName() == "public" && toks[i+1].Text == "." {
			i += 2
		}
		if toks[i].Kind != pgsql.Ident && toks[i].Kind != pgsql.QIdent || i+1 < len(toks) && toks[i+1].Text == "." {
			return item, i, nil, false
		}
		item.qual = toks[i].IdentName()
		item.name = views[item.qual]
		fn, found := fns[item.name]
		if item.name == "" || !found || len(fn.Args) > 0 {
			return item, i, nil, false
		}
		item.name, item.fn, i = item.qual, fn, i+1
	}
	if item.fn.Stale != nil && item.fn.Stale() {
		return item, i, nil, false
	}
	if i < len(toks) {
		for _, w := range fromItemEnds {
			if toks[i].Is(w) {
				return item, i, nullArg, true
			}
		}
		alias, n, ok := matchAlias(toks[i:], keywords)
		if !ok {
			return item, i, nil, false // "… FROM f($1) group": DuckDB says what is wrong
		}
		if n > 0 {
			item.qual, i = alias, i+n
		}
	}
	return item, i, nullArg, true
}

// matchCallArgs matches the arguments of fn's call, inner: literals of the
// argument types or $n, separated by commas. nullArg is the error a NULL
// literal gets, once the whole statement is known to be native (in
// another shape, a UNION say, DuckDB's guard refuses it alike).
func matchCallArgs(inner []pgsql.Token, name string, fn NativeFunction) (args []nativeArg, nullArg error, ok bool) {
	for i := 0; i < len(inner); i++ {
		t := inner[i]
		if i%2 == 1 {
			if t.Text != "," {
				return nil, nil, false // an expression: DuckDB's business
			}
			continue
		}
		pos := len(args)
		if pos >= len(fn.Args) {
			return nil, nil, false
		}
		switch {
		case t.Kind == pgsql.Param:
			n, ok := paramNumber(t)
			if !ok {
				return nil, nil, false
			}
			args = append(args, nativeArg{param: n})
		case t.Is("NULL"):
			if fn.NullMeansNoRows {
				return nil, nil, false // DuckDB's path answers no row
			}
			nullArg = pgErrorf(codes.NullValueNotAllowed, "%s() does not take NULL arguments", name)
			args = append(args, nativeArg{})
		// a literal of the argument's type; any other (a string for an
		// INTEGER, 1.0, a number for a VARCHAR, one out of range) is
		// DuckDB's to cast or refuse, as it binds the function
		case t.Kind == pgsql.String && fn.Args[pos] == duckdb.TYPE_VARCHAR:
			lit, ok := t.StandardString()
			if !ok {
				return nil, nil, false // E'' and the like: DuckDB's business
			}
			args = append(args, nativeArg{value: lit})
		case t.Kind == pgsql.Number && fn.Args[pos] != duckdb.TYPE_VARCHAR:
			v, err := convertArg(t.Text, fn.Args[pos])
			if err != nil {
				return nil, nil, false
			}
			args = append(args, nativeArg{value: v})
		default:
			return nil, nil, false
		}
	}
	if len(args) != len(fn.Args) {
		return nil, nil, false // let DuckDB report the wrong arity
	}
	return args, nullArg, true
}

// joinFunctions is "l JOIN r ON l.k0 = r.k1 [AND …]" (keys: pairs of l's
// and r's column indexes; LEFT JOIN when left) as one NativeFunction. ok
// is false where a NULL argument would not mean what DuckDB makes of it:
// the native path answers a NullMeansNoRows function's NULL with no row
// at all, and 22004 for the others.
//
// One key column of a pair must be Unique on its side: then each row of
// the other side meets at most one row, and the join holds at most
// len(l) + len(r) rows. A join of two non-unique keys is DuckDB's, whose
// hash join streams and spills: natively, dataset_domains(1) JOIN
// dataset_domains(2) ON url_count (39k domains each, 246 distinct counts)
// made ~10^9 pairs, and the Go heap's allocation failure ended the server.
func joinFunctions(l, r NativeFunction, keys [][2]int, left bool) (NativeFunction, bool) {
	// joinRows probes with keys[0]: the pair whose right side is unique
	// if there is one (a left row then has one candidate), else one whose
	// left side is (each right row is then a candidate of one left row).
	// Probing with a repeating key first walked ~26k candidates a row.
	probe := slices.IndexFunc(keys, func(k [2]int) bool { return r.Columns[k[1]].Unique })
	if probe < 0 {
		probe = slices.IndexFunc(keys, func(k [2]int) bool { return l.Columns[k[0]].Unique })
	}
	if probe < 0 {
		return NativeFunction{}, false
	}
	keys = slices.Clone(keys)
	keys[0], keys[probe] = keys[probe], keys[0]
	// a joined column is not known to be unique (a row of l may meet
	// several of r), so a join with a third item needs that one's key to be
	j := NativeFunction{Args: concat(l.Args, r.Args), Columns: concat(l.Columns, r.Columns)}
	if l.DescribeArgs != nil || r.DescribeArgs != nil {
		j.DescribeArgs = concat(l.describedArgs(), r.describedArgs())
	}
	for i := range j.Columns {
		j.Columns[i].Unique = false
	}
	switch {
	case left && r.NullMeansNoRows:
		return j, false // no row of r, but every row of l
	case len(r.Args) == 0:
		j.NullMeansNoRows = l.NullMeansNoRows
	case len(l.Args) == 0:
		j.NullMeansNoRows = r.NullMeansNoRows
	case l.NullMeansNoRows != r.NullMeansNoRows:
		return j, false
	default:
		j.NullMeansNoRows = l.NullMeansNoRows
	}
	if l.Stale != nil || r.Stale != nil {
		j.Stale = func() bool { return l.Stale != nil && l.Stale() || r.Stale != nil && r.Stale() }
	}
	nl := len(l.Columns)
	j.RowsUsing = func(ctx context.Context, args []any, used []bool) (NativeRows, error) {
		lused, rused := concat(used[:nl], nil), concat(used[nl:], nil)
		for _, k := range keys {
			lused[k[0]], rused[k[1]] = true, true
		}
		lrows, err := nativeRowsOf(ctx, l, args[:len(l.Args)], lused)
		if err != nil {
			return nil, err
		}
		rrows, err := nativeRowsOf(ctx, r, args[len(l.Args):], rused)
		if err != nil {
			return nil, err
		}
		return joinRows(newStopCheck(ctx), lrows, rrows, nl, keys, left)
	}
	return j, true
}

// nativeRowsOf computes fn's rows by whichever of its functions it has.
func nativeRowsOf(ctx context.Context, fn NativeFunction, args []any, used []bool) (NativeRows, error) {
	var rows NativeRows
	var err error
	switch {
	case fn.RowsUsing != nil:
		rows, err = fn.RowsUsing(ctx, args, used)
	case fn.Rows != nil:
		rows, err = fn.Rows(ctx, args)
	default:
		var boxed [][]any
		boxed, err = fn.Run(ctx, args)
		rows = boxedRows(boxed)
	}
	if rows == nil {
		rows = noNativeRows{}
	}
	return rows, err
}

// joinedRows are a join's rows: row k is l's row li[k] beside r's row
// ri[k], or NULLs where ri[k] is -1 (LEFT JOIN).
type joinedRows struct {
	l, r   NativeRows
	nl     int
	li, ri []int
}

func (j *joinedRows) Len() int { return len(j.li) }

func (j *joinedRows) Cell(row, col int) NativeValue {
	if col < j.nl {
		return j.l.Cell(j.li[row], col)
	}
	if j.ri[row] < 0 {
		return NativeNull()
	}
	return j.r.Cell(j.ri[row], col-j.nl)
}

// Cells is RowCells: a row's cells in one call, through one interface
// call instead of one per cell.
func (j *joinedRows) Cells(row int, cols []int, dst []NativeValue) {
	for k, c := range cols {
		dst[k] = j.Cell(row, c)
	}
}

func (j *joinedRows) Err() error {
	if err := nativeRowsErr(j.l); err != nil {
		return err
	}
	return nativeRowsErr(j.r)
}

// joinRows pairs l's rows with r's whose keys are equal: r's rows sorted
// by the first key once, each l row's matches found by binary search, the
// other keys compared per pair. (A map of r's 64 registry rows, built for
// every statement, was a third of the join's CPU at 1 client.)
func joinRows(stop *stopCheck, l, r NativeRows, nl int, keys [][2]int, left bool) (NativeRows, error) {
	j := &joinedRows{l: l, r: r, nl: nl}
	if stop.over(r.Len(), false) || stop.over(l.Len(), true) {
		// N1: r's keys, and a pair of positions per l row (r's key is
		// unique: joinFunctions)
		return nil, ErrNativeTooLarge
	}
	// r's rows by the first key; when every one is an integer in int64's
	// range (a dataset_id), compared as int64s
	type keyed struct {
		key NativeValue
		n   int64
		row int
	}
	ints := true
	byKey := make([]keyed, 0, r.Len())
	for row := range r.Len() {
		if v := r.Cell(row, keys[0][1]); v.kind != nvNull {
			ints = ints && (v.kind == nvInt || v.kind == nvUint && int64(v.n) >= 0)
			byKey = append(byKey, keyed{v, int64(v.n), row})
		}
	}
	cmpKeyed := func(a keyed, b keyed) int { return compareKeys(a.key, b.key) }
	if ints {
		cmpKeyed = func(a keyed, b keyed) int { return cmp.Compare(a.n, b.n) }
	}
	slices.SortStableFunc(byKey, cmpKeyed)
	for row := range l.Len() {
		if stop.stop() {
			return nil, stop.err
		}
		matched := false
		if v := l.Cell(row, keys[0][0]); v.kind != nvNull {
			probe, at := keyed{key: v, n: int64(v.n)}, len(byKey)
			if !ints || v.kind != nvUint || int64(v.n) >= 0 { // else above every key of r
				at, _ = slices.BinarySearchFunc(byKey, probe, cmpKeyed)
			}
		candidates:
			for ; at < len(byKey) && cmpKeyed(byKey[at], probe) == 0; at++ {
				if stop.stop() {
					return nil, stop.err
				}
				rrow := byKey[at].row
				for _, k := range keys[1:] {
					a, b := l.Cell(row, k[0]), r.Cell(rrow, k[1])
					if a.kind == nvNull || b.kind == nvNull || compareKeys(a, b) != 0 {
						continue candidates
					}
				}
				j.li, j.ri, matched = append(j.li, row), append(j.ri, rrow), true
			}
		}
		if left && !matched {
			j.li, j.ri = append(j.li, row), append(j.ri, -1)
		}
	}
	return j, j.Err() // a key cell that could not be read
}

// compareKeys compares two non-NULL key cells of one type: integers by
// value whether NativeInt or NativeUint made them, strings byte by byte.
func compareKeys(a, b NativeValue) int {
	if a.kind != b.kind && (a.kind == nvInt || a.kind == nvUint) && (b.kind == nvInt || b.kind == nvUint) {
		switch {
		case a.kind == nvInt && int64(a.n) < 0:
			return -1
		case b.kind == nvInt && int64(b.n) < 0:
			return 1
		}
		return cmp3(a.n, b.n)
	}
	return compareCells(a, b)
}

// concat is a and b in a new slice.
func concat[T any](a, b []T) []T {
	return append(append(make([]T, 0, len(a)+len(b)), a...), b...)
}
