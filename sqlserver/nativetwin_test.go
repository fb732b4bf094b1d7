package sqlserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dhsi/dhsi/sqlserver"
)

// rangeRows are DuckDB's range(n): 0 .. n-1.
type rangeRows struct{ n int }

func (r rangeRows) Len() int                              { return r.n }
func (r rangeRows) Cell(row, _ int) sqlserver.NativeValue { return sqlserver.NativeInt(int64(row)) }

// nativeRange answers DuckDB's table function range(n) natively, so that
// a statement the native path hands over (N1) has a DuckDB twin that
// answers the same.
var nativeRange = sqlserver.NativeFunction{
	Args:    []duckdb.Type{duckdb.TYPE_BIGINT},
	Columns: []sqlserver.NativeColumn{{Name: "range", Type: duckdb.TYPE_BIGINT, Unique: true}},
	Rows: func(_ context.Context, args []any) (sqlserver.NativeRows, error) {
		return rangeRows{n: int(args[0].(int64))}, nil
	},
}

// TestNativeRowLimitHandsStatementsToDuckDB: a native statement that would
// hold more rows than Config.NativeRowLimit (a sort's keys, a GROUP BY's
// groups, a join's side, the rows a WHERE keeps) is answered by DuckDB,
// alike, message for message, a suspended portal included; one within the
// limit stays native.
func TestNativeRowLimitHandsStatementsToDuckDB(t *testing.T) {
	nodb := sqlserver.NativeFunction{ // no DuckDB function has this name
		Args:    []duckdb.Type{duckdb.TYPE_VARCHAR},
		Columns: []sqlserver.NativeColumn{{Name: "range", Type: duckdb.TYPE_BIGINT}},
		Rows: func(context.Context, []any) (sqlserver.NativeRows, error) {
			return rangeRows{n: 10}, nil
		},
	}
	fns := map[string]sqlserver.NativeFunction{"range": nativeRange, "nodb": nodb}
	// typed as serve types DHSI's functions' arguments, so that DuckDB
	// describes range($1) before it is bound, as the native path does
	args := map[string][]uint32{"range": {sqlserver.OIDInt8}}
	limited := startServer(t, func(c *sqlserver.Config) {
		c.NativeFunctions, c.TableFunctionArgs, c.NativeRowLimit = fns, args, 4
	})
	unlimited := startServer(t, func(c *sqlserver.Config) {
		c.NativeFunctions, c.TableFunctionArgs, c.NativeRowLimit = fns, args, -1
	})
	shapes := []string{
		"SELECT range FROM range(10) ORDER BY range DESC",                           // sort keys: 10 > 4
		"SELECT range FROM range(3) ORDER BY range DESC",                            // within the limit
		"SELECT range FROM range(100) WHERE range > 1 ORDER BY range DESC LIMIT 2",  // positions: 98 > 32
		"SELECT range FROM range(100) ORDER BY range DESC LIMIT 6",                  // the heap: 6 > 4
		"SELECT range, count(*) FROM range(10) GROUP BY range ORDER BY range",       // groups: 10 > 4
		"SELECT a.range FROM range(10) a JOIN range(10) b USING (range) ORDER BY 1", // a join's side
		"SELECT count(*) FROM range(1000) WHERE range % 2 = 0",                      // DuckDB's anyway
	}
	answer := func(s *testServer, q string) string {
		rows, err := s.connect(t).Query(ctxT(t), q)
		if err != nil {
			return "error: " + err.Error()
		}
		var out []string
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				return "error: " + err.Error()
			}
			out = append(out, fmt.Sprint(v...))
		}
		if rows.Err() != nil {
			return "error: " + rows.Err().Error()
		}
		return strings.Join(out, " ")
	}
	for _, q := range shapes {
		got, want := answer(limited, q), answer(unlimited, q)
		if got != want || strings.HasPrefix(want, "error") {
			t.Errorf("%s: over the limit %q, without one %q", q, got, want)
		}
	}
	// the statement DuckDB could not answer shows which path answered
	if got := answer(limited, "SELECT range FROM nodb('x') ORDER BY range DESC"); !strings.Contains(got, "nodb") || !strings.HasPrefix(got, "error") {
		t.Errorf("over the limit, nodb answered %q: want DuckDB's error for a function it does not have", got)
	}
	if got := answer(limited, "SELECT range FROM nodb('x') ORDER BY range DESC LIMIT 2"); got != "9 8" {
		t.Errorf("within the limit, nodb answered %q, want 9 8", got)
	}
	// Executes of at most n rows, over the extended protocol; $1 declared
	// text (a driver's setString), which the native path converts to the
	// argument's BIGINT and DuckDB's binder would not
	for _, limits := range [][]uint32{{3, 3, 0}, {0}, {10, 1}} {
		var answers [2][]string
		for k, s := range []*testServer{limited, unlimited} {
			msgs := []pgproto3.FrontendMessage{&pgproto3.Parse{Query: "SELECT range FROM range($1) ORDER BY range DESC", ParameterOIDs: []uint32{25}}, &pgproto3.Bind{Parameters: [][]byte{[]byte("10")}}}
			for _, n := range limits {
				msgs = append(msgs, &pgproto3.Execute{MaxRows: n})
			}
			answers[k] = s.raw(t).roundTrip(append(msgs, &pgproto3.Sync{})...)
		}
		if !slices.Equal(answers[0], answers[1]) {
			t.Errorf("Executes of at most %v rows: over the limit %q, without one %q", limits, answers[0], answers[1])
		}
	}
}

// TestNativeRowLimitKeepsTheTimeout: a statement_timeout that passes while
// the native path counts a statement's rows ends it with 57014; its DuckDB
// twin does not start afresh with a whole timeout of its own.
func TestNativeRowLimitKeepsTheTimeout(t *testing.T) {
	slowRange := nativeRange
	slowRange.Rows = func(_ context.Context, args []any) (sqlserver.NativeRows, error) {
		time.Sleep(300 * time.Millisecond) // a function that looks at no context
		return rangeRows{n: int(args[0].(int64))}, nil
	}
	s := startServer(t, func(c *sqlserver.Config) {
		c.NativeFunctions = map[string]sqlserver.NativeFunction{"range": slowRange}
		c.TableFunctionArgs, c.NativeRowLimit = map[string][]uint32{"range": {sqlserver.OIDInt8}}, 4
	})
	conn := s.connect(t)
	mustExec(t, conn, "SET statement_timeout = '100ms'")
	_, err := conn.Exec(ctxT(t), "SELECT range FROM range(5000) ORDER BY range DESC")
	wantCode(t, err, "57014")
}
