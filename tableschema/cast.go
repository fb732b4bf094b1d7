package tableschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// YearMonth is the value of a yearmonth field.
type YearMonth struct {
	Year  int
	Month time.Month
}

// String formats the value as the specification writes it, YYYY-MM.
func (y YearMonth) String() string { return fmt.Sprintf("%04d-%02d", y.Year, int(y.Month)) }

// Duration is the value of a duration field: an ISO 8601 duration split the
// way SQL intervals split it, because months and days have no fixed length.
// Years count as 12 months and weeks as 7 days. Months and Days are int32
// because DuckDB's and PostgreSQL's intervals are; Nanoseconds holds the
// hours, minutes and seconds (at most about 292 years).
type Duration struct {
	Months      int32
	Days        int32
	Nanoseconds int64
}

// String writes d as an ISO 8601 duration, P<months>M<days>DT<seconds>S
// with zero parts left out. Cast reads it back to d when the parts share a
// sign, as every Duration Cast returns does.
func (d Duration) String() string {
	var b strings.Builder
	neg := d.Months < 0 || d.Days < 0 || d.Nanoseconds < 0
	abs := func(n int64) int64 {
		if n < 0 {
			return -n
		}
		return n
	}
	if neg {
		b.WriteByte('-')
	}
	b.WriteByte('P')
	if d.Months != 0 {
		fmt.Fprintf(&b, "%dM", abs(int64(d.Months)))
	}
	if d.Days != 0 {
		fmt.Fprintf(&b, "%dD", abs(int64(d.Days)))
	}
	if ns := abs(d.Nanoseconds); ns != 0 || (d.Months == 0 && d.Days == 0) {
		fmt.Fprintf(&b, "T%d", ns/1e9)
		if f := ns % 1e9; f != 0 {
			fmt.Fprintf(&b, ".%s", strings.TrimRight(fmt.Sprintf("%09d", f), "0"))
		}
		b.WriteByte('S')
	}
	return b.String()
}

// CastError reports a raw value that does not cast to its field's type.
type CastError struct {
	Field  string
	Type   string
	Format string
	Value  string
	Want   string // what the value should have looked like
}

func (e *CastError) Error() string {
	t := e.Type
	if e.Format != "" && e.Format != "default" {
		t += " (format " + strconv.Quote(e.Format) + ")"
	}
	return fmt.Sprintf("field %q: cannot cast %s to %s: want %s", e.Field, quoteValue(e.Value), t, e.Want)
}

// quoteValue quotes a raw value for an error message, shortening it so that
// one bad unit cannot make a megabyte error.
func quoteValue(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) <= max {
		return strconv.Quote(s)
	}
	r := []rune(s)
	return strconv.Quote(string(r[:max])) + "…"
}

// Cast converts a raw unit to the field's Go value:
//
//	string, any, geopoint   string (string formats are checked, not changed)
//	geojson                 string holding a JSON object
//	integer, year           int64
//	number                  float64
//	boolean                 bool
//	date                    time.Time, midnight UTC
//	time                    time.Time on 0000-01-01 UTC
//	datetime                time.Time in UTC
//	yearmonth               YearMonth
//	duration                Duration
//	object                  map[string]any (numbers as json.Number)
//	array                   []any (numbers as json.Number)
//
// A value listed in the field's missing values casts to nil. Any other
// value that does not fit gives a *CastError.
func (f Field) Cast(s string) (any, error) {
	cast, err := f.Caster()
	if err != nil {
		return nil, err
	}
	return cast(s)
}

// Caster is Cast compiled once, for casting many values of f: its format
// parsed and its regular expressions built once. The function is safe for
// concurrent use.
func (f Field) Caster() (func(string) (any, error), error) {
	c, err := newCaster(f)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w", f.Name, err)
	}
	return c.cast, nil
}

// caster is a field compiled for casting: its format parsed and its
// regular expressions built once, so a RowChecker pays for them once.
type caster struct {
	f       Field
	typ     string
	format  string
	missing []string
	want    string
	conv    func(string) (any, bool)
}

func (c *caster) cast(s string) (any, error) {
	if slices.Contains(c.missing, s) {
		return nil, nil
	}
	return c.castPresent(s)
}

