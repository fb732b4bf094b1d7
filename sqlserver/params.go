package sqlserver

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// paramOIDOf maps the parameter type DuckDB inferred for a prepared
// statement to the OID reported in ParameterDescription. Unknown types are
// reported as text, as PostgreSQL does for untyped parameters: the client then
// sends text and DuckDB casts it.
func paramOIDOf(t duckdb.Type) uint32 {
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return oidBool
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_UTINYINT:
		return oidInt2
	case duckdb.TYPE_INTEGER, duckdb.TYPE_USMALLINT:
		return oidInt4
	case duckdb.TYPE_BIGINT, duckdb.TYPE_UINTEGER:
		return oidInt8
	case duckdb.TYPE_UBIGINT, duckdb.TYPE_HUGEINT, duckdb.TYPE_UHUGEINT, duckdb.TYPE_DECIMAL, duckdb.TYPE_BIGNUM:
		return oidNumeric
	case duckdb.TYPE_FLOAT:
		return oidFloat4
	case duckdb.TYPE_DOUBLE:
		return oidFloat8
	case duckdb.TYPE_BLOB:
		return oidBytea
	case duckdb.TYPE_DATE:
		return oidDate
	case duckdb.TYPE_TIME:
		return oidTime
	case duckdb.TYPE_TIME_TZ:
		return oidTimeTZ
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_S, duckdb.TYPE_TIMESTAMP_MS, duckdb.TYPE_TIMESTAMP_NS:
		return oidTimestamp
	case duckdb.TYPE_TIMESTAMP_TZ:
		return oidTimestampTZ
	case duckdb.TYPE_INTERVAL:
		return oidInterval
	case duckdb.TYPE_UUID:
		return oidUUID
	}
	return oidText
}

// oidFamily groups the parameter types whose text the native path and
// DuckDB read alike: the integers (each parsed as an integer, then
// compared by value), and the strings. Any other type stands alone.
func oidFamily(oid uint32) uint32 {
	switch oid {
	case oidInt2, oidInt4, oidInt8:
		return oidInt8
	case oidText, oidVarchar, oidName, oidBpchar:
		return oidText
	}
	return oid
}

// declaredAs reports whether the client left $n's type to the server
// (Parse's oid 0, or none) or declared it of the family of want. A $n
// declared otherwise (a varchar for an integer column: JDBC's setString)
// is cast by DuckDB to the type it needs by DuckDB's own rules ('1.5' to
// the INTEGER 2, '0x10' to 16, '4294967297' refused), which no other
// path copies: such a statement goes to DuckDB whole (session.parse).
func declaredAs(clientOIDs []uint32, n int, want uint32) bool {
	if n < 1 || n > len(clientOIDs) || clientOIDs[n-1] == 0 {
		return true
	}
	return oidFamily(clientOIDs[n-1]) == oidFamily(want)
}

// asArgument is the bound value v of a $n that is a table function's
// argument of type argOID (prepared.argOIDs), where the client declared
// the $n another type: an int8 (JDBC's setLong), a varchar or a numeric
// for an INTEGER argument. DuckDB's binder never narrows a value, so
// domain_urls(VARCHAR, BIGINT, …) failed with 42883 where the native path,
// which converts the value to the argument's type (convertArg, twinParams),
// answered. This converts it with convertArg too where it converts, so
// both paths answer alike; a value it refuses is left to DuckDB to refuse.
func asArgument(v any, argOID uint32) any {
	t := duckdb.TYPE_INTEGER
	switch argOID {
	case oidInt4:
	case oidInt8:
		t = duckdb.TYPE_BIGINT
	default:
		return v
	}
	if c, err := convertArg(v, t); err == nil {
		return c
	}
	return v
}

