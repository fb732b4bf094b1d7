package sqlserver

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/dhsi/dhsi/sqlserver/pgsql"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/internal/redact"
)

// Config configures the PostgreSQL-wire server.
type Config struct {
	// Listen is the TCP address, default 127.0.0.1:5433.
	Listen string
	// Users are the configured users and their roles. Empty means trust:
	// any user and database name is accepted without a password, and every
	// session is an admin, which is allowed only on a loopback address (like
	// PostgreSQL's local trust).
	Users []User
	// UnixSocketDir, when set, also listens on the unix-domain socket
	// <dir>/.s.PGSQL.<port>, PostgreSQL's name for it, so "psql -p 5433"
	// connects as it does to PostgreSQL. A connection over it is local.
	UnixSocketDir string
	// TLSCert and TLSKey enable TLS (sslmode=require and stronger).
	TLSCert, TLSKey string
	// MaxConnections bounds concurrent sessions (default 100), of which
	// the last ReservedAdminConnections are an admin's alone (C2).
	MaxConnections int
	// ReservedAdminConnections are the sessions only an admin may open
	// once the others are taken, PostgreSQL's
	// superuser_reserved_connections: one user's idle sessions must not
	// lock out the admin who would end them (default 3; negative: none).
	ReservedAdminConnections int
	// StartupTimeout is how long a connection may take from its first
	// byte to the end of authentication, as a whole (C1; default 30 s).
	StartupTimeout time.Duration
	// MaxMessageBytes bounds one message a client sends once
	// authenticated (a statement's text, a Bind's values); past it the
	// session ends with 54000. A statement costs the Go heap 80-225 times
	// its text in tokens (a 16 MB one peaked the server at 3.6 GB), which
	// at the hard limit ends the process. 0: DefaultMaxMessageBytes.
	MaxMessageBytes int
	// NativeRowLimit: the rows a statement answered without DuckDB may
	// hold (nativestop.go, N1); one that would hold more runs through
	// DuckDB. 0: DefaultNativeRowLimit; negative: no limit.
	NativeRowLimit int
	// FairAbove: when more sessions than this are busy, they take turns on
	// the server's threads (fairness.go, F1 and F2): an even share and a
	// short p99 for each connection, for some throughput. 0 means
	// DefaultFairAbovePerCore per GOMAXPROCS; negative, never.
	FairAbove int
	// NullUnsafeFunctions are table functions that must never be called with
	// a NULL argument: duckdb-go reads a table function's arguments at bind
	// time without a NULL check, and DuckDB aborts the whole process on it.
	// The server refuses such calls (SQLSTATE 22004) before DuckDB sees them.
	NullUnsafeFunctions []string
	// TableFunctionArgs gives the PostgreSQL type OIDs of table functions'
	// arguments, by function name. DuckDB cannot type a $n that is a table
	// function's argument; with this the server describes it (so pgx sends
	// an int4 for domain_urls' dataset_id instead of failing to encode it).
	TableFunctionArgs map[string][]uint32
	// Observer, when set, is told of every statement and every error sent
	// (metrics; see package metrics).
	Observer Observer
	// RoleLimits bound each non-admin role (limits.go).
	RoleLimits map[access.Role]RoleLimits
	// Procedures are DHSI's side-effecting table functions (CALL
	// compact_all()) and the role each needs; the functions check it
	// themselves too.
	Procedures map[string]access.Role
	// ReaderFunctions are DHSI's table functions every role may call
	// (domain_datasets, domain_urls, ...); DuckDB's other table functions
	// are for admins only (authorize.go, P2).
	ReaderFunctions []string
	// PointLookups name, per view, the function that answers "FROM view
	// WHERE column = value" without a scan (pgsql.PointLookups); the
	// function must be a reader function.
	PointLookups map[string]pgsql.Lookup
	// NativeFunctions are answered without DuckDB when a statement is
	// exactly SELECT * FROM name(args); see NativeFunction.
	NativeFunctions map[string]NativeFunction
	// NativeViews name, per view, the native function of no argument
	// whose rows are the view's: "FROM view" in a native statement is its
	// call (nativefrom.go; datasets is dhsi_datasets()).
	NativeViews map[string]string
	// ReadEpoch, when set, changes whenever what a session may read
	// changes under its prepared statements: grants, a new index version.
	// DuckDB folds a constant function call into a plan when it binds it
	// (dhsi_lake_files() lists the files a session may read), and binds a
	// prepared statement again only when a catalog object it reads
	// changed, so a statement prepared in an earlier epoch is prepared
	// again before it runs (planEpoch, E1 in session.go).
	ReadEpoch func() uint64
	// HostDirs are directories of the host a non-admin is never told of
	// (H2, hostpaths.go) besides those DuckDB's settings name: a local
	// store's root, say.
	HostDirs []string
}

