package sqlserver_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dhsi/dhsi/sqlserver"
)

// rawClient speaks the protocol message by message, for what pgx does not
// expose (Execute with a row limit, Sync placement).
type rawClient struct {
	t    testing.TB
	conn net.Conn
	fe   *pgproto3.Frontend
}

func (s *testServer) raw(t testing.TB) *rawClient {
	t.Helper()
	return s.rawAs(t, "raw")
}

// rawAs is raw as user.
func (s *testServer) rawAs(t testing.TB, user string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", net.JoinHostPort(s.host, fmt.Sprint(s.port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawClient{t: t, conn: c, fe: pgproto3.NewFrontend(c, c)}
	rc.fe.Send(&pgproto3.StartupMessage{
		ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters:      map[string]string{"user": user, "database": "dhsi"},
	})
	got := rc.roundTrip()
	if got[len(got)-1] != "ReadyForQuery I" {
		t.Fatalf("start-up ended with %v", got)
	}
	return rc
}

// roundTrip sends msgs and returns a summary of every backend message up to
// and including ReadyForQuery. Messages are summarised at once because
// pgproto3 reuses them.
func (rc *rawClient) roundTrip(msgs ...pgproto3.FrontendMessage) []string {
	rc.t.Helper()
	for _, m := range msgs {
		rc.fe.Send(m)
	}
	if err := rc.fe.Flush(); err != nil {
		rc.t.Fatal(err)
	}
	var out []string
	for {
		_ = rc.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		msg, err := rc.fe.Receive()
		if err != nil {
			rc.t.Fatalf("receive after %v: %v", out, err)
		}
		switch m := msg.(type) {
		case *pgproto3.ParameterStatus, *pgproto3.BackendKeyData, *pgproto3.AuthenticationOk, *pgproto3.NoticeResponse:
			continue
		case *pgproto3.DataRow:
			vals := make([]string, len(m.Values))
			for i, v := range m.Values {
				vals[i] = string(v)
			}
			out = append(out, "DataRow "+strings.Join(vals, ","))
		case *pgproto3.CommandComplete:
			out = append(out, "CommandComplete "+string(m.CommandTag))
		case *pgproto3.ErrorResponse:
			out = append(out, "ErrorResponse "+m.Code)
		case *pgproto3.RowDescription:
			var names []string
			for _, f := range m.Fields {
				names = append(names, string(f.Name))
			}
			out = append(out, "RowDescription "+strings.Join(names, ","))
		case *pgproto3.ReadyForQuery:
			return append(out, "ReadyForQuery "+string(m.TxStatus))
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3."))
		}
	}
}

// dataRows is n DataRow summaries of consecutive integers from first.
func dataRows(first, n int) []string {
	var out []string
	for i := first; i < first+n; i++ {
		out = append(out, fmt.Sprintf("DataRow %d", i))
	}
	return out
}

func seq(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch x := p.(type) {
		case string:
			out = append(out, x)
		case []string:
			out = append(out, x...)
		}
	}
	return out
}

func wantMessages(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("messages\n got %q\nwant %q", got, want)
	}
}

