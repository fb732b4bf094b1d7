package sqlserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// NativeFunction is a table function the server answers itself, without
// DuckDB, when a statement is exactly "SELECT * FROM name(arg, ...)" with
// literal or $n arguments: the hot path of a prepared lookup, which DuckDB
// would otherwise prepare, bind and plan on every execution. Any other use
// of the function (a projection, a join, a WHERE) goes through DuckDB's
// table function of the same name — which must call the same Run, so the
// two paths answer alike.
type NativeFunction struct {
	Args    []duckdb.Type // argument types (VARCHAR, INTEGER, BIGINT)
	Columns []NativeColumn
	// Run computes the rows; values are the Go types DuckDB would return
	// (string, int32, int64, uint64, time.Time, nil).
	Run func(ctx context.Context, args []any) ([][]any, error)
}

// NativeColumn is one result column of a NativeFunction.
type NativeColumn struct {
	Name string
	Type duckdb.Type
}

// nativeCall is a statement matched to a NativeFunction.
type nativeCall struct {
	fn   NativeFunction
	args []nativeArg
}

type nativeArg struct {
	param int // $n, or 0 for a literal
	value any // the literal, converted to the argument type
}

// matchNative recognises SELECT * FROM name(args) [LIMIT-free, exactly].
func matchNative(toks []pgsql.Token, fns map[string]NativeFunction) (*nativeCall, error) {
	if len(fns) == 0 || len(toks) < 6 || !toks[0].Is("SELECT") || toks[1].Text != "*" || !toks[2].Is("FROM") ||
		toks[3].Kind != pgsql.Ident || toks[4].Text != "(" || toks[len(toks)-1].Text != ")" {
		return nil, nil
	}
	fn, ok := fns[strings.ToLower(toks[3].Text)]
	if !ok {
		return nil, nil
	}
	inner := toks[5 : len(toks)-1]
	var args []nativeArg
	for i := 0; i < len(inner); i++ {
		t := inner[i]
		if i%2 == 1 {
			if t.Text != "," {
				return nil, nil // an expression: DuckDB's business
			}
			continue
		}
		pos := len(args)
		if pos >= len(fn.Args) {
			return nil, nil
		}
		switch {
		case t.Kind == pgsql.Param:
			n, _ := strconv.Atoi(t.Text[1:])
			args = append(args, nativeArg{param: n})
		case t.Is("NULL"):
			return nil, pgErrorf(codes.NullValueNotAllowed, "%s() does not take NULL arguments", strings.ToLower(toks[3].Text))
		case t.Kind == pgsql.String && strings.HasPrefix(t.Text, "'"):
			v, err := convertArg(strings.ReplaceAll(t.Text[1:len(t.Text)-1], "''", "'"), fn.Args[pos])
			if err != nil {
				return nil, err
			}
			args = append(args, nativeArg{value: v})
		case t.Kind == pgsql.Number:
			v, err := convertArg(t.Text, fn.Args[pos])
			if err != nil {
				return nil, err
			}
			args = append(args, nativeArg{value: v})
		default:
			return nil, nil
		}
	}
	if len(args) != len(fn.Args) {
		return nil, nil // let DuckDB report the wrong arity
	}
	return &nativeCall{fn: fn, args: args}, nil
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

// describeNative fills the statement's parameters and columns.
func (p *prepared) describeNative(clientOIDs []uint32) error {
	maxParam := 0
	for _, a := range p.native.args {
		maxParam = max(maxParam, a.param)
	}
	p.paramOIDs = make([]uint32, maxParam)
	for i, a := range p.native.args {
		if a.param > 0 {
			p.paramOIDs[a.param-1] = paramOIDOf(p.native.fn.Args[i])
		}
	}
	for i := range p.paramOIDs {
		if i < len(clientOIDs) && clientOIDs[i] != 0 {
			p.paramOIDs[i] = clientOIDs[i]
		}
		if p.paramOIDs[i] == 0 {
			p.paramOIDs[i] = oidText
		}
	}
	for _, c := range p.native.fn.Columns {
		info, err := duckdb.NewTypeInfo(c.Type)
		if err != nil {
			return err
		}
		p.cols = append(p.cols, column{name: c.Name, typ: colTypeOf(info)})
	}
	p.returnsRows = true
	return nil
}

// runNative executes a native call, honouring maxRows like a DuckDB portal.
func (s *session) runNative(ctx context.Context, pt *portal, maxRows int64) error {
	p := pt.stmt
	if pt.native == nil {
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
			if v == nil {
				return pgErrorf(codes.NullValueNotAllowed, "parameter $%d is an argument of a DHSI table function, which does not take NULL", a.param)
			}
			cv, err := convertArg(v, p.native.fn.Args[i])
			if err != nil {
				return err
			}
			args[i] = cv
		}
		qctx, done := s.statementContext(ctx)
		rows, err := p.native.fn.Run(qctx, args)
		done()
		if err != nil {
			return err
		}
		pt.native = rows
	}
	pt.resumed = 0
	loc := s.settings.location()
	vals := make([][]byte, len(p.cols))
	offs := make([]int, len(p.cols)+1)
	var buf []byte
	for pt.nativeNext < len(pt.native) {
		if maxRows > 0 && pt.resumed >= maxRows {
			s.send(&pgproto3.PortalSuspended{})
			return nil
		}
		row := pt.native[pt.nativeNext]
		pt.nativeNext++
		var err error
		if buf, err = encodeRow(p.cols, pt.formats, row, loc, buf, offs, vals); err != nil {
			return err
		}
		s.send(&pgproto3.DataRow{Values: vals})
		pt.sent++
		pt.resumed++
	}
	s.complete(pt, "SELECT "+itoa(pt.sent))
	return nil
}
