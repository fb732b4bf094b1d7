package sqlserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// NativeFunction is a table function the server answers itself, without
// DuckDB, when a statement is "SELECT * FROM name(arg, ...)" or "SELECT
// col [AS alias], ... FROM name(arg, ...)" with literal or $n arguments,
// or one of the shapes around it that nativeselect.go, nativeagg.go and
// nativefrom.go answer (WHERE, ORDER BY, aggregates, a join of two): the
// hot path of a prepared lookup, which DuckDB would otherwise prepare,
// bind and plan on every execution. Any other use of the function (an
// expression, a subquery) goes through DuckDB's table function of the
// same name — which must call the same Run, so the two paths answer alike.
type NativeFunction struct {
	Args []duckdb.Type // argument types (VARCHAR, INTEGER, BIGINT)
	// DescribeArgs, when set, are the types its $n arguments are described
	// as to a client, where they differ from Args. urls_by_domain_dataset
	// takes dataset_id as a BIGINT, so that any integer a client binds
	// (JDBC's setLong) finds the rows the WHERE it stands for finds (none
	// past INTEGER's range, not 22003), but its $n is described as the
	// column's INTEGER, as the scan's is.
	DescribeArgs []duckdb.Type
	Columns      []NativeColumn
	// Run computes the rows; values are the Go types DuckDB would return
	// (string, int32, int64, uint64, time.Time, nil).
	Run func(ctx context.Context, args []any) ([][]any, error)
	// NullMeansNoRows: a NULL argument answers no row, as the WHERE the
	// function stands for does (domain_record), instead of 22004.
	NullMeansNoRows bool
	// TakesNull: a NULL argument reaches Run, Rows and RowsUsing as nil
	// (a union of lookups, nativeunion.go: one NULL value among several
	// keeps the others' rows).
	TakesNull bool
	// Rows, when set, computes the same rows typed, and the server's
	// native path calls it instead of Run: its cells are encoded without
	// an allocation each. Run must answer alike; NativeValues builds Run's
	// rows from these.
	Rows func(ctx context.Context, args []any) (NativeRows, error)
	// RowsUsing, when set, is Rows told which columns the statement reads
	// (used[i] for Columns[i]: in its select list, WHERE or ORDER BY),
	// and the native path calls it instead: the server never asks for a
	// cell of another column, so the function may leave those unread (the
	// urls view's kept fields, decoded apart; dataset_domains' url_count,
	// a postings lookup per domain).
	RowsUsing func(ctx context.Context, args []any, used []bool) (NativeRows, error)
	// Stale, when set and true, says Columns no longer describe what the
	// function answers (domain_record after datapackage.json's fields
	// changed): statements prepared from then on go through DuckDB until
	// Server.SetNativeFunction puts a fresh one in its place.
	Stale func() bool
}

// NativeColumn is one result column of a NativeFunction.
type NativeColumn struct {
	Name string
	Type duckdb.Type
	// Unique: no two rows of one call hold one non-NULL value here (a
	// registry's dataset_id, a run's url). A native join needs one of its
	// key columns to be, so that it answers at most as many rows as its
	// two sides (joinFunctions).
	Unique bool
}

// nativeCall is a statement matched to a NativeFunction.
type nativeCall struct {
	name string // the function's name, for metrics
	fn   NativeFunction
	args []nativeArg
	// proj lists the result columns: indexes into fn.Columns and the names
	// they are sent under (nil: every column, as declared)
	proj []projected
	// enc: how the columns sent are encoded from fn.Rows' cells
	enc []nativeEnc
	// sel: WHERE, ORDER BY, LIMIT and OFFSET, answered in Go (nil: none)
	sel *nativeSelect
	// used: the columns the statement reads (NativeFunction.RowsUsing)
	used []bool
	// aggs, when set, are the select list of a "SELECT count(*), sum(col),
	// … FROM f(…) [WHERE …]" (nativeagg.go): the rows WHERE keeps are
	// aggregated into one row, not sent
	aggs []nativeAgg
	// group, when set, is a GROUP BY (nativegroup.go): the rows WHERE
	// keeps answer a row per group, boxed, as aggs answers one
	group *nativeGroup
}

