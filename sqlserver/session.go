package sqlserver

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/internal/duckcapi"
	"github.com/dhsi/dhsi/internal/redact"
	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// Transaction status bytes of ReadyForQuery.
const (
	txIdle   = 'I'
	txActive = 'T'
	txFailed = 'E'
)

// flushAt bounds the output a session holds: once this many bytes are
// queued, a result's rows (DataRow, CopyData) are written before more are
// encoded, so a large result streams with bounded memory. PostgreSQL's send
// buffer is 8 KB; 64 KB keeps a typical first page in one write.
const flushAt = 64 << 10

// E1: a DuckDB statement runs on a plan bound in the current read epoch
// (Server.readEpoch): DuckDB keeps the plan of a prepared statement that
// names no catalog object it reads, with dhsi_lake_files() folded into it
// as the file list of the grants and index version it was bound under. So
// openPortal prepares a statement again when the epoch moved since
// (prepared.epoch), and a SQL EXECUTE's PREPARE before it (sqlPrepare.epoch,
// recorded only once DuckDB ran the PREPARE: notePrepared).

// session is one client connection. Its fields are touched only by the
// connection's goroutine, except running (protected by mu), which the cancel
// path reads.
type session struct {
	srv  *Server
	conn net.Conn
	be   *pgproto3.Backend
	// reader is be's reader; it flushes the session's answers once the
	// session serves (before, start-up writes through be)
	reader *sessionReader
	// busyEpoch: the last epoch busyGauge.touch counted this session in
	busyEpoch int64
	// out holds the messages queued for the client and not yet written;
	// outErr is the first that failed to encode (flush reports it). When
	// out is written is the flush rule (flush).
	out    []byte
	outErr error
	log    *slog.Logger
	pid    uint32
	secret uint32
	user   string
	dbname string
	// syncedVariables is the last statement syncVariables ran (without
	// DuckDB's settings); duckSettingsSynced is false when a DuckDB setting
	// may have changed since it last mirrored them
	syncedVariables    string
	duckSettingsSynced bool
	// syncedChanges is settings.changes when syncedVariables was last
	// rendered: until it moves, the session's variables are as synced
	// (rendering them for each SET and DISCARD ALL cost a fifth of their
	// CPU: pprof, stop 44)
	syncedChanges uint64
	// duckPrepared names the SQL PREPAREs DuckDB holds for the session,
	// every role's (preparedKey): DuckDB reads "DEALLOCATE ALL" as the
	// name ALL, so DEALLOCATE ALL and DISCARD ALL deallocate each
	duckPrepared map[string]bool
	// principal is who the session runs as (its user and role); the
	// session's context carries it too (access A1)
	principal access.Principal

	duck     *duckdb.Conn
	settings *settings
	// temps: what this session's TEMP views and macros may expand to (P5,
	// expansion.go); creating: the CREATE being authorized, if it makes one
	temps    map[string]*tempDef
	creating *pendingCreate
	// tempMacros: what a call of each TEMP macro copies (P6, macros.go)
	tempMacros map[string]macroCost
	// tempsVersion counts the changes to temps; sqlPrepared holds the
	// statements of SQL PREPARE by name, for P5 to check at EXECUTE
	tempsVersion uint64
	sqlPrepared  map[string]sqlPrepare
	tx           byte // txIdle, txActive, txFailed

	stmts   map[string]*prepared
	portals map[string]*portal
	// skipTillSync: an extended-protocol error happened; discard messages
	// until Sync, as PostgreSQL does.
	skipTillSync bool
	// implicit: a DuckDB transaction spans the extended-protocol messages
	// up to the next Sync while the client has none open, so that they
	// commit or roll back together, as in PostgreSQL (a pgx batch, a JDBC
	// executeBatch).
	implicit bool

	// spent: while a native statement's DuckDB twin is prepared and run,
	// the time its native attempt took, which statementContext takes from
	// statement_timeout (nativetwin.go)
	spent time.Duration

	mu      sync.Mutex
	running context.CancelFunc // cancels the statement in flight; protected by mu
	act     activity           // pg_stat_activity's row; protected by mu (activity.go S1)
	// cancelPending: a cancel came while the session was active but had no
	// statement to interrupt yet; protected by mu
	cancelPending bool
	// awaitingTurn: the session yields before a message it received (F4); a
	// cancel then is for the statement that follows. Protected by mu.
	awaitingTurn bool
}

// prepared is a parsed statement: either a DuckDB prepared statement or one
// the session answers itself.
type prepared struct {
	name string
	// textBytes is the length of the statement's text as the client sent
	// it (Parse), counted against the session's budget (preparedBudget)
	textBytes int
	class     classified
	duckSQL   string
	stmt      *duckdb.Stmt // nil unless class.kind == kindDuck
	// vars: the session's variables (syncedVariables) when stmt was
	// prepared. DuckDB folds getvariable() into a plan when it binds it, so
	// a statement kept across a SET would answer current_setting(),
	// current_user or pg_settings as they were: openPortal prepares it
	// again when they changed.
	vars string
	// epoch: the read epoch stmt was bound in (E1)
	epoch uint64
	// fresh: the statement runs a SQL PREPARE (EXECUTE), so it keeps no
	// DuckDB statement (stmt is nil) and each execution prepares one (X1)
	fresh bool
	// temps: session.tempsVersion when P5 last checked duckSQL. openPortal
	// prepares duckSQL again at times (vars, a busy statement), binding the
	// TEMP macros and views it names as they are then, so it checks the
	// statement again when they changed since
	temps     uint64
	paramOIDs []uint32
	paramDuck []duckdb.Type // DuckDB's parameter types (kindDuck)
	// toDuck maps the client's $n (toDuck[n-1]) to DuckDB's parameter
	// number, 0 where DuckDB's statement does not use it, when the two
	// differ (denseParams): paramOIDs, paramDuck, nullUnsafe, argOIDs and
	// argOnly are then DuckDB's numbering, clientOIDs the client's. nil:
	// one numbering.
	toDuck     []int
	clientOIDs []uint32
	// described is the RowDescription last encoded for this statement,
	// of descCols in descFormats: libpq's PQexecPrepared describes the
	// portal at each execution, and building the message each time cost
	// 2.6% of a domain_datasets lookup's CPU (pprof, stop 43)
	descCols    []column
	descFormats []int16
	described   []byte
	// nullUnsafe: parameter numbers ($n) that are arguments of a
	// NullUnsafeFunctions call; Bind refuses NULL for them.
	nullUnsafe map[int]bool
	// argOIDs: types of $n parameters that are table-function arguments
	argOIDs map[int]uint32
	// argOnly: the $n of argOIDs used nowhere else in the statement, whose
	// bound values Bind may convert to the argument's type (asArgument)
	argOnly map[int]bool
	// native: answered by a NativeFunction, without DuckDB
	native *nativeCall
	// src, twin: a native statement's text, and the same prepared for
	// DuckDB once an execution held too many rows (nativetwin.go)
	src  pgsql.Statement
	twin *prepared
	cols []column
	// returnsRows: executing yields a result set (and a RowDescription).
	returnsRows bool
	// dml: a DuckDB INSERT/UPDATE/DELETE without RETURNING, which reports a
	// count rather than rows.
	dml bool
	// plan: the rows are DuckDB's explain_key and explain_value, the
	// server's words, with host paths in them (EXPLAIN ANALYZE names each
	// file it read): H2 hides them from a non-admin (hostpaths.go)
	plan     bool
	duckType duckdb.StmtType // DuckDB's statement type (kindDuck)
	// inner is the query of a DECLARE CURSOR or a COPY ... TO STDOUT,
	// prepared to learn its parameters and columns.
	inner *prepared
	// formats are the result formats of a simple-query execution: nil (text)
	// except for FETCH from a BINARY cursor.
	formats []int16
	refs    int // portals bound to this statement
	// origins: the columns\' table OIDs and numbers have been looked up
	origins bool
	closed  bool // closed by the client; the DuckDB statement is released when refs drops to 0
	busy    bool // a portal holds an open result on stmt
}

type column struct {
	name string
	typ  colType
	// table and attnum name the table column the value comes from, for
	// RowDescription; zero when unknown (an expression, a join, ...).
	table  uint32
	attnum int16
}

