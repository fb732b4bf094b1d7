package sqlserver

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// PostgreSQL type OIDs (pg_type.oid) that DHSI reports. They are fixed by
// PostgreSQL itself, so clients decode them without asking the catalog.
const (
	oidBool        = 16
	oidBytea       = 17
	oidChar        = 18
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidOid         = 26
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidUnknown     = 705
	oidBoolArr     = 1000
	oidInt2Arr     = 1005
	oidInt4Arr     = 1007
	oidTextArr     = 1009
	oidInt8Arr     = 1016
	oidFloat4Arr   = 1021
	oidFloat8Arr   = 1022
	oidBpchar      = 1042 // character(n): a client may declare it (oidFamily); no column is one
	oidVarchar     = 1043
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestampTZ = 1184
	oidInterval    = 1186
	oidTimeTZ      = 1266
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802
	oidVarcharArr  = 1015
	oidByteaArr    = 1001
	oidDateArr     = 1182
	oidTimeArr     = 1183
	oidTSArr       = 1115
	oidTSTZArr     = 1185
	oidIntervalArr = 1187
	oidNumericArr  = 1231
	oidUUIDArr     = 2951
	oidJSONArr     = 199
	oidOidArr      = 1028
	oidTimeTZArr   = 1270
	oidCharArr     = 1002
	oidNameArr     = 1003
)

// pgType describes one PostgreSQL type as pg_type reports it.
type pgType struct {
	OID      uint32
	Name     string // typname
	Len      int16  // typlen: -1 varlena
	Elem     uint32 // element type of an array type
	Array    uint32 // array type of a scalar type
	Category string // typcategory
}

// pgTypes is the catalogue of types DHSI emits; pg_type is generated from
// it, so the catalog and the wire always agree.
var pgTypes = []pgType{
	{oidBool, "bool", 1, 0, oidBoolArr, "B"},
	{oidBytea, "bytea", -1, 0, oidByteaArr, "U"},
	{oidChar, "char", 1, 0, oidCharArr, "Z"},
	{oidName, "name", 64, 0, oidNameArr, "S"},
	{oidInt8, "int8", 8, 0, oidInt8Arr, "N"},
	{oidInt2, "int2", 2, 0, oidInt2Arr, "N"},
	{oidInt4, "int4", 4, 0, oidInt4Arr, "N"},
	{oidText, "text", -1, 0, oidTextArr, "S"},
	{oidOid, "oid", 4, 0, oidOidArr, "N"},
	{oidJSON, "json", -1, 0, oidJSONArr, "U"},
	{oidFloat4, "float4", 4, 0, oidFloat4Arr, "N"},
	{oidFloat8, "float8", 8, 0, oidFloat8Arr, "N"},
	{oidUnknown, "unknown", -2, 0, 0, "X"},
	{oidVarchar, "varchar", -1, 0, oidVarcharArr, "S"},
	{oidDate, "date", 4, 0, oidDateArr, "D"},
	{oidTime, "time", 8, 0, oidTimeArr, "D"},
	{oidTimestamp, "timestamp", 8, 0, oidTSArr, "D"},
	{oidTimestampTZ, "timestamptz", 8, 0, oidTSTZArr, "D"},
	{oidInterval, "interval", 16, 0, oidIntervalArr, "T"},
	{oidTimeTZ, "timetz", 12, 0, oidTimeTZArr, "D"},
	{oidNumeric, "numeric", -1, 0, oidNumericArr, "N"},
	{oidUUID, "uuid", 16, 0, oidUUIDArr, "U"},
	{oidJSONB, "jsonb", -1, 0, 3807, "U"},
	{oidBoolArr, "_bool", -1, oidBool, 0, "A"},
	{oidByteaArr, "_bytea", -1, oidBytea, 0, "A"},
	{oidCharArr, "_char", -1, oidChar, 0, "A"},
	{oidNameArr, "_name", -1, oidName, 0, "A"},
	{oidInt2Arr, "_int2", -1, oidInt2, 0, "A"},
	{oidInt4Arr, "_int4", -1, oidInt4, 0, "A"},
	{oidTextArr, "_text", -1, oidText, 0, "A"},
	{oidInt8Arr, "_int8", -1, oidInt8, 0, "A"},
	{oidFloat4Arr, "_float4", -1, oidFloat4, 0, "A"},
	{oidFloat8Arr, "_float8", -1, oidFloat8, 0, "A"},
	{oidOidArr, "_oid", -1, oidOid, 0, "A"},
	{oidVarcharArr, "_varchar", -1, oidVarchar, 0, "A"},
	{oidDateArr, "_date", -1, oidDate, 0, "A"},
	{oidTimeArr, "_time", -1, oidTime, 0, "A"},
	{oidTSArr, "_timestamp", -1, oidTimestamp, 0, "A"},
	{oidTSTZArr, "_timestamptz", -1, oidTimestampTZ, 0, "A"},
	{oidIntervalArr, "_interval", -1, oidInterval, 0, "A"},
	{oidTimeTZArr, "_timetz", -1, oidTimeTZ, 0, "A"},
	{oidNumericArr, "_numeric", -1, oidNumeric, 0, "A"},
	{oidUUIDArr, "_uuid", -1, oidUUID, 0, "A"},
	{oidJSONArr, "_json", -1, oidJSON, 0, "A"},
	{3807, "_jsonb", -1, oidJSONB, 0, "A"},
}