type projected struct {
	col  int
	name string
}

type nativeArg struct {
	param int // $n, or 0 for a literal
	value any // the literal, converted to the argument type
}

// matchNative recognises SELECT {* | col [[AS] alias], ...} FROM items
// (nativefrom.go: a function's call or a native view, or two joined),
// then what nativeSelect answers (WHERE, ORDER BY, LIMIT, OFFSET of simple
// forms); no expression.
//
// keywords are DuckDB's (Engine.keywords): a bare alias must not be one
// (matchAlias), nor a column an unaliased aggregate names (nativeagg.go);
// nil: neither is native.
func matchNative(toks []pgsql.Token, fns map[string]NativeFunction, views map[string]string, keywords map[string]bool) (*nativeCall, error) {
	nc, err := matchNativeShape(toks, fns, views, keywords)
	if nc != nil {
		// describeNative gives a parameter one type, and compareValue
		// converts it to that: WHERE dataset_id = $1 OR dataset = $1 with
		// '1' failed with 42804 natively where DuckDB, which casts per
		// use, answered
		if _, agree := nc.paramOIDs(); !agree {
			return nil, nil
		}
	}
	return nc, err
}

// paramOIDs is the type each $n stands for, by n: its function argument's,
// or that of the column a condition compares it with; agree is false where
// two uses want two types (the first use's is kept).
func (c *nativeCall) paramOIDs() (oids map[int]uint32, agree bool) {
	oids, agree = map[int]uint32{}, true
	use := func(a nativeArg, t duckdb.Type) {
		if a.param == 0 {
			return
		}
		if o, seen := oids[a.param]; seen {
			agree = agree && o == paramOIDOf(t)
			return
		}
		oids[a.param] = paramOIDOf(t)
	}
	for i, a := range c.args {
		use(a, c.fn.describedArg(i))
	}
	for _, cond := range c.conds() {
		for _, a := range cond.args() {
			use(a, cond.colType)
		}
	}
	return oids, agree
}

// declaredAlike reports whether every $n of the call is of the type the
// client declared it, or of its family (declaredAs): the native path
// converts a bound value to its column's or argument's type by
// PostgreSQL's rules for the integers and strings it takes, which agree
// with DuckDB's only where the value is of that family already.
func (c *nativeCall) declaredAlike(clientOIDs []uint32) bool {
	oids, _ := c.paramOIDs()
	for n, oid := range oids {
		if !declaredAs(clientOIDs, n, oid) {
			return false
		}
	}
	return true
}

// matchNativeShape is matchNative before the parameters' types are
// checked.
func matchNativeShape(toks []pgsql.Token, fns map[string]NativeFunction, views map[string]string, keywords map[string]bool) (*nativeCall, error) {
	if len(fns) == 0 || len(toks) < 4 || !toks[0].Is("SELECT") {
		return nil, nil
	}
	for k := 0; k+1 < len(toks); k++ {
		if toks[k].Is("GROUP") && toks[k+1].Is("BY") {
			return matchGrouped(toks, fns, views, keywords), nil
		}
	}
	aggItems, toks := matchAggregateList(toks, keywords)
	from := -1
	for i, t := range toks {
		if t.Is("FROM") {
			from = i
			break
		}
	}
	if from < 2 {
		return nil, nil
	}
	src, tail := matchFrom(toks[from+1:], fns, views, keywords)
	if src == nil {
		return nil, nil
	}
	proj, ok := matchProjection(toks[1:from], &src.scope, keywords)
	if !ok {
		return nil, nil
	}
	sel, ok, err := matchNativeTail(tail, &src.scope, proj)
	if err != nil || !ok {
		return nil, err
	}
	if src.nullArg != nil {
		return nil, src.nullArg
	}
	nc := &nativeCall{name: src.name, fn: src.fn, args: src.args, proj: proj, sel: sel, used: make([]bool, len(src.fn.Columns))}
	if aggItems != nil {
		if sel != nil && (len(sel.order) > 0 || sel.limit >= 0 || sel.offset >= 0) {
			return nil, nil // ORDER BY, LIMIT, OFFSET of the one row: DuckDB's
		}
		if nc.aggs, ok = resolveAggregates(aggItems, &src.scope, keywords); !ok {
			return nil, nil
		}
		nc.proj = nil // the "*" that stood for the aggregates: one row of them is sent
		for _, a := range nc.aggs {
			if a.col >= 0 {
				nc.used[a.col] = true
			}
		}
	} else {
		for _, p := range nc.columns() {
			nc.used[p.col] = true
		}
	}
	if sel != nil {
		for _, c := range sel.where {
			nc.used[c.col] = true
		}
		for _, o := range sel.order {
			nc.used[o.col] = true
		}
	}
	return nc, nil
}