// DefaultMaxMessageBytes is Config.MaxMessageBytes's default: far above
// what people, BI tools and drivers send (an IN list of 100,000 ids is
// ~0.7 MB), far below what a statement's tokens may cost.
const DefaultMaxMessageBytes = 16 << 20

// DefaultNativeRowLimit is Config.NativeRowLimit's default: a native sort
// of 2^20 URL rows allocates 151 MB of keys. The largest domain of the
// 10M-URL realistic benchmark corpus has 66,595 URLs and its dataset 1
// 38,664 domains, so what people look up there stays native.
const DefaultNativeRowLimit = 1 << 20

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:5433"
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = 100
	}
	if c.ReservedAdminConnections == 0 {
		c.ReservedAdminConnections = min(3, c.MaxConnections-1)
	}
	if c.ReservedAdminConnections < 0 {
		c.ReservedAdminConnections = 0
	}
	if c.StartupTimeout == 0 {
		c.StartupTimeout = 30 * time.Second
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.NativeRowLimit == 0 {
		c.NativeRowLimit = DefaultNativeRowLimit
	}
	if c.FairAbove == 0 {
		c.FairAbove = DefaultFairAbovePerCore * runtime.GOMAXPROCS(0)
	}
}

// Validate enforces the security defaults: a server reachable from other
// machines must ask for passwords.
func (c *Config) Validate() error {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", c.Listen, err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if !isLoopback(host) && len(c.Users) == 0 {
		return fmt.Errorf("refusing to listen on %q without passwords: configure users (--user or --users-file), or listen on 127.0.0.1", c.Listen)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server accepts PostgreSQL-protocol connections and runs each session on
// its own DuckDB connection.
type Server struct {
	cfg    Config
	engine *Engine
	log    *slog.Logger
	users  atomic.Pointer[Users] // swapped whole by SetUsers (SIGHUP)
	tls    *tls.Config
	// readerFunctions: cfg.ReaderFunctions as a set
	readerFunctions map[string]bool
	// lookupFunctions: the functions of cfg.PointLookups, lower case
	lookupFunctions []string
	slots           userSlots  // RoleLimits.MaxConcurrentQueries
	busy            *busyGauge // Config.FairAbove's count (fairness.go)
	// natives replaces cfg.NativeFunctions once SetNativeFunction ran
	// (copy on write: a statement being prepared reads one whole map)
	natives   atomic.Pointer[map[string]NativeFunction]
	nativesMu sync.Mutex // serialises SetNativeFunction
	// origins: relations' columns, for RowDescription's origins (origin.go)
	origins originCache
	// hostDirs: the directories H2 hides from non-admins (hostpaths.go)
	hostDirs lazy[[]string]

	mu       sync.Mutex
	draining bool // Shutdown began: no new statement starts; protected by mu
	ln       net.Listener
	unixLn   net.Listener        // Config.UnixSocketDir's socket, if any
	sessions map[uint32]*session // by backend pid; protected by mu
	conns    map[net.Conn]struct{}
	// signalLogged rate-limits the log of pg_cancel_backend and
	// pg_terminate_backend (activity.go)
	signalLogged onceASecond
	closed       bool
	wg           sync.WaitGroup
}

// nativeFunctions is the map of native functions in force.
func (s *Server) nativeFunctions() map[string]NativeFunction {
	if m := s.natives.Load(); m != nil {
		return *m
	}
	return s.cfg.NativeFunctions
}

// SetNativeFunction puts fn under name for the statements prepared from now
// on (a statement prepared before keeps the function it matched). A server
// configured without native functions (--no-native) ignores it.
func (s *Server) SetNativeFunction(name string, fn NativeFunction) {
	if s.cfg.NativeFunctions == nil {
		return
	}
	s.nativesMu.Lock()
	defer s.nativesMu.Unlock()
	m := maps.Clone(s.nativeFunctions())
	m[name] = fn
	s.natives.Store(&m)
}

// New builds a server on an open engine.
func New(cfg Config, engine *Engine, log *slog.Logger) (*Server, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, engine: engine, log: log, sessions: map[uint32]*session{}, conns: map[net.Conn]struct{}{}, readerFunctions: map[string]bool{}, busy: newBusyGauge(cfg.FairAbove)}
	for _, l := range cfg.PointLookups {
		s.lookupFunctions = append(s.lookupFunctions, strings.ToLower(l.Function))
		if l.Narrow != nil {
			s.lookupFunctions = append(s.lookupFunctions, strings.ToLower(l.Narrow.Function))
		}
	}
	engine.server.Store(s)
	for _, n := range cfg.ReaderFunctions {
		s.readerFunctions[strings.ToLower(n)] = true
	}
	if len(cfg.Users) > 0 {
		u, err := NewUsers(cfg.Users)
		if err != nil {
			return nil, err
		}
		s.users.Store(u)
	}
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("load TLS key pair: %w", err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return s, nil
}

// Listen binds the configured address; Addr then reports it (useful with
// port 0).
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return err
	}
	var unixLn net.Listener
	if s.cfg.UnixSocketDir != "" {
		path := filepath.Join(s.cfg.UnixSocketDir, fmt.Sprintf(".s.PGSQL.%d", ln.Addr().(*net.TCPAddr).Port))
		if unixLn, err = listenUnix(path); err != nil {
			ln.Close()
			return err
		}
	}
	s.mu.Lock()
	s.ln, s.unixLn = ln, unixLn
	s.mu.Unlock()
	return nil
}

