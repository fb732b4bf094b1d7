package sqlserver_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/sqlserver"
)

// activityServer has an admin and two readers.
func activityServer(t *testing.T) (*testServer, func(user string) *pgx.Conn) {
	s := startServer(t, func(c *sqlserver.Config) {
		c.Users = []sqlserver.User{{Name: "root", Password: "root-pw", Role: access.Admin},
			{Name: "ann", Password: "ann-pw"}, {Name: "bob", Password: "bob-pw"}}
	})
	return s, func(user string) *pgx.Conn {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, user+"-pw"), Host: net.JoinHostPort(s.host, strconv.Itoa(s.port)), Path: "dhsi", RawQuery: "sslmode=disable&application_name=app-" + user}
		c, err := connectString(t, u.String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

const longCount = "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3"

// startLong runs longCount on c in the background; the channel gets its error.
func startLong(c *pgx.Conn) <-chan error {
	done := make(chan error, 1)
	go func() {
		// a safety net: should the server fail to stop it, the test's own
		// deadline cancels it rather than letting it run for hours
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_, err := c.Exec(ctx, longCount)
		done <- err
	}()
	return done
}

func waitActive(t *testing.T, root *pgx.Conn, user string) int32 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var pid int32
		err := root.QueryRow(context.Background(), "SELECT pid FROM pg_stat_activity WHERE usename = $1 AND state = 'active' AND query LIKE 'SELECT count(*) FROM range%'", user).Scan(&pid)
		if err == nil {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no active query of %s in pg_stat_activity", user)
	return 0
}

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestPgStatActivity: sessions are listed with who, where and what, and
// another user's query text is hidden from non-admins, as in PostgreSQL.
func TestPgStatActivity(t *testing.T) {
	ctx := context.Background()
	_, connect := activityServer(t)
	root, ann, bob := connect("root"), connect("ann"), connect("bob")
	var pid int32
	if err := ann.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil || uint32(pid) != ann.PgConn().PID() {
		t.Fatalf("pg_backend_pid() = %d, %v; BackendKeyData said %d", pid, err, ann.PgConn().PID())
	}
	if _, err := bob.Exec(ctx, "SELECT 'bob was here'"); err != nil {
		t.Fatal(err)
	}
	type row struct{ user, app, addr, state, query string }
	list := func(c *pgx.Conn) map[int32]row {
		rows, err := c.Query(ctx, "SELECT pid, usename, application_name, client_addr, state, query FROM pg_stat_activity")
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]row{}
		for rows.Next() {
			var p int32
			var r row
			if err := rows.Scan(&p, &r.user, &r.app, &r.addr, &r.state, &r.query); err != nil {
				t.Fatal(err)
			}
			out[p] = r
		}
		return out
	}
	byRoot := list(root)
	b := byRoot[int32(bob.PgConn().PID())]
	if b.user != "bob" || b.app != "app-bob" || b.addr != "127.0.0.1" || b.state != "idle" || b.query != "SELECT 'bob was here'" {
		t.Errorf("root sees bob as %+v", b)
	}
	if a := byRoot[pid]; a.user != "ann" || a.query != "SELECT pg_backend_pid()" {
		t.Errorf("root sees ann as %+v", a)
	}
	byAnn := list(ann)
	if b := byAnn[int32(bob.PgConn().PID())]; b.user != "bob" || b.query != "<insufficient privilege>" {
		t.Errorf("ann sees bob as %+v, want his query hidden", b)
	}
	if a := byAnn[pid]; a.state != "active" || !strings.Contains(a.query, "pg_stat_activity") {
		t.Errorf("ann sees herself as %+v", a)
	}
}