func pgTypeByOID(oid uint32) (pgType, bool) {
	for _, t := range pgTypes {
		if t.OID == oid {
			return t, true
		}
	}
	return pgType{}, false
}

// colType is how one result column travels on the wire: its PostgreSQL type
// and the encoder for each format. The same colType is used to describe a
// statement and to encode its rows, so the two always agree.
type colType struct {
	OID    uint32
	Typmod int32 // -1 unless the type has a modifier (numeric(p,s))
	Len    int16
	// elem encodes the elements of an array column.
	elem *colType
	kind valueKind
	// nested is the DuckDB type of a kJSON column, which shapes its JSON
	// (struct field order, dates inside structs); nil renders generically.
	nested duckdb.TypeInfo
}

type valueKind uint8

const (
	kAny valueKind = iota // text rendering of whatever arrives
	kBool
	kInt2
	kInt4
	kInt8
	kFloat4
	kFloat8
	kNumeric
	kText
	kBytea
	kDate
	kTime
	kTimeTZ
	kTimestamp
	kTimestampTZ
	kInterval
	kUUID
	kJSON
	kArray
)

var textCol = colType{OID: oidText, Typmod: -1, Len: -1, kind: kAny}

// colTypeOf maps a DuckDB type to its PostgreSQL wire type. Every DuckDB type
// maps to something a client can decode; nested types without a PostgreSQL
// equivalent travel as json.
func colTypeOf(info duckdb.TypeInfo) colType {
	if info == nil {
		return textCol
	}
	switch info.InternalType() {
	case duckdb.TYPE_BOOLEAN:
		return colType{OID: oidBool, Typmod: -1, Len: 1, kind: kBool}
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_UTINYINT:
		return colType{OID: oidInt2, Typmod: -1, Len: 2, kind: kInt2}
	case duckdb.TYPE_INTEGER, duckdb.TYPE_USMALLINT:
		return colType{OID: oidInt4, Typmod: -1, Len: 4, kind: kInt4}
	case duckdb.TYPE_BIGINT, duckdb.TYPE_UINTEGER:
		return colType{OID: oidInt8, Typmod: -1, Len: 8, kind: kInt8}
	case duckdb.TYPE_UBIGINT, duckdb.TYPE_HUGEINT, duckdb.TYPE_UHUGEINT, duckdb.TYPE_BIGNUM:
		return colType{OID: oidNumeric, Typmod: -1, Len: -1, kind: kNumeric}
	case duckdb.TYPE_DECIMAL:
		typmod := int32(-1)
		if d, ok := info.Details().(*duckdb.DecimalDetails); ok {
			typmod = (int32(d.Width)<<16 | int32(d.Scale)) + 4
		}
		return colType{OID: oidNumeric, Typmod: typmod, Len: -1, kind: kNumeric}
	case duckdb.TYPE_FLOAT:
		return colType{OID: oidFloat4, Typmod: -1, Len: 4, kind: kFloat4}
	case duckdb.TYPE_DOUBLE:
		return colType{OID: oidFloat8, Typmod: -1, Len: 8, kind: kFloat8}
	case duckdb.TYPE_VARCHAR, duckdb.TYPE_ENUM, duckdb.TYPE_BIT:
		return colType{OID: oidText, Typmod: -1, Len: -1, kind: kText}
	case duckdb.TYPE_BLOB, duckdb.TYPE_GEOMETRY:
		return colType{OID: oidBytea, Typmod: -1, Len: -1, kind: kBytea}
	case duckdb.TYPE_DATE:
		return colType{OID: oidDate, Typmod: -1, Len: 4, kind: kDate}
	case duckdb.TYPE_TIME:
		return colType{OID: oidTime, Typmod: -1, Len: 8, kind: kTime}
	case duckdb.TYPE_TIME_TZ:
		return colType{OID: oidTimeTZ, Typmod: -1, Len: 12, kind: kTimeTZ}
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_S, duckdb.TYPE_TIMESTAMP_MS, duckdb.TYPE_TIMESTAMP_NS:
		return colType{OID: oidTimestamp, Typmod: -1, Len: 8, kind: kTimestamp}
	case duckdb.TYPE_TIMESTAMP_TZ:
		return colType{OID: oidTimestampTZ, Typmod: -1, Len: 8, kind: kTimestampTZ}
	case duckdb.TYPE_INTERVAL:
		return colType{OID: oidInterval, Typmod: -1, Len: 16, kind: kInterval}
	case duckdb.TYPE_UUID:
		return colType{OID: oidUUID, Typmod: -1, Len: 16, kind: kUUID}
	case duckdb.TYPE_LIST, duckdb.TYPE_ARRAY:
		var child duckdb.TypeInfo
		switch d := info.Details().(type) {
		case *duckdb.ListDetails:
			child = d.Child
		case *duckdb.ArrayDetails:
			child = d.Child
		}
		ct := colTypeOf(child)
		if pt, ok := pgTypeByOID(ct.OID); ok && pt.Array != 0 && ct.kind != kJSON && ct.kind != kArray {
			elem := ct
			return colType{OID: pt.Array, Typmod: -1, Len: -1, kind: kArray, elem: &elem}
		}
		return colType{OID: oidJSON, Typmod: -1, Len: -1, kind: kJSON, nested: info}
	case duckdb.TYPE_STRUCT, duckdb.TYPE_MAP, duckdb.TYPE_UNION, duckdb.TYPE_VARIANT:
		return colType{OID: oidJSON, Typmod: -1, Len: -1, kind: kJSON, nested: info}
	}
	return textCol
}