// listenUnix listens on a PostgreSQL-style socket path, replacing a stale
// socket file but never one a live server answers on.
func listenUnix(path string) (net.Listener, error) {
	if _, err := os.Stat(path); err == nil {
		if c, derr := net.DialTimeout("unix", path, time.Second); derr == nil {
			c.Close()
			return nil, fmt.Errorf("another server already listens on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("unix socket: %w", err)
	}
	// as PostgreSQL's default unix_socket_permissions: authentication, not
	// the file mode, decides who gets in
	if err := os.Chmod(path, 0o777); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// SocketPath is the unix-domain socket's path, or "".
func (s *Server) SocketPath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unixLn == nil {
		return ""
	}
	return s.unixLn.Addr().String()
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Serve accepts connections until Close.
func (s *Server) Serve(ctx context.Context) error {
	if s.Addr() == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.log.Info("listening", "addr", s.Addr().String(), "socket", s.SocketPath(), "auth", s.authMode(), "tls", s.tls != nil)
	s.mu.Lock()
	unixLn := s.unixLn
	s.mu.Unlock()
	if unixLn != nil {
		go func() {
			if err := s.accept(ctx, unixLn); err != nil {
				s.log.Error("unix socket", "err", err)
			}
		}()
	}
	return s.accept(ctx, s.ln)
}

// Connections (C1-C3), before a client has proven who it is and after:
//
//	C1 A connection has StartupTimeout, once, from its first byte to the
//	   end of authentication, and may ask for TLS and for GSS encryption
//	   once each: a client that sent a GSSENCRequest every 25 s kept its
//	   connection, and its file descriptor, for ever.
//	C2 Sessions are at most MaxConnections, of which the last
//	   ReservedAdminConnections are an admin's alone.
//	C3 Connections, in start-up or in a session, are at most
//	   maxOpenConnections(): past it a new one is told "too many clients"
//	   and closed at once, unread; and running out of file descriptors
//	   (EMFILE, ENFILE) pauses accepting instead of ending the server.
//	   Before, ~20,000 idle TCP connections, no password needed, made
//	   accept fail and dhsi serve exit.

// maxOpenConnections is C3's bound: every session, and as many
// connections again in start-up (PostgreSQL allows about twice
// max_connections children).
func (s *Server) maxOpenConnections() int { return 2 * s.cfg.MaxConnections }

// acceptRetryable are the errors of Accept that a pause may mend (C3):
// out of file descriptors or memory for one, or a connection the peer
// dropped before it was accepted.
func acceptRetryable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED)
}

// accept serves the connections of one listener until Close.
func (s *Server) accept(ctx context.Context, ln net.Listener) error {
	var pause time.Duration
	var lastLog time.Time
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			if !acceptRetryable(err) {
				return err
			}
			// as net/http does: 5 ms, doubling, at most 1 s (C3)
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			if time.Since(lastLog) > 10*time.Second {
				s.log.Warn("accept failed; pausing", "err", err, "pause", pause.String(), "open_connections", s.openConnections())
				lastLog = time.Now()
			}
			time.Sleep(pause)
			continue
		}
		pause = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			conn.Close()
			return nil
		}
		if len(s.conns) >= s.maxOpenConnections() {
			s.mu.Unlock()
			s.refuse(conn)
			continue
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				conn.Close()
			}()
			defer func() {
				// a panic (duckdb-go panics on some bind values) ends this
				// session, not every session of the process
				if r := recover(); r != nil {
					s.log.Error("session panicked", "remote", conn.RemoteAddr().String(), "panic", redact.URLs(fmt.Sprint(r)), "stack", string(debug.Stack()))
				}
			}()
			if err := s.handle(ctx, conn); err != nil && !errors.Is(err, errAuthFailed) {
				s.log.Debug("connection ended", "remote", conn.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

// refusal says why a session of p may not open now, or "": C2 (the last
// ReservedAdminConnections sessions are an admin's) and the role's
// MaxSessions. s.mu is held.
func (s *Server) refusal(p access.Principal) string {
	n := len(s.sessions)
	switch {
	case n >= s.cfg.MaxConnections:
		return "sorry, too many clients already"
	case p.Role == access.Admin:
		return ""
	case n >= s.cfg.MaxConnections-s.cfg.ReservedAdminConnections:
		return "remaining connection slots are reserved for admins"
	}
	lim := s.cfg.RoleLimits[p.Role].MaxSessions
	if lim <= 0 {
		return ""
	}
	held := 0
	for _, other := range s.sessions {
		if other.user == p.User {
			held++
		}
	}
	if held >= lim {
		return fmt.Sprintf("too many connections for user %q: the %s role allows %d", p.User, p.Role, lim)
	}
	return ""
}

// openConnections counts the connections open, in start-up or in a
// session.
func (s *Server) openConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// refuse tells a connection past C3's bound that the server is full,
// without reading it, and closes it.
func (s *Server) refuse(conn net.Conn) {
	e := &Error{Severity: "FATAL", Code: codes.TooManyConnections, Message: "sorry, too many clients already"}
	if b, err := e.response().Encode(nil); err == nil {
		_ = conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = conn.Write(b)
	}
	conn.Close()
}

func (s *Server) authMode() string {
	if s.users.Load().Len() > 0 {
		return "scram-sha-256"
	}
	return "trust"
}

// Close stops accepting, interrupts running statements, closes every
// connection and waits for the sessions to end.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	if s.unixLn != nil {
		s.unixLn.Close()
	}
	for _, sess := range s.sessions {
		sess.cancelRunning()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// authMessageLimit bounds a message before authentication ends: PostgreSQL's
// PG_MAX_AUTH_TOKEN_LENGTH.
const authMessageLimit = 65535

// handle runs the start-up phase of one connection, then its session.
func (s *Server) handle(ctx context.Context, conn net.Conn) error {
	// the session's reader: it writes the session's queued answers before
	// a read blocks (session.flush)
	rd := &sessionReader{conn: conn}
	be := pgproto3.NewBackend(rd, conn)
	var startup *pgproto3.StartupMessage
	// C1: one deadline for the whole start-up, writes included
	startupDeadline := time.Now().Add(s.cfg.StartupTimeout)
	_ = conn.SetDeadline(startupDeadline)
	askedSSL, askedGSS := false, false
	for startup == nil {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if askedSSL {
				return errors.New("a second SSLRequest")
			}
			askedSSL = true
			if s.tls == nil {
				if _, err := conn.Write([]byte{'N'}); err != nil {
					return err
				}
				continue
			}
			if _, err := conn.Write([]byte{'S'}); err != nil {
				return err
			}
			tconn := tls.Server(conn, s.tls)
			if err := tconn.HandshakeContext(ctx); err != nil {
				return fmt.Errorf("tls handshake: %w", err)
			}
			conn = tconn
			rd = &sessionReader{conn: conn}
			be = pgproto3.NewBackend(rd, conn)
		case *pgproto3.GSSEncRequest:
			if askedGSS {
				return errors.New("a second GSSENCRequest")
			}
			askedGSS = true
			if _, err := conn.Write([]byte{'N'}); err != nil {
				return err
			}
		case *pgproto3.CancelRequest:
			s.cancel(m.ProcessID, m.SecretKey)
			return nil
		case *pgproto3.StartupMessage:
			startup = m
		default:
			return fmt.Errorf("unexpected start-up message %T", msg)
		}
	}
	fatal := func(code codes.Code, format string, args ...any) error {
		e := &Error{Severity: "FATAL", Code: code, Message: fmt.Sprintf(format, args...)}
		be.Send(e.response())
		_ = be.Flush()
		return e
	}
	user := startup.Parameters["user"]
	if user == "" {
		return fatal(codes.InvalidAuthorizationSpecification, "no PostgreSQL user name specified in startup packet")
	}
	dbname := startup.Parameters["database"]
	if dbname == "" {
		dbname = user
	}
	users := s.users.Load() // one list for the whole start-up
	if users.Len() > 0 {
		// Until the client has proven who it is, it may neither announce a
		// message of any size (a 5-byte header of 1.5 GB made the server
		// allocate it) nor take its time: PostgreSQL's limit for an
		// authentication message, and the start-up's 30 s deadline
		be.SetMaxBodyLen(authMessageLimit)
		if err := users.authenticate(be, user); err != nil {
			return err
		}
	}
	be.SetMaxBodyLen(s.cfg.MaxMessageBytes)
	_ = conn.SetDeadline(time.Time{})
	be.Send(&pgproto3.AuthenticationOk{})

	principal := access.Principal{User: user, Role: access.Admin} // trust: as today
	if users.Len() > 0 {
		principal.Role, _ = users.Role(user)
	}
	s.mu.Lock()
	if why := s.refusal(principal); why != "" {
		s.mu.Unlock()
		return fatal(codes.TooManyConnections, "%s", why)
	}
	// A1: everything this session runs, in DuckDB or natively, carries who
	// it runs as
	ctx = access.WithPrincipal(ctx, principal)
	// The session's own cancel scope: each statement's context registers
	// with its parent's cancelCtx under that parent's mutex. Parented on the
	// server's context, every statement of every session took one mutex
	// twice, and a thread the kernel preempted while holding it stalled all
	// sessions (measured: 240 ms of blocked goroutines a second at 16
	// clients). Parented here, a statement touches only its session's.
	ctx, cancelSession := context.WithCancel(ctx)
	defer cancelSession()
	sess := &session{
		srv:       s,
		principal: principal,
		conn:      conn,
		be:        be,
		reader:    rd,
		user:      user,
		dbname:    dbname,
		settings:  newSettings(user, principal.Role == access.Admin),
		tx:        txIdle,
		stmts:     map[string]*prepared{},
		portals:   map[string]*portal{},
		log:       s.log.With("user", user, "role", principal.Role.String()),
	}
	if lim := sess.limits(); lim.StatementTimeout > 0 {
		// the role's default, as ALTER ROLE ... SET statement_timeout
		sess.settings.put("statement_timeout", strconv.FormatInt(lim.StatementTimeout.Milliseconds(), 10))
	}
	for {
		sess.pid = rand.Uint32N(1<<31-1) + 1
		if _, taken := s.sessions[sess.pid]; !taken {
			break
		}
	}
	// the cancel key: whoever knows (pid, secret) may cancel the session's
	// statements, and pids are visible in pg_stat_activity
	var secret [4]byte
	_, _ = crand.Read(secret[:]) // never fails on Linux (crypto/rand)
	sess.secret = binary.BigEndian.Uint32(secret[:])
	s.sessions[sess.pid] = sess
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sessions, sess.pid)
		s.mu.Unlock()
	}()

	duck, err := s.engine.connect(ctx)
	if err != nil {
		return fatal(codes.Internal, "open session: %v", err)
	}
	s.mu.Lock()
	sess.duck = duck // visible to pg_stat_activity from here on
	s.mu.Unlock()
	watching := make(chan struct{})
	defer close(watching)
	go sess.watchPeer(watching)
	// start-up parameters a client sends (client_encoding, DateStyle,
	// TimeZone, application_name, options=-c name=value, ...)
	for name, value := range startupSettings(startup.Parameters) {
		if err := sess.setParam(ctx, name, value); err != nil {
			pe := toPGError(err)
			if name == "client_encoding" {
				duck.Close()
				return fatal(pe.Code, "%s", pe.Message)
			}
			sess.notice("WARNING", pe.Code, pe.Message)
		}
	}
	// pg_backend_pid(): the pid of BackendKeyData, which CancelRequest,
	// pg_stat_activity and pg_cancel_backend use too (once: it never changes)
	if _, err := duck.ExecContext(ctx, fmt.Sprintf("SET VARIABLE dhsi_pid = %d", sess.pid), nil); err != nil {
		duck.Close()
		return fatal(codes.Internal, "%v", err)
	}
	if principal.Role == access.Admin {
		// admins keep DuckDB's own limit (engine.go, sharedExpressionDepth)
		if _, err := duck.ExecContext(ctx, fmt.Sprintf("SET max_expression_depth = %d", duckExpressionDepth), nil); err != nil {
			duck.Close()
			return fatal(codes.Internal, "%v", err)
		}
	} else if err := s.engine.hidePlanFiles(ctx, duck); err != nil { // H2
		duck.Close()
		return fatal(codes.Internal, "%v", err)
	}
	if err := sess.syncVariables(ctx); err != nil {
		duck.Close()
		return fatal(codes.Internal, "%v", err)
	}
	// drop the ParameterStatus messages setParam queued: the full list follows
	for _, kv := range sess.settings.reported() {
		be.Send(&pgproto3.ParameterStatus{Name: kv[0], Value: kv[1]})
	}
	be.Send(&pgproto3.BackendKeyData{ProcessID: sess.pid, SecretKey: binary.BigEndian.AppendUint32(nil, sess.secret)})
	return sess.serve(ctx)
}