// portal is a bound statement, possibly suspended mid-result.
type portal struct {
	name    string
	stmt    *prepared
	params  []driver.NamedValue
	formats []int16
	// open result of a suspended portal
	rows    driver.Rows
	own     *duckdb.Stmt // a private DuckDB statement when stmt.stmt was busy
	cancel  context.CancelFunc
	resumed int64 // rows sent since the current Execute began
	bound   bool  // counted in stmt.refs (a Bind, not a simple query)
	done    bool
	tag     string
	// cursor: opened by DECLARE; fetched with FETCH rather than Execute.
	// hold (WITH HOLD) cursors survive the end of their transaction.
	cursor bool
	hold   bool
	// native, nativeRows: the computed rows of a NativeFunction call (Run's
	// or, typed, Rows'), sent from nativeNext
	native     [][]any
	nativeRows NativeRows
	nativeNext int
	// twin: the portal of the statement's DuckDB twin, which runs in its
	// place (nativetwin.go)
	twin *portal
}

// send queues msg for the client.
//
// The session encodes messages into its own buffer and writes it at flush,
// instead of pgproto3's Backend.Send: the backend shrinks its write buffer
// to 1 KB after every flush, so each result regrew it by doubling (a
// 1000-URL page: seven reallocations, ~250 KB of garbage), and a DataRow
// sent as a *pgproto3.DataRow cost an allocation per row. The backend still
// reads every message, and sends what precedes the session (start-up,
// authentication), which serve flushes first.
func (s *session) send(msg pgproto3.BackendMessage) { s.queued(msg.Encode(s.out)) }

// sendDataRow queues one DataRow.
func (s *session) sendDataRow(vals [][]byte) {
	dr := pgproto3.DataRow{Values: vals}
	// called directly, not through send's interface, so dr stays on the stack
	s.queued(dr.Encode(s.out)) // fails only past 65535 columns
}

// queueRow queues one DataRow of a result, encoded straight into the
// output buffer.
func (s *session) queueRow(cols []column, formats []int16, row []driver.Value, loc *time.Location) error {
	out, err := appendDataRow(s.out, cols, formats, row, loc)
	s.out = out
	return err
}

// queued takes the output buffer a message was encoded into, or keeps the
// first encoding error for flush to report.
func (s *session) queued(out []byte, err error) {
	if err != nil {
		if s.outErr == nil {
			s.outErr = err
		}
		return
	}
	s.out = out
}

// flush writes everything queued to the client.
//
// The flush rule, PostgreSQL's (postgres.c, pqcomm.c, elog.c): answers are
// queued, and written in one write per round trip —
//
//   - with ReadyForQuery (the end of a simple Query, a Sync);
//   - on a Flush message;
//   - with an ErrorResponse, as PostgreSQL's elog does;
//   - when a result's queued output passes flushAt (spill, below);
//   - and, beyond PostgreSQL, before the session blocks reading from a
//     client that has sent nothing more (sessionReader): a client waiting
//     for an answer without a Sync or Flush gets it too, as it did when
//     the server wrote after every message.
//
// So a pipelining client (a pgx batch, JDBC's executeBatch, psycopg's
// pipeline) gets its answers when it asks for them, and a prepared
// lookup (Bind, Describe, Execute, Sync) costs one write, not four.
func (s *session) flush() error {
	if err := s.outErr; err != nil {
		s.outErr, s.out = nil, s.out[:0]
		return err
	}
	if len(s.out) == 0 {
		return nil
	}
	_, err := s.conn.Write(s.out)
	if cap(s.out) > maxKeptOutBuffer {
		s.out = nil
	} else {
		s.out = s.out[:0]
	}
	return err
}

// maxKeptOutBuffer bounds the output buffer a session keeps between
// flushes.
const maxKeptOutBuffer = 1 << 20

// spill writes the queued output once it passes flushAt: called after each
// row of a result, so a large result streams.
func (s *session) spill() error {
	if len(s.out) < flushAt {
		return nil
	}
	return s.flush()
}

// sessionReader is what the session's pgproto3.Backend reads from. The
// backend reads from it only when the messages it holds are used up; if
// answers are still queued then, the client may be waiting for them
// before it sends more, so they are written before the read blocks.
type sessionReader struct {
	conn net.Conn
	sess *session        // nil during start-up, which writes through the backend
	raw  syscall.RawConn // conn's file descriptor for spinRead, once asked for
	spun bool            // spinRead's last call got as far as spinning (F3 may follow)
	// reads counts the reads of the socket since the session began: a
	// message that took one starts what the client sent at once (F4)
	reads uint64
	// broken: breakRead set a passed deadline that F3 must not replace
	broken atomic.Bool
}

func (r *sessionReader) Read(p []byte) (int, error) {
	s := r.sess
	if s == nil {
		return r.conn.Read(p)
	}
	if len(s.out) > 0 || s.outErr != nil {
		if err := s.flush(); err != nil {
			return 0, err
		}
	}
	r.reads++
	if n, done, err := r.fairRead(s.srv.busy, p); done { // F2, F3 (fairness.go)
		return n, err
	}
	return r.conn.Read(p)
}

// goodbye sends FATAL 57P01 (admin_shutdown) and ends the session: a
// server shutting down, or pg_terminate_backend.
func (s *session) goodbye() error {
	_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
	// PostgreSQL's words for both
	s.send((&Error{Severity: "FATAL", Code: codes.AdminShutdown, Message: "terminating connection due to administrator command"}).response())
	_ = s.flush()
	return nil
}

