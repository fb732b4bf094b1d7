package sqlserver_test

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// PostgreSQL type OIDs the tests expect on the wire.
const (
	oidBool        = 16
	oidBytea       = 17
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidBoolArr     = 1000
	oidInt4Arr     = 1007
	oidTextArr     = 1009
	oidInt8Arr     = 1016
	oidFloat8Arr   = 1022
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidDateArr     = 1182
	oidTimestampTZ = 1184
	oidInterval    = 1186
	oidTimeTZ      = 1266
	oidNumeric     = 1700
	oidUUID        = 2950
)

// numeric is an expected numeric value, compared by value (scale-free) after
// decoding into pgtype.Numeric.
type numeric string

// jsonText is an expected json document, compared after unmarshalling both
// sides.
type jsonText string

// typeCase is one DuckDB value and what a PostgreSQL client must see.
type typeCase struct {
	name string
	expr string // a SQL expression selected alone
	oid  uint32
	// want is the decoded Go value; its type is the scan destination.
	// A typed nil pointer expects SQL NULL.
	want any
	// text is the exact text-format value (simple protocol); "" skips the
	// check unless emptyText.
	text      string
	emptyText bool
	// timeZone is set for the session while the case runs.
	timeZone string
	// describedOID, when set, is the oid an extended-protocol client is told
	// in advance: DuckDB's JSON type is a VARCHAR alias that a prepared
	// statement does not reveal, so a described statement reports text (the
	// values are still JSON text); only an executed result knows json.
	describedOID uint32
}

func ptr[T any](v T) *T { return &v }