// TestCancelAndTerminateBackend: admins stop any session, users their own.
func TestCancelAndTerminateBackend(t *testing.T) {
	ctx := context.Background()
	_, connect := activityServer(t)
	root, ann, bob := connect("root"), connect("ann"), connect("bob")

	done := startLong(bob)
	victim := waitActive(t, root, "bob")
	if _, err := ann.Exec(ctx, "SELECT pg_cancel_backend($1)", victim); sqlstate(err) != "42501" {
		t.Errorf("ann cancelling bob's query: %v, want 42501", err)
	}
	var ok bool
	if err := root.QueryRow(ctx, "SELECT pg_cancel_backend($1)", victim).Scan(&ok); err != nil || !ok {
		t.Fatalf("root cancelling bob's query: %v %v", ok, err)
	}
	if err := <-done; sqlstate(err) != "57014" {
		t.Errorf("bob's cancelled query: %v, want 57014", err)
	}
	if _, err := bob.Exec(ctx, "SELECT 1"); err != nil {
		t.Errorf("after a cancel bob's session is unusable: %v", err)
	}
	// a user may cancel their own sessions
	bob2 := connect("bob")
	done = startLong(bob)
	victim = waitActive(t, root, "bob")
	if err := bob2.QueryRow(ctx, "SELECT pg_cancel_backend($1)", victim).Scan(&ok); err != nil || !ok {
		t.Errorf("bob cancelling his own query: %v %v", ok, err)
	}
	<-done
	if err := root.QueryRow(ctx, "SELECT pg_cancel_backend(12345)").Scan(&ok); err != nil || ok {
		t.Errorf("cancelling a pid that is no session: %v %v, want false", ok, err)
	}
	// terminate: the victim is told 57P01 and its connection ends
	if err := root.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(ann.PgConn().PID())).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate: %v %v", ok, err)
	}
	_, err := ann.Exec(ctx, "SELECT 1")
	if err == nil {
		t.Fatal("a terminated session still answers")
	}
	if s := sqlstate(err); s != "57P01" && !ann.IsClosed() {
		t.Errorf("after pg_terminate_backend: %v (closed %v), want 57P01", err, ann.IsClosed())
	}
}

// TestClientGoneStopsItsQuery: a client that disappears mid-query (kill -9
// of psql) does not leave its statement running (issue 18).
func TestClientGoneStopsItsQuery(t *testing.T) {
	_, connect := activityServer(t)
	root, bob := connect("root"), connect("bob")
	startLong(bob)
	victim := waitActive(t, root, "bob")
	// no Terminate, no FIN from a clean close: the socket just goes
	if err := bob.PgConn().Conn().Close(); err != nil {
		t.Fatal(err)
	}
	waitCount(t, root, 0, 5*time.Second, "the session of a client that went away", "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", victim)
}

// TestShutdownLetsRunningStatementsFinish: SIGTERM's path. A running
// statement finishes and is answered; an idle session's next message gets
// FATAL 57P01; no new connection is accepted; Shutdown returns once all
// sessions ended.
func TestShutdownLetsRunningStatementsFinish(t *testing.T) {
	ctx := context.Background()
	s, connect := activityServer(t)
	root, ann, bob := connect("root"), connect("ann"), connect("bob")
	// about a second here alone; CI runs other packages' tests beside it,
	// which made a statement six times longer outlast Shutdown's deadline
	const secondOrSo = "SELECT count(*) FROM range(100000000) t(i) WHERE i % 7 = 3"
	done := make(chan error, 1)
	go func() {
		var n int64
		done <- bob.QueryRow(ctx, secondOrSo).Scan(&n)
	}()
	waitCount(t, root, 1, 10*time.Second, "bob's active query", "SELECT count(*) FROM pg_stat_activity WHERE usename = 'bob' AND state = 'active'")
	shut := make(chan error, 1)
	go func() {
		// generous: the deadline is what a loaded machine must meet, not
		// what the test measures
		sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		shut <- s.srv.Shutdown(sctx)
	}()
	if err := <-done; err != nil {
		t.Errorf("the statement running at shutdown: %v, want its answer", err)
	}
	_, err := ann.Exec(ctx, "SELECT 1")
	if s := sqlstate(err); s != "57P01" && !ann.IsClosed() {
		t.Errorf("an idle session's next query during shutdown: %v, want 57P01", err)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown did not return")
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword("root", "root-pw"), Host: net.JoinHostPort(s.host, strconv.Itoa(s.port)), Path: "dhsi", RawQuery: "sslmode=disable&connect_timeout=2"}
	if _, err := connectString(t, u.String()); err == nil {
		t.Error("a new connection was accepted after Shutdown")
	}
}