// TestNativePortalSuspendsAsDuckDBsDoes: an Execute with a row limit over
// the native path answers message for message as over DuckDB's (and as
// PostgreSQL does): a portal that has sent its limit is suspended without a
// look for more, and the tag counts the rows of that Execute. The native
// path once completed a portal whose rows ran out at the limit, and tagged
// it with the portal's total.
func TestNativePortalSuspendsAsDuckDBsDoes(t *testing.T) {
	three := sqlserver.NativeFunction{
		Args:    []duckdb.Type{duckdb.TYPE_VARCHAR},
		Columns: []sqlserver.NativeColumn{{Name: "i", Type: duckdb.TYPE_BIGINT}},
		Run: func(context.Context, []any) ([][]any, error) {
			return [][]any{{int64(0)}, {int64(1)}, {int64(2)}}, nil
		},
	}
	s := startServer(t, func(c *sqlserver.Config) { c.NativeFunctions = map[string]sqlserver.NativeFunction{"three": three} })
	rc := s.raw(t)
	for _, limits := range [][]uint32{{3, 3}, {2, 0}, {0}, {1, 1, 1, 1}} {
		var answers [2][]string
		for k, query := range []string{"SELECT * FROM three($1)", "SELECT i FROM range(3::BIGINT + 0 * length($1)) t(i)"} {
			msgs := []pgproto3.FrontendMessage{&pgproto3.Parse{Query: query}, &pgproto3.Bind{Parameters: [][]byte{[]byte("x")}}}
			for _, n := range limits {
				msgs = append(msgs, &pgproto3.Execute{MaxRows: n})
			}
			answers[k] = rc.roundTrip(append(msgs, &pgproto3.Sync{})...)
		}
		if !slices.Equal(answers[0], answers[1]) {
			t.Errorf("Executes of at most %v rows: native %q, DuckDB %q", limits, answers[0], answers[1])
		}
	}
	// and the one row of an aggregate
	got := rc.roundTrip(&pgproto3.Parse{Query: "SELECT count(*) AS n FROM three($1)"}, &pgproto3.Bind{Parameters: [][]byte{[]byte("x")}},
		&pgproto3.Execute{MaxRows: 1}, &pgproto3.Execute{MaxRows: 1}, &pgproto3.Sync{})
	wantMessages(t, got, seq("ParseComplete", "BindComplete", "DataRow 3", "PortalSuspended", "CommandComplete SELECT 0", "ReadyForQuery I"))
}

func TestNamedStatementRunsManyTimesUntilDeallocated(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	ctx := ctxT(t)
	mustExec(t, conn, "CREATE TABLE n (i INTEGER)")
	sd, err := conn.Prepare(ctx, "ins", "INSERT INTO n VALUES ($1)")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sd.ParamOIDs, []uint32{oidInt4}) {
		t.Errorf("parameter oids = %v, want [%d]", sd.ParamOIDs, oidInt4)
	}
	for i := 1; i <= 5; i++ {
		tag, err := conn.Exec(ctx, "ins", i)
		if err != nil {
			t.Fatal(err)
		}
		if tag.String() != "INSERT 0 1" {
			t.Errorf("tag = %q", tag)
		}
	}
	var count, sum int64
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(i) FROM n").Scan(&count, &sum); err != nil {
		t.Fatal(err)
	}
	if count != 5 || sum != 15 {
		t.Errorf("count, sum = %d, %d; want 5, 15", count, sum)
	}
	if err := conn.Deallocate(ctx, "ins"); err != nil {
		t.Fatal(err)
	}
	err = conn.PgConn().ExecPrepared(ctx, "ins", [][]byte{[]byte("6")}, nil, nil).Read().Err
	wantCode(t, err, "26000")

	// DEALLOCATE as SQL closes a protocol-level statement too
	if _, err := conn.Prepare(ctx, "sel", "SELECT $1::INTEGER + 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PgConn().Exec(ctx, "DEALLOCATE sel").ReadAll(); err != nil {
		t.Fatal(err)
	}
	err = conn.PgConn().ExecPrepared(ctx, "sel", [][]byte{[]byte("1")}, nil, nil).Read().Err
	wantCode(t, err, "26000")
}