// castPresent casts s without the missing-value check; constraints such as
// minimum are cast this way.
func (c *caster) castPresent(s string) (any, error) {
	if v, ok := c.conv(s); ok {
		return v, nil
	}
	return nil, &CastError{Field: c.f.Name, Type: c.typ, Format: c.format, Value: s, Want: c.want}
}

// The lexical forms below are shared with the DuckDB SQL (duckdb.go). Both
// Go and DuckDB use RE2, so one expression accepts the same strings in
// both; that is what keeps Cast and DuckDBCast in agreement.
const (
	reInteger      = `[+-]?[0-9]+`
	reIntegerLoose = `[^0-9]*?([+-]?[0-9]+)[^0-9]*`
	reDate         = `[0-9]{4}-[0-9]{2}-[0-9]{2}`
	reDateAny      = `[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{4}/[0-9]{2}/[0-9]{2}|[0-9]{8}`
	reClock        = `(?:[01][0-9]|2[0-3]):[0-5][0-9]`
	reTime         = reClock + `:[0-5][0-9](?:\.[0-9]+)?`
	reTimeAny      = reClock + `(?::[0-5][0-9](?:\.[0-9]+)?)?`
	reDatetime     = `([0-9]{4}-[0-9]{2}-[0-9]{2})T(` + reClock + `)(:[0-5][0-9](?:\.[0-9]+)?)(Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`
	reDatetimeAny  = `([0-9]{4}-[0-9]{2}-[0-9]{2})(?:[T ](` + reClock + `)(:[0-5][0-9](?:\.[0-9]+)?)?(Z|[+-](?:[01][0-9]|2[0-3])(?::?[0-5][0-9])?)?)?`
	reYear         = `[0-9]{4}`
	reYearMonth    = `([0-9]{4})-(0[1-9]|1[0-2])`
	// Components are limited to 18 digits so that every one fits a BIGINT
	// and the arithmetic on them cannot overflow in Go or in SQL.
	reDuration = `(-)?P(?:([0-9]{1,18})Y)?(?:([0-9]{1,18})M)?(?:([0-9]{1,18})W)?(?:([0-9]{1,18})D)?` +
		`(?:T(?:([0-9]{1,18})H)?(?:([0-9]{1,18})M)?(?:([0-9]{1,18})(?:\.([0-9]+))?S)?)?`
	reEmail  = `[^\s@]+@[^\s@]+`
	reURI    = `[A-Za-z][A-Za-z0-9+.\-]*:\S*`
	reUUID   = `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`
	reBase64 = `(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?`
)

// reNumber is the number grammar with the field's decimal character.
func reNumber(decimal string) string {
	d := regexp.QuoteMeta(decimal)
	return `[+-]?(?:[0-9]+(?:` + d + `[0-9]*)?|` + d + `[0-9]+)(?:[eE][+-]?[0-9]+)?`
}

func reNumberLoose(decimal string) string {
	return `[^0-9]*?(` + reNumber(decimal) + `)[^0-9]*`
}

// full compiles src to match whole strings only.
func full(src string) *regexp.Regexp { return regexp.MustCompile(`^(?:` + src + `)$`) }

// trueValues and falseValues return fresh slices for the defaults so that
// no caller can change them for everyone.
func (f Field) trueValues() []string {
	if f.TrueValues != nil {
		return f.TrueValues
	}
	return []string{"true", "True", "TRUE", "1"}
}

func (f Field) falseValues() []string {
	if f.FalseValues != nil {
		return f.FalseValues
	}
	return []string{"false", "False", "FALSE", "0"}
}

func (f Field) bare() bool { return f.BareNumber == nil || *f.BareNumber }

func (f Field) decimalChar() string {
	if f.DecimalChar == "" {
		return "."
	}
	return f.DecimalChar
}

// stringFormat returns the lexical form of a string format and what a
// value should look like; ok is false for default and unknown formats.
func stringFormat(format string) (re, want string, ok bool) {
	switch format {
	case "email":
		return reEmail, "an e-mail address (local@domain)", true
	case "uri":
		return reURI, "an absolute URI (scheme:...)", true
	case "uuid":
		return reUUID, "a UUID (8-4-4-4-12 hex digits)", true
	case "binary":
		return reBase64, "base64 text (RFC 4648, padded)", true
	}
	return "", "", false
}

