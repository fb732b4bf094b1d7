package sqlserver

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// countingListener counts the writes of the connections it accepts: what
// the flush rule (session.flush) is about.
type countingListener struct {
	net.Listener
	writes, bytes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, writes: &l.writes, bytes: &l.bytes}, nil
}

type countingConn struct {
	net.Conn
	writes, bytes *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	c.bytes.Add(int64(len(p)))
	return c.Conn.Write(p)
}

func startCountingServer(t *testing.T) (*countingListener, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, engine, err := Open(ctx, Options{
		Server: Config{Listen: "127.0.0.1:0"},
		Engine: EngineConfig{Path: filepath.Join(t.TempDir(), "dhsi.duckdb"), Threads: 2},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		cancel()
		t.Fatal(err)
	}
	cl := &countingListener{Listener: srv.ln}
	srv.ln = cl
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-served
		engine.Close()
	})
	return cl, fmt.Sprintf("postgres://flush@%s/dhsi?sslmode=disable", cl.Addr())
}

// A round trip costs one write, as in PostgreSQL: a prepared lookup
// (Bind, Describe, Execute, Sync), a simple query, a pgx batch; a result
// larger than flushAt is written as it is produced.
func TestAnswersAreWrittenOncePerRoundTrip(t *testing.T) {
	cl, url := startCountingServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE t AS SELECT i, 'row ' || i AS s FROM range(100000) r(i)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Prepare(ctx, "q", "SELECT i, s FROM t WHERE i < $1"); err != nil {
		t.Fatal(err)
	}
	writes := func(what string, want int64, fn func() error) {
		t.Helper()
		before := cl.writes.Load()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := cl.writes.Load() - before; got != want {
			t.Errorf("%s: %d writes, want %d", what, got, want)
		}
	}
	for _, n := range []int{0, 1, 50} {
		writes(fmt.Sprintf("prepared query of %d rows", n), 1, func() error {
			rows, _ := conn.Query(ctx, "q", n)
			got := 0
			for rows.Next() {
				got++
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if got != n {
				return fmt.Errorf("%d rows, want %d", got, n)
			}
			return nil
		})
	}
	writes("simple query", 1, func() error {
		_, err := conn.Exec(ctx, "SELECT 1; SELECT 2", pgx.QueryExecModeSimpleProtocol)
		return err
	})
	writes("pgx batch of 20", 1, func() error {
		b := &pgx.Batch{}
		for i := range 20 {
			b.Queue("q", i)
		}
		return conn.SendBatch(ctx, b).Close()
	})
	// an error is written at once, then ReadyForQuery
	writes("failing query", 2, func() error {
		_, err := conn.Exec(ctx, "SELECT 1/0::INTEGER + nope")
		if err == nil {
			return fmt.Errorf("no error")
		}
		return nil
	})
	// ~3 MB of DataRows: streamed in writes of flushAt and a little more
	before, bytes := cl.writes.Load(), cl.bytes.Load()
	rows, _ := conn.Query(ctx, "q", 100000)
	got := 0
	for rows.Next() {
		got++
	}
	if err := rows.Err(); err != nil || got != 100000 {
		t.Fatalf("large result: %d rows, %v", got, err)
	}
	w, b := cl.writes.Load()-before, cl.bytes.Load()-bytes
	if w < 10 || w > b/flushAt+1 {
		t.Errorf("a 100,000-row result of %d bytes took %d writes; want one per %d KB", b, w, flushAt>>10)
	}
}

// A client that waits for answers without sending Sync or Flush (which
// PostgreSQL would leave waiting) still gets them: the session writes what
// it holds before it blocks reading. A Flush message writes at once.
func TestAnswersReachAClientThatWaitsWithoutSync(t *testing.T) {
	cl, _ := startCountingServer(t)
	c, err := net.Dial("tcp", cl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fe := pgproto3.NewFrontend(c, c)
	recv := func(until string) []string {
		t.Helper()
		var got []string
		for {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			msg, err := fe.Receive()
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			name := strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")
			switch name {
			case "ParameterStatus", "BackendKeyData", "AuthenticationOk":
				continue
			}
			got = append(got, name)
			if name == until {
				return got
			}
		}
	}
	send := func(msgs ...pgproto3.FrontendMessage) {
		t.Helper()
		for _, m := range msgs {
			fe.Send(m)
		}
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "raw"}})
	recv("ReadyForQuery")
	send(&pgproto3.Parse{Query: "SELECT 42"}, &pgproto3.Bind{}, &pgproto3.Execute{})
	if got := strings.Join(recv("CommandComplete"), " "); got != "ParseComplete BindComplete DataRow CommandComplete" {
		t.Errorf("without Sync: %s", got)
	}
	send(&pgproto3.Parse{Name: "s", Query: "SELECT 1"}, &pgproto3.Describe{ObjectType: 'S', Name: "s"}, &pgproto3.Flush{})
	if got := strings.Join(recv("RowDescription"), " "); got != "ParseComplete ParameterDescription RowDescription" {
		t.Errorf("Flush: %s", got)
	}
	send(&pgproto3.Sync{})
	recv("ReadyForQuery")
}