// pgEpoch is PostgreSQL's binary time origin.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// encodeText appends the PostgreSQL text form of v.
func (c *colType) encodeText(buf []byte, v any, loc *time.Location) ([]byte, error) {
	switch c.kind {
	case kBool:
		if b, ok := v.(bool); ok {
			if b {
				return append(buf, 't'), nil
			}
			return append(buf, 'f'), nil
		}
	case kInt2, kInt4, kInt8:
		if n, ok := toInt64(v); ok {
			return strconv.AppendInt(buf, n, 10), nil
		}
	case kFloat4:
		if f, ok := v.(float32); ok {
			return appendFloat(buf, float64(f), 32), nil
		}
	case kFloat8:
		if f, ok := v.(float64); ok {
			return appendFloat(buf, f, 64), nil
		}
	case kNumeric:
		// integers straight into buf; numericString would allocate a string
		switch x := v.(type) {
		case uint64:
			return strconv.AppendUint(buf, x, 10), nil
		case int64:
			return strconv.AppendInt(buf, x, 10), nil
		case int32:
			return strconv.AppendInt(buf, int64(x), 10), nil
		}
		if s, ok := numericString(v); ok {
			return append(buf, s...), nil
		}
	case kBytea:
		if b, ok := v.([]byte); ok {
			buf = append(buf, '\\', 'x')
			return hex.AppendEncode(buf, b), nil
		}
	case kDate:
		if t, ok := v.(time.Time); ok {
			if inf := dateInfinity(t); inf != 0 {
				return appendInfinity(buf, inf), nil
			}
			return appendBC(appendDate(buf, t), t), nil
		}
	case kTime:
		if t, ok := v.(time.Time); ok {
			return appendClock(buf, t), nil
		}
	case kTimeTZ:
		if t, ok := v.(time.Time); ok {
			buf = appendClock(buf, t)
			_, off := t.Zone()
			return appendOffset(buf, off), nil
		}
	case kTimestamp:
		if t, ok := v.(time.Time); ok {
			return appendTimestampText(buf, t), nil
		}
	case kTimestampTZ:
		if t, ok := v.(time.Time); ok {
			return appendTimestampTZText(buf, t, loc), nil
		}
	case kInterval:
		if iv, ok := v.(duckdb.Interval); ok {
			return appendInterval(buf, iv), nil
		}
	case kUUID:
		if s, ok := uuidString(v); ok {
			return append(buf, s...), nil
		}
	case kJSON:
		return appendJSON(buf, v, c.nested, loc)
	case kArray:
		if list, ok := v.([]any); ok {
			return c.appendArrayText(buf, list, loc)
		}
	case kText:
		if s, ok := v.(string); ok {
			return append(buf, s...), nil
		}
	}
	return appendAnyText(buf, v, loc)
}

// appendAnyText renders a value of a type the column did not declare (a
// statement whose result type was unknown when it was described).
func appendAnyText(buf []byte, v any, loc *time.Location) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return append(buf, x...), nil
	case []byte:
		buf = append(buf, '\\', 'x')
		return hex.AppendEncode(buf, x), nil
	case bool:
		if x {
			return append(buf, 't'), nil
		}
		return append(buf, 'f'), nil
	case float32:
		return appendFloat(buf, float64(x), 32), nil
	case float64:
		return appendFloat(buf, x, 64), nil
	case time.Time:
		buf = appendDate(buf, x)
		buf = append(buf, ' ')
		return appendClock(buf, x), nil
	case duckdb.Interval:
		return appendInterval(buf, x), nil
	case []any, map[string]any, duckdb.Map, duckdb.Union, duckdb.OrderedMap:
		return appendJSON(buf, v, nil, loc)
	}
	if n, ok := toInt64(v); ok {
		return strconv.AppendInt(buf, n, 10), nil
	}
	if s, ok := numericString(v); ok {
		return append(buf, s...), nil
	}
	if s, ok := uuidString(v); ok {
		return append(buf, s...), nil
	}
	return fmt.Append(buf, v), nil
}