// newCaster compiles f. It fails for a type or format that Validate would
// reject, so Cast on an unvalidated field reports the schema problem
// rather than blaming the value.
func newCaster(f Field) (*caster, error) {
	c := &caster{f: f, typ: f.EffectiveType(), format: f.EffectiveFormat(), missing: f.MissingValues()}
	if err := checkFormat(c.typ, c.format); err != nil {
		return nil, err
	}
	switch c.typ {
	case TypeString:
		c.want = "text"
		c.conv = func(s string) (any, bool) { return s, true }
		if src, want, ok := stringFormat(c.format); ok {
			re := full(src)
			c.want = want
			c.conv = func(s string) (any, bool) { return s, re.MatchString(s) }
		}
	case TypeAny, TypeGeoPoint:
		c.want = "text"
		c.conv = func(s string) (any, bool) { return s, true }
	case TypeGeoJSON:
		c.want = "a GeoJSON object"
		c.conv = func(s string) (any, bool) {
			_, ok := decodeJSON(s, '{')
			return s, ok
		}
	case TypeInteger:
		c.conv, c.want = integerConv(f)
	case TypeNumber:
		c.conv, c.want = numberConv(f)
	case TypeBoolean:
		t, fa := f.trueValues(), f.falseValues()
		c.want = "one of " + strings.Join(quoteAll(append(slices.Clone(t), fa...)), ", ")
		c.conv = func(s string) (any, bool) {
			switch {
			case slices.Contains(t, s):
				return true, true
			case slices.Contains(fa, s):
				return false, true
			}
			return nil, false
		}
	case TypeDate, TypeTime, TypeDatetime:
		conv, want, err := temporalConv(c.typ, c.format)
		if err != nil {
			return nil, err
		}
		c.conv, c.want = conv, want
	case TypeYear:
		re := full(reYear)
		c.want = "a four-digit year"
		c.conv = func(s string) (any, bool) {
			if !re.MatchString(s) {
				return nil, false
			}
			n, _ := strconv.ParseInt(s, 10, 64)
			return n, true
		}
	case TypeYearMonth:
		re := full(reYearMonth)
		c.want = "YYYY-MM"
		c.conv = func(s string) (any, bool) {
			m := re.FindStringSubmatch(s)
			if m == nil {
				return nil, false
			}
			y, _ := strconv.Atoi(m[1])
			mo, _ := strconv.Atoi(m[2])
			return YearMonth{Year: y, Month: time.Month(mo)}, true
		}
	case TypeDuration:
		c.want = "an ISO 8601 duration such as P1Y2M3DT4H5M6.5S"
		c.conv = durationConv()
	case TypeObject:
		c.want = "a JSON object"
		c.conv = func(s string) (any, bool) { return decodeJSON(s, '{') }
	case TypeArray:
		c.want = "a JSON array"
		c.conv = func(s string) (any, bool) { return decodeJSON(s, '[') }
	default:
		return nil, fmt.Errorf("unknown type %q", c.typ)
	}
	return c, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

func integerConv(f Field) (func(string) (any, bool), string) {
	re, want := full(reInteger), "an integer (digits with an optional sign)"
	if !f.bare() {
		re, want = full(reIntegerLoose), "an integer, possibly with non-numeric text around it"
	}
	group := f.GroupChar
	if group != "" {
		want += fmt.Sprintf(", digits grouped by %q", group)
	}
	return func(s string) (any, bool) {
		if group != "" {
			s = strings.ReplaceAll(s, group, "")
		}
		m := re.FindStringSubmatch(s)
		if m == nil {
			return nil, false
		}
		digits := m[len(m)-1] // the number itself: group 1 if loose, else the whole match
		n, err := strconv.ParseInt(digits, 10, 64)
		return n, err == nil
	}, want
}

func numberConv(f Field) (func(string) (any, bool), string) {
	dec, group := f.decimalChar(), f.GroupChar
	re, want := full(reNumber(dec)), "a number"
	if !f.bare() {
		re, want = full(reNumberLoose(dec)), "a number, possibly with non-numeric text around it"
	}
	want += fmt.Sprintf(" with decimal mark %q", dec)
	if group != "" {
		want += fmt.Sprintf(" and group mark %q", group)
	}
	want += `, or NaN, INF, -INF`
	return func(s string) (any, bool) {
		switch s {
		case "NaN":
			return math.NaN(), true
		case "INF":
			return math.Inf(1), true
		case "-INF":
			return math.Inf(-1), true
		}
		if group != "" {
			s = strings.ReplaceAll(s, group, "")
		}
		m := re.FindStringSubmatch(s)
		if m == nil {
			return nil, false
		}
		num := m[len(m)-1]
		if dec != "." {
			num = strings.ReplaceAll(num, dec, ".")
		}
		// A literal beyond float64's range is refused rather than turned
		// into an infinity nobody wrote (DuckDBCast does the same).
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsInf(v, 0) {
			return nil, false
		}
		return v, true
	}, want
}

// decodeJSON decodes s if it is one JSON value whose first character is
// open ('{' or '['), keeping numbers exact as json.Number.
func decodeJSON(s string, open byte) (any, bool) {
	b := bytes.TrimLeft([]byte(s), " \t\r\n")
	if len(b) == 0 || b[0] != open || !json.Valid(b) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// checkFormat reports a format that is not valid for the type.
func checkFormat(typ, format string) error {
	switch typ {
	case TypeString:
		if _, _, ok := stringFormat(format); ok || format == "default" {
			return nil
		}
		return fmt.Errorf("format %q not valid for type string (want default, email, uri, uuid or binary)", format)
	case TypeDate, TypeTime, TypeDatetime:
		if format == "default" || format == "any" {
			return nil
		}
		if !strings.Contains(format, "%") {
			return fmt.Errorf("format %q not valid for type %s (want default, any or a strptime pattern such as %%Y-%%m-%%d)", format, typ)
		}
		_, err := compilePattern(format)
		return err
	case TypeGeoPoint:
		if format == "default" || format == "array" || format == "object" {
			return nil
		}
		return fmt.Errorf("format %q not valid for type geopoint (want default, array or object)", format)
	case TypeGeoJSON:
		if format == "default" || format == "topojson" {
			return nil
		}
		return fmt.Errorf("format %q not valid for type geojson (want default or topojson)", format)
	}
	if format != "default" {
		return fmt.Errorf("format %q not valid for type %s (want default)", format, typ)
	}
	return nil
}

// civil is a parsed date and time of day, before it becomes a time.Time.
type civil struct {
	year, month, day int
	hour, min, sec   int
	nsec             int
	offset           int // seconds east of UTC
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func (c civil) validDate() bool {
	return c.month >= 1 && c.month <= 12 && c.day >= 1 && c.day <= daysIn(c.year, c.month)
}

func (c civil) date() time.Time {
	return time.Date(c.year, time.Month(c.month), c.day, 0, 0, 0, 0, time.UTC)
}

func (c civil) clock() time.Time {
	return time.Date(0, 1, 1, c.hour, c.min, c.sec, c.nsec, time.UTC)
}

func (c civil) instant() time.Time {
	t := time.Date(c.year, time.Month(c.month), c.day, c.hour, c.min, c.sec, c.nsec, time.UTC)
	return t.Add(-time.Duration(c.offset) * time.Second)
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// fraction converts the digits after a decimal point to nanoseconds,
// ignoring digits beyond the ninth.
func fraction(digits string) int {
	if len(digits) > 9 {
		digits = digits[:9]
	}
	return atoi(digits + strings.Repeat("0", 9-len(digits)))
}

// parseYMD reads a date already matched by reDate or reDateAny.
func parseYMD(s string) civil {
	if len(s) == 8 {
		return civil{year: atoi(s[:4]), month: atoi(s[4:6]), day: atoi(s[6:8])}
	}
	return civil{year: atoi(s[:4]), month: atoi(s[5:7]), day: atoi(s[8:10])}
}

// parseClock reads hh:mm[:ss[.fff]] already matched by reTimeAny.
func parseClock(c *civil, s string) {
	c.hour, c.min = atoi(s[0:2]), atoi(s[3:5])
	if len(s) > 5 {
		c.sec = atoi(s[6:8])
		if len(s) > 9 {
			c.nsec = fraction(s[9:])
		}
	}
}

// parseOffset reads Z, ±hh, ±hhmm or ±hh:mm.
func parseOffset(c *civil, z string) {
	if z == "Z" || z == "" {
		return
	}
	sign := 1
	if z[0] == '-' {
		sign = -1
	}
	digits := strings.ReplaceAll(z[1:], ":", "")
	h, m := atoi(digits[:2]), 0
	if len(digits) == 4 {
		m = atoi(digits[2:])
	}
	c.offset = sign * (h*3600 + m*60)
}

func temporalConv(typ, format string) (func(string) (any, bool), string, error) {
	switch {
	case typ == TypeDate && format == "default":
		re := full(reDate)
		return func(s string) (any, bool) {
			if !re.MatchString(s) {
				return nil, false
			}
			c := parseYMD(s)
			return c.date(), c.validDate()
		}, "an ISO 8601 date, YYYY-MM-DD", nil
	case typ == TypeDate && format == "any":
		re := full(reDateAny)
		return func(s string) (any, bool) {
			if !re.MatchString(s) {
				return nil, false
			}
			c := parseYMD(s)
			return c.date(), c.validDate()
		}, "a date as YYYY-MM-DD, YYYY/MM/DD or YYYYMMDD", nil
	case typ == TypeTime && (format == "default" || format == "any"):
		re, want := full(reTime), "an ISO 8601 time, hh:mm:ss with optional fraction"
		if format == "any" {
			re, want = full(reTimeAny), "a time as hh:mm or hh:mm:ss with optional fraction"
		}
		return func(s string) (any, bool) {
			if !re.MatchString(s) {
				return nil, false
			}
			var c civil
			parseClock(&c, s)
			return c.clock(), true
		}, want, nil
	case typ == TypeDatetime && (format == "default" || format == "any"):
		re, want := full(reDatetime), "an RFC 3339 date-time, YYYY-MM-DDThh:mm:ss[.fff] with Z or ±hh:mm"
		if format == "any" {
			re, want = full(reDatetimeAny), "a date-time as YYYY-MM-DD[(T| )hh:mm[:ss[.fff]][Z|±hh[:mm]]] (no zone means UTC)"
		}
		return func(s string) (any, bool) {
			m := re.FindStringSubmatch(s)
			if m == nil {
				return nil, false
			}
			c := parseYMD(m[1])
			if m[2] != "" {
				parseClock(&c, m[2]+m[3])
			}
			parseOffset(&c, m[4])
			return c.instant(), c.validDate()
		}, want, nil
	}
	p, err := compilePattern(format)
	if err != nil {
		return nil, "", err
	}
	want := "a value matching the pattern " + strconv.Quote(format)
	return func(s string) (any, bool) {
		c, ok := p.parse(s)
		if !ok {
			return nil, false
		}
		switch typ {
		case TypeDate:
			return c.date(), true
		case TypeTime:
			return c.clock(), true
		}
		return c.instant(), true
	}, want, nil
}

// mulAdd returns a*b+c and whether it fits in a uint64.
func mulAdd(a, b, c uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	sum, carry := bits.Add64(lo, c, 0)
	return sum, hi == 0 && carry == 0
}

func durationConv() func(string) (any, bool) {
	re := full(reDuration)
	return func(s string) (any, bool) {
		m := re.FindStringSubmatch(s)
		// "P", "PT" and "P1DT" match the grammar but name no component
		// after a designator; ISO 8601 forbids them.
		if m == nil || strings.HasSuffix(s, "P") || strings.HasSuffix(s, "T") {
			return nil, false
		}
		n := func(i int) uint64 { v, _ := strconv.ParseUint(m[i], 10, 64); return v }
		months, ok1 := mulAdd(n(2), 12, n(3))
		days, ok2 := mulAdd(n(4), 7, n(5))
		ns, ok3 := mulAdd(n(6), 3600e9, 0)
		ns, ok4 := mulAdd(n(7), 60e9, ns)
		ns, ok5 := mulAdd(n(8), 1e9, ns)
		if !(ok1 && ok2 && ok3 && ok4 && ok5) || months > math.MaxInt32 || days > math.MaxInt32 || ns > math.MaxInt64 {
			return nil, false
		}
		ns += uint64(fraction(m[9])) // adds < 1e9 to at most MaxInt64: no uint64 overflow
		if ns > math.MaxInt64 {
			return nil, false
		}
		d := Duration{Months: int32(months), Days: int32(days), Nanoseconds: int64(ns)}
		if m[1] == "-" {
			d = Duration{Months: -d.Months, Days: -d.Days, Nanoseconds: -d.Nanoseconds}
		}
		return d, true
	}
}