func TestPortalIsFetchedInChunks(t *testing.T) {
	s := startServer(t)
	rc := s.raw(t)
	query := "SELECT i FROM range(25) t(i)"

	t.Run("several Executes before one Sync", func(t *testing.T) {
		got := rc.roundTrip(
			&pgproto3.Parse{Query: query}, &pgproto3.Bind{},
			&pgproto3.Execute{MaxRows: 10}, &pgproto3.Execute{MaxRows: 10}, &pgproto3.Execute{MaxRows: 10},
			&pgproto3.Sync{})
		wantMessages(t, got, seq("ParseComplete", "BindComplete",
			dataRows(0, 10), "PortalSuspended", dataRows(10, 10), "PortalSuspended",
			dataRows(20, 5), "CommandComplete SELECT 5", "ReadyForQuery I"))
	})
	t.Run("outside a transaction Sync closes the portal", func(t *testing.T) {
		got := rc.roundTrip(&pgproto3.Parse{Query: query}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 10}, &pgproto3.Sync{})
		wantMessages(t, got, seq("ParseComplete", "BindComplete", dataRows(0, 10), "PortalSuspended", "ReadyForQuery I"))
		got = rc.roundTrip(&pgproto3.Execute{MaxRows: 10}, &pgproto3.Sync{})
		wantMessages(t, got, seq("ErrorResponse 34000", "ReadyForQuery I"))
	})
	t.Run("inside BEGIN a portal survives Sync and other statements", func(t *testing.T) {
		wantMessages(t, rc.roundTrip(&pgproto3.Query{String: "BEGIN"}), seq("CommandComplete BEGIN", "ReadyForQuery T"))
		got := rc.roundTrip(
			&pgproto3.Parse{Name: "s", Query: query},
			&pgproto3.Bind{PreparedStatement: "s", DestinationPortal: "c"},
			&pgproto3.Execute{Portal: "c", MaxRows: 10}, &pgproto3.Sync{})
		wantMessages(t, got, seq("ParseComplete", "BindComplete", dataRows(0, 10), "PortalSuspended", "ReadyForQuery T"))

		got = rc.roundTrip(&pgproto3.Execute{Portal: "c", MaxRows: 10}, &pgproto3.Sync{})
		wantMessages(t, got, seq(dataRows(10, 10), "PortalSuspended", "ReadyForQuery T"))

		// another query on the same session while the portal is open
		got = rc.roundTrip(&pgproto3.Query{String: "SELECT 42"})
		wantMessages(t, got, seq("RowDescription 42", "DataRow 42", "CommandComplete SELECT 1", "ReadyForQuery T"))

		got = rc.roundTrip(&pgproto3.Execute{Portal: "c"}, &pgproto3.Sync{})
		wantMessages(t, got, seq(dataRows(20, 5), "CommandComplete SELECT 5", "ReadyForQuery T"))
		wantMessages(t, rc.roundTrip(&pgproto3.Query{String: "COMMIT"}), seq("CommandComplete COMMIT", "ReadyForQuery I"))
	})
	t.Run("two portals of one statement are read alternately", func(t *testing.T) {
		wantMessages(t, rc.roundTrip(&pgproto3.Query{String: "BEGIN"}), seq("CommandComplete BEGIN", "ReadyForQuery T"))
		got := rc.roundTrip(
			&pgproto3.Parse{Name: "s2", Query: "SELECT i FROM range($1::BIGINT) t(i)"},
			&pgproto3.Bind{PreparedStatement: "s2", DestinationPortal: "a", Parameters: [][]byte{[]byte("3")}},
			&pgproto3.Bind{PreparedStatement: "s2", DestinationPortal: "b", Parameters: [][]byte{[]byte("4")}},
			&pgproto3.Execute{Portal: "a", MaxRows: 2}, &pgproto3.Execute{Portal: "b", MaxRows: 2},
			&pgproto3.Execute{Portal: "a"}, &pgproto3.Execute{Portal: "b"},
			&pgproto3.Sync{})
		wantMessages(t, got, seq("ParseComplete", "BindComplete", "BindComplete",
			dataRows(0, 2), "PortalSuspended", dataRows(0, 2), "PortalSuspended",
			dataRows(2, 1), "CommandComplete SELECT 1", dataRows(2, 2), "CommandComplete SELECT 2",
			"ReadyForQuery T"))
		wantMessages(t, rc.roundTrip(&pgproto3.Query{String: "COMMIT"}), seq("CommandComplete COMMIT", "ReadyForQuery I"))
	})
	t.Run("an error skips messages until Sync", func(t *testing.T) {
		got := rc.roundTrip(
			&pgproto3.Parse{Query: "SELECT * FROM nope"}, &pgproto3.Bind{}, &pgproto3.Execute{},
			&pgproto3.Sync{}, &pgproto3.Query{String: "SELECT 1"})
		wantMessages(t, got, seq("ErrorResponse 42P01", "ReadyForQuery I"))
		got = rc.roundTrip()
		wantMessages(t, got, seq("RowDescription 1", "DataRow 1", "CommandComplete SELECT 1", "ReadyForQuery I"))
	})
}

