package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/access"
)

// What the server knows of its sessions, as PostgreSQL's pg_stat_activity
// shows it, and how one session stops another (pg_cancel_backend,
// pg_terminate_backend). Invariants:
//
//	S1. A session's activity fields are written by its own goroutine and
//	    read by others under its mu.
//	S2. Another session's query text is shown only to admins and to the
//	    same user; others read "<insufficient privilege>", as in PostgreSQL.
//	S3. Only an admin, or the same user, may cancel or terminate a session.
//	S4. A statement whose client has gone is cancelled within
//	    peerCheckInterval: nothing reads the socket while a statement runs,
//	    so a watcher peeks at it.

// peerCheckInterval is how often a running statement's socket is checked
// for a client that went away.
const peerCheckInterval = 500 * time.Millisecond

// SessionInfo is one row of pg_stat_activity.
type SessionInfo struct {
	PID                                       uint32
	User, Database, ApplicationName           string
	ClientAddr                                string
	ClientPort                                int32
	BackendStart, XactStart, QueryStart, Then time.Time // Then: state change
	State, Query                              string
}

// activity is a session's part of pg_stat_activity (S1).
type activity struct {
	started                        time.Time
	state, query                   string
	queryStart, xactStart, changed time.Time
	terminating                    atomic.Bool
}

func (s *session) setActive(query string) {
	now := time.Now()
	s.mu.Lock()
	s.act.state, s.act.query, s.act.queryStart, s.act.changed = "active", query, now, now
	if s.act.xactStart.IsZero() {
		s.act.xactStart = now
	}
	s.mu.Unlock()
}

// setIdle follows ReadyForQuery's transaction status.
func (s *session) setIdle() {
	state := "idle"
	switch s.tx {
	case txActive:
		state = "idle in transaction"
	case txFailed:
		state = "idle in transaction (aborted)"
	}
	s.mu.Lock()
	s.cancelPending = false // a cancel is for the statement it came during
	if s.act.state != state {
		s.act.state, s.act.changed = state, time.Now()
	}
	if s.tx == txIdle {
		s.act.xactStart = time.Time{}
	}
	s.mu.Unlock()
}

func (s *session) info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	si := SessionInfo{PID: s.pid, User: s.user, Database: s.dbname, BackendStart: s.act.started,
		XactStart: s.act.xactStart, QueryStart: s.act.queryStart, Then: s.act.changed, State: s.act.state, Query: s.act.query}
	si.ApplicationName, _ = s.settings.shared("application_name") // not the session's goroutine
	if a, ok := s.conn.RemoteAddr().(*net.TCPAddr); ok {
		si.ClientAddr, si.ClientPort = a.IP.String(), int32(a.Port)
	}
	return si
}

