package sqlserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/dhsi/dhsi/sqlserver"
)

// longQuery keeps DuckDB busy for far longer than any test waits.
const longQuery = "SELECT count(*) FROM range(20000000000) t(i) WHERE i % 7 = 3"

// promptly is how long an interrupted statement may take to end: DuckDB
// checks for interrupts between vectors, so this is generous.
const promptly = 5 * time.Second

// withCancelRequest makes pgx answer a cancelled context with a
// CancelRequest, keeping the connection, instead of breaking it.
func withCancelRequest(c *pgx.ConnConfig) {
	c.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 10 * time.Second}
	}
}

func TestCancelInterruptsALongQuery(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t, withCancelRequest)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := conn.Exec(ctx, longQuery)
	took := time.Since(start)
	wantCode(t, err, "57014")
	if took > promptly {
		t.Errorf("cancelled query ended after %v", took)
	}
	var one int
	if err := conn.QueryRow(ctxT(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the connection after the cancel: %d, %v", one, err)
	}
}

func TestCancelRequestFromAnotherConnection(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := conn.Exec(context.Background(), longQuery)
		done <- err
	}()
	// a cancel that comes before the server read the query cancels
	// nothing, as in PostgreSQL: wait until it runs
	waitCount(t, s.connect(t), 1, 30*time.Second, "the long query", "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND state = 'active'", int32(conn.PgConn().PID()))
	start = time.Now()
	if err := conn.PgConn().CancelRequest(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		wantCode(t, err, "57014")
	case <-time.After(promptly + 20*time.Second):
		t.Fatal("the cancelled query is still running")
	}
	if took := time.Since(start); took > promptly {
		t.Errorf("cancelled query ended after %v", took)
	}
	var one int
	if err := conn.QueryRow(ctxT(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the connection after the cancel: %d, %v", one, err)
	}
}

func TestStatementTimeout(t *testing.T) {
	s := startServer(t)
	for _, m := range resultModes {
		t.Run(m.name, func(t *testing.T) {
			conn := s.connect(t, withMode(m.mode))
			ctx := ctxT(t)
			mustExec(t, conn, "SET statement_timeout = '200ms'")
			start := time.Now()
			_, err := conn.Exec(ctx, longQuery)
			pe := wantCode(t, err, "57014")
			if pe.Message != "canceling statement due to statement timeout" {
				t.Errorf("message = %q", pe.Message)
			}
			if took := time.Since(start); took > promptly {
				t.Errorf("timed-out query ended after %v", took)
			}
			var v string
			if err := conn.QueryRow(ctx, "SHOW statement_timeout").Scan(&v); err != nil || v != "200ms" {
				t.Errorf("SHOW statement_timeout = %q, %v", v, err)
			}
			mustExec(t, conn, "RESET statement_timeout")
			var n int64
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM range(1000)").Scan(&n); err != nil || n != 1000 {
				t.Errorf("after RESET: %d, %v", n, err)
			}
		})
	}
}

// slowRows are many rows whose cells cost a few hundred nanoseconds each,
// as a web-scale domain's URLs decoded from the lake do.
type slowRows struct{ n int }

func (r slowRows) Len() int { return r.n }
func (r slowRows) Cell(row, col int) sqlserver.NativeValue {
	h := uint64(row)
	for range 200 {
		h = h*6364136223846793005 + 1442695040888963407
	}
	if col == 0 {
		return sqlserver.NativeInt(int64(h >> 1))
	}
	return sqlserver.NativeInt(int64(row % 97))
}