func typeCases() []typeCase {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC)
	return []typeCase{
		{name: "true is a bool", expr: "true", oid: oidBool, want: true, text: "t"},
		{name: "false is a bool", expr: "false", oid: oidBool, want: false, text: "f"},
		{name: "a NULL boolean is a NULL bool", expr: "NULL::BOOLEAN", oid: oidBool, want: (*bool)(nil)},

		{name: "TINYINT travels as int2", expr: "(-128)::TINYINT", oid: oidInt2, want: int16(-128), text: "-128"},
		{name: "SMALLINT travels as int2", expr: "(-32768)::SMALLINT", oid: oidInt2, want: int16(-32768), text: "-32768"},
		{name: "INTEGER travels as int4", expr: "2147483647::INTEGER", oid: oidInt4, want: int32(2147483647), text: "2147483647"},
		{name: "BIGINT minimum travels as int8", expr: "(-9223372036854775808)::BIGINT", oid: oidInt8, want: int64(math.MinInt64), text: "-9223372036854775808"},
		{name: "UTINYINT maximum fits int2", expr: "255::UTINYINT", oid: oidInt2, want: int16(255), text: "255"},
		{name: "USMALLINT maximum fits int4", expr: "65535::USMALLINT", oid: oidInt4, want: int32(65535), text: "65535"},
		{name: "UINTEGER maximum fits int8", expr: "4294967295::UINTEGER", oid: oidInt8, want: int64(4294967295), text: "4294967295"},
		{name: "UBIGINT maximum travels as numeric", expr: "18446744073709551615::UBIGINT", oid: oidNumeric, want: numeric("18446744073709551615"), text: "18446744073709551615"},
		{name: "a small UBIGINT travels as numeric", expr: "7::UBIGINT", oid: oidNumeric, want: numeric("7"), text: "7"},
		{name: "HUGEINT minimum travels as numeric", expr: "(-170141183460469231731687303715884105728)::HUGEINT", oid: oidNumeric, want: numeric("-170141183460469231731687303715884105728"), text: "-170141183460469231731687303715884105728"},
		{name: "UHUGEINT maximum travels as numeric", expr: "340282366920938463463374607431768211455::UHUGEINT", oid: oidNumeric, want: numeric("340282366920938463463374607431768211455"), text: "340282366920938463463374607431768211455"},
		{name: "a VARINT travels as numeric", expr: "'-123456789012345678901234567890123456789012'::VARINT", oid: oidNumeric, want: numeric("-123456789012345678901234567890123456789012"), text: "-123456789012345678901234567890123456789012"},
		{name: "a NULL integer is a NULL int4", expr: "NULL::INTEGER", oid: oidInt4, want: (*int32)(nil)},
		{name: "a NULL TINYINT is a NULL int2", expr: "NULL::TINYINT", oid: oidInt2, want: (*int16)(nil)},
		{name: "a NULL USMALLINT is a NULL int4", expr: "NULL::USMALLINT", oid: oidInt4, want: (*int32)(nil)},
		{name: "a NULL BIGINT is a NULL int8", expr: "NULL::BIGINT", oid: oidInt8, want: (*int64)(nil)},
		{name: "a NULL UBIGINT is a NULL numeric", expr: "NULL::UBIGINT", oid: oidNumeric, want: (*pgtype.Numeric)(nil)},
		{name: "a NULL HUGEINT is a NULL numeric", expr: "NULL::HUGEINT", oid: oidNumeric, want: (*pgtype.Numeric)(nil)},

		{name: "FLOAT travels as float4", expr: "1.5::FLOAT", oid: oidFloat4, want: float32(1.5), text: "1.5"},
		{name: "FLOAT 0.1 prints shortest", expr: "0.1::FLOAT", oid: oidFloat4, want: float32(0.1), text: "0.1"},
		{name: "DOUBLE NaN is NaN", expr: "'NaN'::DOUBLE", oid: oidFloat8, want: math.NaN(), text: "NaN"},
		{name: "DOUBLE infinity is Infinity", expr: "'Infinity'::DOUBLE", oid: oidFloat8, want: math.Inf(1), text: "Infinity"},
		{name: "DOUBLE minus infinity is -Infinity", expr: "'-Infinity'::DOUBLE", oid: oidFloat8, want: math.Inf(-1), text: "-Infinity"},
		{name: "DOUBLE 1e20 prints with an exponent", expr: "1e20::DOUBLE", oid: oidFloat8, want: 1e20, text: "1e+20"},
		{name: "DOUBLE 1e-5 prints with an exponent", expr: "1e-5::DOUBLE", oid: oidFloat8, want: 1e-5, text: "1e-05"},
		{name: "DOUBLE 0.1 prints shortest", expr: "0.1::DOUBLE", oid: oidFloat8, want: 0.1, text: "0.1"},
		{name: "a NULL FLOAT is a NULL float4", expr: "NULL::FLOAT", oid: oidFloat4, want: (*float32)(nil)},
		{name: "a NULL DOUBLE is a NULL float8", expr: "NULL::DOUBLE", oid: oidFloat8, want: (*float64)(nil)},

		{name: "DECIMAL(18,3) keeps its scale", expr: "123456789012345.678::DECIMAL(18,3)", oid: oidNumeric, want: numeric("123456789012345.678"), text: "123456789012345.678"},
		{name: "a negative DECIMAL(18,3) below one", expr: "(-0.001)::DECIMAL(18,3)", oid: oidNumeric, want: numeric("-0.001"), text: "-0.001"},
		{name: "DECIMAL(18,3) zero prints its scale", expr: "0::DECIMAL(18,3)", oid: oidNumeric, want: numeric("0"), text: "0.000"},
		{name: "DECIMAL(38,10) with all digits", expr: "1234567890123456789012345678.0123456789::DECIMAL(38,10)", oid: oidNumeric, want: numeric("1234567890123456789012345678.0123456789"), text: "1234567890123456789012345678.0123456789"},
		{name: "a negative DECIMAL(38,10)", expr: "(-98765.4321)::DECIMAL(38,10)", oid: oidNumeric, want: numeric("-98765.4321"), text: "-98765.4321000000"},
		{name: "DECIMAL(38,10) zero", expr: "0::DECIMAL(38,10)", oid: oidNumeric, want: numeric("0"), text: "0.0000000000"},
		{name: "a NULL DECIMAL is a NULL numeric", expr: "NULL::DECIMAL(18,3)", oid: oidNumeric, want: (*pgtype.Numeric)(nil)},

		{name: "VARCHAR keeps unicode", expr: "'héllo wörld ✓ 😀'", oid: oidText, want: "héllo wörld ✓ 😀", text: "héllo wörld ✓ 😀"},
		{name: "an empty VARCHAR is empty, not NULL", expr: "''::VARCHAR", oid: oidText, want: "", emptyText: true},
		{name: "a NULL VARCHAR is a NULL text", expr: "NULL::VARCHAR", oid: oidText, want: (*string)(nil)},

		{name: "BLOB travels as bytea", expr: `'\xDE\xAD\xBE\xEF\x00'::BLOB`, oid: oidBytea, want: []byte{0xde, 0xad, 0xbe, 0xef, 0}, text: `\xdeadbeef00`},
		{name: "an empty BLOB is an empty bytea", expr: "''::BLOB", oid: oidBytea, want: []byte{}, text: `\x`},
		{name: "a NULL BLOB is a NULL bytea", expr: "NULL::BLOB", oid: oidBytea, want: []byte(nil)},

		{name: "a leap day DATE", expr: "DATE '2024-02-29'", oid: oidDate, want: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), text: "2024-02-29"},
		{name: "the first DATE of the era", expr: "DATE '0001-01-01'", oid: oidDate, want: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), text: "0001-01-01"},
		{name: "a far future DATE", expr: "DATE '9999-12-31'", oid: oidDate, want: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), text: "9999-12-31"},
		{name: "a DATE before Christ", expr: "DATE '0044-03-15 (BC)'", oid: oidDate, want: time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC), text: "0044-03-15 BC"},
		{name: "DATE infinity", expr: "'infinity'::DATE", oid: oidDate, want: pgtype.Date{InfinityModifier: pgtype.Infinity, Valid: true}, text: "infinity"},
		{name: "DATE minus infinity", expr: "'-infinity'::DATE", oid: oidDate, want: pgtype.Date{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, text: "-infinity"},
		{name: "a NULL DATE is a NULL date", expr: "NULL::DATE", oid: oidDate, want: (*time.Time)(nil)},

		{name: "TIME keeps microseconds", expr: "TIME '12:34:56.789'", oid: oidTime, want: pgtype.Time{Microseconds: (12*3600+34*60+56)*1e6 + 789000, Valid: true}, text: "12:34:56.789"},
		{name: "TIME midnight", expr: "TIME '00:00:00'", oid: oidTime, want: pgtype.Time{Microseconds: 0, Valid: true}, text: "00:00:00"},
		// duckdb-go reads TIME '24:00:00' as midnight of the next day and
		// drops the day, so the end of the day arrives as 00:00:00.
		{name: "TIME 24:00:00 arrives as midnight", expr: "TIME '24:00:00'", oid: oidTime, want: pgtype.Time{Microseconds: 0, Valid: true}, text: "00:00:00"},
		{name: "a NULL TIME is a NULL time", expr: "NULL::TIME", oid: oidTime, want: pgtype.Time{}},
		{name: "TIMETZ keeps its offset", expr: "TIMETZ '12:34:56+05:30'", oid: oidTimeTZ, want: "12:34:56+05:30", text: "12:34:56+05:30"},
		{name: "TIMETZ west of Greenwich", expr: "TIMETZ '01:02:03.5-08'", oid: oidTimeTZ, want: "01:02:03.5-08", text: "01:02:03.5-08"},
		{name: "a NULL TIMETZ is a NULL timetz", expr: "NULL::TIMETZ", oid: oidTimeTZ, want: (*string)(nil)},

		{name: "TIMESTAMP keeps microseconds", expr: "TIMESTAMP '2024-01-02 03:04:05.123456'", oid: oidTimestamp, want: ts, text: "2024-01-02 03:04:05.123456"},
		{name: "TIMESTAMP_S travels as timestamp", expr: "TIMESTAMP_S '2024-01-02 03:04:05'", oid: oidTimestamp, want: ts.Truncate(time.Second), text: "2024-01-02 03:04:05"},
		{name: "TIMESTAMP_MS travels as timestamp", expr: "TIMESTAMP_MS '2024-01-02 03:04:05.123'", oid: oidTimestamp, want: ts.Truncate(time.Millisecond), text: "2024-01-02 03:04:05.123"},
		{name: "TIMESTAMP_NS is cut to microseconds", expr: "TIMESTAMP_NS '2024-01-02 03:04:05.123456789'", oid: oidTimestamp, want: ts, text: "2024-01-02 03:04:05.123456"},
		{name: "a TIMESTAMP before 1970", expr: "TIMESTAMP '1900-06-30 23:59:59'", oid: oidTimestamp, want: time.Date(1900, 6, 30, 23, 59, 59, 0, time.UTC), text: "1900-06-30 23:59:59"},
		{name: "TIMESTAMP infinity", expr: "'infinity'::TIMESTAMP", oid: oidTimestamp, want: pgtype.Timestamp{InfinityModifier: pgtype.Infinity, Valid: true}, text: "infinity"},
		{name: "TIMESTAMP minus infinity", expr: "'-infinity'::TIMESTAMP", oid: oidTimestamp, want: pgtype.Timestamp{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, text: "-infinity"},
		{name: "TIMESTAMP_S infinity", expr: "'infinity'::TIMESTAMP_S", oid: oidTimestamp, want: pgtype.Timestamp{InfinityModifier: pgtype.Infinity, Valid: true}, text: "infinity"},
		{name: "TIMESTAMP_S minus infinity", expr: "'-infinity'::TIMESTAMP_S", oid: oidTimestamp, want: pgtype.Timestamp{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, text: "-infinity"},
		{name: "TIMESTAMP_MS infinity", expr: "'infinity'::TIMESTAMP_MS", oid: oidTimestamp, want: pgtype.Timestamp{InfinityModifier: pgtype.Infinity, Valid: true}, text: "infinity"},
		{name: "TIMESTAMP_NS minus infinity", expr: "'-infinity'::TIMESTAMP_NS", oid: oidTimestamp, want: pgtype.Timestamp{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, text: "-infinity"},
		{name: "TIMESTAMPTZ infinity", expr: "'infinity'::TIMESTAMPTZ", oid: oidTimestampTZ, want: pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, text: "infinity"},
		{name: "a NULL TIMESTAMP_NS is a NULL timestamp", expr: "NULL::TIMESTAMP_NS", oid: oidTimestamp, want: (*time.Time)(nil)},
		{name: "a NULL TIMESTAMP is a NULL timestamp", expr: "NULL::TIMESTAMP", oid: oidTimestamp, want: (*time.Time)(nil)},
		{name: "TIMESTAMPTZ in UTC prints +00", expr: "TIMESTAMPTZ '2024-01-02 03:04:05.123456+00'", oid: oidTimestampTZ, want: ts, text: "2024-01-02 03:04:05.123456+00"},
		{name: "TIMESTAMPTZ prints in the session time zone", expr: "TIMESTAMPTZ '2024-01-02 03:04:05+00'", oid: oidTimestampTZ, want: ts.Truncate(time.Second), text: "2024-01-01 22:04:05-05", timeZone: "America/New_York"},
		{name: "TIMESTAMPTZ in summer time prints the summer offset", expr: "TIMESTAMPTZ '2024-07-01 12:00:00+00'", oid: oidTimestampTZ, want: time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC), text: "2024-07-01 08:00:00-04", timeZone: "America/New_York"},
		{name: "TIMESTAMPTZ in a half-hour zone prints minutes", expr: "TIMESTAMPTZ '2024-01-02 03:04:05+00'", oid: oidTimestampTZ, want: ts.Truncate(time.Second), text: "2024-01-02 08:34:05+05:30", timeZone: "Asia/Kolkata"},
		{name: "a TIMESTAMPTZ literal is read in the session time zone", expr: "TIMESTAMPTZ '2024-01-02 03:04:05'", oid: oidTimestampTZ, want: time.Date(2024, 1, 2, 8, 4, 5, 0, time.UTC), text: "2024-01-02 03:04:05-05", timeZone: "America/New_York"},
		{name: "a NULL TIMESTAMPTZ is a NULL timestamptz", expr: "NULL::TIMESTAMPTZ", oid: oidTimestampTZ, want: (*time.Time)(nil)},

		{name: "INTERVAL keeps months, days and microseconds apart", expr: "INTERVAL '1 year 2 months 3 days 04:05:06.789'", oid: oidInterval,
			want: pgtype.Interval{Months: 14, Days: 3, Microseconds: (4*3600+5*60+6)*1e6 + 789000, Valid: true}, text: "1 year 2 mons 3 days 04:05:06.789"},
		{name: "a negative INTERVAL", expr: "INTERVAL '-1 month -2 days -3 seconds'", oid: oidInterval,
			want: pgtype.Interval{Months: -1, Days: -2, Microseconds: -3e6, Valid: true}, text: "-1 mons -2 days -00:00:03"},
		{name: "a positive part after a negative one carries a plus", expr: "INTERVAL '-1 day 3 seconds'", oid: oidInterval,
			want: pgtype.Interval{Days: -1, Microseconds: 3e6, Valid: true}, text: "-1 days +00:00:03"},
		{name: "exactly one of a unit is singular", expr: "INTERVAL '1 year 1 month 1 day'", oid: oidInterval,
			want: pgtype.Interval{Months: 13, Days: 1, Valid: true}, text: "1 year 1 mon 1 day"},
		{name: "a zero INTERVAL", expr: "INTERVAL '0 seconds'", oid: oidInterval, want: pgtype.Interval{Valid: true}, text: "00:00:00"},
		{name: "a NULL INTERVAL is a NULL interval", expr: "NULL::INTERVAL", oid: oidInterval, want: pgtype.Interval{}},

		{name: "UUID travels as uuid", expr: "'550e8400-e29b-41d4-a716-446655440000'::UUID", oid: oidUUID, want: "550e8400-e29b-41d4-a716-446655440000", text: "550e8400-e29b-41d4-a716-446655440000"},
		{name: "a UUID with the high bit set", expr: "'ffffffff-0000-4000-8000-000000000001'::UUID", oid: oidUUID, want: "ffffffff-0000-4000-8000-000000000001", text: "ffffffff-0000-4000-8000-000000000001"},
		{name: "a NULL UUID is a NULL uuid", expr: "NULL::UUID", oid: oidUUID, want: (*string)(nil)},

		{name: "a LIST of integers is an int4 array", expr: "[1, 2, 3]::INTEGER[]", oid: oidInt4Arr, want: []int32{1, 2, 3}, text: "{1,2,3}"},
		{name: "a LIST of integers with a NULL", expr: "[1, NULL, 3]::INTEGER[]", oid: oidInt4Arr, want: []*int32{ptr(int32(1)), nil, ptr(int32(3))}, text: "{1,NULL,3}"},
		{name: "an empty LIST is an empty array", expr: "[]::INTEGER[]", oid: oidInt4Arr, want: []int32{}, text: "{}"},
		{name: "a LIST of BIGINT is an int8 array", expr: "[9223372036854775807]::BIGINT[]", oid: oidInt8Arr, want: []int64{math.MaxInt64}, text: "{9223372036854775807}"},
		{name: "a LIST of DOUBLE is a float8 array", expr: "[1.5, -0.25]::DOUBLE[]", oid: oidFloat8Arr, want: []float64{1.5, -0.25}, text: "{1.5,-0.25}"},
		{name: "a LIST of BOOLEAN is a bool array", expr: "[true, false]", oid: oidBoolArr, want: []bool{true, false}, text: "{t,f}"},
		{name: "a LIST of DATE is a date array", expr: "[DATE '2024-01-02']", oid: oidDateArr, want: []time.Time{time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)}, text: "{2024-01-02}"},
		{name: "a LIST of text quotes what array syntax needs",
			expr: `['plain', 'with "quote"', 'with,comma', NULL, '', 'NULL', 'back\slash', 'two words', '{braces}']`,
			oid:  oidTextArr,
			want: []*string{ptr("plain"), ptr(`with "quote"`), ptr("with,comma"), nil, ptr(""), ptr("NULL"), ptr(`back\slash`), ptr("two words"), ptr("{braces}")},
			text: `{plain,"with \"quote\"","with,comma",NULL,"","NULL","back\\slash","two words","{braces}"}`},
		{name: "a LIST of text decodes into []string", expr: "['a', 'b']", oid: oidTextArr, want: []string{"a", "b"}, text: "{a,b}"},
		{name: "a NULL LIST is a NULL array", expr: "NULL::INTEGER[]", oid: oidInt4Arr, want: []int32(nil)},

		{name: "a nested LIST travels as json", expr: "[[1, 2], [3]]", oid: oidJSON, want: jsonText("[[1,2],[3]]"), text: "[[1,2],[3]]"},
		{name: "a STRUCT travels as a json object", expr: "{'a': 1, 'b': 'x', 'c': NULL}", oid: oidJSON, want: jsonText(`{"a":1,"b":"x","c":null}`)},
		{name: "a MAP travels as a json object", expr: "MAP {'k1': 1, 'k2': 2}", oid: oidJSON, want: jsonText(`{"k1":1,"k2":2}`)},
		{name: "a LIST of STRUCT travels as json", expr: "[{'d': DATE '2024-01-02'}]", oid: oidJSON, want: jsonText(`[{"d":"2024-01-02"}]`)},
		{name: "a STRUCT keeps its field order", expr: "{'z': 1, 'a': [2.5, 3]}", oid: oidJSON, want: jsonText(`{"z":1,"a":[2.5,3.0]}`), text: `{"z":1,"a":[2.5,3.0]}`},
		{name: "a STRUCT quotes its strings as JSON", expr: `{'s': 'a"b<>\' || chr(10)}`, oid: oidJSON, want: jsonText(`{"s":"a\"b<>\\\n"}`), text: `{"s":"a\"b<>\\\n"}`},
		{name: "a timestamp inside a STRUCT is ISO 8601", expr: "{'t': TIMESTAMP '2024-01-02 03:04:05', 'tz': TIMESTAMPTZ '2024-01-02 03:04:05+00'}", oid: oidJSON, want: jsonText(`{"t":"2024-01-02T03:04:05","tz":"2024-01-02T03:04:05+00:00"}`), text: `{"t":"2024-01-02T03:04:05","tz":"2024-01-02T03:04:05+00:00"}`},
		{name: "a NaN inside a STRUCT is a JSON string", expr: "{'f': 'NaN'::DOUBLE, 'n': 1.25::DECIMAL(5,2)}", oid: oidJSON, want: jsonText(`{"f":"NaN","n":1.25}`), text: `{"f":"NaN","n":1.25}`},
		{name: "a MAP keeps its key order", expr: "MAP {'b': 1, 'a': 2}", oid: oidJSON, want: jsonText(`{"b":1,"a":2}`), text: `{"b":1,"a":2}`},
		{name: "a UNION travels as its member's JSON", expr: "union_value(n := 5)", oid: oidJSON, want: jsonText(`5`), text: `5`},
		{name: "a NULL MAP is a NULL json", expr: "NULL::MAP(VARCHAR, INTEGER)", oid: oidJSON, want: (*string)(nil)},
		{name: "a NULL STRUCT is a NULL json", expr: "NULL::STRUCT(a INTEGER)", oid: oidJSON, want: (*string)(nil)},

		{name: "an ENUM travels as text", expr: "'happy'::mood", oid: oidText, want: "happy", text: "happy"},
		{name: "a NULL ENUM is a NULL text", expr: "NULL::mood", oid: oidText, want: (*string)(nil)},
		{name: "a JSON object travels as json", expr: `'{"a": [1, 2], "b": "x"}'::JSON`, oid: oidJSON, want: jsonText(`{"a":[1,2],"b":"x"}`)},
		{name: "a JSON string keeps its quotes", expr: `'"str"'::JSON`, oid: oidJSON, want: jsonText(`"str"`), text: `"str"`},
		{name: "a JSON number stays a number", expr: `'42'::JSON`, oid: oidJSON, want: jsonText(`42`), text: `42`},
		{name: "a NULL JSON is a NULL json", expr: "NULL::JSON", oid: oidJSON, want: (*string)(nil)},
	}
}

