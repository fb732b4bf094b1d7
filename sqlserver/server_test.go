package sqlserver_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/sqlserver"
)

// testServer is a running server on a loopback port.
type testServer struct {
	srv    *sqlserver.Server
	engine *sqlserver.Engine
	host   string
	port   int
}

// startServer opens an engine on a fresh database file and serves it on
// 127.0.0.1:0 until the test ends. mod adjusts the configuration.
func startServer(t testing.TB, mod ...func(*sqlserver.Config)) *testServer {
	t.Helper()
	cfg := sqlserver.Config{Listen: "127.0.0.1:0"}
	for _, m := range mod {
		m(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, engine, err := sqlserver.Open(ctx, sqlserver.Options{
		Server: cfg,
		Engine: sqlserver.EngineConfig{Path: filepath.Join(t.TempDir(), "dhsi.duckdb"), Threads: 2},
	})
	if err != nil {
		cancel()
		t.Fatalf("open server: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return after Close")
		}
		engine.Close()
	})
	addr := srv.Addr().(*net.TCPAddr)
	return &testServer{srv: srv, engine: engine, host: addr.IP.String(), port: addr.Port}
}

// connString is a pgx connection string for user (trust servers accept any).
func (s *testServer) connString(user string, extra ...string) string {
	cs := fmt.Sprintf("postgres://%s@%s:%d/dhsi?sslmode=disable", user, s.host, s.port)
	for _, e := range extra {
		cs += "&" + e
	}
	return cs
}

// connect opens a pgx connection closed at the end of the test.
func (s *testServer) connect(t testing.TB, opts ...func(*pgx.ConnConfig)) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(s.connString("tester"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// connectAs opens a connection as user with password, closed at the end
// of the test.
func (s *testServer) connectAs(t *testing.T, user, password string) *pgx.Conn {
	t.Helper()
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: net.JoinHostPort(s.host, strconv.Itoa(s.port)), Path: "dhsi", RawQuery: "sslmode=disable"}
	c, err := connectString(t, u.String())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readerAndAdmin configures two users, rita a reader and ada an admin,
// both with password "pw".
func readerAndAdmin(c *sqlserver.Config) {
	c.Users = []sqlserver.User{{Name: "rita", Password: "pw", Role: access.Reader}, {Name: "ada", Password: "pw", Role: access.Admin}}
}

// asReaderAndAdmin runs fn in a subtest for each of readerAndAdmin's users,
// on a fresh server and a session of that user.
func asReaderAndAdmin(t *testing.T, fn func(t *testing.T, ctx context.Context, c *pgx.Conn)) {
	for _, user := range []string{"rita", "ada"} {
		t.Run(user, func(t *testing.T) {
			s := startServer(t, readerAndAdmin)
			fn(t, ctxT(t), s.connectAs(t, user, "pw"))
		})
	}
}

// withMode sets pgx's default query execution mode.
func withMode(m pgx.QueryExecMode) func(*pgx.ConnConfig) {
	return func(c *pgx.ConnConfig) { c.DefaultQueryExecMode = m }
}

// ctxT is a context bounded so a hung server fails the test instead of the
// whole run; long enough for a machine loaded by other packages' tests
// (TestTempExpansionIsBounded took 26 s of an earlier 30 s beside six busy
// loops).
func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// mustExec runs statements and fails the test on error.
func mustExec(t testing.TB, conn *pgx.Conn, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		if _, err := conn.Exec(ctxT(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestServerAnswersSelectOne(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	var n int
	if err := conn.QueryRow(ctxT(t), "select 1").Scan(&n); err != nil || n != 1 {
		t.Fatalf("select 1 = %d, %v", n, err)
	}
}
