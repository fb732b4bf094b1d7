package sqlserver_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// paramCase is one Go value a client binds and what it must read back.
type paramCase struct {
	name string
	typ  string // the SQL type of the cast and of the table column
	arg  any
	want any // decoded like typeCase.want
	// binaryOnly: pgx's simple protocol cannot encode the Go value without
	// a server-chosen type (it interpolates the SQL client-side).
	binaryOnly bool
	// castInText: with the simple protocol the INSERT casts its parameter.
	// pgx interpolates a []byte as '\x0001' and a slice as '{1,2}'; DuckDB
	// reads those uncast as VARCHAR and casts them its own way (the array
	// fails with 22P02, the bytea silently reads "\x00" as one byte and the
	// rest as text). With an explicit cast the server rewrites them.
	castInText bool
}

func paramCases() []paramCase {
	nyc, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	u := [16]byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, 0x00}
	return []paramCase{
		{name: "a bool binds as boolean", typ: "BOOLEAN", arg: true, want: true},
		{name: "an int16 binds as smallint", typ: "SMALLINT", arg: int16(-32768), want: int16(-32768)},
		{name: "an int32 binds as integer", typ: "INTEGER", arg: int32(math.MaxInt32), want: int32(math.MaxInt32)},
		{name: "an int64 binds as bigint", typ: "BIGINT", arg: int64(math.MinInt64), want: int64(math.MinInt64)},
		{name: "a float32 binds as real", typ: "REAL", arg: float32(1.25), want: float32(1.25)},
		{name: "a float64 binds as double", typ: "DOUBLE PRECISION", arg: 0.1, want: 0.1},
		{name: "a string binds as text", typ: "TEXT", arg: "héllo 'quoted' \\ back", want: "héllo 'quoted' \\ back"},
		{name: "an empty string is not NULL", typ: "VARCHAR", arg: "", want: ""},
		{name: "a byte slice binds as bytea", typ: "BYTEA", arg: []byte{0, 1, 0xfe, 0xff, '\\', 'x'}, want: []byte{0, 1, 0xfe, 0xff, '\\', 'x'}, castInText: true},
		{name: "a time binds as date", typ: "DATE", arg: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), want: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{name: "a time binds as timestamp", typ: "TIMESTAMP", arg: time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC), want: time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)},
		{name: "a zoned time binds as timestamptz", typ: "TIMESTAMPTZ", arg: time.Date(2024, 1, 2, 3, 4, 5, 654321000, nyc), want: time.Date(2024, 1, 2, 8, 4, 5, 654321000, time.UTC)},
		{name: "a pgtype.Numeric binds as numeric", typ: "NUMERIC(18,3)", arg: pgtype.Numeric{Int: big.NewInt(-12345678), Exp: -3, Valid: true}, want: numeric("-12345.678")},
		{name: "a decimal string binds as numeric", typ: "NUMERIC(38,10)", arg: "1234567890123456789012345678.0123456789", want: numeric("1234567890123456789012345678.0123456789")},
		{name: "a [16]byte binds as uuid", typ: "UUID", arg: u, want: "550e8400-e29b-41d4-a716-446655440000", binaryOnly: true},
		{name: "a pgtype.UUID binds as uuid", typ: "UUID", arg: pgtype.UUID{Bytes: u, Valid: true}, want: "550e8400-e29b-41d4-a716-446655440000"},
		{name: "a uuid string binds as uuid", typ: "UUID", arg: "550e8400-e29b-41d4-a716-446655440000", want: "550e8400-e29b-41d4-a716-446655440000"},
		{name: "an int32 slice binds as an integer list", typ: "INTEGER[]", arg: []int32{1, -2, 3}, want: []int32{1, -2, 3}, castInText: true},
		{name: "a string slice binds as a text list", typ: "TEXT[]", arg: []string{"a", "b,c", `"q"`, "", "NULL"}, want: []string{"a", "b,c", `"q"`, "", "NULL"}, castInText: true},
		{name: "an interval binds as interval", typ: "INTERVAL", arg: pgtype.Interval{Months: 14, Days: -3, Microseconds: 4_500_000, Valid: true}, want: pgtype.Interval{Months: 14, Days: -3, Microseconds: 4_500_000, Valid: true}},
		{name: "nil binds as NULL", typ: "INTEGER", arg: nil, want: (*int32)(nil)},
	}
}

// paramModes are the two ways a client sends parameters.
var paramModes = []struct {
	name string
	mode pgx.QueryExecMode
}{
	{"binary", pgx.QueryExecModeCacheStatement}, // pgx's default
	{"text", pgx.QueryExecModeSimpleProtocol},   // interpolated client-side
}

