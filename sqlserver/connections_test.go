package sqlserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/sqlserver"
)

// gssEncRequest is the 8 bytes a client sends to ask for GSS encryption.
var gssEncRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30}

// C1: the start-up has one deadline, however a client spends it; a
// second GSSENCRequest ends the connection at once.
func TestStartUpHasOneDeadline(t *testing.T) {
	s := startServer(t, func(c *sqlserver.Config) { c.StartupTimeout = 1500 * time.Millisecond })
	addr := net.JoinHostPort(s.host, strconv.Itoa(s.port))
	// a request every 500 ms, as one every 25 s kept a connection for ever
	// against a deadline renewed by each
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := conn.Write(gssEncRequest); err != nil {
		t.Fatal(err)
	}
	answer := make([]byte, 1)
	if _, err := io.ReadFull(conn, answer); err != nil || answer[0] != 'N' {
		t.Fatalf("GSSENCRequest: %q %v", answer, err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(answer); err == nil {
		t.Fatalf("read %q after the start-up deadline", answer)
	}
	if took := time.Since(start); took < time.Second || took > 5*time.Second {
		t.Errorf("the connection ended after %v, want about the 1.5 s start-up deadline", took)
	}
	conn2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	start = time.Now()
	for range 2 {
		if _, err := conn2.Write(gssEncRequest); err != nil {
			break
		}
	}
	_ = conn2.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(conn2)
	if string(got) != "N" || time.Since(start) > time.Second {
		t.Errorf("two GSSENCRequests: read %q, closed after %v; want one N and the connection closed at once", got, time.Since(start))
	}
	// and a client that starts up in time is served
	if _, err := connectString(t, s.connString("tester")); err != nil {
		t.Fatal(err)
	}
}

// C2: one user's sessions cannot take the slots kept for admins, so an
// admin can always connect to end them.
func TestReservedAdminConnections(t *testing.T) {
	s := startServer(t, func(c *sqlserver.Config) {
		c.MaxConnections, c.ReservedAdminConnections = 3, 1
		c.Users = []sqlserver.User{{Name: "rita", Password: "pw", Role: access.Reader}, {Name: "alice", Password: "pw", Role: access.Admin}}
	})
	as := func(user string) string { return strings.Replace(s.connString(user), "@", ":pw@", 1) }
	for range 2 {
		if _, err := connectString(t, as("rita")); err != nil {
			t.Fatal(err)
		}
	}
	_, err := connectString(t, as("rita"))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" || !strings.Contains(pe.Message, "reserved for admins") {
		t.Fatalf("a reader's third session of three, one kept for admins: %v", err)
	}
	admin, err := connectString(t, as("alice"))
	if err != nil {
		t.Fatalf("the admin's session in the kept slot: %v", err)
	}
	if _, err := connectString(t, as("alice")); !errors.As(err, &pe) || pe.Code != "53300" || !strings.Contains(pe.Message, "too many clients") {
		t.Fatalf("a fourth session of three: %v", err)
	}
	var n int
	if err := admin.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity").Scan(&n); err != nil || n != 3 {
		t.Fatalf("pg_stat_activity as the admin: %d %v", n, err)
	}
}

// C3: connections in start-up are bounded too: past twice MaxConnections a
// new one is told so and closed unread, and the server serves again once
// they are gone.
func TestConnectionsPastTheBoundAreRefused(t *testing.T) {
	s := startServer(t, func(c *sqlserver.Config) { c.MaxConnections = 2 })
	addr := net.JoinHostPort(s.host, strconv.Itoa(s.port))
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// the server counts a connection once it has accepted it
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		got, _ := io.ReadAll(c)
		c.Close()
		if strings.Contains(string(got), "too many clients") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a fifth connection past 2 × MaxConnections 2 read %q", got)
		}
	}
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	connectEventually(t, s.connString("tester"), "once the idle connections closed")
}