// matchProjection matches a select list of "*" or column references of
// scope (name or qual.name), each with an optional alias. ok is false for
// anything else (an expression, an unknown column: DuckDB answers or
// reports it).
func matchProjection(list []pgsql.Token, scope *nativeScope, keywords map[string]bool) (proj []projected, ok bool) {
	if len(list) == 1 && list[0].Text == "*" {
		return scope.star(), true
	}
	for len(list) > 0 {
		col, n := scope.resolve(list, 0)
		if col < 0 {
			return nil, false
		}
		p := projected{col: col, name: scope.cols[col].Name}
		list = list[n:]
		if len(list) > 0 && list[0].Text != "," {
			name, n, ok := matchAlias(list, keywords)
			if !ok || n == 0 {
				return nil, false
			}
			p.name, list = name, list[n:]
		}
		proj = append(proj, p)
		if len(list) > 0 {
			if list[0].Text != "," || len(list) == 1 {
				return nil, false
			}
			list = list[1:]
		}
	}
	return proj, len(proj) > 0
}

// describedArg is the type argument i is described as (DescribeArgs).
func (fn NativeFunction) describedArg(i int) duckdb.Type {
	if i < len(fn.DescribeArgs) {
		return fn.DescribeArgs[i]
	}
	return fn.Args[i]
}

// describedArgs is every argument's describedArg.
func (fn NativeFunction) describedArgs() []duckdb.Type {
	out := make([]duckdb.Type, len(fn.Args))
	for i := range out {
		out[i] = fn.describedArg(i)
	}
	return out
}

// conds are the call's conditions: its WHERE's, then its HAVING's.
func (c *nativeCall) conds() []nativeCond {
	var out []nativeCond
	if c.sel != nil {
		out = append(out, c.sel.where...)
	}
	if c.group != nil && c.group.having != nil {
		out = append(out, c.group.having.where...)
	}
	return out
}

// columns returns the call's result columns in the order sent.
func (c *nativeCall) columns() []projected {
	if c.proj != nil {
		return c.proj
	}
	all := make([]projected, len(c.fn.Columns))
	for i, col := range c.fn.Columns {
		all[i] = projected{col: i, name: col.Name}
	}
	return all
}

// convertArg turns a literal or a bound parameter into the argument type.
func convertArg(v any, t duckdb.Type) (any, error) {
	switch t {
	case duckdb.TYPE_VARCHAR:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
		return fmt.Sprint(v), nil
	case duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT:
		var n int64
		switch x := v.(type) {
		case string:
			p, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return nil, pgErrorf(codes.InvalidTextRepresentation, "invalid input syntax for type integer: %q", x)
			}
			n = p
		default:
			p, ok := toInt64(v)
			if !ok {
				return nil, pgErrorf(codes.DatatypeMismatch, "argument of type %T where an integer was expected", v)
			}
			n = p
		}
		if t == duckdb.TYPE_INTEGER {
			if n != int64(int32(n)) {
				return nil, pgErrorf(codes.NumericValueOutOfRange, "integer out of range: %d", n)
			}
			return int32(n), nil
		}
		return n, nil
	}
	return v, nil
}