// TestRoleLimits: a role's statement_timeout is a default and a ceiling,
// and its users run at most N statements at once; admins are not limited.
func TestRoleLimits(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, func(c *sqlserver.Config) {
		c.Users = []sqlserver.User{{Name: "root", Password: "root-pw", Role: access.Admin}, {Name: "ann", Password: "ann-pw"}}
		// 2 s: long enough for waitActive, below, to see a statement
		// before the timeout ends it on a loaded machine
		c.RoleLimits = map[access.Role]sqlserver.RoleLimits{access.Reader: {StatementTimeout: 2 * time.Second, MaxConcurrentQueries: 1}}
	})
	as := func(user string) *pgx.Conn {
		u := url.URL{Scheme: "postgres", User: url.UserPassword(user, user+"-pw"), Host: net.JoinHostPort(s.host, strconv.Itoa(s.port)), Path: "dhsi", RawQuery: "sslmode=disable"}
		c, err := connectString(t, u.String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	root, ann, ann2 := as("root"), as("ann"), as("ann")
	var shown string
	if err := ann.QueryRow(ctx, "SHOW statement_timeout").Scan(&shown); err != nil || shown != "2s" {
		t.Errorf("a reader's statement_timeout = %q, %v; want the role's 2s", shown, err)
	}
	if _, err := ann.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := ann.Exec(ctx, longCount)
	if sqlstate(err) != "57014" || time.Since(start) > 10*time.Second {
		t.Errorf("a reader's long query after SET statement_timeout = 0: %v after %v, want 57014 at the role's 2s", err, time.Since(start))
	}
	// one statement at a time per reader: the second waits for the first.
	// Asserted as an order, not as a wait: the second cannot finish before
	// the first gives up the only slot (at the role's 2s), however long
	// the machine stalls between sending the two. The slack covers the
	// first's error travelling to its client after the slot is free.
	first := startLong(ann)
	firstEnded := make(chan time.Time, 1)
	go func() {
		<-first
		firstEnded <- time.Now()
	}()
	waitActive(t, root, "ann")
	var one int
	err = ann2.QueryRow(ctx, "SELECT 1").Scan(&one)
	secondEnded := time.Now()
	if ended := <-firstEnded; err == nil {
		if early := ended.Sub(secondEnded); early > 250*time.Millisecond {
			t.Errorf("ann's second statement finished %v before her first gave up the only slot", early)
		}
	} else if sqlstate(err) != "57014" {
		t.Errorf("ann's second statement: %v", err)
	}
	// admins are not limited
	var n int64
	if err := root.QueryRow(ctx, "SELECT count(*) FROM range(100000000) t(i) WHERE i % 7 = 3").Scan(&n); err != nil {
		t.Errorf("an admin's query: %v", err)
	}
}

// waitCount polls query on c until it counts want, or fails after within.
func waitCount(t *testing.T, c *pgx.Conn, want int64, within time.Duration, what, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var n int64
		if err := c.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: counted %d after %v, want %d", what, n, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionListWhileASessionSets: pg_stat_activity (built on a DuckDB
// thread of another session) and Server.Sessions (the /metrics gauge, on
// an HTTP goroutine) read a session's application_name while that
// session SETs and RESETs. They once read its settings map unlocked, and
// Go ended the whole server with "concurrent map read and map write" (a
// review in stop 36: within 0.5 s through Sessions, 13 s through SQL).
func TestSessionListWhileASessionSets(t *testing.T) {
	s := startServer(t)
	setter, reader := s.connect(t), s.connect(t)
	ctx := ctxT(t)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				_ = s.srv.Sessions()
			}
		}
	}()
	go func() {
		defer close(done)
		for i := 0; i < 300; i++ {
			q := fmt.Sprintf("SET app.k%d = 'v'; SET application_name = 'a%d'; RESET app.k%d; BEGIN; COMMIT", i, i, i)
			if _, err := setter.Exec(ctx, q); err != nil {
				t.Errorf("setter: %v", err)
				return
			}
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			var app string
			if err := reader.QueryRow(ctx, "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'a%'").Scan(&app); err != nil || app != "a299" {
				t.Errorf("the setter's application_name in pg_stat_activity: %q, %v; want a299", app, err)
			}
			t.Logf("%d reads of pg_stat_activity beside 300 rounds of SET", reads)
			return
		default:
		}
		var n int64
		if err := reader.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity").Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
}