// resultModes are the two ways a client receives values.
var resultModes = []struct {
	name string
	mode pgx.QueryExecMode
}{
	{"text", pgx.QueryExecModeSimpleProtocol},
	{"binary", pgx.QueryExecModeCacheDescribe},
}

func TestTypesDecodeInTextAndBinary(t *testing.T) {
	s := startServer(t)
	mustExec(t, s.connect(t), "CREATE TYPE mood AS ENUM ('sad', 'happy')")
	for _, m := range resultModes {
		t.Run(m.name, func(t *testing.T) {
			conn := s.connect(t, withMode(m.mode))
			for _, tc := range typeCases() {
				t.Run(tc.name, func(t *testing.T) {
					ctx := ctxT(t)
					if tc.timeZone != "" {
						mustExec(t, conn, "SET TimeZone = '"+tc.timeZone+"'")
						defer mustExec(t, conn, "RESET TimeZone")
					}
					q := "SELECT " + tc.expr + " AS v"
					rows, err := conn.Query(ctx, q)
					if err != nil {
						t.Fatalf("%s: %v", q, err)
					}
					wantOID := tc.oid
					if tc.describedOID != 0 && m.mode != pgx.QueryExecModeSimpleProtocol {
						wantOID = tc.describedOID
					}
					if got := rows.FieldDescriptions()[0].DataTypeOID; got != wantOID {
						rows.Close()
						t.Errorf("type oid = %d, want %d", got, wantOID)
						return
					}
					if !rows.Next() {
						rows.Close()
						t.Fatalf("no row: %v", rows.Err())
					}
					checkValue(t, rows, tc.want)
					rows.Close()
					if err := rows.Err(); err != nil {
						t.Fatal(err)
					}
					if m.mode == pgx.QueryExecModeSimpleProtocol && (tc.text != "" || tc.emptyText) {
						res, err := conn.PgConn().Exec(ctx, q).ReadAll()
						if err != nil {
							t.Fatal(err)
						}
						if got := string(res[0].Rows[0][0]); got != tc.text {
							t.Errorf("text = %q, want %q", got, tc.text)
						}
					}
				})
			}
		})
	}
}