// encodeBinary appends the PostgreSQL binary form of v.
func (c *colType) encodeBinary(buf []byte, v any, loc *time.Location) ([]byte, error) {
	switch c.kind {
	case kBool:
		if b, ok := v.(bool); ok {
			if b {
				return append(buf, 1), nil
			}
			return append(buf, 0), nil
		}
	case kInt2:
		if n, ok := toInt64(v); ok {
			return binary.BigEndian.AppendUint16(buf, uint16(int16(n))), nil
		}
	case kInt4:
		if n, ok := toInt64(v); ok {
			return binary.BigEndian.AppendUint32(buf, uint32(int32(n))), nil
		}
	case kInt8:
		if n, ok := toInt64(v); ok {
			return binary.BigEndian.AppendUint64(buf, uint64(n)), nil
		}
	case kFloat4:
		if f, ok := v.(float32); ok {
			return binary.BigEndian.AppendUint32(buf, math.Float32bits(f)), nil
		}
	case kFloat8:
		if f, ok := v.(float64); ok {
			return binary.BigEndian.AppendUint64(buf, math.Float64bits(f)), nil
		}
	case kNumeric:
		if u, ok := v.(uint64); ok {
			return appendNumericBinaryUint(buf, u), nil
		}
		if s, ok := numericString(v); ok {
			return appendNumericBinary(buf, s)
		}
	case kBytea:
		if b, ok := v.([]byte); ok {
			return append(buf, b...), nil
		}
	case kDate:
		if t, ok := v.(time.Time); ok {
			switch dateInfinity(t) {
			case 1:
				return binary.BigEndian.AppendUint32(buf, math.MaxInt32), nil
			case -1:
				return binary.BigEndian.AppendUint32(buf, 1<<31), nil // math.MinInt32
			}
			days := civilDays(t) - civilDays(pgEpoch)
			return binary.BigEndian.AppendUint32(buf, uint32(int32(days))), nil
		}
	case kTime:
		if t, ok := v.(time.Time); ok {
			return binary.BigEndian.AppendUint64(buf, uint64(clockMicros(t))), nil
		}
	case kTimeTZ:
		if t, ok := v.(time.Time); ok {
			buf = binary.BigEndian.AppendUint64(buf, uint64(clockMicros(t)))
			_, off := t.Zone()
			return binary.BigEndian.AppendUint32(buf, uint32(int32(-off))), nil
		}
	case kTimestamp, kTimestampTZ:
		if t, ok := v.(time.Time); ok {
			return appendTimestampBinary(buf, t, c.kind == kTimestampTZ), nil
		}
	case kInterval:
		if iv, ok := v.(duckdb.Interval); ok {
			buf = binary.BigEndian.AppendUint64(buf, uint64(iv.Micros))
			buf = binary.BigEndian.AppendUint32(buf, uint32(iv.Days))
			return binary.BigEndian.AppendUint32(buf, uint32(iv.Months)), nil
		}
	case kUUID:
		if x, ok := v.([]byte); ok && len(x) == 16 {
			return append(buf, x...), nil
		}
		if u, ok := v.(duckdb.UUID); ok {
			return append(buf, u[:]...), nil
		}
	case kArray:
		if list, ok := v.([]any); ok {
			return c.appendArrayBinary(buf, list, loc)
		}
	}
	// text, json, unknown: the binary form is the text form (json's binary
	// format is its text).
	return c.encodeText(buf, v, loc)
}

func (c *colType) appendArrayText(buf []byte, list []any, loc *time.Location) ([]byte, error) {
	buf = append(buf, '{')
	for i, e := range list {
		if i > 0 {
			buf = append(buf, ',')
		}
		if e == nil {
			buf = append(buf, "NULL"...)
			continue
		}
		el, err := c.elem.encodeText(nil, e, loc)
		if err != nil {
			return nil, err
		}
		buf = appendArrayElem(buf, el)
	}
	return append(buf, '}'), nil
}

// appendArrayElem quotes an array element the way PostgreSQL's array_out
// does.
func appendArrayElem(buf, el []byte) []byte {
	needQuote := len(el) == 0 || strings.EqualFold(string(el), "NULL")
	for _, b := range el {
		switch b {
		case '{', '}', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			needQuote = true
		}
	}
	if !needQuote {
		return append(buf, el...)
	}
	buf = append(buf, '"')
	for _, b := range el {
		if b == '"' || b == '\\' {
			buf = append(buf, '\\')
		}
		buf = append(buf, b)
	}
	return append(buf, '"')
}