func TestParametersRoundTrip(t *testing.T) {
	s := startServer(t)
	for _, m := range paramModes {
		t.Run(m.name, func(t *testing.T) {
			conn := s.connect(t, withMode(m.mode))
			for i, tc := range paramCases() {
				t.Run(tc.name, func(t *testing.T) {
					if tc.binaryOnly && m.mode == pgx.QueryExecModeSimpleProtocol {
						t.Skip("pgx cannot interpolate this Go type client-side")
					}
					ctx := ctxT(t)
					t.Run("select", func(t *testing.T) {
						rows, err := conn.Query(ctx, "SELECT $1::"+tc.typ, tc.arg)
						if err != nil {
							t.Fatal(err)
						}
						defer rows.Close()
						if !rows.Next() {
							t.Fatalf("no row: %v", rows.Err())
						}
						checkValue(t, rows, tc.want)
					})
					t.Run("insert", func(t *testing.T) {
						table := fmt.Sprintf("p_%s_%d", m.name, i)
						mustExec(t, conn, fmt.Sprintf("CREATE TABLE %s (id INTEGER, v %s)", table, tc.typ))
						param := "$2"
						if tc.castInText && m.mode == pgx.QueryExecModeSimpleProtocol {
							param = "$2::" + tc.typ
						}
						tag, err := conn.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, "+param+")", 1, tc.arg)
						if err != nil {
							t.Fatal(err)
						}
						if tag.String() != "INSERT 0 1" {
							t.Errorf("tag = %q, want INSERT 0 1", tag)
						}
						rows, err := conn.Query(ctx, "SELECT v FROM "+table+" WHERE id = $1", 1)
						if err != nil {
							t.Fatal(err)
						}
						defer rows.Close()
						if !rows.Next() {
							t.Fatalf("no row: %v", rows.Err())
						}
						checkValue(t, rows, tc.want)
					})
				})
			}
		})
	}
}

// TestParameterNotUTF8 sends a text parameter that is not UTF-8, in text
// and in binary format: PostgreSQL's 22021 naming the byte, not an internal
// error with no message, and the session goes on.
func TestParameterNotUTF8(t *testing.T) {
	s := startServer(t)
	for _, m := range []pgx.QueryExecMode{pgx.QueryExecModeExec, pgx.QueryExecModeDescribeExec} {
		conn := s.connect(t, withMode(m))
		ctx := ctxT(t)
		_, err := conn.Exec(ctx, "SELECT length($1::VARCHAR)", "a\xff\xfe.example")
		if pe := wantCode(t, err, "22021"); pe != nil && pe.Message != `invalid byte sequence for encoding "UTF8": 0xff` {
			t.Errorf("%v: message %q", m, pe.Message)
		}
		var one int
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("%v: the session after: %v", m, err)
		}
	}
}

// TestParametersNumberedAsTheClientDeclares: a statement that leaves a
// $n unused, or declares more types than it uses, takes its parameters
// as PostgreSQL does (paramnumbers.go N1, N2): DuckDB prepared "SELECT
// $2" with one parameter that no value reached, and Bind refused two
// values with 08P01.
func TestParametersNumberedAsTheClientDeclares(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	ctx := ctxT(t)
	pc := conn.PgConn()
	cases := []struct {
		sql      string
		declared []uint32
		values   []string
		params   []uint32 // as described
		want     string   // the first column, or the SQLSTATE
	}{
		{"SELECT $2::int + 1", []uint32{25, 23}, []string{"x", "5"}, []uint32{25, 23}, "6"},
		{"SELECT $1::int", []uint32{23, 25}, []string{"5", "x"}, []uint32{23, 25}, "5"},
		{"SELECT $3::varchar || $1::varchar", []uint32{25, 25, 25}, []string{"a", "b", "c"}, []uint32{25, 25, 25}, "ca"},
		{"SELECT $3::varchar || $1::varchar", []uint32{25, 23, 25}, []string{"a", "zz", "c"}, []uint32{25, 23, 25}, "22P02"}, // every value is decoded
		{"SELECT 1", []uint32{23}, []string{"5"}, []uint32{23}, "1"},                                                         // answered without DuckDB (describeNative)
		{"SELECT $2", nil, []string{"x", "y"}, nil, "42P18"},                                                                 // $1's type: PostgreSQL's error
		{"SELECT $1 || $3", []uint32{25}, []string{"x", "y", "z"}, nil, "42P18"},
	}
	for _, c := range cases {
		sd, err := pc.Prepare(ctx, "", c.sql, c.declared)
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != c.want {
				t.Errorf("%s %v: %v, want %s", c.sql, c.declared, err, c.want)
			}
			continue
		}
		if fmt.Sprint(sd.ParamOIDs) != fmt.Sprint(c.params) {
			t.Errorf("%s %v: parameters described as %v, want %v", c.sql, c.declared, sd.ParamOIDs, c.params)
		}
		values := make([][]byte, len(c.values))
		for i, v := range c.values {
			values[i] = []byte(v)
		}
		r := pc.ExecPrepared(ctx, "", values, nil, nil).Read()
		got := ""
		var pe *pgconn.PgError
		switch {
		case errors.As(r.Err, &pe):
			got = pe.Code
		case r.Err != nil:
			got = r.Err.Error()
		case len(r.Rows) == 1:
			got = string(r.Rows[0][0])
		}
		if got != c.want {
			t.Errorf("%s %v with %q: %q, want %q", c.sql, c.declared, c.values, got, c.want)
		}
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the session after: %v", err)
	}
}

// TestParameterNumbersPastABind: a $n no Bind can carry is DuckDB's to
// refuse, not a table of that many parameters (a $10000000000 exhausted
// the heap and ended the server: a review of denseParams), and a SQL
// PREPARE's $n, its body's, are left as they are.
func TestParameterNumbersPastABind(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	ctx := ctxT(t)
	for _, q := range []string{"SELECT $10000000000", "SELECT $9223372036854775807", "SELECT $1::int + $300000000"} {
		_, _ = conn.PgConn().Prepare(ctx, "", q, nil) // DuckDB's answer, whatever it is
		var one int
		if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("the session after %s: %v", q, err)
		}
	}
	if _, err := conn.PgConn().Prepare(ctx, "", "PREPARE zq AS SELECT $1::int", []uint32{23, 23}); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("PREPARE with declared types: %v", err)
		}
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the session after: %v", err)
	}
}