// checkValue scans the current row's only column into a value of want's
// type and compares.
func checkValue(t *testing.T, rows pgx.Rows, want any) {
	t.Helper()
	switch w := want.(type) {
	case numeric:
		var n pgtype.Numeric
		if err := rows.Scan(&n); err != nil {
			t.Fatalf("scan: %v", err)
		}
		if !n.Valid {
			t.Fatalf("got NULL, want %s", w)
		}
		got := new(big.Rat).SetInt(n.Int)
		if n.Exp > 0 {
			got.Mul(got, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.Exp)), nil)))
		} else if n.Exp < 0 {
			got.Quo(got, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-n.Exp)), nil)))
		}
		wantR, _ := new(big.Rat).SetString(string(w))
		if got.Cmp(wantR) != 0 {
			t.Errorf("numeric = %s, want %s", got.FloatString(12), w)
		}
		return
	case jsonText:
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("scan: %v", err)
		}
		var got, exp any
		if err := json.Unmarshal([]byte(s), &got); err != nil {
			t.Fatalf("json %q: %v", s, err)
		}
		_ = json.Unmarshal([]byte(w), &exp)
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("json = %s, want %s", s, w)
		}
		return
	}
	dst := reflect.New(reflect.TypeOf(want))
	if err := rows.Scan(dst.Interface()); err != nil {
		t.Fatalf("scan into %T: %v", want, err)
	}
	got := dst.Elem().Interface()
	if !sameValue(got, want) {
		t.Errorf("value = %#v, want %#v", got, want)
	}
}

func sameValue(got, want any) bool {
	switch w := want.(type) {
	case float64:
		g := got.(float64)
		return g == w || (math.IsNaN(g) && math.IsNaN(w))
	case time.Time:
		return got.(time.Time).Equal(w)
	case []time.Time:
		g := got.([]time.Time)
		if len(g) != len(w) {
			return false
		}
		for i := range g {
			if !g[i].Equal(w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}