// Sessions lists the open sessions, by pid.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	list := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		if sess.duck != nil { // past start-up (handle sets it under s.mu)
			list = append(list, sess)
		}
	}
	s.mu.Unlock()
	out := make([]SessionInfo, 0, len(list))
	for _, sess := range list {
		out = append(out, sess.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// signal cancels (terminate false) or terminates pid on behalf of caller
// (S3). It reports whether pid is a session.
func (s *Server) signal(caller access.Principal, pid uint32, terminate bool) (bool, error) {
	s.mu.Lock()
	sess, ok := s.sessions[pid]
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	what := "cancel"
	if terminate {
		what = "terminate"
	}
	if caller.Role != access.Admin && caller.User != sess.user {
		return false, &access.Denied{Principal: caller, What: fmt.Sprintf("%s session %d of another user", what, pid), Needs: "the admin role"}
	}
	if s.signalLogged.first(fmt.Sprintf("%s %d %s", what, pid, caller.User), time.Now()) {
		s.log.Info(what+" backend", "pid", pid, "by", caller.User)
	}
	if terminate {
		sess.terminate()
	} else {
		sess.cancelRunning()
	}
	return true, nil
}

// terminate ends the session: its statement is interrupted and its read
// broken; the session's own goroutine then sends FATAL 57P01. A write to
// a client that reads no more is broken too: such a session held its
// statement's whole result (470 MB, a review in stop 41) for as long as
// the client kept its socket open, terminated or not.
func (s *session) terminate() {
	s.act.terminating.Store(true)
	s.cancelRunning()
	s.reader.breakRead()
	_ = s.conn.SetWriteDeadline(time.Now())
}

// watchPeer cancels the running statement when the client's socket is
// closed (S4), until done closes.
func (s *session) watchPeer(done <-chan struct{}) {
	t := time.NewTicker(peerCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			s.mu.Lock()
			running := s.running != nil
			s.mu.Unlock()
			if running && peerClosed(s.conn) {
				s.log.Info("client went away; cancelling its statement", "pid", s.pid)
				s.cancelRunning()
				return
			}
		}
	}
}

// registerActivity installs dhsi_sessions(), pg_cancel_backend,
// pg_terminate_backend and pg_backend_pid's source on the engine; srv is
// read at call time (the server is built after the engine).
func (e *Engine) registerActivity(ctx context.Context, conn *sql.Conn) error {
	t := func(typ duckdb.Type) duckdb.TypeInfo {
		ti, err := duckdb.NewTypeInfo(typ)
		if err != nil {
			panic(err)
		}
		return ti
	}
	varchar, integer, tstz, boolean := t(duckdb.TYPE_VARCHAR), t(duckdb.TYPE_INTEGER), t(duckdb.TYPE_TIMESTAMP_TZ), t(duckdb.TYPE_BOOLEAN)
	cols := []duckdb.ColumnInfo{{Name: "pid", T: integer}, {Name: "usename", T: varchar}, {Name: "datname", T: varchar},
		{Name: "application_name", T: varchar}, {Name: "client_addr", T: varchar}, {Name: "client_port", T: integer},
		{Name: "backend_start", T: tstz}, {Name: "xact_start", T: tstz}, {Name: "query_start", T: tstz}, {Name: "state_change", T: tstz},
		{Name: "state", T: varchar}, {Name: "query", T: varchar}}
	sessions := duckdb.RowTableFunction{
		BindArgumentsContext: func(ctx context.Context, named map[string]any, args ...any) (duckdb.RowTableSource, error) {
			return &sessionRows{cols: cols, e: e, caller: access.FromContext(ctx)}, nil
		},
	}
	if err := duckdb.RegisterTableUDF(conn, "dhsi_sessions", sessions); err != nil {
		return err
	}
	// dhsi_roles(): pg_roles and pg_auth_members (psql's \du): the roles as
	// NOLOGIN roles, each user as a login role that is a member of its role
	bigint := t(duckdb.TYPE_BIGINT)
	roleCols := []duckdb.ColumnInfo{{Name: "oid", T: bigint}, {Name: "rolname", T: varchar}, {Name: "rolsuper", T: boolean},
		{Name: "rolcanlogin", T: boolean}, {Name: "member_of", T: bigint}}
	roles := duckdb.RowTableFunction{
		BindArguments: func(named map[string]any, args ...any) (duckdb.RowTableSource, error) {
			var rows [][]any
			srv := e.server.Load()
			var list []User
			if srv != nil {
				list = srv.users.Load().List()
			}
			if len(list) == 0 {
				rows = append(rows, []any{int64(10), "dhsi", true, true, nil}) // trust: everyone is this admin
			} else {
				roleOID := map[access.Role]int64{}
				for i, r := range access.Roles {
					roleOID[r] = int64(16384 + i)
					rows = append(rows, []any{roleOID[r], r.String(), r == access.Admin, false, nil})
				}
				for i, u := range list {
					rows = append(rows, []any{int64(16400 + i), u.Name, u.Role == access.Admin, true, roleOID[u.Role]})
				}
			}
			return &fixedRows{cols: roleCols, rows: rows}, nil
		},
	}
	if err := duckdb.RegisterTableUDF(conn, "dhsi_roles", roles); err != nil {
		return err
	}
	for _, fn := range []struct {
		name      string
		terminate bool
	}{{"pg_cancel_backend", false}, {"pg_terminate_backend", true}} {
		f := &signalFunc{e: e, terminate: fn.terminate, in: integer, out: boolean}
		if err := duckdb.RegisterScalarUDF(conn, fn.name, f); err != nil {
			return err
		}
	}
	return nil
}

type sessionRows struct {
	cols   []duckdb.ColumnInfo
	e      *Engine
	caller access.Principal // who bound the query (A1)
	rows   []SessionInfo
	next   int
}

func (r *sessionRows) ColumnInfos() []duckdb.ColumnInfo     { return r.cols }
func (r *sessionRows) Cardinality() *duckdb.CardinalityInfo { return nil }

// Init snapshots the sessions when the query executes, not when it was
// prepared (a prepared statement would show stale activity).
func (r *sessionRows) Init() {
	r.next, r.rows = 0, nil
	if srv := r.e.server.Load(); srv != nil {
		r.rows = srv.Sessions()
	}
}
func (r *sessionRows) FillRow(row duckdb.Row) (bool, error) {
	if r.next >= len(r.rows) {
		return false, nil
	}
	si := r.rows[r.next]
	r.next++
	query := si.Query
	if r.caller.Role != access.Admin && r.caller.User != si.User {
		query = "<insufficient privilege>" // S2
	}
	ts := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t
	}
	vals := []any{int32(si.PID), si.User, si.Database, si.ApplicationName, si.ClientAddr, si.ClientPort,
		ts(si.BackendStart), ts(si.XactStart), ts(si.QueryStart), ts(si.Then), si.State, query}
	for i, v := range vals {
		if v == nil {
			continue
		}
		if err := duckdb.SetRowValue(row, i, v); err != nil {
			return false, err
		}
	}
	return true, nil
}