// serve runs the message loop until the client leaves or the connection
// breaks.
func (s *session) serve(ctx context.Context) error {
	defer s.closeAll()
	working := false // counted in busyGauge.working (enter, leave)
	defer func() {
		if working {
			s.srv.busy.leave()
		}
	}()
	if err := s.be.Flush(); err != nil { // what start-up queued in the backend
		return err
	}
	s.reader.sess = s // from here on, everything goes through s.out
	s.readyForQuery()
	if err := s.flush(); err != nil {
		return err
	}
	// atBoundary: the client awaits nothing (ReadyForQuery was sent), so a
	// shutdown may end the session here without cutting an answer short
	atBoundary := true
	var reads uint64  // s.reader.reads before the last message (F4)
	executed := false // an Execute ran since the session's last turn (F4)
	for {
		if atBoundary && s.srv.isDraining() {
			return s.goodbye()
		}
		msg, err := s.be.Receive()
		if err != nil {
			if s.srv.isDraining() {
				return s.goodbye()
			}
			if s.act.terminating.Load() {
				// pg_terminate_backend: say why, as PostgreSQL does
				return s.goodbye()
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if tooBig := (*pgproto3.ExceededMaxBodyLenErr)(nil); errors.As(err, &tooBig) {
				// the body is unread, so the session cannot go on (as
				// PostgreSQL ends one on an invalid message length)
				s.send((&Error{Severity: "FATAL", Code: codes.ProgramLimitExceeded,
					Message: fmt.Sprintf("a message of %d bytes is over this server's limit of %d", tooBig.ActualBodyLen, tooBig.MaxExpectedBodyLen),
					Hint:    "send smaller statements, or start the server with a larger serve --max-message-bytes"}).response())
				_ = s.flush()
				return nil
			}
			return err
		}
		if s.skipTillSync {
			switch msg.(type) {
			case *pgproto3.Sync, *pgproto3.Terminate:
			default:
				continue
			}
		}
		s.srv.busy.enter()
		working = true
		s.srv.busy.touch(&s.busyEpoch)
		_, isQuery := msg.(*pgproto3.Query)
		_, isSync := msg.(*pgproto3.Sync)
		_, isExecute := msg.(*pgproto3.Execute)
		if s.reader.reads != reads || isSync || isExecute && executed {
			// F4: what the client sent at once begins, its answer goes, or
			// the next statement of a pipeline without Syncs starts
			s.queueTurn()
			executed = false
		}
		reads = s.reader.reads
		executed = executed || isExecute
		atBoundary = isQuery || isSync
		switch m := msg.(type) {
		case *pgproto3.Query:
			s.setActive(m.String)
			s.simpleQuery(ctx, m.String)
			s.readyForQuery()
		case *pgproto3.Parse:
			s.extended(s.parse(ctx, m))
		case *pgproto3.Bind:
			s.extended(s.bind(m))
		case *pgproto3.Describe:
			s.extended(s.describe(m))
		case *pgproto3.Execute:
			s.extended(s.execute(ctx, m))
		case *pgproto3.Close:
			s.extended(s.closeObject(m))
		case *pgproto3.Sync:
			failed := s.skipTillSync
			s.skipTillSync = false
			if s.tx == txIdle {
				// end of the implicit transaction: its portals go with it
				// (but not WITH HOLD cursors)
				s.closeTransactionPortals()
			}
			s.endImplicit(ctx, failed)
			s.readyForQuery()
		case *pgproto3.Flush:
			if err := s.flush(); err != nil {
				return err
			}
		case *pgproto3.Terminate:
			return nil
		case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
			// stray copy messages after a failed COPY are ignored, as in PostgreSQL
		case *pgproto3.FunctionCall:
			s.extended(pgErrorf(codes.FeatureNotSupported, "the fast-path function call interface is not supported"))
		default:
			s.sendError(pgErrorf(codes.ProtocolViolation, "unexpected message %T", msg))
		}
		s.srv.busy.leave()
		working = false
		if isQuery || isSync {
			// ReadyForQuery was queued: the client waits for it
			if err := s.flush(); err != nil {
				return err
			}
			s.yieldTurn() // F1 (fairness.go)
			executed = false
		}
	}
}

// extended reports an extended-protocol error and starts skipping to Sync.
func (s *session) extended(err error) {
	if err == nil {
		return
	}
	s.sendError(err)
	s.skipTillSync = true
}

func (s *session) sendError(err error) {
	pe := capMessage(hideHostDirs(toPGError(err), s.hostDirsToHide())) // H2 before a cap could cut a path
	if obs := s.srv.cfg.Observer; obs != nil {
		obs.Error(string(pe.Code))
	}
	if pe.Severity == "" || pe.Severity == "ERROR" {
		if s.tx == txActive {
			s.tx = txFailed
		}
	}
	if pe.Code == codes.Internal {
		s.log.Warn("internal error", "err", redact.URLs(pe.Message)) // 001 §8: no raw URL in a log
	}
	s.send(pe.response())
	// at once, as PostgreSQL's elog does: a pipelining client learns of
	// the failure before it sends more (a failed write shows again at the
	// next flush or read)
	_ = s.flush()
}

func (s *session) notice(severity string, code codes.Code, msg string) {
	s.send(&pgproto3.NoticeResponse{Severity: severity, SeverityUnlocalized: severity, Code: string(code), Message: msg})
}

func (s *session) readyForQuery() {
	s.setIdle()
	s.send(&pgproto3.ReadyForQuery{TxStatus: s.tx})
}

// ---- simple query ----

func (s *session) simpleQuery(ctx context.Context, query string) {
	s.endImplicit(ctx, false) // a Query without a Sync before it
	// at debug level the log shows every statement a client sends: the way
	// to find out what a driver's or BI tool's catalog queries need
	s.log.Debug("query", "sql", query)
	stmts := pgsql.Split(query)
	if len(stmts) == 0 {
		s.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	// PostgreSQL runs the statements of one Query message in one implicit
	// transaction: a failure rolls back the earlier ones. Do the same unless
	// the client manages transactions itself.
	implicit := false
	if len(stmts) > 1 && s.tx == txIdle {
		implicit = true
		for _, st := range stmts {
			if isTxControl(st) {
				implicit = false
			}
		}
	}
	if implicit {
		if _, err := s.duck.ExecContext(ctx, "BEGIN TRANSACTION", nil); err != nil {
			s.sendError(err)
			return
		}
	}
	failed := false
	for _, st := range stmts {
		p, err := s.prepare(ctx, "", st, nil)
		if err == nil {
			if p.returnsRows {
				s.send(s.rowDescription(p.cols, p.formats))
			}
			pt := &portal{stmt: p, formats: p.formats}
			err = s.run(ctx, pt, 0)
			s.closePortal(pt)
		}
		if p != nil {
			s.releaseStatement(p)
		}
		if err != nil {
			s.sendError(err)
			failed = true
			break
		}
	}
	if implicit {
		end := "COMMIT"
		if failed {
			end = "ROLLBACK"
		}
		if _, err := s.duck.ExecContext(ctx, end, nil); err != nil && !failed {
			s.sendError(err)
		}
	}
}

func isTxControl(st pgsql.Statement) bool {
	toks := st.Significant()
	if len(toks) == 0 {
		return false
	}
	switch toks[0].Upper() {
	case "BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT":
		return true
	}
	return false
}

// ---- extended query ----

func (s *session) parse(ctx context.Context, m *pgproto3.Parse) error {
	if m.Name != "" {
		if _, exists := s.stmts[m.Name]; exists {
			return pgErrorf(codes.DuplicatePreparedStatement, "prepared statement %q already exists", m.Name)
		}
	}
	s.log.Debug("parse", "name", m.Name, "sql", m.Query)
	stmts := pgsql.Split(m.Query)
	if len(stmts) > 1 {
		return pgErrorf(codes.Syntax, "cannot insert multiple commands into a prepared statement")
	}
	var st pgsql.Statement
	if len(stmts) == 1 {
		st = stmts[0]
	}
	if err := s.preparedBudget(m.Name, len(m.Query), m.Name != ""); err != nil {
		return err
	}
	oids := append([]uint32(nil), m.ParameterOIDs...)
	p, err := s.prepare(ctx, m.Name, st, oids)
	if err != nil {
		return err
	}
	p.textBytes = len(m.Query)
	if old, ok := s.stmts[m.Name]; ok { // unnamed statement is replaced
		delete(s.stmts, m.Name)
		old.closed = true
		s.releaseStatement(old)
	}
	s.stmts[m.Name] = p
	s.send(&pgproto3.ParseComplete{})
	return nil
}

func (s *session) bind(m *pgproto3.Bind) error {
	p, ok := s.stmts[m.PreparedStatement]
	if !ok {
		return pgErrorf(codes.InvalidSQLStatementName, "prepared statement %q does not exist", m.PreparedStatement)
	}
	if m.DestinationPortal != "" {
		if _, exists := s.portals[m.DestinationPortal]; exists {
			return pgErrorf(codes.DuplicateCursor, "portal %q already exists", m.DestinationPortal)
		}
	}
	if want := len(p.describedParams()); len(m.Parameters) != want {
		return pgErrorf(codes.ProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d",
			len(m.Parameters), m.PreparedStatement, want)
	}
	if p.toDuck != nil {
		var err error
		if m, err = p.bindForDuck(m); err != nil {
			return err
		}
	}
	params := make([]driver.NamedValue, len(m.Parameters))
	for i, data := range m.Parameters {
		format := int16(0)
		switch len(m.ParameterFormatCodes) {
		case 0:
		case 1:
			format = m.ParameterFormatCodes[0]
		default:
			if i < len(m.ParameterFormatCodes) {
				format = m.ParameterFormatCodes[i]
			}
		}
		v, err := decodeParam(p.paramOIDs[i], format, data)
		if err != nil {
			return err
		}
		if arg, ok := p.argOIDs[i+1]; ok && p.argOnly[i+1] && arg != p.paramOIDs[i] && arg != oidText {
			v = asArgument(v, arg) // the value has no other use to change
		}
		if i < len(p.paramDuck) && (p.paramDuck[i] == duckdb.TYPE_LIST || p.paramDuck[i] == duckdb.TYPE_ARRAY) {
			v = listParam(v)
		}
		if v == nil && p.nullUnsafe[i+1] {
			return nullParamError(p.clientParam(i + 1))
		}
		params[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	if old, ok := s.portals[m.DestinationPortal]; ok { // unnamed portal is replaced
		s.closePortal(old)
	}
	pt := &portal{name: m.DestinationPortal, stmt: p, params: params, formats: append([]int16(nil), m.ResultFormatCodes...), bound: true}
	p.refs++
	s.portals[m.DestinationPortal] = pt
	s.send(&pgproto3.BindComplete{})
	return nil
}

func (s *session) describe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		p, ok := s.stmts[m.Name]
		if !ok {
			return pgErrorf(codes.InvalidSQLStatementName, "prepared statement %q does not exist", m.Name)
		}
		s.send(&pgproto3.ParameterDescription{ParameterOIDs: p.describedParams()})
		s.originsOnce(p)
		if p.returnsRows {
			s.sendRowDescription(p, nil)
		} else {
			s.send(&pgproto3.NoData{})
		}
	case 'P':
		pt, ok := s.portals[m.Name]
		if !ok {
			return pgErrorf(codes.InvalidCursorName, "portal %q does not exist", m.Name)
		}
		s.originsOnce(pt.stmt)
		if pt.stmt.returnsRows {
			s.sendRowDescription(pt.stmt, pt.formats)
		} else {
			s.send(&pgproto3.NoData{})
		}
	default:
		return pgErrorf(codes.ProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType)
	}
	return nil
}

func (s *session) execute(ctx context.Context, m *pgproto3.Execute) error {
	pt, ok := s.portals[m.Portal]
	if !ok {
		return pgErrorf(codes.InvalidCursorName, "portal %q does not exist", m.Portal)
	}
	if s.tx == txIdle && !s.implicit && pt.stmt.implicitTx() {
		if _, err := s.duck.ExecContext(ctx, "BEGIN TRANSACTION", nil); err != nil {
			return err
		}
		s.implicit = true
	}
	s.setActive(pt.stmt.class.sql)
	err := s.run(ctx, pt, int64(m.MaxRows))
	if err != nil {
		s.closePortalResult(pt)
	}
	return err
}

// implicitTx reports whether the statement runs in the implicit transaction
// of an extended-protocol block: queries, DML and DDL do; utility statements
// that DuckDB may refuse inside a transaction (CHECKPOINT, ATTACH, LOAD, SET,
// ...) run on their own, as a lone statement would in PostgreSQL.
func (p *prepared) implicitTx() bool {
	if p.class.kind != kindDuck {
		return false
	}
	// A SELECT does not open one: reads need no atomicity, and the hot path
	// (one prepared query per Sync) should not pay for BEGIN/COMMIT. A SELECT
	// after a write in the same block still runs inside the write's
	// transaction.
	switch p.duckType {
	case duckdb.STATEMENT_TYPE_INSERT, duckdb.STATEMENT_TYPE_UPDATE,
		duckdb.STATEMENT_TYPE_DELETE, duckdb.STATEMENT_TYPE_CREATE, duckdb.STATEMENT_TYPE_DROP,
		duckdb.STATEMENT_TYPE_ALTER, duckdb.STATEMENT_TYPE_CREATE_FUNC:
		return true
	}
	return false
}

// endImplicit commits the implicit transaction of an extended-protocol
// block, or rolls it back after an error.
func (s *session) endImplicit(ctx context.Context, failed bool) {
	if !s.implicit {
		return
	}
	s.implicit = false
	end := "COMMIT"
	if failed {
		end = "ROLLBACK"
	}
	if _, err := s.duck.ExecContext(ctx, end, nil); err != nil && !failed {
		s.sendError(err)
	}
}

func (s *session) closeObject(m *pgproto3.Close) error {
	switch m.ObjectType {
	case 'S':
		if p, ok := s.stmts[m.Name]; ok {
			delete(s.stmts, m.Name)
			p.closed = true
			for _, pt := range s.portals {
				if pt.stmt == p {
					s.closePortal(pt)
				}
			}
			s.releaseStatement(p)
		}
	case 'P':
		if pt, ok := s.portals[m.Name]; ok {
			s.closePortal(pt)
		}
	default:
		return pgErrorf(codes.ProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType)
	}
	s.send(&pgproto3.CloseComplete{})
	return nil
}

// nullParamError is 22004 for a NULL bound to $n, an argument of a DHSI
// table function: Bind's check, the native path's and a twin's (a NULL
// that reached a table function's bind aborted the process, nullguard.go).
func nullParamError(n int) *Error {
	return pgErrorf(codes.NullValueNotAllowed, "parameter $%d is an argument of a DHSI table function, which does not take NULL", n)
}

// ---- preparing ----

// A non-admin session keeps at most maxPreparedStatements prepared
// statements, named ones and SQL PREPAREs, whose texts come to at most
// twice --max-message-bytes (PB1). DuckDB holds each outside its
// memory_limit, ~6 times its text: one reader's 1,700-3,000 statements of
// 100 KB, sent in 8-28 s, took the server to its hard limit, where every
// new session, an admin's too, failed, and once the process died. pgx
// keeps 512 statements a connection by default.
const maxPreparedStatements = 1000

// preparedBudget refuses a statement of n bytes the session would keep
// under name (the unnamed statement replaces the one before; adds: it
// would be one more) past PB1, with 54000.
func (s *session) preparedBudget(name string, n int, adds bool) error {
	if s.principal.Role == access.Admin {
		return nil
	}
	count, held := len(s.sqlPrepared), 0
	for k, p := range s.stmts {
		if k != "" {
			count++
		}
		if k != name {
			held += p.textBytes
		}
	}
	for k, sp := range s.sqlPrepared {
		if "\x00sql "+k != name {
			held += len(sp.sql)
		}
	}
	if adds && count >= maxPreparedStatements {
		return pgErrorf(codes.ProgramLimitExceeded, "this session keeps %d prepared statements, the most it may; DEALLOCATE or close some", count)
	}
	if budget := 2 * s.srv.cfg.MaxMessageBytes; held+n > budget {
		return pgErrorf(codes.ProgramLimitExceeded, "this session's prepared statements would hold %d bytes of text, more than its %d (twice the server's --max-message-bytes); DEALLOCATE or close some", held+n, budget)
	}
	return nil
}

func (s *session) prepare(ctx context.Context, name string, st pgsql.Statement, oids []uint32) (*prepared, error) {
	return s.prepareAs(ctx, name, st, oids, true)
}

// prepareAs prepares st; allowNative false keeps it on DuckDB even when it
// has a native shape (the query of a cursor or a COPY, which runs through a
// DuckDB portal).
func (s *session) prepareAs(ctx context.Context, name string, st pgsql.Statement, oids []uint32, allowNative bool) (*prepared, error) {
	if d := pgsql.NestingDepth(st.Tokens); d > pgsql.MaxNesting {
		// before any rewrite walks it (pgsql.MaxNesting), for every role
		return nil, pgErrorf(codes.StatementTooComplex, "statement too complex: parentheses and brackets nested %d levels deep, at most %d", d, pgsql.MaxNesting)
	}
	c := classify(st)
	p := &prepared{name: name, class: c}
	switch c.kind {
	case kindShow:
		p.returnsRows = true
		if c.param == "all" {
			p.cols = []column{{name: "name", typ: textCol}, {name: "setting", typ: textCol}, {name: "description", typ: textCol}}
		} else {
			p.cols = []column{{name: c.param, typ: textCol}}
		}
	case kindDeclare, kindCopyOut:
		inner, err := s.prepareAs(ctx, "", c.inner, oids, false)
		if err != nil {
			return nil, err
		}
		if inner.class.kind != kindDuck {
			s.releaseStatement(inner)
			return nil, pgErrorf(codes.FeatureNotSupported, "%s needs a query", c.tag)
		}
		// and the inner query's NULL-unsafe $n: Bind checks the outer
		// statement's, and a NULL bound into DECLARE or COPY (...) TO
		// STDOUT of domain_datasets($1) aborted the server
		p.inner, p.paramOIDs, p.paramDuck, p.nullUnsafe = inner, inner.paramOIDs, inner.paramDuck, inner.nullUnsafe
		p.toDuck, p.clientOIDs = inner.toDuck, inner.clientOIDs
	case kindFetch:
		if err := s.prepareFetch(p); err != nil {
			return nil, err
		}
	case kindDuck:
		var nc *nativeCall
		sig := st.Significant()
		if name, ok := preparesName(sig); ok {
			// a SQL PREPARE keeps a statement in DuckDB as a Parse does
			_, replaces := s.sqlPrepared[name]
			if err := s.preparedBudget("\x00sql "+name, len(st.SQL), !replaces); err != nil {
				return nil, err
			}
		}
		natives := s.srv.nativeFunctions()
		var keywords map[string]bool
		if allowNative && natives != nil {
			// nil if DuckDB could not list them: then no bare alias, nor an
			// unaliased aggregate of a column, is native (matchNative)
			keywords, _ = s.srv.engine.keywords(ctx)
			var err error
			if nc, err = matchNative(sig, natives, s.srv.cfg.NativeViews, keywords); err != nil {
				return nil, err
			}
			if nc != nil && !nc.declaredAlike(oids) {
				nc = nil // DuckDB casts the client's type (declaredAs)
			}
			if nc == nil {
				nc = matchConstant(sig, keywords)
			}
			if nc == nil {
				nc = s.matchSessionValues(sig, keywords)
			}
		}
		// a view's point lookup becomes its index function's call
		// (Config.PointLookups) before the parameters are typed by it,
		// and may then be a native call; a native shape above needs none
		// of this
		var lookedUp []pgsql.Token
		if nc == nil {
			// a $n declared as text narrows no lookup: the narrow
			// function's BIGINT takes any integer the text reads as,
			// where the view's INTEGER column refuses one past int4
			integer := func(n int) bool { return declaredAs(oids, n, oidInt8) }
			lookedUp = pgsql.PointLookups(pgsql.Rewrite(st.Tokens), s.srv.cfg.PointLookups, integer)
			if allowNative && len(s.srv.cfg.PointLookups) > 0 {
				var err error
				if nc, err = matchNative(pgsql.Significant(lookedUp), natives, s.srv.cfg.NativeViews, keywords); err != nil {
					return nil, err
				}
				if nc != nil && !nc.declaredAlike(oids) {
					nc = nil
				}
			}
		}
		if nc != nil {
			p.native, p.src = nc, st
			if err := p.describeNative(oids); err != nil {
				return nil, err
			}
			return p, nil
		}
		unsafe, err := nullUnsafeArgs(sig, s.srv.cfg.NullUnsafeFunctions)
		if err != nil {
			return nil, err
		}
		// DuckDB numbers its parameters 1..k and cannot bind a $2 without a
		// $1: a statement whose $n are not those is numbered afresh for it
		var duckOIDs []uint32
		if _, prepares := preparesName(sig); !prepares {
			// (a SQL PREPARE's $n are its body's, which DuckDB counts
			// when EXECUTE binds them)
			lookedUp, p.toDuck = denseParams(lookedUp, len(oids))
		}
		if p.toDuck != nil {
			if duckOIDs, err = paramsForDuck(p.toDuck, oids); err != nil {
				return nil, err
			}
			renumbered := map[int]bool{}
			for n := range unsafe {
				if n <= len(p.toDuck) && p.toDuck[n-1] > 0 {
					renumbered[p.toDuck[n-1]] = true
				}
			}
			unsafe = renumbered
		} else {
			duckOIDs = oids
		}
		p.nullUnsafe = unsafe
		p.argOIDs, p.argOnly = tableFunctionParams(pgsql.Significant(lookedUp), s.srv.cfg.TableFunctionArgs)
		duckToks := guardNullArgs(lookedUp, s.srv.cfg.NullUnsafeFunctions, s.srv.lookupFunctions)
		p.duckSQL = pgsql.Join(duckToks)
		// refused before DuckDB sees it (authorize.go); the native shapes
		// above are reader functions and need no check
		if err := s.authorize(ctx, p.duckSQL); err != nil {
			return nil, err
		}
		p.temps = s.tempsVersion
		epoch := s.srv.readEpoch() // before the bind, which may see a later one
		stmt, err := s.prepareDuck(ctx, p.duckSQL)
		if err != nil {
			return nil, err
		}
		p.stmt, p.vars, p.epoch = stmt.(*duckdb.Stmt), s.syncedVariables, epoch
		shape, err := s.shapeStatement(ctx, p.stmt, duckToks, p.argOIDs)
		if err != nil {
			p.stmt.Close()
			return nil, err
		}
		typing, err := s.typingStatement(ctx, p.stmt, duckToks, p.argOIDs)
		if err != nil {
			p.stmt.Close()
			if shape != nil {
				shape.Close()
			}
			return nil, err
		}
		err = p.describeDuck(duckOIDs, shape, typing)
		if err == nil && p.toDuck != nil && len(p.paramOIDs) != slices.Max(p.toDuck) {
			// DuckDB counts other parameters than the statement's $n:
			// the two numberings cannot be matched (N1)
			err = pgErrorf(codes.FeatureNotSupported, "DuckDB counts %d parameters in this statement, which uses %d of its $n", len(p.paramOIDs), slices.Max(p.toDuck))
		}
		if err == nil && p.toDuck != nil {
			p.clientOIDs = make([]uint32, len(p.toDuck))
			for i, d := range p.toDuck {
				if d > 0 {
					p.clientOIDs[i] = p.paramOIDs[d-1]
				} else {
					p.clientOIDs[i] = oids[i] // declared (paramsForDuck)
				}
			}
		}
		if shape != nil {
			shape.Close()
		}
		if typing != nil {
			typing.Close()
		}
		if err != nil {
			p.stmt.Close()
			return nil, err
		}
		if len(executedNames(p.class.toks)) > 0 {
			// X1: DuckDB's statement of an EXECUTE uses the plan of the
			// PREPARE it names, which a later PREPARE or DEALLOCATE of the
			// name frees: running the kept statement then crashed the
			// process (SIGSEGV in duckdb_pending_prepared, a review in stop
			// 35), and E1 prepares names again. It is described now and
			// prepared afresh for each execution (openPortal).
			p.stmt.Close()
			p.stmt, p.fresh = nil, true
		}
	}
	if p.paramOIDs == nil {
		p.paramOIDs = oids
		if p.paramOIDs == nil {
			p.paramOIDs = []uint32{}
		}
	}
	return p, nil
}

// prepareDuck prepares sql in DuckDB under statement_timeout and cancels,
// as a statement runs: DuckDB's binder can take minutes (P5 and P6 bound
// what a non-admin's statement expands to; this bounds everyone's), and
// duckdb-go would not interrupt it.
func (s *session) prepareDuck(ctx context.Context, sql string) (driver.Stmt, error) {
	sctx, done, err := s.statementContext(ctx)
	if err != nil {
		return nil, err
	}
	stmt, err := duckcapi.Prepare(ctx, sctx, s.duck, sql)
	if sctx.Err() != nil {
		// 57014, as a statement's timeout or cancel; one that came as the
		// bind ended cancels the statement all the same, or it was lost
		// (TestCancelAndTerminateBackend lost 2 of 6 beside busy loops)
		if err == nil {
			stmt.Close()
		}
		stmt, err = nil, sctx.Err()
	}
	done()
	return stmt, err
}

// shapeStatement returns a second prepared statement that describes the
// result when DuckDB cannot describe stmt itself: a table function binds
// only once its arguments are known, so "SELECT * FROM domain_urls($1, $2,
// $3, $4)" prepares as one column of unknown type. Preparing the same SQL
// with every parameter replaced by a placeholder binds the function and reveals its
// columns (binding has no side effects: DHSI's table functions do their work
// when executed). nil means stmt describes itself. toks are the tokens stmt
// was prepared from; argOIDs types the parameters that are arguments of
// DHSI's table functions (Config.TableFunctionArgs).
func (s *session) shapeStatement(ctx context.Context, stmt *duckdb.Stmt, toks []pgsql.Token, argOIDs map[int]uint32) (*duckdb.Stmt, error) {
	if stmt.NumInput() == 0 {
		return nil, nil
	}
	if n, err := stmt.ColumnCount(); err != nil || n != 1 {
		return nil, nil
	}
	if t, err := stmt.ColumnType(0); err == nil && t != duckdb.TYPE_INVALID && t != duckdb.TYPE_ANY && t != duckdb.TYPE_SQLNULL {
		return nil, nil
	}
	subst := make([]pgsql.Token, len(toks))
	for i, t := range toks {
		if t.Kind == pgsql.Param {
			t = placeholderFor(t, argOIDs)
		}
		subst[i] = t
	}
	// under statement_timeout and cancels, as the first prepare
	alt, err := s.prepareDuck(ctx, pgsql.Join(subst))
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil, err
	}
	if err != nil {
		return nil, nil // keep DuckDB's own description
	}
	return alt.(*duckdb.Stmt), nil
}

// placeholderFor is the literal that stands for the parameter t in a
// statement prepared only to be described: not NULL (see
// Config.NullUnsafeFunctions); '0' for text, and 0 for an integer
// argument: DuckDB casts no string literal to a table function's INTEGER
// (domain_urls' dataset_id).
func placeholderFor(t pgsql.Token, argOIDs map[int]uint32) pgsql.Token {
	n, _ := strconv.Atoi(t.Text[1:])
	switch argOIDs[n] {
	case oidInt4, oidInt8:
		return pgsql.Token{Kind: pgsql.Number, Text: "0", Pos: t.Pos}
	}
	return pgsql.Token{Kind: pgsql.String, Text: "'0'", Pos: t.Pos}
}

// typingStatement returns a prepared statement that types the parameters
// DuckDB left untyped in stmt because a table function's argument was one
// of them: DuckDB binds such a function only once its arguments are
// known, so in "SELECT url FROM urls_by_domain($1) LIMIT $2" (a lookup,
// pgsql.PointLookups) $2 came back of no type, was described as text, and
// pgx refused to send an int for it. The function's arguments become
// literals (as in shapeStatement) and the whole is wrapped so that each
// still names its $n, typed as the argument: "SELECT * FROM (…) AS t WHERE
// $1::VARCHAR IS NULL OR true". nil where there is nothing to type, or
// where DuckDB refuses the wrapper (then the untyped $n stay text).
func (s *session) typingStatement(ctx context.Context, stmt *duckdb.Stmt, toks []pgsql.Token, argOIDs map[int]uint32) (*duckdb.Stmt, error) {
	if len(argOIDs) == 0 || stmt.NumInput() == 0 {
		return nil, nil
	}
	untyped := false
	for i := 1; i <= stmt.NumInput(); i++ {
		if t, err := stmt.ParamType(i); (err != nil || t == duckdb.TYPE_INVALID || t == duckdb.TYPE_ANY) && argOIDs[i] == 0 {
			untyped = true
		}
	}
	first := pgsql.NextSignificant(toks, -1)
	if !untyped || first < 0 || !(toks[first].Is("SELECT") || toks[first].Is("WITH")) {
		return nil, nil
	}
	body := make([]pgsql.Token, 0, len(toks))
	for _, t := range toks {
		if n, _ := strconv.Atoi(strings.TrimPrefix(t.Text, "$")); t.Kind == pgsql.Param && argOIDs[n] != 0 {
			t = placeholderFor(t, argOIDs) // the others keep their $n
		}
		if t.Text == ";" {
			continue
		}
		body = append(body, t)
	}
	var keep []string
	for n, oid := range argOIDs {
		typ := "VARCHAR"
		switch oid {
		case oidInt4:
			typ = "INTEGER"
		case oidInt8:
			typ = "BIGINT"
		}
		keep = append(keep, fmt.Sprintf("$%d::%s IS NULL", n, typ))
	}
	slices.Sort(keep)
	sql := "SELECT * FROM (" + pgsql.Join(body) + ") AS dhsi_typing WHERE " + strings.Join(keep, " OR ") + " OR true"
	alt, err := s.prepareDuck(ctx, sql)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil, err
	}
	if err != nil {
		return nil, nil
	}
	typing := alt.(*duckdb.Stmt)
	if typing.NumInput() != stmt.NumInput() {
		typing.Close()
		return nil, nil
	}
	return typing, nil
}

