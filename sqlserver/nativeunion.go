package sqlserver

import (
	"context"
	"sort"
	"strings"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// A union of lookups: pgsql.PointLookups writes "view WHERE column IN
// (v1, v2, …)" (or an OR of equalities) as
//
//	( SELECT * FROM f(v1, …) UNION ALL SELECT * FROM f(v2, …) WHERE (v2 <> v1 OR v1 IS NULL) … ) [AS] alias
//
// and the native path answers that FROM item as one NativeFunction
// (unionFunctions) when every branch calls the same lookup function
// (NullMeansNoRows) with arguments matchCallArgs takes, and each branch's
// WHERE, if any, is only guards "(vk <> vj OR vj IS NULL)": vk the
// branch's first argument and vj an earlier branch's, as written. U1: a
// branch's rows are its function's, unless one of its guards finds its
// first argument equal to the earlier one's (both not NULL), or one of its
// arguments is NULL (the lookup's WHERE keeps no row for NULL); the
// branches come in the order written. Any other union (another function, another WHERE, UNION
// without ALL, a NULL literal) is DuckDB's, which answers the same SQL.

// unionBranch is one SELECT * FROM f(args) of a union item.
type unionBranch struct {
	args   []nativeArg
	first  pgsql.Token // the first argument as written
	guards []int       // earlier branches its first argument must differ from
}

// matchUnionItem matches a union of lookups at toks[i] (a "("); next is
// the index after its closing parenthesis.
func matchUnionItem(toks []pgsql.Token, i int, fns map[string]NativeFunction) (item fromItem, next int, ok bool) {
	// PointLookups' union (its tokens at no position of the client's
	// text): a union the client wrote has DuckDB's answers, 22004 for a
	// NULL argument among them
	if i >= len(toks) || toks[i].Text != "(" || toks[i].Pos != -1 {
		return item, i, false
	}
	end := pgsql.MatchingParen(toks, i)
	if end < 0 {
		return item, i, false
	}
	var branches []unionBranch
	j := i + 1
	for {
		if j+5 > end || !toks[j].Is("SELECT") || toks[j].Pos != -1 || toks[j+1].Text != "*" || !toks[j+2].Is("FROM") ||
			toks[j+3].Kind != pgsql.Ident || toks[j+4].Text != "(" {
			return item, i, false
		}
		name := strings.ToLower(toks[j+3].Text)
		if item.name == "" {
			fn, found := fns[name]
			// a lookup's function alone: its NULL means no row, on DuckDB's
			// path too (guardNullArgs' coalesce), where any other's is
			// 22004 and, past a twin, once aborted the process
			if !found || !fn.NullMeansNoRows {
				return item, i, false
			}
			item.name, item.fn = name, fn
		} else if name != item.name {
			return item, i, false
		}
		close := pgsql.MatchingParen(toks, j+4)
		if close < 0 || close >= end {
			return item, i, false
		}
		args, nullArg, ok := matchCallArgs(toks[j+5:close], name, item.fn)
		if !ok || nullArg != nil || len(args) == 0 {
			return item, i, false
		}
		b := unionBranch{args: args, first: toks[j+5]}
		j = close + 1
		if j < end && toks[j].Is("WHERE") {
			for j++; ; j++ {
				// (vk <> vj OR vj IS NULL), vj an earlier branch's
				if j+8 >= end || toks[j].Text != "(" || !sameToken(toks[j+1], b.first) || toks[j+2].Text != "<>" ||
					!toks[j+4].Is("OR") || !sameToken(toks[j+5], toks[j+3]) || !toks[j+6].Is("IS") || !toks[j+7].Is("NULL") || toks[j+8].Text != ")" {
					return item, i, false
				}
				earlier := -1
				for k := range branches {
					if sameToken(toks[j+3], branches[k].first) {
						earlier = k
						break
					}
				}
				if earlier < 0 {
					return item, i, false
				}
				b.guards = append(b.guards, earlier)
				if j += 9; j < end && toks[j].Is("AND") {
					continue
				}
				break
			}
		}
		branches = append(branches, b)
		if j == end {
			break
		}
		if j+1 >= end || !toks[j].Is("UNION") || !toks[j+1].Is("ALL") {
			return item, i, false
		}
		j += 2
	}
	if len(branches) < 2 {
		return item, i, false
	}
	item.fn = unionFunctions(item.fn, branches)
	for _, b := range branches {
		item.args = append(item.args, b.args...)
	}
	// no qualifier but its alias: DuckDB resolves none for a subquery
	item.qual = ""
	item.name += " UNION ALL"
	return item, end + 1, true
}

// sameToken: a and b are one token as written.
func sameToken(a, b pgsql.Token) bool { return a.Kind == b.Kind && a.Text == b.Text }

// unionFunctions is the union of fn's calls, one per branch (U1), as one
// NativeFunction whose arguments are every branch's in turn. Its columns
// are fn's, none of them Unique (two branches may call fn alike), and its
// NULL arguments reach it (TakesNull): one NULL value among several keeps
// the others' rows.
func unionFunctions(fn NativeFunction, branches []unionBranch) NativeFunction {
	per := len(fn.Args)
	u := NativeFunction{Columns: make([]NativeColumn, len(fn.Columns)), TakesNull: true, Stale: fn.Stale}
	copy(u.Columns, fn.Columns)
	for i := range u.Columns {
		u.Columns[i].Unique = false
	}
	for range branches {
		u.Args = append(u.Args, fn.Args...)
		if fn.DescribeArgs != nil {
			u.DescribeArgs = append(u.DescribeArgs, fn.describedArgs()...)
		}
	}
	// live lists the branches whose rows the union holds for args (U1)
	live := func(args []any) [][]any {
		var out [][]any
	branch:
		for k, b := range branches {
			mine := args[k*per : (k+1)*per]
			for _, a := range mine {
				if a == nil {
					continue branch
				}
			}
			for _, g := range b.guards {
				// (vk <> vj OR vj IS NULL) is false only for vk = vj
				if other := args[g*per]; other != nil && other == mine[0] {
					continue branch
				}
			}
			out = append(out, mine)
		}
		return out
	}
	u.Run = func(ctx context.Context, args []any) ([][]any, error) {
		var rows [][]any
		for _, a := range live(args) {
			r, err := fn.Run(ctx, a)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r...)
		}
		return rows, nil
	}
	parts := func(args []any, call func([]any) (NativeRows, error)) (NativeRows, error) {
		var c concatRows
		for _, a := range live(args) {
			r, err := call(a)
			if err != nil {
				return nil, err
			}
			if r != nil && r.Len() > 0 {
				c.starts = append(c.starts, c.n)
				c.parts = append(c.parts, r)
				c.n += r.Len()
			}
		}
		return &c, nil
	}
	if fn.RowsUsing != nil {
		u.RowsUsing = func(ctx context.Context, args []any, used []bool) (NativeRows, error) {
			return parts(args, func(a []any) (NativeRows, error) { return fn.RowsUsing(ctx, a, used) })
		}
	} else if fn.Rows != nil {
		u.Rows = func(ctx context.Context, args []any) (NativeRows, error) {
			return parts(args, func(a []any) (NativeRows, error) { return fn.Rows(ctx, a) })
		}
	}
	return u
}