func TestSimpleQueryWithSeveralStatements(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	ctx := ctxT(t)

	t.Run("every statement returns its result", func(t *testing.T) {
		res, err := conn.PgConn().Exec(ctx, "CREATE TABLE x (a INTEGER); INSERT INTO x VALUES (1), (2); SELECT a FROM x ORDER BY a").ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var tags []string
		for _, r := range res {
			tags = append(tags, r.CommandTag.String())
		}
		if want := []string{"CREATE TABLE", "INSERT 0 2", "SELECT 2"}; !slices.Equal(tags, want) {
			t.Fatalf("tags = %q, want %q", tags, want)
		}
		if got := res[2].Rows; len(got) != 2 || string(got[0][0]) != "1" || string(got[1][0]) != "2" {
			t.Errorf("rows = %q", got)
		}
	})
	t.Run("a failure rolls back the earlier statements and skips the rest", func(t *testing.T) {
		mustExec(t, conn, "CREATE TABLE z (a INTEGER)")
		res, err := conn.PgConn().Exec(ctx, "CREATE TABLE y (a INTEGER); INSERT INTO z VALUES (1); INSERT INTO z VALUES ('x'); INSERT INTO z VALUES (3)").ReadAll()
		wantCode(t, err, "22P02")
		if len(res) < 2 || res[0].CommandTag.String() != "CREATE TABLE" || res[1].CommandTag.String() != "INSERT 0 1" {
			t.Errorf("results before the error: %d", len(res))
		}
		if conn.PgConn().TxStatus() != 'I' {
			t.Errorf("tx status = %c, want I", conn.PgConn().TxStatus())
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM z").Scan(&n); err != nil || n != 0 {
			t.Errorf("rows in z = %d, %v; want 0 (rolled back)", n, err)
		}
		_, err = conn.Exec(ctx, "SELECT * FROM y")
		wantCode(t, err, "42P01")
	})
	t.Run("an explicit transaction in the string is the client's", func(t *testing.T) {
		res, err := conn.PgConn().Exec(ctx, "BEGIN; INSERT INTO z VALUES (7); COMMIT; SELECT count(*) FROM z").ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res[3].Rows[0][0]); got != "1" {
			t.Errorf("count = %s, want 1", got)
		}
	})
	t.Run("an empty query answers EmptyQueryResponse", func(t *testing.T) {
		for _, q := range []string{"", ";", "  -- just a comment\n", "/* */ ;;"} {
			rc := s.raw(t)
			wantMessages(t, rc.roundTrip(&pgproto3.Query{String: q}), seq("EmptyQueryResponse", "ReadyForQuery I"))
			if _, err := conn.PgConn().Exec(ctx, q).ReadAll(); err != nil {
				t.Errorf("pgconn %q: %v", q, err)
			}
		}
	})
}

// wantCode fails unless err is a PostgreSQL error with SQLSTATE code.
func wantCode(t testing.TB, err error, code string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v, want SQLSTATE %s", err, code)
	}
	if pe.Code != code {
		t.Errorf("SQLSTATE = %s (%s), want %s", pe.Code, pe.Message, code)
	}
	return pe
}