// describeDuck fills parameter and result types from the DuckDB prepared
// statement (typing, when set, types the parameters it leaves untyped:
// typingStatement).
func (p *prepared) describeDuck(clientOIDs []uint32, shape, typing *duckdb.Stmt) error {
	n := p.stmt.NumInput()
	p.paramOIDs = make([]uint32, n)
	p.paramDuck = make([]duckdb.Type, n)
	for i := 0; i < n; i++ {
		t, err := p.stmt.ParamType(i + 1)
		if err != nil {
			t = duckdb.TYPE_INVALID
		}
		if _, arg := p.argOIDs[i+1]; typing != nil && !arg && (t == duckdb.TYPE_INVALID || t == duckdb.TYPE_ANY) {
			if tt, err := typing.ParamType(i + 1); err == nil && tt != duckdb.TYPE_INVALID && tt != duckdb.TYPE_ANY {
				t = tt
			}
		}
		p.paramDuck[i] = t
		if i < len(clientOIDs) && clientOIDs[i] != 0 {
			p.paramOIDs[i] = clientOIDs[i]
			continue
		}
		p.paramOIDs[i] = paramOIDOf(t)
		if oid, ok := p.argOIDs[i+1]; ok && (t == duckdb.TYPE_INVALID || t == duckdb.TYPE_ANY) {
			p.paramOIDs[i] = oid
		}
		if t == duckdb.TYPE_LIST || t == duckdb.TYPE_ARRAY {
			// an array of the element's type, so clients send e.g. int4[]
			if elem, ok := pgTypeByOID(paramOIDOf(paramListElem(p.stmt, i+1))); ok && elem.Array != 0 {
				p.paramOIDs[i] = elem.Array
			}
		}
	}
	st, _ := p.stmt.StatementType()
	if st == duckdb.STATEMENT_TYPE_CALL && n > 0 && shape == nil {
		// DuckDB binds a table function only once its arguments are known, so
		// it cannot describe the result here; running it to find out would run
		// a procedure's side effects for a result the client cannot accept
		return &Error{Severity: "ERROR", Code: codes.FeatureNotSupported,
			Message: "CALL with $n parameters is not supported: the procedure's result cannot be described before its arguments are known",
			Hint:    "pass the arguments as literals, e.g. CALL compact_shard('5e')"}
	}
	p.duckType = st
	desc := p.stmt
	if shape != nil {
		desc = shape
	}
	count, err := desc.ColumnCount()
	if err != nil {
		return err
	}
	cols := make([]column, count)
	for i := range cols {
		name, _ := desc.ColumnName(i)
		cols[i] = column{name: name, typ: duckColumnType(desc, i)}
	}
	switch st {
	case duckdb.STATEMENT_TYPE_SELECT, duckdb.STATEMENT_TYPE_EXPLAIN, duckdb.STATEMENT_TYPE_PRAGMA,
		duckdb.STATEMENT_TYPE_CALL, duckdb.STATEMENT_TYPE_RELATION, duckdb.STATEMENT_TYPE_EXECUTE,
		duckdb.STATEMENT_TYPE_LOGICAL_PLAN:
		p.returnsRows = count > 0
	case duckdb.STATEMENT_TYPE_INSERT, duckdb.STATEMENT_TYPE_UPDATE, duckdb.STATEMENT_TYPE_DELETE:
		// without RETURNING DuckDB reports a single "Count" column
		if count == 1 && cols[0].name == "Count" {
			p.dml = true
		} else {
			p.returnsRows = count > 0
		}
	}
	if p.returnsRows {
		p.cols = cols
		p.plan = len(cols) == 2 && cols[0].name == "explain_key" && cols[1].name == "explain_value"
	}
	return nil
}