// signalFunc is pg_cancel_backend(pid) / pg_terminate_backend(pid).
type signalFunc struct {
	e         *Engine
	terminate bool
	in, out   duckdb.TypeInfo
}

func (f *signalFunc) Config() duckdb.ScalarFuncConfig {
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{f.in}, ResultTypeInfo: f.out, Volatile: true}
}

func (f *signalFunc) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{
		// the caller is read at bind, when the query's context is certain
		ScalarBinder: func(ctx context.Context, args []duckdb.ScalarUDFArg) (context.Context, error) { return ctx, nil },
		RowContextExecutor: func(ctx context.Context, values []driver.Value) (out any, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("internal error: %v", r)
				}
			}()
			pid, ok := values[0].(int32)
			srv := f.e.server.Load()
			if !ok || pid <= 0 || srv == nil {
				return false, nil
			}
			return srv.signal(access.FromContext(ctx), uint32(pid), f.terminate)
		},
	}
}

// fixedRows is a table function's rows computed at bind.
type fixedRows struct {
	cols []duckdb.ColumnInfo
	rows [][]any
	next int
}

func (r *fixedRows) ColumnInfos() []duckdb.ColumnInfo     { return r.cols }
func (r *fixedRows) Cardinality() *duckdb.CardinalityInfo { return nil }
func (r *fixedRows) Init()                                { r.next = 0 }
func (r *fixedRows) FillRow(row duckdb.Row) (bool, error) {
	if r.next >= len(r.rows) {
		return false, nil
	}
	for i, v := range r.rows[r.next] {
		if v == nil {
			continue
		}
		if err := duckdb.SetRowValue(row, i, v); err != nil {
			return false, err
		}
	}
	r.next++
	return true, nil
}

// onceASecond says whether a key was not seen in the last second: the log
// of pg_cancel_backend and pg_terminate_backend, which a statement may
// call once per row (SELECT count(pg_cancel_backend(n)) FROM urls wrote
// 16 MB of log in 1.1 s), says each (what, pid, caller) once a second.
type onceASecond struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (o *onceASecond) first(key string, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil || len(o.seen) > 1024 {
		o.seen = map[string]time.Time{} // forget the old: at worst a line more
	}
	if t, ok := o.seen[key]; ok && now.Sub(t) < time.Second {
		return false
	}
	o.seen[key] = now
	return true
}