// maxParams is the highest $n a native statement may use: a Bind carries
// at most 65,535 values (a 16-bit count), as PostgreSQL's does.
const maxParams = 65535

// paramNumber is a $n token's n, and false outside 1..maxParams: a larger
// one is DuckDB's to refuse (describeNative types $1 to $n, and a reader's
// $10000000000 asked the Go heap for 40 GB, which ended the server), and
// $0 is no parameter at all.
func paramNumber(t pgsql.Token) (int, bool) {
	n, err := strconv.Atoi(t.Text[1:])
	return n, err == nil && n >= 1 && n <= maxParams
}

// describeNative fills the statement's parameters and columns.
func (p *prepared) describeNative(clientOIDs []uint32) error {
	oids, _ := p.native.paramOIDs() // they agree (matchNative)
	maxParam := len(clientOIDs)     // types declared past the last $n used count (N1)
	for n := range oids {
		maxParam = max(maxParam, n)
	}
	p.paramOIDs = make([]uint32, maxParam)
	for n, oid := range oids {
		p.paramOIDs[n-1] = oid
	}
	for i := range p.paramOIDs {
		if i < len(clientOIDs) && clientOIDs[i] != 0 {
			p.paramOIDs[i] = clientOIDs[i]
		}
		if p.paramOIDs[i] == 0 {
			p.paramOIDs[i] = oidText
		}
	}
	p.returnsRows = true
	p.native.enc = p.native.enc[:0]
	var boxed []NativeColumn // the columns of boxed rows (runNative)
	for _, a := range p.native.aggs {
		boxed = append(boxed, NativeColumn{Name: a.name, Type: a.typ})
	}
	if p.native.group != nil {
		boxed = p.native.group.cols
	}
	if boxed != nil {
		// encoded as DuckDB's answer is
		for _, c := range boxed {
			info, err := duckdb.NewTypeInfo(c.Type)
			if err != nil {
				return err
			}
			p.cols = append(p.cols, column{name: c.Name, typ: colTypeOf(info)})
		}
		return nil
	}
	for _, c := range p.native.columns() {
		info, err := duckdb.NewTypeInfo(p.native.fn.Columns[c.col].Type)
		if err != nil {
			return err
		}
		p.cols = append(p.cols, column{name: c.name, typ: colTypeOf(info)})
	}
	for _, c := range p.native.columns() {
		p.native.enc = append(p.native.enc, nativeEnc{col: c.col, duck: p.native.fn.Columns[c.col].Type})
	}
	return nil
}

// compareParams is the portal's $n converted for a comparison with a
// column of type t (nativeSelect.apply); nil for NULL.
func (pt *portal) compareParams(n int, t duckdb.Type) (any, error) {
	if n > len(pt.params) {
		return nil, pgErrorf(codes.ProtocolViolation, "parameter $%d was not bound", n)
	}
	if v := pt.params[n-1].Value; v != nil {
		return compareValue(v, t)
	}
	return nil, nil
}