func (s *session) rowDescription(cols []column, formats []int16) *pgproto3.RowDescription {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, c := range cols {
		fields[i] = pgproto3.FieldDescription{
			Name:                 []byte(c.name),
			TableOID:             c.table,
			TableAttributeNumber: uint16(c.attnum),
			DataTypeOID:          c.typ.OID,
			DataTypeSize:         c.typ.Len,
			TypeModifier:         c.typ.Typmod,
			Format:               formatFor(formats, i),
		}
	}
	return &pgproto3.RowDescription{Fields: fields}
}

// sendRowDescription queues p's RowDescription in formats, encoded once
// for as long as p's columns and the formats asked for stay the same.
func (s *session) sendRowDescription(p *prepared, formats []int16) {
	same := p.described != nil && len(p.descCols) == len(p.cols) &&
		(len(p.cols) == 0 || &p.descCols[0] == &p.cols[0]) && slices.Equal(p.descFormats, formats)
	if !same {
		b, err := s.rowDescription(p.cols, formats).Encode(nil)
		if err != nil {
			s.queued(nil, err)
			return
		}
		p.descCols, p.descFormats, p.described = p.cols, slices.Clone(formats), b
	}
	s.out = append(s.out, p.described...)
}

func formatFor(formats []int16, i int) int16 {
	switch len(formats) {
	case 0:
		return 0
	case 1:
		return formats[0]
	}
	if i < len(formats) {
		return formats[i]
	}
	return 0
}