func TestErrorsCarrySQLSTATEAndTheSessionGoesOn(t *testing.T) {
	s := startServer(t)
	cases := []struct {
		name string
		sql  string
		code string
	}{
		{"a syntax error is 42601", "SELEC 1", "42601"},
		{"an unknown table is 42P01", "SELECT * FROM no_such_table", "42P01"},
		{"an unknown column is 42703", "SELECT no_such_column FROM (SELECT 1 AS a) t", "42703"},
		{"an unknown function is 42883", "SELECT no_such_function(1)", "42883"},
		{"a duplicate primary key is 23505", "INSERT INTO uniq VALUES (1)", "23505"},
		{"a NULL in a NOT NULL column is 23502", "INSERT INTO nn VALUES (NULL)", "23502"},
		{"text that is not an integer is 22P02", "SELECT 'abc'::INTEGER", "22P02"},
		{"an out-of-range cast is 22003", "SELECT 100000::SMALLINT", "22003"},
		{"an unknown schema is 3F000", "SELECT * FROM no_such_schema.t", "3F000"},
		{"nextval past a sequence's MAXVALUE is 2200H, not an internal error", "SELECT nextval('sq'), nextval('sq'), nextval('sq')", "2200H"},
	}
	for _, m := range resultModes {
		t.Run(m.name, func(t *testing.T) {
			conn := s.connect(t, withMode(m.mode))
			mustExec(t, conn, "CREATE TEMP TABLE uniq (a INTEGER PRIMARY KEY)", "INSERT INTO uniq VALUES (1)",
				"CREATE TEMP TABLE nn (a INTEGER NOT NULL)", "CREATE TEMP SEQUENCE sq MAXVALUE 2")
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					ctx := ctxT(t)
					_, err := conn.Exec(ctx, tc.sql)
					pe := wantCode(t, err, tc.code)
					if pe.Severity != "ERROR" {
						t.Errorf("severity = %q, want ERROR", pe.Severity)
					}
					var one int
					if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
						t.Errorf("session after the error: %d, %v", one, err)
					}
				})
			}
		})
	}
}

// DuckDB never raises division_by_zero (22012) for arithmetic: / is float
// division (x/0 is ±Infinity or NaN) and integer // and % give NULL. The
// mapping of DuckDB's DivideByZero error type is covered in
// errors_internal_test.go.
func TestDivisionByZeroFollowsDuckDB(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	var f float64
	var i, m *int32
	if err := conn.QueryRow(ctxT(t), "SELECT 1/0, 1//0, 1%0").Scan(&f, &i, &m); err != nil {
		t.Fatal(err)
	}
	if f != f+1 || i != nil || m != nil { // f is +Inf
		t.Errorf("1/0, 1//0, 1%%0 = %v, %v, %v; want +Inf, NULL, NULL", f, i, m)
	}
}

func TestArrayParameterNeedsAType(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	ctx := ctxT(t)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM range(10) t(i) WHERE i = ANY($1::BIGINT[])", []int64{1, 2, 3, 42}).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("count = %d, want 3", n)
	}
	// Without the cast DuckDB cannot infer the parameter's type, so it is
	// described as text and pgx refuses to send a slice as text.
	err := conn.QueryRow(ctx, "SELECT count(*) FROM range(10) t(i) WHERE i = ANY($1)", []int64{1}).Scan(&n)
	if err == nil || !strings.Contains(err.Error(), "unable to encode") {
		t.Errorf("uncast array parameter: %v, want pgx's encode error", err)
	}
	// with the simple protocol an array literal is rewritten for DuckDB
	conn2 := s.connect(t, withMode(pgx.QueryExecModeSimpleProtocol))
	var got []string
	if err := conn2.QueryRow(ctx, `SELECT '{a,"b,c",NULL,"",it''s}'::TEXT[]`).Scan(&got); err == nil {
		t.Errorf("a NULL element should not scan into []string: %q", got)
	}
	var gotp []*string
	if err := conn2.QueryRow(ctx, `SELECT '{a,"b,c",NULL,"",it''s}'::TEXT[]`).Scan(&gotp); err != nil {
		t.Fatal(err)
	}
	if len(gotp) != 5 || *gotp[0] != "a" || *gotp[1] != "b,c" || gotp[2] != nil || *gotp[3] != "" || *gotp[4] != "it's" {
		t.Errorf("array literal = %v", gotp)
	}
}