// concatRows are the rows of parts, one after another. The parts' own
// properties (sorted, unique) do not carry over.
type concatRows struct {
	parts  []NativeRows
	starts []int // the first row of each part
	n      int
	last   int // the part the last row asked for was in: rows are mostly read in order
}

func (c *concatRows) Len() int { return c.n }

func (c *concatRows) part(row int) int {
	if p := c.last; row >= c.starts[p] && (p+1 == len(c.starts) || row < c.starts[p+1]) {
		return p
	}
	c.last = sort.Search(len(c.starts), func(p int) bool { return c.starts[p] > row }) - 1
	return c.last
}

func (c *concatRows) Cell(row, col int) NativeValue {
	p := c.part(row)
	return c.parts[p].Cell(row-c.starts[p], col)
}

func (c *concatRows) Cells(row int, cols []int, dst []NativeValue) {
	p := c.part(row)
	if bulk, ok := c.parts[p].(RowCells); ok {
		bulk.Cells(row-c.starts[p], cols, dst)
		return
	}
	for i, col := range cols {
		dst[i] = c.parts[p].Cell(row-c.starts[p], col)
	}
}

// Err is the first error a part met (FallibleRows).
func (c *concatRows) Err() error {
	for _, p := range c.parts {
		if f, ok := p.(FallibleRows); ok {
			if err := f.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}