// ---- executing ----

// run executes (or resumes) a portal, sending at most maxRows rows when
// maxRows > 0, then PortalSuspended or CommandComplete.
func (s *session) run(ctx context.Context, pt *portal, maxRows int64) error {
	obs := s.srv.cfg.Observer
	if obs == nil {
		return s.runStatement(ctx, pt, maxRows)
	}
	start := time.Now()
	err := s.runStatement(ctx, pt, maxRows)
	kind := statementKind(pt.stmt)
	if pt.twin != nil {
		kind = "duckdb" // a native statement's twin ran (nativetwin.go)
	}
	obs.Statement(kind, time.Since(start), err != nil)
	return err
}

// statementKind names a statement's path for metrics (a bounded set).
func statementKind(p *prepared) string {
	switch p.class.kind {
	case kindDuck:
		if p.native != nil {
			return "native:" + p.native.name
		}
		return "duckdb"
	case kindDeclare, kindFetch, kindCloseCursor:
		return "cursor"
	case kindCopyOut:
		return "copy"
	}
	return "session"
}

func (s *session) runStatement(ctx context.Context, pt *portal, maxRows int64) error {
	p := pt.stmt
	if pt.done {
		// PostgreSQL answers a re-executed, completed portal with an empty result
		s.send(&pgproto3.CommandComplete{CommandTag: []byte(pt.tag)})
		return nil
	}
	if s.tx == txFailed && p.class.kind != kindRollback && p.class.kind != kindCommit && p.class.kind != kindEmpty {
		return pgErrorf(codes.InFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block")
	}
	switch p.class.kind {
	case kindEmpty:
		s.send(&pgproto3.EmptyQueryResponse{})
		return nil
	case kindDuck:
		if p.native != nil {
			return s.runNativeOrTwin(ctx, pt, maxRows)
		}
		return s.runDuck(ctx, pt, maxRows)
	case kindDeclare:
		return s.runDeclare(ctx, pt)
	case kindFetch:
		return s.runFetch(ctx, pt)
	case kindCloseCursor:
		return s.runCloseCursor(pt)
	case kindCopyOut:
		return s.runCopyOut(ctx, pt)
	}
	tag, rows, err := s.runSessionStatement(ctx, p.class)
	if err != nil {
		return err
	}
	for _, r := range rows {
		vals := make([][]byte, len(r))
		for i, v := range r {
			vals[i] = []byte(v)
		}
		s.sendDataRow(vals)
	}
	s.complete(pt, tag)
	return nil
}

func (s *session) complete(pt *portal, tag string) {
	pt.done, pt.tag = true, tag
	s.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
}

// statementContext derives the context of one statement: cancellable by a
// CancelRequest and bounded by statement_timeout.
func (s *session) statementContext(ctx context.Context) (context.Context, context.CancelFunc, error) {
	var cancel context.CancelFunc
	var timeout time.Duration
	if ms, _ := s.settings.get("statement_timeout"); ms != "0" && ms != "" {
		d, _ := strconv.ParseInt(ms, 10, 64)
		timeout = time.Duration(d) * time.Millisecond
	}
	if cap := s.limits().StatementTimeout; cap > 0 && (timeout == 0 || timeout > cap) {
		timeout = cap // the role's ceiling (limits.go)
	}
	ctx = withStatementMemo(ctx, s.srv.cfg.NativeRowLimit) // stmtmemo.go; N1
	if timeout > 0 && s.spent > 0 {
		timeout = max(timeout-s.spent, time.Nanosecond) // a twin's: nativetwin.go
	}
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	s.mu.Lock()
	s.running = cancel
	if s.cancelPending {
		// a cancel arrived after the statement began but before it could
		// be interrupted: it applies now
		s.cancelPending = false
		cancel()
	}
	s.mu.Unlock()
	release, err := s.acquireSlot(ctx)
	done := func() {
		s.mu.Lock()
		s.running = nil
		s.mu.Unlock()
		cancel()
	}
	if err != nil {
		done()
		return nil, nil, err
	}
	return ctx, func() { release(); done() }, nil
}

// cancelRunning interrupts the statement in flight, if any (CancelRequest).
func (s *session) cancelRunning() {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.running != nil:
		s.running()
	case s.act.state == "active", s.awaitingTurn:
		s.cancelPending = true // between the message and its statement (awaitingTurn: F4)
	}
}