// TestNativeStatementsHonourTimeoutAndCancel: the rows a native statement
// filters, sorts, groups and joins are looked at without DuckDB, and once
// ran to their end past statement_timeout (the ceiling a role's readers
// may not lift) and past a cancel. Each shape below takes seconds over
// these rows; it must end in 57014. (DuckDB has no function named slow or
// few, so an answer from it would be another error.)
func TestNativeStatementsHonourTimeoutAndCancel(t *testing.T) {
	slow := sqlserver.NativeFunction{
		Args:    []duckdb.Type{duckdb.TYPE_VARCHAR},
		Columns: []sqlserver.NativeColumn{{Name: "h", Type: duckdb.TYPE_BIGINT}, {Name: "g", Type: duckdb.TYPE_BIGINT}},
		Rows: func(context.Context, []any) (sqlserver.NativeRows, error) {
			return slowRows{n: 20_000_000}, nil
		},
		Run: func(context.Context, []any) ([][]any, error) { return nil, errors.New("not used by the native path") },
	}
	few := sqlserver.NativeFunction{
		Args:    []duckdb.Type{duckdb.TYPE_VARCHAR},
		Columns: []sqlserver.NativeColumn{{Name: "g", Type: duckdb.TYPE_BIGINT, Unique: true}},
		Run: func(context.Context, []any) ([][]any, error) {
			return [][]any{{int64(1)}, {int64(2)}}, nil
		},
	}
	s := startServer(t, func(c *sqlserver.Config) {
		c.NativeFunctions = map[string]sqlserver.NativeFunction{"slow": slow, "few": few}
		c.NativeRowLimit = -1 // these rows stay native, however many (N1)
	})
	shapes := []string{
		"SELECT h FROM slow('x') WHERE h < 0",                              // a filter that keeps nothing
		"SELECT h FROM slow('x') WHERE h < 0 OR g = 1000",                  // the same under OR
		"SELECT h FROM slow('x') ORDER BY h DESC LIMIT 1",                  // a sort
		"SELECT h FROM slow('x') ORDER BY g, h LIMIT 1",                    // a sort of two keys
		"SELECT count(*), max(h) FROM slow('x')",                           // an aggregate
		"SELECT g, count(*) FROM slow('x') GROUP BY g",                     // groups
		"SELECT s.h FROM slow('x') s JOIN few('y') f ON s.g = f.g LIMIT 1", // a join
	}
	conn := s.connect(t, withCancelRequest)
	mustExec(t, conn, "SET statement_timeout = '100ms'")
	for _, q := range shapes {
		_, err := conn.Exec(ctxT(t), q)
		if pe := wantCode(t, err, "57014"); pe != nil && pe.Message != "canceling statement due to statement timeout" {
			t.Errorf("%s: message %q", q, pe.Message)
		}
	}
	mustExec(t, conn, "RESET statement_timeout")
	for _, q := range shapes[:3] {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := conn.Exec(ctx, q)
		cancel()
		wantCode(t, err, "57014")
	}
	var n int64
	if err := conn.QueryRow(ctxT(t), "SELECT count(*) FROM few('y')").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the connection after the cancels: %d, %v", n, err)
	}
}

// TestMessageOverTheLimitEndsOnlyItsSession: a statement's text costs the
// server many times its size in tokens, and a reader's 16 MB one peaked
// it at 3.6 GB. A message over Config.MaxMessageBytes ends its session
// with 54000 before the server reads it; the server and other sessions go
// on, and a statement under the limit is answered.
func TestMessageOverTheLimitEndsOnlyItsSession(t *testing.T) {
	s := startServer(t, func(c *sqlserver.Config) { c.MaxMessageBytes = 64 << 10 })
	bystander := s.connect(t)
	conn := s.connect(t)
	var n int
	under := "SELECT 1 " + strings.Repeat(" ", 60<<10)
	if err := conn.QueryRow(ctxT(t), under).Scan(&n); err != nil || n != 1 {
		t.Fatalf("a statement under the limit: %d, %v", n, err)
	}
	_, err := conn.Exec(ctxT(t), "SELECT 1 "+strings.Repeat(" ", 70<<10))
	if pe := wantCode(t, err, "54000"); pe != nil && pe.Severity != "FATAL" {
		t.Errorf("severity %s, want FATAL", pe.Severity)
	}
	if err := bystander.QueryRow(ctxT(t), "SELECT 2").Scan(&n); err != nil || n != 2 {
		t.Fatalf("another session after it: %d, %v", n, err)
	}
}
