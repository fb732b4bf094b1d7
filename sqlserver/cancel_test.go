package sqlserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
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