func (s *session) runDuck(ctx context.Context, pt *portal, maxRows int64) error {
	p := pt.stmt
	if pt.rows == nil {
		rowsOpened, err := s.openPortal(ctx, pt)
		if err != nil || !rowsOpened {
			return err
		}
	}
	pt.resumed = 0
	n, more, err := s.sendRows(pt, maxRows, pt.formats)
	pt.resumed = n
	if err != nil {
		return err
	}
	if more {
		s.send(&pgproto3.PortalSuspended{})
		return nil
	}
	s.closePortalResult(pt)
	// like PostgreSQL, the tag counts the rows of this Execute, not the
	// portal's total
	s.complete(pt, duckCommandTag(p.class.toks, pt.resumed, true))
	return nil
}

// openPortal runs a portal's DuckDB statement. A statement without rows
// completes here (CommandComplete sent, false returned); one with rows
// leaves its result open on pt.rows for sendRows.
func (s *session) openPortal(ctx context.Context, pt *portal) (bool, error) {
	p := pt.stmt
	if p.temps != s.tempsVersion {
		if err := s.recheckExpansion(ctx, p.duckSQL); err != nil { // P5, P6
			return false, err
		}
		p.temps = s.tempsVersion
	}
	epoch := s.srv.readEpoch()
	// the variables (prepared.vars) or what the session may read (E1)
	// changed since the plan was bound
	rebind := p.vars != s.syncedVariables || p.epoch != epoch
	if s.principal.Role != access.Admin {
		// checked at Parse, but DEALLOCATE may have ended the record since:
		// what runs must be what P5, P6 and E1 know (sqlPrepare)
		if err := s.requireRecord(p.class.toks); err != nil {
			return false, err
		}
	}
	if len(s.sqlPrepared) > 0 {
		// DuckDB's EXECUTE runs the plan its PREPARE bound (E1), and so
		// does EXPLAIN ANALYZE EXECUTE; a statement of an EXECUTE may hold
		// that plan too, so it is prepared again after
		for _, name := range executedNames(p.class.toks) {
			again, err := s.reprepareSQL(ctx, name, epoch)
			if err != nil {
				return false, err
			}
			rebind = rebind || again
		}
	}
	if !p.busy && !p.fresh && rebind {
		st, err := s.prepareDuck(ctx, p.duckSQL)
		if err != nil {
			return false, err
		}
		p.stmt.Close()
		p.stmt, p.vars, p.epoch = st.(*duckdb.Stmt), s.syncedVariables, epoch
	}
	stmt := p.stmt
	// another portal holds a result on the shared statement, or the
	// statement keeps none (X1)
	if p.busy || p.fresh {
		st, err := s.prepareDuck(ctx, p.duckSQL)
		if err != nil {
			return false, err
		}
		if p.fresh && p.returnsRows && !sameColumns(st.(*duckdb.Stmt), p.cols) {
			// the PREPARE it runs was replaced by one of another shape
			// since the client was told this one's (X1); PostgreSQL's
			// words for the same case
			st.Close()
			return false, pgErrorf(codes.FeatureNotSupported, "cached plan must not change result type")
		}
		pt.own = st.(*duckdb.Stmt)
		stmt = pt.own
	}
	qctx, done, err := s.statementContext(ctx)
	if err != nil {
		if pt.own != nil {
			pt.own.Close()
			pt.own = nil
		}
		return false, err
	}
	if !p.returnsRows {
		res, err := stmt.ExecContext(qctx, pt.params)
		done()
		if pt.own != nil { // nothing more to read from it (X1)
			pt.own.Close()
			pt.own = nil
		}
		if err != nil {
			return false, err
		}
		s.notePrepared(p, epoch) // a SQL PREPARE, now that DuckDB holds it
		n, _ := res.RowsAffected()
		s.complete(pt, duckCommandTag(p.class.toks, n, false))
		return false, nil
	}
	rows, err := stmt.QueryContext(qctx, pt.params)
	if err != nil {
		done()
		return false, err
	}
	if got := len(rows.Columns()); got != len(p.cols) {
		// DuckDB could not describe the result before the parameters were
		// known (e.g. a table function taking $1); the client was already
		// told another shape, so the rows cannot be sent
		rows.Close()
		done()
		return false, &Error{Severity: "ERROR", Code: codes.FeatureNotSupported,
			Message: fmt.Sprintf("the result of this statement has %d columns, but before its parameters were bound DuckDB described %d", got, len(p.cols)),
			Hint:    "pass this argument as a literal instead of a $n parameter (or use the simple query protocol)"}
	}
	pt.rows, pt.cancel = rows, done
	if stmt == p.stmt && !p.fresh {
		p.busy = true
	}
	return true, nil
}

// duckColumnType is how column i of stmt's result is sent.
func duckColumnType(stmt *duckdb.Stmt, i int) colType {
	if columnIsJSON(stmt, i) {
		// duckdb-go hands JSON values over parsed; encode them back
		return colType{OID: oidJSON, Typmod: -1, Len: -1, kind: kJSON}
	}
	info, err := stmt.ColumnTypeInfo(i)
	if err != nil {
		info = nil
	}
	return colTypeOf(info)
}

// sameColumns reports whether stmt's result has the columns' types, as
// describeDuck computed them.
func sameColumns(stmt *duckdb.Stmt, cols []column) bool {
	n, err := stmt.ColumnCount()
	if err != nil || n != len(cols) {
		return false
	}
	for i, c := range cols {
		if duckColumnType(stmt, i).OID != c.typ.OID {
			return false
		}
	}
	return true
}