// connectEventually connects to cs within 10 s, retrying: a session the
// server ends, or a connection it closes, leaves its slot a moment later.
func connectEventually(t *testing.T, cs, when string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := connectString(t, cs)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", when, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// PB1: a non-admin session keeps a bounded number of prepared statements,
// of a bounded text in all, named ones and SQL PREPAREs alike; past it a
// statement is refused with 54000 and the session goes on.
func TestPreparedStatementsAreBounded(t *testing.T) {
	s := startServer(t, func(c *sqlserver.Config) {
		c.MaxMessageBytes = 64 << 10 // a budget of 128 KiB of text
		c.Users = []sqlserver.User{{Name: "rita", Password: "pw", Role: access.Reader}, {Name: "alice", Password: "pw", Role: access.Admin}}
	})
	ctx := context.Background()
	as := func(user string) string { return strings.Replace(s.connString(user), "@", ":pw@", 1) }
	reader, err := connectString(t, as("rita"))
	if err != nil {
		t.Fatal(err)
	}
	text := func(i int) string { return fmt.Sprintf("SELECT %d AS n, '%s' AS pad", i, strings.Repeat("x", 20<<10)) }
	var pe *pgconn.PgError
	kept := 0
	for ; kept < 10; kept++ {
		if _, err = reader.Prepare(ctx, fmt.Sprintf("s%d", kept), text(kept)); err != nil {
			break
		}
	}
	if !errors.As(err, &pe) || pe.Code != "54000" || kept != 6 {
		t.Fatalf("named statements of 20 KiB under a 128 KiB budget: %d kept, then %v", kept, err)
	}
	if _, err := reader.Exec(ctx, "PREPARE p AS "+text(99)); !errors.As(err, &pe) || pe.Code != "54000" {
		t.Fatalf("a SQL PREPARE past the budget: %v", err)
	}
	var n int
	if err := reader.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the session after 54000: %v", err)
	}
	if err := reader.Deallocate(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, "PREPARE p AS "+text(99)); err != nil {
		t.Fatalf("a SQL PREPARE once a statement was closed: %v", err)
	}
	// an admin is not bounded
	admin, err := connectString(t, as("alice"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if _, err := admin.Prepare(ctx, fmt.Sprintf("a%d", i), text(i)); err != nil {
			t.Fatalf("an admin's statement %d: %v", i, err)
		}
	}
	// and the count: small statements, at most maxPreparedStatements
	reader2, err := connectString(t, as("rita"))
	if err != nil {
		t.Fatal(err)
	}
	for kept = 0; kept < 1100; kept++ {
		if _, err = reader2.Prepare(ctx, fmt.Sprintf("c%d", kept), "SELECT 1"); err != nil {
			break
		}
	}
	if !errors.As(err, &pe) || pe.Code != "54000" || kept != 1000 {
		t.Fatalf("small named statements: %d kept, then %v", kept, err)
	}
}

// pg_terminate_backend ends a session whose client reads no more of its
// result: its write is broken as its read is. Before, such a session held
// its statement's whole result (470 MB in a review) for as long as the
// client kept its socket open.
func TestTerminateEndsASessionBlockedWritingToItsClient(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	fe := s.rawAs(t, "slow").fe
	// ~200 MB of rows, of which the client reads none
	fe.Send(&pgproto3.Query{String: "SELECT repeat('x', 1000) AS pad FROM range(200000)"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	admin := s.connect(t)
	var pid int64
	deadline := time.Now().Add(20 * time.Second)
	for pid == 0 {
		err := admin.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE usename = 'slow' AND state = 'active'").Scan(&pid)
		if err != nil && time.Now().After(deadline) {
			t.Fatalf("the slow session in pg_stat_activity: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // into its blocked write
	var ok bool
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1::integer)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v %v", ok, err)
	}
	for {
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::integer", pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d still in pg_stat_activity after pg_terminate_backend, its client reading nothing", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RoleLimits.MaxSessions: one user of a role holds at most that many
// sessions; another user of the role still connects.
func TestMaxSessionsPerUser(t *testing.T) {
	s := startServer(t, func(c *sqlserver.Config) {
		c.RoleLimits = map[access.Role]sqlserver.RoleLimits{access.Reader: {MaxSessions: 2}}
		c.Users = []sqlserver.User{{Name: "rita", Password: "pw", Role: access.Reader}, {Name: "rob", Password: "pw", Role: access.Reader}}
	})
	as := func(user string) string { return strings.Replace(s.connString(user), "@", ":pw@", 1) }
	var held []*pgx.Conn
	for range 2 {
		c, err := connectString(t, as("rita"))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	var pe *pgconn.PgError
	if _, err := connectString(t, as("rita")); !errors.As(err, &pe) || pe.Code != "53300" || !strings.Contains(pe.Message, `user "rita"`) {
		t.Fatalf("rita's third session, two allowed: %v", err)
	}
	if _, err := connectString(t, as("rob")); err != nil {
		t.Fatalf("another reader's session: %v", err)
	}
	held[0].Close(context.Background())
	connectEventually(t, as("rita"), "rita's session once one of hers closed")
}