func (c *colType) appendArrayBinary(buf []byte, list []any, loc *time.Location) ([]byte, error) {
	hasNull := uint32(0)
	for _, e := range list {
		if e == nil {
			hasNull = 1
		}
	}
	ndim := uint32(1)
	if len(list) == 0 {
		ndim = 0
	}
	buf = binary.BigEndian.AppendUint32(buf, ndim)
	buf = binary.BigEndian.AppendUint32(buf, hasNull)
	buf = binary.BigEndian.AppendUint32(buf, c.elem.OID)
	if ndim == 0 {
		return buf, nil
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(list)))
	buf = binary.BigEndian.AppendUint32(buf, 1) // lower bound
	for _, e := range list {
		if e == nil {
			buf = binary.BigEndian.AppendUint32(buf, 0xFFFFFFFF)
			continue
		}
		lenAt := len(buf)
		buf = append(buf, 0, 0, 0, 0)
		var err error
		buf, err = c.elem.encodeBinary(buf, e, loc)
		if err != nil {
			return nil, err
		}
		binary.BigEndian.PutUint32(buf[lenAt:], uint32(len(buf)-lenAt-4))
	}
	return buf, nil
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

// numericString renders integer and decimal values in numeric's text form.
func numericString(v any) (string, bool) {
	switch x := v.(type) {
	case *big.Int:
		return x.String(), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case duckdb.Decimal:
		return decimalString(x.Value, int(x.Scale)), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case string:
		return x, true
	}
	if n, ok := toInt64(v); ok {
		return strconv.FormatInt(n, 10), true
	}
	return "", false
}