// startupSettings extracts run-time parameters from a StartupMessage,
// including "-c name=value" in options.
func startupSettings(params map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range params {
		switch k {
		case "user", "database", "replication", "options":
			continue
		}
		out[k] = v
	}
	fields := strings.Fields(params["options"])
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "-c" && i+1 < len(fields):
			i++
			f = fields[i]
		case strings.HasPrefix(f, "--"):
			f = f[2:]
		case strings.HasPrefix(f, "-c"):
			f = f[2:]
		default:
			continue
		}
		if k, v, ok := strings.Cut(f, "="); ok {
			out[strings.ReplaceAll(k, "-", "_")] = v
		}
	}
	return out
}

// cancel handles a CancelRequest: it interrupts the statement the matching
// session is running. A wrong key is ignored silently, as in PostgreSQL.
func (s *Server) cancel(pid uint32, key []byte) {
	if len(key) != 4 {
		return
	}
	s.mu.Lock()
	sess, ok := s.sessions[pid]
	s.mu.Unlock()
	if ok && equalSecret(sess.secret, binary.BigEndian.Uint32(key)) {
		s.log.Info("cancel request", "pid", pid)
		sess.cancelRunning()
	}
}

// CheckPassword verifies a user's clear password (HTTP Basic on the JSON
// API) against the same users and returns who it is.
func (s *Server) CheckPassword(user, password string) (access.Principal, bool) {
	role, ok := s.users.Load().CheckPassword(user, password)
	if !ok {
		return access.NoPrincipal, false
	}
	return access.Principal{User: user, Role: role}, true
}