// decodeParam turns one Bind parameter into a Go value duckdb-go binds.
// Values whose DuckDB binding would lose information (dates, timestamps,
// numerics) are passed as their canonical text and cast by DuckDB to the
// parameter's type, which is exact.
func decodeParam(oid uint32, format int16, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if format == 0 {
		if err := validUTF8(data); err != nil {
			return nil, err
		}
		return decodeTextParam(oid, string(data))
	}
	if format != 1 {
		return nil, pgErrorf(codes.ProtocolViolation, "unsupported parameter format code %d", format)
	}
	bad := func() error {
		return pgErrorf(codes.InvalidBinaryRepresentation, "invalid binary value of %d bytes for parameter type oid %d", len(data), oid)
	}
	fixed := func(n int) bool { return len(data) == n }
	switch oid {
	case oidBool:
		if !fixed(1) {
			return nil, bad()
		}
		return data[0] != 0, nil
	case oidInt2:
		if !fixed(2) {
			return nil, bad()
		}
		return int64(int16(binary.BigEndian.Uint16(data))), nil
	case oidInt4:
		if !fixed(4) {
			return nil, bad()
		}
		return int32(binary.BigEndian.Uint32(data)), nil // int32, not int64: DuckDB matches table-function signatures exactly
	case oidOid:
		if !fixed(4) {
			return nil, bad()
		}
		return int64(binary.BigEndian.Uint32(data)), nil
	case oidInt8:
		if !fixed(8) {
			return nil, bad()
		}
		return int64(binary.BigEndian.Uint64(data)), nil
	case oidFloat4:
		if !fixed(4) {
			return nil, bad()
		}
		return float64(math.Float32frombits(binary.BigEndian.Uint32(data))), nil
	case oidFloat8:
		if !fixed(8) {
			return nil, bad()
		}
		return math.Float64frombits(binary.BigEndian.Uint64(data)), nil
	case oidBytea:
		return append([]byte(nil), data...), nil
	case oidText, oidVarchar, oidName, oidChar, oidJSON, oidUnknown, 0:
		if err := validUTF8(data); err != nil {
			return nil, err
		}
		return string(data), nil
	case oidJSONB:
		if len(data) < 1 || data[0] != 1 {
			return nil, bad()
		}
		if err := validUTF8(data[1:]); err != nil {
			return nil, err
		}
		return string(data[1:]), nil
	case oidUUID:
		if !fixed(16) {
			return nil, bad()
		}
		s, _ := uuidString(data)
		return s, nil
	case oidDate:
		if !fixed(4) {
			return nil, bad()
		}
		days := int32(binary.BigEndian.Uint32(data))
		return string(appendBC(appendDate(nil, pgEpoch.AddDate(0, 0, int(days))), pgEpoch.AddDate(0, 0, int(days)))), nil
	case oidTime:
		if !fixed(8) {
			return nil, bad()
		}
		us := int64(binary.BigEndian.Uint64(data))
		return string(appendClock(nil, time.UnixMicro(us).UTC())), nil
	case oidTimestamp, oidTimestampTZ:
		if !fixed(8) {
			return nil, bad()
		}
		us := int64(binary.BigEndian.Uint64(data))
		t := pgEpoch.Add(time.Duration(us) * time.Microsecond)
		b := appendClock(append(appendDate(nil, t), ' '), t)
		if oid == oidTimestampTZ {
			b = append(b, "+00"...)
		}
		return string(appendBC(b, t)), nil
	case oidInterval:
		if !fixed(16) {
			return nil, bad()
		}
		return duckdb.Interval{
			Micros: int64(binary.BigEndian.Uint64(data)),
			Days:   int32(binary.BigEndian.Uint32(data[8:])),
			Months: int32(binary.BigEndian.Uint32(data[12:])),
		}, nil
	case oidNumeric:
		s, err := decodeNumericBinary(data)
		if err != nil {
			return nil, bad()
		}
		return s, nil
	}
	if pt, ok := pgTypeByOID(oid); ok && pt.Elem != 0 {
		return decodeArrayBinary(data)
	}
	return nil, pgErrorf(codes.FeatureNotSupported, "binary parameters of type oid %d are not supported; send them in text format", oid)
}

// validUTF8 refuses text that is not UTF-8, the server's only encoding, in
// PostgreSQL's words: DuckDB would fail on it later with an empty message.
func validUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	i := 0
	for i < len(b) {
		r, w := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && w <= 1 {
			break
		}
		i += w
	}
	return invalidByte(b[i])
}