func decimalString(v *big.Int, scale int) string {
	if v == nil {
		return "0"
	}
	s := new(big.Int).Abs(v).String()
	neg := v.Sign() < 0
	if scale > 0 {
		if len(s) <= scale {
			s = strings.Repeat("0", scale-len(s)+1) + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// appendNumericBinary encodes a decimal string (e.g. "-123.4500") in
// PostgreSQL's binary numeric format: base-10000 digits with a weight, a
// sign and the display scale.
func appendNumericBinary(buf []byte, s string) ([]byte, error) {
	switch s {
	case "NaN":
		return append(buf, 0, 0, 0, 0, 0xC0, 0, 0, 0), nil
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	intPart, frac, _ := strings.Cut(s, ".")
	for _, part := range []string{intPart, frac} {
		for _, r := range part {
			if r < '0' || r > '9' {
				return nil, fmt.Errorf("invalid numeric %q", s)
			}
		}
	}
	dscale := len(frac)
	// pad the integer part to a multiple of 4 on the left, the fraction on
	// the right
	if pad := (4 - len(intPart)%4) % 4; pad > 0 {
		intPart = strings.Repeat("0", pad) + intPart
	}
	if pad := (4 - len(frac)%4) % 4; pad > 0 {
		frac += strings.Repeat("0", pad)
	}
	all := intPart + frac
	digits := make([]uint16, 0, len(all)/4)
	for i := 0; i < len(all); i += 4 {
		d, _ := strconv.Atoi(all[i : i+4])
		digits = append(digits, uint16(d))
	}
	weight := len(intPart)/4 - 1
	// strip leading zero groups
	for len(digits) > 0 && digits[0] == 0 {
		digits = digits[1:]
		weight--
	}
	// strip trailing zero groups
	for len(digits) > 0 && digits[len(digits)-1] == 0 {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		weight = 0
		neg = false
	}
	sign := uint16(0)
	if neg {
		sign = 0x4000
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(len(digits)))
	buf = binary.BigEndian.AppendUint16(buf, uint16(int16(weight)))
	buf = binary.BigEndian.AppendUint16(buf, sign)
	buf = binary.BigEndian.AppendUint16(buf, uint16(dscale))
	for _, d := range digits {
		buf = binary.BigEndian.AppendUint16(buf, d)
	}
	return buf, nil
}

// appendTimestampText appends a timestamp (without time zone) in
// PostgreSQL's text form: its wall-clock fields.
func appendTimestampText(buf []byte, t time.Time) []byte {
	if inf := timestampInfinity(t); inf != 0 {
		return appendInfinity(buf, inf)
	}
	buf = appendDate(buf, t)
	buf = append(buf, ' ')
	buf = appendClock(buf, t)
	return appendBC(buf, t)
}

// appendTimestampTZText appends a timestamptz in the session's TimeZone.
func appendTimestampTZText(buf []byte, t time.Time, loc *time.Location) []byte {
	if inf := timestampInfinity(t); inf != 0 {
		return appendInfinity(buf, inf)
	}
	t = t.In(loc)
	buf = appendDate(buf, t)
	buf = append(buf, ' ')
	buf = appendClock(buf, t)
	_, off := t.Zone()
	buf = appendOffset(buf, off)
	return appendBC(buf, t)
}

// appendTimestampBinary appends a timestamp (tz: timestamptz) in
// PostgreSQL's binary form, microseconds since 2000-01-01.
func appendTimestampBinary(buf []byte, t time.Time, tz bool) []byte {
	switch timestampInfinity(t) {
	case 1:
		return binary.BigEndian.AppendUint64(buf, math.MaxInt64)
	case -1:
		return binary.BigEndian.AppendUint64(buf, 1<<63) // math.MinInt64
	}
	if tz {
		return binary.BigEndian.AppendUint64(buf, uint64(micros(t)))
	}
	// wall-clock fields, whatever location the driver attached
	wall := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	return binary.BigEndian.AppendUint64(buf, uint64(micros(wall)))
}

// appendNumericBinaryUint appends an integer in PostgreSQL's binary numeric
// form, as appendNumericBinary does its decimal text, without the text.
func appendNumericBinaryUint(buf []byte, u uint64) []byte {
	// base-10000 digits, least significant first; a uint64 has at most 5
	var digits [5]uint16
	n := 0
	for ; u > 0; u /= 10000 {
		digits[n] = uint16(u % 10000)
		n++
	}
	weight := n - 1
	// trailing zero groups (the least significant) are not sent
	low := 0
	for low < n && digits[low] == 0 {
		low++
	}
	if n == 0 {
		weight = 0
	}
	buf = binary.BigEndian.AppendUint16(buf, uint16(n-low))
	buf = binary.BigEndian.AppendUint16(buf, uint16(int16(weight)))
	buf = binary.BigEndian.AppendUint16(buf, 0) // sign: positive
	buf = binary.BigEndian.AppendUint16(buf, 0) // display scale
	for i := n - 1; i >= low; i-- {
		buf = binary.BigEndian.AppendUint16(buf, digits[i])
	}
	return buf
}

func appendFloat(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, "NaN"...)
	case math.IsInf(f, 1):
		return append(buf, "Infinity"...)
	case math.IsInf(f, -1):
		return append(buf, "-Infinity"...)
	}
	// PostgreSQL 12+ prints the shortest text that reads back exactly, with
	// an exponent outside [1e-4, 1e15) ("1e+20", "1e-05").
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e15) {
		return strconv.AppendFloat(buf, f, 'e', -1, bits)
	}
	return strconv.AppendFloat(buf, f, 'f', -1, bits)
}

func appendDate(buf []byte, t time.Time) []byte {
	y := t.Year()
	if y <= 0 {
		y = 1 - y
	}
	buf = appendPad(buf, y, 4)
	buf = append(buf, '-')
	buf = appendPad(buf, int(t.Month()), 2)
	buf = append(buf, '-')
	return appendPad(buf, t.Day(), 2)
}

// appendBC marks dates before year 1 the way PostgreSQL does.
func appendBC(buf []byte, t time.Time) []byte {
	if t.Year() <= 0 {
		return append(buf, " BC"...)
	}
	return buf
}

func appendClock(buf []byte, t time.Time) []byte {
	buf = appendPad(buf, t.Hour(), 2)
	buf = append(buf, ':')
	buf = appendPad(buf, t.Minute(), 2)
	buf = append(buf, ':')
	buf = appendPad(buf, t.Second(), 2)
	if us := t.Nanosecond() / 1000; us != 0 {
		frac := fmt.Sprintf("%06d", us)
		buf = append(buf, '.')
		buf = append(buf, strings.TrimRight(frac, "0")...)
	}
	return buf
}

func appendOffset(buf []byte, off int) []byte {
	if off < 0 {
		buf = append(buf, '-')
		off = -off
	} else {
		buf = append(buf, '+')
	}
	buf = appendPad(buf, off/3600, 2)
	if m := off % 3600 / 60; m != 0 || off%60 != 0 {
		buf = append(buf, ':')
		buf = appendPad(buf, m, 2)
		if s := off % 60; s != 0 {
			buf = append(buf, ':')
			buf = appendPad(buf, s, 2)
		}
	}
	return buf
}

func appendPad(buf []byte, n, width int) []byte {
	s := strconv.Itoa(n)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// appendInterval renders an interval in PostgreSQL's default "postgres"
// IntervalStyle: "1 year 2 mons 3 days 04:05:06.7", "-1 mons -2 days
// -00:00:03", "-1 days +00:00:03" (EncodeInterval in PostgreSQL's
// datetime.c: only a value of exactly 1 is singular, and after a negative
// part a positive one carries an explicit +).
func appendInterval(buf []byte, iv duckdb.Interval) []byte {
	isZero, isBefore := true, false
	unit := func(n int64, name string) {
		if n == 0 {
			return
		}
		if !isZero {
			buf = append(buf, ' ')
		}
		if isBefore && n > 0 {
			buf = append(buf, '+')
		}
		buf = strconv.AppendInt(buf, n, 10)
		buf = append(buf, ' ')
		buf = append(buf, name...)
		if n != 1 {
			buf = append(buf, 's')
		}
		isBefore, isZero = n < 0, false
	}
	unit(int64(iv.Months/12), "year")
	unit(int64(iv.Months%12), "mon")
	unit(int64(iv.Days), "day")
	us := iv.Micros
	if us != 0 || isZero {
		if !isZero {
			buf = append(buf, ' ')
		}
		switch {
		case us < 0:
			buf = append(buf, '-')
			us = -us
		case isBefore:
			buf = append(buf, '+')
		}
		h := us / 3_600_000_000
		us -= h * 3_600_000_000
		m := us / 60_000_000
		us -= m * 60_000_000
		s := us / 1_000_000
		us -= s * 1_000_000
		buf = appendPad(buf, int(h), 2)
		buf = append(buf, ':')
		buf = appendPad(buf, int(m), 2)
		buf = append(buf, ':')
		buf = appendPad(buf, int(s), 2)
		if us != 0 {
			buf = append(buf, '.')
			buf = append(buf, strings.TrimRight(fmt.Sprintf("%06d", us), "0")...)
		}
	}
	return buf
}

func uuidString(v any) (string, bool) {
	var b []byte
	switch x := v.(type) {
	case []byte:
		b = x
	case duckdb.UUID:
		b = x[:]
	case *duckdb.UUID:
		if x == nil {
			return "", false
		}
		b = x[:]
	case string:
		return x, true
	default:
		return "", false
	}
	if len(b) != 16 {
		return "", false
	}
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

func civilDays(t time.Time) int64 {
	u := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return u.Unix() / 86400
}

func clockMicros(t time.Time) int64 {
	return int64(t.Hour())*3_600_000_000 + int64(t.Minute())*60_000_000 + int64(t.Second())*1_000_000 + int64(t.Nanosecond()/1000)
}

func micros(t time.Time) int64 {
	d := t.Sub(pgEpoch)
	if d == math.MaxInt64 || d == math.MinInt64 { // beyond ±292 years
		return t.Unix()*1_000_000 + int64(t.Nanosecond()/1000) - pgEpoch.Unix()*1_000_000
	}
	return d.Microseconds()
}

// dateInfinity reports DuckDB's infinite dates (day numbers ±MaxInt32,
// which duckdb-go hands over as dates in year ±5.8 million): 1, -1 or 0.
func dateInfinity(t time.Time) int {
	switch civilDays(t) {
	case math.MaxInt32:
		return 1
	case -math.MaxInt32:
		return -1
	}
	return 0
}

// timestampInfinities are DuckDB's infinite timestamps, ±MaxInt64 in each
// timestamp type's unit, as duckdb-go hands them over.
var timestampInfinities = [][2]time.Time{
	{time.UnixMicro(math.MaxInt64), time.UnixMicro(-math.MaxInt64)},
	{time.Unix(math.MaxInt64, 0), time.Unix(-math.MaxInt64, 0)},
	{time.UnixMilli(math.MaxInt64), time.UnixMilli(-math.MaxInt64)},
	{time.Unix(0, math.MaxInt64), time.Unix(0, -math.MaxInt64)},
}

// timestampInfinity reports an infinite timestamp: 1, -1 or 0.
func timestampInfinity(t time.Time) int {
	if y := t.Year(); y > 1677 && y < 2262 {
		return 0
	}
	for _, inf := range timestampInfinities {
		switch {
		case t.Equal(inf[0]):
			return 1
		case t.Equal(inf[1]):
			return -1
		}
	}
	return 0
}

func appendInfinity(buf []byte, inf int) []byte {
	if inf < 0 {
		buf = append(buf, '-')
	}
	return append(buf, "infinity"...)
}

// appendJSON renders v, a value of DuckDB type info, the way PostgreSQL's
// to_json does: struct fields in declaration order, dates and timestamps in
// ISO 8601, NaN and infinities as strings. A nil info (a value whose type was
// not described, or DuckDB's JSON type, which duckdb-go hands over parsed)
// is rendered from the Go value alone.
func appendJSON(buf []byte, v any, info duckdb.TypeInfo, loc *time.Location) ([]byte, error) {
	if v == nil {
		return append(buf, "null"...), nil
	}
	if info == nil {
		return appendJSONValue(buf, jsonValue(v, loc))
	}
	var err error
	switch d := info.Details().(type) {
	case *duckdb.StructDetails:
		m, ok := v.(map[string]any)
		if !ok {
			break
		}
		buf = append(buf, '{')
		for i, e := range d.Entries {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, e.Name())
			buf = append(buf, ':')
			if buf, err = appendJSON(buf, m[e.Name()], e.Info(), loc); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case *duckdb.ListDetails, *duckdb.ArrayDetails:
		list, ok := v.([]any)
		if !ok {
			break
		}
		var child duckdb.TypeInfo
		if ld, ok := d.(*duckdb.ListDetails); ok {
			child = ld.Child
		} else {
			child = d.(*duckdb.ArrayDetails).Child
		}
		buf = append(buf, '[')
		for i, e := range list {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendJSON(buf, e, child, loc); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case *duckdb.MapDetails:
		var keys, vals []any
		switch m := v.(type) {
		case duckdb.OrderedMap:
			keys, vals = m.Keys(), m.Values()
		case duckdb.Map:
			for k, e := range m {
				keys, vals = append(keys, k), append(vals, e)
			}
		default:
			return appendJSON(buf, v, nil, loc)
		}
		kt := colTypeOf(d.Key)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			ks, err := kt.encodeText(nil, k, loc)
			if err != nil {
				return nil, err
			}
			buf = appendJSONString(buf, string(ks))
			buf = append(buf, ':')
			if buf, err = appendJSON(buf, vals[i], d.Value, loc); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case *duckdb.UnionDetails:
		if u, ok := v.(duckdb.Union); ok {
			for _, m := range d.Members {
				if m.Name == u.Tag {
					return appendJSON(buf, u.Value, m.Type, loc)
				}
			}
			return appendJSON(buf, u.Value, nil, loc)
		}
	}
	ct := colTypeOf(info)
	switch ct.kind {
	case kJSON:
		return appendJSON(buf, v, nil, loc)
	case kBool, kInt2, kInt4, kInt8, kNumeric:
		return ct.encodeText(buf, v, loc)
	case kFloat4, kFloat8:
		text, err := ct.encodeText(nil, v, loc)
		if err != nil {
			return nil, err
		}
		if f, ok := toFloat(v); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return appendJSONString(buf, string(text)), nil
		}
		return append(buf, text...), nil
	case kText:
		if _, ok := v.(string); !ok { // a JSON value inside a nested type
			return appendJSON(buf, v, nil, loc)
		}
	case kTimestamp, kTimestampTZ:
		if t, ok := v.(time.Time); ok && timestampInfinity(t) == 0 {
			var b []byte
			if ct.kind == kTimestampTZ {
				t = t.In(loc)
			}
			b = appendClock(append(appendDate(nil, t), 'T'), t)
			if ct.kind == kTimestampTZ {
				_, off := t.Zone()
				b = appendOffset(b, off)
				if off%3600 == 0 {
					b = append(b, ":00"...)
				}
			}
			return appendJSONString(buf, string(appendBC(b, t))), nil
		}
	}
	text, err := ct.encodeText(nil, v, loc)
	if err != nil {
		return nil, err
	}
	return appendJSONString(buf, string(text)), nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// appendJSONValue marshals a plain Go value without HTML escaping, as
// PostgreSQL does.
func appendJSONValue(buf []byte, v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(buf, strings.TrimSuffix(b.String(), "\n")...), nil
}

// appendJSONString quotes s as PostgreSQL's escape_json does.
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			buf = append(buf, '\\', '"')
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			if c < 0x20 {
				buf = fmt.Appendf(buf, "\\u%04x", c)
			} else {
				buf = append(buf, c)
			}
		}
	}
	return append(buf, '"')
}

// jsonValue converts a DuckDB value of unknown type into something
// encoding/json renders the way a PostgreSQL client expects.
func jsonValue(v any, loc *time.Location) any {
	switch x := v.(type) {
	case nil, bool, string, float32, int8, int16, int32, int64, int, uint8, uint16, uint32, uint64:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return string(appendFloat(nil, x, 64))
		}
		return x
	case []byte:
		return "\\x" + hex.EncodeToString(x)
	case *big.Int:
		return json.Number(x.String())
	case duckdb.Decimal:
		return json.Number(decimalString(x.Value, int(x.Scale)))
	case duckdb.UUID:
		s, _ := uuidString(x)
		return s
	case time.Time:
		b, _ := (&colType{kind: kTimestampTZ}).encodeText(nil, x, loc)
		return string(b)
	case duckdb.Interval:
		return string(appendInterval(nil, x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e, loc)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e, loc)
		}
		return out
	case duckdb.Map:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(jsonValue(k, loc))] = jsonValue(e, loc)
		}
		return out
	case duckdb.OrderedMap:
		out := make(map[string]any, x.Len())
		vals := x.Values()
		for i, k := range x.Keys() {
			out[fmt.Sprint(jsonValue(k, loc))] = jsonValue(vals[i], loc)
		}
		return out
	case duckdb.Union:
		return jsonValue(x.Value, loc)
	}
	return fmt.Sprint(v)
}