// reprepareSQL runs the SQL PREPARE of name again if DuckDB bound it
// before epoch and still holds it (E1; DuckDB replaces a statement of the
// same name), and reports whether it did. It runs as the PREPARE did: P6
// and P5 on its text against the TEMP definitions as they are now, and
// DuckDB's bind under statement_timeout and cancels (prepareDuck).
func (s *session) reprepareSQL(ctx context.Context, name string, epoch uint64) (bool, error) {
	sp, ok := s.sqlPrepared[name]
	if !ok || sp.epoch == epoch {
		return false, nil
	}
	// a PREPARE DuckDB refused, or one DEALLOCATE ended, stays ended;
	// names compared as DuckDB does (preparedKey)
	var live bool
	rows, err := s.duck.QueryContext(ctx, "SELECT name FROM duckdb_prepared_statements()", nil)
	if err != nil {
		return false, err
	}
	dest := make([]driver.Value, 1)
	for rows.Next(dest) == nil {
		if n, ok := dest[0].(string); ok && asciiLower(n) == name {
			live = true
		}
	}
	rows.Close()
	if !live {
		delete(s.sqlPrepared, name)
		return false, nil
	}
	if err := s.recheckExpansion(ctx, sp.sql); err != nil { // P6, P5
		return false, err
	}
	st, err := s.prepareDuck(ctx, sp.sql)
	if err != nil {
		return false, err
	}
	defer st.Close()
	sctx, done, err := s.statementContext(ctx)
	if err != nil {
		return false, err
	}
	_, err = st.(driver.StmtExecContext).ExecContext(sctx, nil)
	done()
	if err != nil {
		return false, err
	}
	sp.epoch = epoch
	s.sqlPrepared[name] = sp
	return true, nil
}

// sendRows sends DataRows from the portal's open result, at most maxRows
// when maxRows > 0, encoded in formats. It reports how many it sent and
// whether rows remain.
func (s *session) sendRows(pt *portal, maxRows int64, formats []int16) (int64, bool, error) {
	p := pt.stmt
	loc := s.settings.location()
	dest := make([]driver.Value, len(p.cols))
	var hide []string // H2: a plan's host directories, for a non-admin
	if p.plan {
		hide = s.hostDirsToHide()
	}
	var n int64
	for {
		if maxRows > 0 && n >= maxRows {
			return n, true, nil
		}
		err := pt.rows.Next(dest)
		if err == io.EOF {
			return n, false, nil
		}
		if err != nil {
			return n, false, err
		}
		if hide != nil {
			for i, v := range dest {
				if text, ok := v.(string); ok {
					dest[i] = hideHostDirsIn(text, hide)
				}
			}
		}
		if err := s.queueRow(p.cols, formats, dest, loc); err != nil {
			return n, false, err
		}
		n++
		if err := s.spill(); err != nil {
			return n, false, err
		}
	}
}

func (s *session) closePortalResult(pt *portal) {
	if pt.twin != nil {
		s.closePortalResult(pt.twin)
	}
	if pt.rows != nil {
		pt.rows.Close()
		pt.rows = nil
		if pt.own == nil {
			pt.stmt.busy = false
		}
	}
	if pt.cancel != nil {
		pt.cancel()
		pt.cancel = nil
	}
	if pt.own != nil {
		pt.own.Close()
		pt.own = nil
	}
}

func (s *session) closePortal(pt *portal) {
	s.closePortalResult(pt)
	if cur, ok := s.portals[pt.name]; ok && cur == pt {
		delete(s.portals, pt.name)
	}
	if pt.bound {
		pt.bound = false
		pt.stmt.refs--
		s.releaseStatement(pt.stmt)
	}
}

func (s *session) releaseStatement(p *prepared) {
	if p.refs > 0 || !(p.closed || s.stmts[p.name] != p) {
		return
	}
	if p.stmt != nil {
		p.stmt.Close()
		p.stmt = nil
	}
	if tw := p.twin; tw != nil {
		// its portals are the native statement's, closed before it
		p.twin, tw.closed = nil, true
		s.releaseStatement(tw)
	}
	if inner := p.inner; inner != nil {
		// a cursor may still read from the inner statement: it goes when
		// its last portal does
		p.inner = nil
		inner.closed = true
		s.releaseStatement(inner)
	}
}

func (s *session) closePortals() {
	for _, pt := range s.portals {
		s.closePortal(pt)
	}
}

// closeTransactionPortals closes the portals that end with a transaction:
// all but WITH HOLD cursors.
func (s *session) closeTransactionPortals() {
	for _, pt := range s.portals {
		if !pt.hold {
			s.closePortal(pt)
		}
	}
}

func (s *session) closeAll() {
	s.closePortals()
	for name, p := range s.stmts {
		delete(s.stmts, name)
		p.closed = true
		s.releaseStatement(p)
	}
	if s.tx != txIdle || s.implicit {
		_, _ = s.duck.ExecContext(context.Background(), "ROLLBACK", nil)
	}
	s.duck.Close()
}

// eachCallToken calls fn for every token inside the parentheses of a call
// to a function that want accepts, with the function's name, the index of
// the top-level argument the token belongs to, and its depth (1: the
// argument itself, more: nested inside it). An error from fn stops the walk.
func eachCallToken(toks []pgsql.Token, want func(name string) bool, fn func(name string, arg, depth int, t pgsql.Token) error) error {
	for i := 0; i+1 < len(toks); i++ {
		// a quoted name too: DuckDB matches function names without regard
		// to case or quotes, and "domain_datasets"(NULL) once aborted the
		// server past a check of bare names
		name, ok := identName(toks[i])
		if !ok || toks[i+1].Text != "(" || !want(name) {
			continue
		}
		arg, depth := 0, 0
	walk:
		for j := i + 1; j < len(toks); j++ {
			switch toks[j].Text {
			case "(":
				depth++
				continue
			case ")":
				depth--
				if depth == 0 {
					break walk
				}
				continue
			case ",":
				if depth == 1 {
					arg++
					continue
				}
			}
			if err := fn(name, arg, depth, toks[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// nullUnsafeArgs finds calls of the named functions: a literal NULL argument
// is refused now, and the $n parameters among the arguments are returned so
// Bind can refuse NULL values for them.
func nullUnsafeArgs(toks []pgsql.Token, funcs []string) (map[int]bool, error) {
	var out map[int]bool
	err := eachCallToken(toks, func(name string) bool { return slices.Contains(funcs, name) }, func(name string, _, depth int, t pgsql.Token) error {
		if depth == 1 && t.Is("NULL") {
			return pgErrorf(codes.NullValueNotAllowed, "%s() does not take NULL arguments", name)
		}
		if t.Kind == pgsql.Param {
			n, _ := strconv.Atoi(t.Text[1:])
			if out == nil {
				out = map[int]bool{}
			}
			out[n] = true
		}
		return nil
	})
	return out, err
}

// tableFunctionParams maps $n parameters that stand directly as an
// argument of a known table function to that argument's type (oids), and
// lists those used nowhere else in toks (only): "SELECT $2 AS a FROM
// domain_urls($1, $2, 0, 2)" with $2 a varchar '01' must still select
// '01', so Bind converts only those (asArgument).
func tableFunctionParams(toks []pgsql.Token, sigs map[string][]uint32) (oids map[int]uint32, only map[int]bool) {
	asArg := map[int]int{}
	_ = eachCallToken(toks, func(name string) bool { _, ok := sigs[name]; return ok }, func(name string, arg, depth int, t pgsql.Token) error {
		if sig := sigs[name]; depth == 1 && t.Kind == pgsql.Param && arg < len(sig) {
			n, _ := strconv.Atoi(t.Text[1:])
			if oids == nil {
				oids = map[int]uint32{}
			}
			oids[n] = sig[arg]
			asArg[n]++
		}
		return nil
	})
	if oids == nil {
		return nil, nil
	}
	uses := map[int]int{}
	for _, t := range toks {
		if t.Kind == pgsql.Param {
			n, _ := strconv.Atoi(t.Text[1:])
			uses[n]++
		}
	}
	only = map[int]bool{}
	for n, k := range asArg {
		if uses[n] == k {
			only[n] = true
		}
	}
	return oids, only
}

// Type OIDs for TableFunctionArgs.
const (
	OIDText = oidText
	OIDInt4 = oidInt4
	OIDInt8 = oidInt8
)