// invalidByte is PostgreSQL's error for a byte its encoding refuses.
func invalidByte(b byte) error {
	return pgErrorf(codes.CharacterNotInRepertoire, `invalid byte sequence for encoding "UTF8": 0x%02x`, b)
}

func decodeTextParam(oid uint32, s string) (any, error) {
	switch oid {
	case oidBytea:
		if strings.HasPrefix(s, `\x`) {
			b, err := hex.DecodeString(s[2:])
			if err != nil {
				return nil, pgErrorf(codes.InvalidTextRepresentation, "invalid hexadecimal data in bytea parameter")
			}
			return b, nil
		}
		return []byte(s), nil
	case oidBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "y", "yes", "on", "1":
			return true, nil
		case "f", "false", "n", "no", "off", "0":
			return false, nil
		}
		return nil, pgErrorf(codes.InvalidTextRepresentation, "invalid input syntax for type boolean: %q", s)
	case oidInt2, oidInt4, oidInt8, oidOid:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, pgErrorf(codes.InvalidTextRepresentation, "invalid input syntax for type integer: %q", s)
		}
		if oid == oidInt4 && n == int64(int32(n)) {
			return int32(n), nil // DuckDB matches table-function signatures exactly
		}
		return n, nil
	case oidFloat4, oidFloat8:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, pgErrorf(codes.InvalidTextRepresentation, "invalid input syntax for type double precision: %q", s)
		}
		return f, nil
	}
	return s, nil
}

// decodeNumericBinary renders PostgreSQL's binary numeric as a decimal
// string.
func decodeNumericBinary(b []byte) (string, error) {
	if len(b) < 8 {
		return "", fmt.Errorf("short numeric")
	}
	ndigits := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	if len(b) != 8+2*ndigits {
		return "", fmt.Errorf("bad numeric length")
	}
	switch sign {
	case 0xC000:
		return "NaN", nil
	case 0xD000:
		return "Infinity", nil
	case 0xF000:
		return "-Infinity", nil
	}
	digits := make([]int, ndigits)
	for i := range digits {
		digits[i] = int(binary.BigEndian.Uint16(b[8+2*i:]))
	}
	var sb strings.Builder
	if sign == 0x4000 {
		sb.WriteByte('-')
	}
	// integer part: groups 0..weight
	if weight < 0 {
		sb.WriteByte('0')
	} else {
		for i := 0; i <= weight; i++ {
			d := 0
			if i < ndigits {
				d = digits[i]
			}
			if i == 0 {
				sb.WriteString(strconv.Itoa(d))
			} else {
				fmt.Fprintf(&sb, "%04d", d)
			}
		}
	}
	if dscale > 0 {
		var frac strings.Builder
		for i := weight + 1; frac.Len() < dscale; i++ {
			d := 0
			if i >= 0 && i < ndigits {
				d = digits[i]
			}
			fmt.Fprintf(&frac, "%04d", d)
		}
		sb.WriteByte('.')
		sb.WriteString(frac.String()[:dscale])
	}
	return sb.String(), nil
}

// decodeArrayBinary decodes a one-dimensional binary array into []any.
func decodeArrayBinary(b []byte) (any, error) {
	if len(b) < 12 {
		return nil, pgErrorf(codes.InvalidBinaryRepresentation, "short binary array")
	}
	ndim := int(binary.BigEndian.Uint32(b))
	elemOID := binary.BigEndian.Uint32(b[8:])
	if ndim == 0 {
		return []any{}, nil
	}
	if ndim != 1 || len(b) < 20 {
		return nil, pgErrorf(codes.FeatureNotSupported, "only one-dimensional array parameters are supported")
	}
	n := int(binary.BigEndian.Uint32(b[12:]))
	if n > (len(b)-20)/4 { // every element needs at least its length word
		return nil, pgErrorf(codes.InvalidBinaryRepresentation, "truncated binary array")
	}
	p := 20
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		if p+4 > len(b) {
			return nil, pgErrorf(codes.InvalidBinaryRepresentation, "truncated binary array")
		}
		l := int(int32(binary.BigEndian.Uint32(b[p:])))
		p += 4
		if l < 0 {
			out = append(out, nil)
			continue
		}
		if p+l > len(b) {
			return nil, pgErrorf(codes.InvalidBinaryRepresentation, "truncated binary array")
		}
		v, err := decodeParam(elemOID, 1, b[p:p+l])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p += l
	}
	return out, nil
}

