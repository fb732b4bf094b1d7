package sqlserver_test

import (
	"context"
	"sync/atomic"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/sqlserver"
)

// TestJoinSidesShareTheStatementsPin: the two sides of a native join ask
// for "the current version" separately; OncePerStatement gives both the
// first one's answer, and the next statement a fresh one. Here the version
// moves on at every ask, as if a publish landed between the two calls: a
// join of the two sides on it finds a row only if they share it.
func TestJoinSidesShareTheStatementsPin(t *testing.T) {
	var version atomic.Int64
	type pinKey struct{}
	side := sqlserver.NativeFunction{
		Args:    []duckdb.Type{duckdb.TYPE_VARCHAR},
		Columns: []sqlserver.NativeColumn{{Name: "v", Type: duckdb.TYPE_BIGINT, Unique: true}}, // one row
		Run: func(ctx context.Context, _ []any) ([][]any, error) {
			v := sqlserver.OncePerStatement(ctx, pinKey{}, func() int64 { return version.Add(1) })
			return [][]any{{v}}, nil
		},
	}
	s := startServer(t, func(c *sqlserver.Config) {
		c.NativeFunctions = map[string]sqlserver.NativeFunction{"left_side": side, "right_side": side}
	})
	conn := s.connect(t)
	var first int64
	for i := range 3 {
		var l, r int64
		err := conn.QueryRow(ctxT(t), "SELECT a.v, b.v FROM left_side('x') a JOIN right_side('y') b ON a.v = b.v").Scan(&l, &r)
		if err != nil {
			t.Fatalf("statement %d: %v (the sides read different versions)", i, err)
		}
		if i == 0 {
			first = l
		} else if l == first {
			t.Errorf("statement %d read the version statement 0 pinned (%d): a pin outlived its statement", i, l)
		}
	}
}