// runNative executes a native call, honouring maxRows like a DuckDB portal.
func (s *session) runNative(ctx context.Context, pt *portal, maxRows int64) (err error) {
	p := pt.stmt
	if pt.native == nil && pt.nativeRows == nil {
		args := make([]any, len(p.native.args))
		for i, a := range p.native.args {
			if a.param == 0 {
				args[i] = a.value
				continue
			}
			if a.param > len(pt.params) {
				return pgErrorf(codes.ProtocolViolation, "parameter $%d was not bound", a.param)
			}
			v := pt.params[a.param-1].Value
			if v == nil && p.native.fn.TakesNull {
				args[i] = nil
				continue
			}
			if v == nil && p.native.fn.NullMeansNoRows {
				args = nil
				break
			}
			if v == nil {
				return nullParamError(a.param)
			}
			cv, err := convertArg(v, p.native.fn.Args[i])
			if err != nil {
				return err
			}
			args[i] = cv
		}
		// the statement's context (a cancel, statement_timeout, the role's
		// slot) covers the rows' filtering, sorting and grouping and this
		// Execute's sending, not only the function's call (nativestop.go)
		qctx, done, err := s.statementContext(ctx)
		if err != nil {
			return err
		}
		defer done()
		defer func() {
			if errors.Is(err, ErrNativeTooLarge) && qctx.Err() != nil {
				// a cancel or the timeout came while the rows were counted:
				// the statement ends here, not in its twin (nativetwin.go)
				err = qctx.Err()
			}
		}()
		ctx = qctx
		stop := newStopCheck(qctx)
		switch {
		case args == nil && len(p.native.args) > 0:
			pt.native = [][]any{} // a NULL argument of a NullMeansNoRows function: no row
		case p.native.fn.RowsUsing != nil || p.native.fn.Rows != nil:
			var rows NativeRows
			var err error
			if p.native.fn.RowsUsing != nil {
				rows, err = p.native.fn.RowsUsing(qctx, args, p.native.used)
			} else {
				rows, err = p.native.fn.Rows(qctx, args)
			}
			if err != nil {
				return err
			}
			if rows == nil {
				rows = noNativeRows{}
			}
			pt.nativeRows = rows
		default:
			rows, err := p.native.fn.Run(qctx, args)
			if err != nil {
				return err
			}
			if rows == nil {
				rows = [][]any{}
			}
			pt.native = rows
		}
		if sel := p.native.sel; sel != nil {
			rows := pt.nativeRows
			if rows == nil {
				rows = boxedRows(pt.native)
			}
			picked, err := sel.apply(stop, rows, pt.compareParams)
			if err != nil {
				return err
			}
			pt.native, pt.nativeRows = nil, picked
		}
		if err := nativeRowsErr(pt.nativeRows); err != nil {
			return err
		}
		if p.native.aggs != nil {
			rows := pt.nativeRows
			if rows == nil {
				rows = boxedRows(pt.native)
			}
			row, err := aggregateRow(stop, p.native.aggs, p.native.fn.Columns, rows)
			if err != nil {
				return err
			}
			if err := nativeRowsErr(rows); err != nil {
				return err // a cell the aggregates read could not be decoded
			}
			pt.native, pt.nativeRows = [][]any{row}, nil
		}
		if g := p.native.group; g != nil {
			rows := pt.nativeRows
			if rows == nil {
				rows = boxedRows(pt.native)
			}
			grouped, err := g.groupRows(stop, p.native.fn.Columns, rows)
			if err != nil {
				return err
			}
			if err := nativeRowsErr(rows); err != nil {
				return err // a cell the groups read could not be decoded
			}
			for _, sel := range []*nativeSelect{g.having, g.out} {
				if sel == nil {
					continue
				}
				picked, err := sel.apply(stop, boxedRows(grouped), pt.compareParams)
				if err != nil {
					return err
				}
				kept := make([][]any, picked.Len())
				for i := range kept {
					kept[i] = grouped[picked.(pickedRows).idx[i]]
				}
				grouped = kept
			}
			pt.native, pt.nativeRows = grouped, nil
		}
	}
	pt.resumed = 0
	loc := s.settings.location()
	sending := newStopCheck(ctx)
	if rows := pt.nativeRows; rows != nil {
		reader := newRowReader(rows, p.native.enc)
		// as PostgreSQL (and the DuckDB path) does, an Execute that has
		// sent maxRows rows suspends the portal without looking for more;
		// the next one then completes it with "SELECT 0"
		for n := rows.Len(); ; {
			if maxRows > 0 && pt.resumed >= maxRows {
				s.send(&pgproto3.PortalSuspended{})
				return nil
			}
			if pt.nativeNext >= n {
				break
			}
			if sending.stop() {
				return sending.err
			}
			out, err := appendNativeCells(s.out, p.cols, p.native.enc, pt.formats, reader.row(pt.nativeNext), loc)
			s.out = out
			if err != nil {
				return err
			}
			pt.nativeNext++
			pt.resumed++
			if err := s.spill(); err != nil {
				return err
			}
		}
		if err := nativeRowsErr(rows); err != nil {
			return err
		}
		// the rows of this Execute, as PostgreSQL counts them
		s.complete(pt, "SELECT "+itoa(pt.resumed))
		return nil
	}
	proj := p.native.proj
	projected := make([]any, len(proj)) // reused: each row is encoded before the next
	for {
		if maxRows > 0 && pt.resumed >= maxRows {
			s.send(&pgproto3.PortalSuspended{})
			return nil
		}
		if pt.nativeNext >= len(pt.native) {
			break
		}
		if sending.stop() {
			return sending.err
		}
		row := pt.native[pt.nativeNext]
		pt.nativeNext++
		if proj != nil {
			for j, c := range proj {
				projected[j] = row[c.col]
			}
			row = projected
		}
		out, err := appendDataRow(s.out, p.cols, pt.formats, row, loc)
		s.out = out
		if err != nil {
			return err
		}
		pt.resumed++
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.complete(pt, "SELECT "+itoa(pt.resumed))
	return nil
}

// noNativeRows is an empty result.
type noNativeRows struct{}

func (noNativeRows) Len() int                  { return 0 }
func (noNativeRows) Cell(int, int) NativeValue { return NativeValue{} }

// matchConstant answers SELECT n [[AS] name], n an integer literal of
// INTEGER range — what connection pools and BI tools send to check a
// connection (SELECT 1), which cost DuckDB's ~100 µs per statement. The
// column is named and typed as DuckDB names and types it ("1", INTEGER;
// TestNativeSelectAgreesWithDuckDB compares the two).
func matchConstant(toks []pgsql.Token, keywords map[string]bool) *nativeCall {
	if len(toks) != 2 && len(toks) != 3 && len(toks) != 4 || !toks[0].Is("SELECT") || toks[1].Kind != pgsql.Number {
		return nil
	}
	n, err := strconv.ParseInt(toks[1].Text, 10, 32)
	if err != nil {
		return nil
	}
	name := strconv.FormatInt(n, 10) // DuckDB names it by the value: SELECT 01 is "1"
	if len(toks) > 2 {
		alias, used, ok := matchAlias(toks[2:], keywords)
		if !ok || used != len(toks)-2 {
			return nil
		}
		name = alias
	}
	row := [][]any{{int32(n)}}
	fn := NativeFunction{Columns: []NativeColumn{{Name: name, Type: duckdb.TYPE_INTEGER}},
		Run: func(context.Context, []any) ([][]any, error) { return row, nil }}
	return &nativeCall{name: "select_constant", fn: fn}
}

// matchAlias reads the alias at the start of toks, "AS name" or a bare
// name, and returns it as DuckDB names the column: an unquoted name as
// written (DuckDB keeps its case, where PostgreSQL folds it), a quoted one
// unquoted. n is the tokens it took (0: no alias). ok is false where
// DuckDB reads something else or refuses it: a bare keyword ("count(*)
// year" is a syntax error, "… FROM f($1) group" too), any bare name when
// keywords are not known, an empty or U& quoted name.
func matchAlias(toks []pgsql.Token, keywords map[string]bool) (name string, n int, ok bool) {
	if len(toks) == 0 {
		return "", 0, true
	}
	t, bare := toks[0], true
	if t.Is("AS") {
		if len(toks) < 2 {
			return "", 0, false
		}
		t, bare, n = toks[1], false, 1
	}
	switch t.Kind {
	case pgsql.Ident:
		if bare && (keywords == nil || keywords[strings.ToLower(t.Text)]) {
			return "", 0, false
		}
		return t.Text, n + 1, true
	case pgsql.QIdent:
		if len(t.Text) < 3 || t.Text[0] != '"' || t.Text[len(t.Text)-1] != '"' {
			return "", 0, false
		}
		return t.IdentName(), n + 1, true
	}
	if !bare {
		return "", 0, false // AS followed by no name
	}
	return "", 0, true // no alias: a comma, FROM, an operator
}