// binaryInt4Array encodes a one-dimensional int4[] in PostgreSQL's binary
// format; nil elements are NULL.
func binaryInt4Array(elems ...*int32) []byte {
	var b []byte
	be32 := func(v uint32) { b = append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v)) }
	hasNull := uint32(0)
	for _, e := range elems {
		if e == nil {
			hasNull = 1
		}
	}
	be32(1)
	be32(hasNull)
	be32(oidInt4)
	be32(uint32(len(elems)))
	be32(1)
	for _, e := range elems {
		if e == nil {
			be32(0xFFFFFFFF)
			continue
		}
		be32(4)
		be32(uint32(*e))
	}
	return b
}

func TestBinaryArrayParameters(t *testing.T) {
	s := startServer(t)
	rc := s.raw(t)
	one, three := int32(1), int32(3)
	arr := binaryInt4Array(&one, nil, &three)
	for _, tc := range []struct {
		name  string
		query string
		oids  []uint32
	}{
		{"the server describes the list parameter as int4[]", "SELECT $1::INTEGER[] AS a", nil},
		{"the client names int4[] itself", "SELECT $1::INTEGER[] AS a", []uint32{oidInt4Arr}},
		{"a BIGINT list takes int4 elements", "SELECT $1::BIGINT[] AS a", []uint32{oidInt4Arr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rc.roundTrip(
				&pgproto3.Parse{Query: tc.query, ParameterOIDs: tc.oids},
				&pgproto3.Describe{ObjectType: 'S'},
				&pgproto3.Bind{ParameterFormatCodes: []int16{1}, Parameters: [][]byte{arr}},
				&pgproto3.Execute{}, &pgproto3.Sync{})
			wantMessages(t, got, seq("ParseComplete", "ParameterDescription", "RowDescription a", "BindComplete", "DataRow {1,NULL,3}", "CommandComplete SELECT 1", "ReadyForQuery I"))
		})
	}
	got := rc.roundTrip(&pgproto3.Query{String: "SELECT 1"})
	wantMessages(t, got, seq("RowDescription 1", "DataRow 1", "CommandComplete SELECT 1", "ReadyForQuery I"))
}

// TestPortalDescribedInItsFormats: a statement described at each
// execution (libpq's PQexecPrepared) says each portal's result formats,
// although the server encodes its RowDescription once while the formats
// asked for stay the same (sendRowDescription).
func TestPortalDescribedInItsFormats(t *testing.T) {
	s := startServer(t)
	rc := s.raw(t)
	rc.fe.Send(&pgproto3.Parse{Name: "q", Query: "SELECT 41 + 1 AS n, 'x' AS s"})
	for _, formats := range [][]int16{nil, nil, {1}, {1}, {0, 1}, nil} {
		rc.fe.Send(&pgproto3.Bind{PreparedStatement: "q", ResultFormatCodes: formats})
		rc.fe.Send(&pgproto3.Describe{ObjectType: 'P'})
		rc.fe.Send(&pgproto3.Execute{})
		rc.fe.Send(&pgproto3.Sync{})
		if err := rc.fe.Flush(); err != nil {
			t.Fatal(err)
		}
		var described []int16
		var n []byte
		for done := false; !done; {
			_ = rc.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			msg, err := rc.fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			switch m := msg.(type) {
			case *pgproto3.RowDescription:
				for _, f := range m.Fields {
					described = append(described, f.Format)
				}
			case *pgproto3.DataRow:
				n = slices.Clone(m.Values[0])
			case *pgproto3.ErrorResponse:
				t.Fatalf("formats %v: %s", formats, m.Message)
			case *pgproto3.ReadyForQuery:
				done = true
			}
		}
		want := []int16{0, 0}
		for i := range want {
			if len(formats) == 1 {
				want[i] = formats[0]
			} else if i < len(formats) {
				want[i] = formats[i]
			}
		}
		if !slices.Equal(described, want) {
			t.Errorf("formats %v: described as %v, want %v", formats, described, want)
		}
		if wantN := map[int16]string{0: "42", 1: "\x00\x00\x00\x2a"}[want[0]]; string(n) != wantN {
			t.Errorf("formats %v: n sent as %q, want %q", formats, n, wantN)
		}
	}
}