// SetUsers replaces the users (a reload of the users file on SIGHUP).
// Sessions keep the role they logged in with; new logins use the new list.
// A server that started with users keeps asking for passwords: an empty
// list is refused, as is one that cannot be loaded.
func (s *Server) SetUsers(list []User) error {
	if s.users.Load().Len() > 0 && len(list) == 0 {
		return errors.New("the new users list is empty: a server with users does not fall back to trust")
	}
	if s.users.Load().Len() == 0 && len(list) > 0 {
		return errors.New("users cannot be added to a server started without them (trust): restart it with --users-file")
	}
	u, err := NewUsers(list)
	if err != nil {
		return err
	}
	s.users.Store(u)
	s.log.Info("users reloaded", "users", u.Len())
	return nil
}

// Shutdown stops the server gracefully: it stops accepting connections,
// lets running statements finish, answers any session's next message with
// FATAL 57P01 (admin_shutdown), and returns once every session has ended.
// When ctx ends first, running statements are cancelled and connections
// closed, and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.closed = true
	if s.ln != nil {
		s.ln.Close()
	}
	if s.unixLn != nil {
		s.unixLn.Close()
	}
	sessions := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	// wake every session blocked reading its client: it sees draining and
	// says goodbye; a running statement does not read, and finishes first
	for _, sess := range sessions {
		sess.reader.breakRead()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}

// readEpoch is cfg.ReadEpoch's value, 0 without one.
func (s *Server) readEpoch() uint64 {
	if s.cfg.ReadEpoch == nil {
		return 0
	}
	return s.cfg.ReadEpoch()
}

func (s *Server) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// Observer receives what the server does, for metrics. Its methods are
// called on the session's goroutine and must be cheap.
type Observer interface {
	// Statement: one statement ran for d; kind is "native:<function>",
	// "duckdb", "session", "cursor" or "copy".
	Statement(kind string, d time.Duration, failed bool)
	// Error: an error with this SQLSTATE was sent to a client.
	Error(sqlstate string)
}