// duckdb-go describes a prepared statement's parameters by type id only
// (Stmt.ParamType) and its columns without DuckDB's type aliases
// (Stmt.ColumnTypeInfo). That loses two things a PostgreSQL client needs:
// the element type of a list parameter (int4[] or text[]) and whether a
// VARCHAR column is DuckDB's JSON. Both are in the statement's logical
// types, behind duckdb-go's unexported C handle, which stmtHandle reaches by
// reflection. Should a duckdb-go upgrade move the field, stmtHandle returns
// nil and lists and JSON are described as text (the type tests then fail).
var stmtHandleIndex = func() int {
	f, ok := reflect.TypeFor[duckdb.Stmt]().FieldByName("preparedStmt")
	if !ok || f.Type != reflect.TypeFor[*mapping.PreparedStatement]() {
		return -1
	}
	return f.Index[0]
}()

func stmtHandle(st *duckdb.Stmt) *mapping.PreparedStatement {
	if stmtHandleIndex < 0 || st == nil {
		return nil
	}
	return (*mapping.PreparedStatement)(reflect.ValueOf(st).Elem().Field(stmtHandleIndex).UnsafePointer())
}

// paramListElem is the element type of list parameter n (1-based), or
// TYPE_INVALID.
func paramListElem(st *duckdb.Stmt, n int) duckdb.Type {
	h := stmtHandle(st)
	if h == nil || h.Ptr == nil {
		return duckdb.TYPE_INVALID
	}
	lt := mapping.ParamLogicalType(*h, mapping.IdxT(n))
	defer mapping.DestroyLogicalType(&lt)
	var child mapping.LogicalType
	switch mapping.GetTypeId(lt) {
	case duckdb.TYPE_LIST:
		child = mapping.ListTypeChildType(lt)
	case duckdb.TYPE_ARRAY:
		child = mapping.ArrayTypeChildType(lt)
	default:
		return duckdb.TYPE_INVALID
	}
	defer mapping.DestroyLogicalType(&child)
	return mapping.GetTypeId(child)
}

// columnIsJSON reports whether result column i (0-based) has DuckDB's JSON
// type.
func columnIsJSON(st *duckdb.Stmt, i int) bool {
	h := stmtHandle(st)
	if h == nil || h.Ptr == nil {
		return false
	}
	lt := mapping.PreparedStatementColumnLogicalType(*h, mapping.IdxT(i))
	defer mapping.DestroyLogicalType(&lt)
	return mapping.LogicalTypeGetAlias(lt) == "JSON"
}

// listParam turns an array parameter (decoded from binary, or PostgreSQL's
// text form "{1,2}") into DuckDB's list literal, which DuckDB casts to the
// parameter's list type. duckdb-go binds a Go slice only when every element
// already has the exact Go type of the list's element, and panics otherwise.
func listParam(v any) any {
	switch x := v.(type) {
	case []any:
		return duckListText(x)
	case string:
		if l, ok := pgsql.ArrayToList(x); ok {
			return l
		}
	}
	return v
}

func duckListText(list []any) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		switch x := e.(type) {
		case nil:
			b.WriteString("NULL")
		case []any:
			b.WriteString(duckListText(x))
		case string:
			b.WriteString(pgsql.QuoteListElement(x))
		case []byte: // DuckDB's blob text escapes every byte as \xHH
			var esc strings.Builder
			for _, c := range x {
				fmt.Fprintf(&esc, `\x%02X`, c)
			}
			b.WriteString(pgsql.QuoteListElement(esc.String()))
		case float64:
			b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		case duckdb.Interval:
			fmt.Fprintf(&b, `"%d months %d days %d microseconds"`, x.Months, x.Days, x.Micros)
		default:
			b.WriteString(pgsql.QuoteListElement(fmt.Sprint(x)))
		}
	}
	b.WriteByte(']')
	return b.String()
}
