package tableschema

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func utc(y int, m time.Month, d, h, mi, s, ns int) time.Time {
	return time.Date(y, m, d, h, mi, s, ns, time.UTC)
}

func TestCast(t *testing.T) {
	tests := []struct {
		name  string
		field Field
		in    string
		want  any
		err   string // substring of the error; "" means success
	}{
		// missing values
		{"an empty unit is missing by default", Field{Type: "integer"}, "", nil, ""},
		{"an empty string field is missing too", Field{Type: "string"}, "", nil, ""},
		{"NA is a value unless the schema says otherwise", Field{Type: "string"}, "NA", "NA", ""},

		// string
		{"a string is its raw text, spaces included", Field{}, " a b ", " a b ", ""},
		{"an e-mail address passes the email format", Field{Type: "string", Format: "email"}, "ops@example.com", "ops@example.com", ""},
		{"text without @ fails the email format", Field{Type: "string", Format: "email"}, "ops.example.com", nil, "want an e-mail address"},
		{"an absolute URI passes the uri format", Field{Type: "string", Format: "uri"}, "https://example.com/a?b=c", "https://example.com/a?b=c", ""},
		{"a relative reference fails the uri format", Field{Type: "string", Format: "uri"}, "/a/b", nil, "absolute URI"},
		{"a hyphenated UUID passes the uuid format", Field{Type: "string", Format: "uuid"}, "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000", ""},
		{"a UUID without hyphens fails the uuid format", Field{Type: "string", Format: "uuid"}, "123e4567e89b12d3a456426614174000", nil, "UUID"},
		{"padded base64 passes the binary format", Field{Type: "string", Format: "binary"}, "aGVsbG8=", "aGVsbG8=", ""},
		{"unpadded base64 fails the binary format", Field{Type: "string", Format: "binary"}, "aGVsbG8", nil, "base64"},

		// integer
		{"an integer with a sign casts to int64", Field{Type: "integer"}, "-42", int64(-42), ""},
		{"leading zeros are allowed", Field{Type: "integer"}, "007", int64(7), ""},
		{"the largest int64 casts", Field{Type: "integer"}, "9223372036854775807", int64(math.MaxInt64), ""},
		{"one past the largest int64 fails", Field{Type: "integer"}, "9223372036854775808", nil, "want an integer"},
		{"a decimal is not an integer", Field{Type: "integer"}, "5.0", nil, "want an integer"},
		{"surrounding space is not stripped", Field{Type: "integer"}, " 5", nil, "want an integer"},
		{"a currency sign fails a bare integer", Field{Type: "integer"}, "$5", nil, "want an integer"},
		{"bareNumber false strips a currency sign", Field{Type: "integer", BareNumber: boolPtr(false)}, "$5", int64(5), ""},
		{"bareNumber false keeps the sign", Field{Type: "integer", BareNumber: boolPtr(false)}, "EUR -5.", int64(-5), ""},
		{"bareNumber false still needs one number", Field{Type: "integer", BareNumber: boolPtr(false)}, "1 of 2", nil, "non-numeric text"},
		{"a group mark is removed", Field{Type: "integer", GroupChar: ","}, "1,234,567", int64(1234567), ""},

		// number
		{"a decimal casts to float64", Field{Type: "number"}, "1.5", 1.5, ""},
		{"an exponent is allowed", Field{Type: "number"}, "-2.5e-3", -0.0025, ""},
		{"a leading decimal point is allowed", Field{Type: "number"}, ".5", 0.5, ""},
		{"INF is infinity", Field{Type: "number"}, "INF", math.Inf(1), ""},
		{"-INF is negative infinity", Field{Type: "number"}, "-INF", math.Inf(-1), ""},
		{"lower-case inf is not a number", Field{Type: "number"}, "inf", nil, "want a number"},
		{"a literal beyond float64 fails", Field{Type: "number"}, "1e400", nil, "want a number"},
		{"hexadecimal is not a number", Field{Type: "number"}, "0x10", nil, "want a number"},
		{"a decimal comma with group dots", Field{Type: "number", DecimalChar: ",", GroupChar: "."}, "1.234,5", 1234.5, ""},
		{"a decimal point fails when the mark is a comma", Field{Type: "number", DecimalChar: ","}, "1.5", nil, `decimal mark ","`},
		{"a space as group mark", Field{Type: "number", GroupChar: " "}, "1 000.25", 1000.25, ""},
		{"bareNumber false strips a percent sign", Field{Type: "number", BareNumber: boolPtr(false)}, "95.5%", 95.5, ""},
		{"bareNumber false with groups strips a currency", Field{Type: "number", BareNumber: boolPtr(false), GroupChar: ","}, "€1,000.50", 1000.5, ""},

		// boolean
		{"true casts to true", Field{Type: "boolean"}, "true", true, ""},
		{"1 casts to true", Field{Type: "boolean"}, "1", true, ""},
		{"FALSE casts to false", Field{Type: "boolean"}, "FALSE", false, ""},
		{"mixed case is not a default boolean", Field{Type: "boolean"}, "tRue", nil, `want one of "true"`},
		{"yes is not a default boolean", Field{Type: "boolean"}, "yes", nil, "want one of"},
		{"custom true values replace the defaults", Field{Type: "boolean", TrueValues: []string{"yes"}, FalseValues: []string{"no"}}, "yes", true, ""},
		{"custom values drop the default ones", Field{Type: "boolean", TrueValues: []string{"yes"}, FalseValues: []string{"no"}}, "true", nil, `want one of "yes", "no"`},

		// date
		{"an ISO date casts to midnight UTC", Field{Type: "date"}, "2024-02-29", utc(2024, 2, 29, 0, 0, 0, 0), ""},
		{"a day past the month's end fails", Field{Type: "date"}, "2023-02-29", nil, "YYYY-MM-DD"},
		{"an unpadded month fails the default date", Field{Type: "date"}, "2024-1-05", nil, "YYYY-MM-DD"},
		{"the any format reads slashes", Field{Type: "date", Format: "any"}, "2024/01/05", utc(2024, 1, 5, 0, 0, 0, 0), ""},
		{"the any format reads packed digits", Field{Type: "date", Format: "any"}, "20240105", utc(2024, 1, 5, 0, 0, 0, 0), ""},
		{"a day-first pattern", Field{Type: "date", Format: "%d/%m/%Y"}, "05/01/2024", utc(2024, 1, 5, 0, 0, 0, 0), ""},
		{"a pattern accepts unpadded numbers as Python does", Field{Type: "date", Format: "%d/%m/%Y"}, "5/1/2024", utc(2024, 1, 5, 0, 0, 0, 0), ""},
		{"the legacy fmt: prefix is accepted", Field{Type: "date", Format: "fmt:%d/%m/%Y"}, "05/01/2024", utc(2024, 1, 5, 0, 0, 0, 0), ""},
		{"month names are case-insensitive", Field{Type: "date", Format: "%d %b %Y"}, "5 JAN 2024", utc(2024, 1, 5, 0, 0, 0, 0), ""},
		{"full month names and weekdays", Field{Type: "date", Format: "%A, %d %B %Y"}, "Monday, 05 February 2024", utc(2024, 2, 5, 0, 0, 0, 0), ""},
		{"a packed pattern splits as Python's regex does", Field{Type: "date", Format: "%Y%m%d"}, "202415", utc(2024, 1, 5, 0, 0, 0, 0), ""},
		{"day of the year", Field{Type: "date", Format: "%Y-%j"}, "2024-060", utc(2024, 2, 29, 0, 0, 0, 0), ""},
		{"day 366 of a common year fails", Field{Type: "date", Format: "%Y-%j"}, "2023-366", nil, "pattern"},
		{"two-digit years pivot at 69", Field{Type: "date", Format: "%y-%m-%d"}, "68-12-31", utc(2068, 12, 31, 0, 0, 0, 0), ""},
		{"two-digit year 69 is 1969", Field{Type: "date", Format: "%y-%m-%d"}, "69-01-01", utc(1969, 1, 1, 0, 0, 0, 0), ""},
		{"trailing text fails a pattern", Field{Type: "date", Format: "%Y-%m-%d"}, "2024-01-05 ", nil, `pattern "%Y-%m-%d"`},
		{"a date pattern with an offset keeps the written date", Field{Type: "date", Format: "%Y-%m-%d %z"}, "2024-01-05 +1400", utc(2024, 1, 5, 0, 0, 0, 0), ""},

		// time
		{"a time casts onto 0000-01-01", Field{Type: "time"}, "23:59:58", utc(0, 1, 1, 23, 59, 58, 0), ""},
		{"a time keeps nanoseconds", Field{Type: "time"}, "10:00:00.123456789", utc(0, 1, 1, 10, 0, 0, 123456789), ""},
		{"24:00:00 is not a time", Field{Type: "time"}, "24:00:00", nil, "hh:mm:ss"},
		{"the default time needs seconds", Field{Type: "time"}, "10:00", nil, "hh:mm:ss"},
		{"the any time format allows hh:mm", Field{Type: "time", Format: "any"}, "10:05", utc(0, 1, 1, 10, 5, 0, 0), ""},
		{"a twelve-hour clock after noon", Field{Type: "time", Format: "%I:%M %p"}, "03:04 PM", utc(0, 1, 1, 15, 4, 0, 0), ""},
		{"12 AM is midnight", Field{Type: "time", Format: "%I:%M %p"}, "12:00 AM", utc(0, 1, 1, 0, 0, 0, 0), ""},
		{"%f reads up to six digits as a fraction", Field{Type: "time", Format: "%H:%M:%S.%f"}, "10:00:00.5", utc(0, 1, 1, 10, 0, 0, 500000000), ""},

		// datetime
		{"an RFC 3339 UTC date-time", Field{Type: "datetime"}, "2024-05-01T10:00:00Z", utc(2024, 5, 1, 10, 0, 0, 0), ""},
		{"an offset is applied and the result is UTC", Field{Type: "datetime"}, "2024-05-01T10:00:00.5+02:00", utc(2024, 5, 1, 8, 0, 0, 500000000), ""},
		{"a negative half-hour offset", Field{Type: "datetime"}, "2024-01-01T00:00:00-05:30", utc(2024, 1, 1, 5, 30, 0, 0), ""},
		{"the default datetime needs a zone", Field{Type: "datetime"}, "2024-05-01T10:00:00", nil, "RFC 3339"},
		{"the default datetime needs the T", Field{Type: "datetime"}, "2024-05-01 10:00:00Z", nil, "RFC 3339"},
		{"a leap second is refused", Field{Type: "datetime"}, "2016-12-31T23:59:60Z", nil, "RFC 3339"},
		{"an impossible day is refused", Field{Type: "datetime"}, "2024-02-30T10:00:00Z", nil, "RFC 3339"},
		{"any reads a space and no zone as UTC", Field{Type: "datetime", Format: "any"}, "2024-05-01 10:00:00", utc(2024, 5, 1, 10, 0, 0, 0), ""},
		{"any reads a date alone as midnight UTC", Field{Type: "datetime", Format: "any"}, "2024-05-01", utc(2024, 5, 1, 0, 0, 0, 0), ""},
		{"any reads hh:mm and a compact offset", Field{Type: "datetime", Format: "any"}, "2024-05-01T10:00+0530", utc(2024, 5, 1, 4, 30, 0, 0), ""},
		{"any reads an hour-only offset", Field{Type: "datetime", Format: "any"}, "2024-05-01 10:00:00-03", utc(2024, 5, 1, 13, 0, 0, 0), ""},
		{"any refuses a zone name", Field{Type: "datetime", Format: "any"}, "2024-05-01 10:00:00 UTC", nil, "date-time"},
		{"a pattern without zone is UTC", Field{Type: "datetime", Format: "%d.%m.%Y %H:%M"}, "01.05.2024 10:00", utc(2024, 5, 1, 10, 0, 0, 0), ""},
		{"a pattern with %z applies the offset", Field{Type: "datetime", Format: "%Y-%m-%d %H:%M:%S %z"}, "2024-05-01 10:00:00 -0100", utc(2024, 5, 1, 11, 0, 0, 0), ""},
		{"%z does not read Z", Field{Type: "datetime", Format: "%Y-%m-%d %H:%M:%S %z"}, "2024-05-01 10:00:00 Z", nil, "pattern"},
		{"%Z reads GMT as UTC", Field{Type: "datetime", Format: "%Y-%m-%d %H:%M %Z"}, "2024-05-01 10:00 GMT", utc(2024, 5, 1, 10, 0, 0, 0), ""},
		{"%Z knows no other zone names", Field{Type: "datetime", Format: "%Y-%m-%d %H:%M %Z"}, "2024-05-01 10:00 CET", nil, "pattern"},
		{"whitespace in a pattern matches any run of whitespace", Field{Type: "datetime", Format: "%Y-%m-%d %H:%M"}, "2024-05-01 \t 10:00", utc(2024, 5, 1, 10, 0, 0, 0), ""},

		// year, yearmonth
		{"a year casts to int64", Field{Type: "year"}, "2024", int64(2024), ""},
		{"a two-digit year fails", Field{Type: "year"}, "24", nil, "four-digit year"},
		{"a yearmonth casts to YearMonth", Field{Type: "yearmonth"}, "2024-02", YearMonth{2024, 2}, ""},
		{"month 13 fails", Field{Type: "yearmonth"}, "2024-13", nil, "YYYY-MM"},

		// duration
		{"a full ISO duration", Field{Type: "duration"}, "P1Y2M3DT4H5M6.5S", Duration{Months: 14, Days: 3, Nanoseconds: (4*3600+5*60+6)*1e9 + 5e8}, ""},
		{"weeks count as seven days", Field{Type: "duration"}, "P2W", Duration{Days: 14}, ""},
		{"a leading minus negates every part", Field{Type: "duration"}, "-P1MT1S", Duration{Months: -1, Nanoseconds: -1e9}, ""},
		{"P alone names no component", Field{Type: "duration"}, "P", nil, "ISO 8601 duration"},
		{"a T must be followed by a component", Field{Type: "duration"}, "P1DT", nil, "ISO 8601 duration"},
		{"fractions only on seconds", Field{Type: "duration"}, "P1.5D", nil, "ISO 8601 duration"},
		{"months beyond int32 fail", Field{Type: "duration"}, "P178956971Y", nil, "ISO 8601 duration"},
		{"the time part stops at 2^63-1 nanoseconds", Field{Type: "duration"}, "PT9223372036.854775808S", nil, "ISO 8601 duration"},

		// object, array, geo, any
		{"an object keeps numbers exact", Field{Type: "object"}, `{"a": 12345678901234567890}`, map[string]any{"a": json.Number("12345678901234567890")}, ""},
		{"a list is not an object", Field{Type: "object"}, `[1]`, nil, "JSON object"},
		{"trailing data is not an object", Field{Type: "object"}, `{} {}`, nil, "JSON object"},
		{"an array casts to []any", Field{Type: "array"}, `[1, "a", null]`, []any{json.Number("1"), "a", nil}, ""},
		{"a trailing comma is not JSON", Field{Type: "array"}, `[1,]`, nil, "JSON array"},
		{"geojson is kept as text once it is an object", Field{Type: "geojson"}, `{"type":"Point","coordinates":[1,2]}`, `{"type":"Point","coordinates":[1,2]}`, ""},
		{"geojson must be an object", Field{Type: "geojson"}, `"Point"`, nil, "GeoJSON"},
		{"geopoint is kept as text", Field{Type: "geopoint"}, "90, 45", "90, 45", ""},
		{"any is kept as text", Field{Type: "any"}, "x␟y", "x␟y", ""},

		// schema problems surface as such
		{"an unknown type is a schema error, not a value error", Field{Type: "integr"}, "1", nil, `unknown type "integr"`},
		{"a bad pattern is a schema error", Field{Type: "date", Format: "%Y-%q"}, "2024", nil, "unsupported directive %q"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.field.Name = "f"
			got, err := tt.field.Cast(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Cast(%q) = %#v, %v; want an error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Cast(%q): %v", tt.in, err)
			}
			if gt, ok := got.(time.Time); ok {
				wt, _ := tt.want.(time.Time)
				if !gt.Equal(wt) || gt.Location() != time.UTC {
					t.Fatalf("Cast(%q) = %v, want %v in UTC", tt.in, gt, wt)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Cast(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestCastNaN(t *testing.T) {
	v, err := Field{Name: "n", Type: "number"}.Cast("NaN")
	if f, ok := v.(float64); err != nil || !ok || !math.IsNaN(f) {
		t.Fatalf("NaN casts to %#v, %v", v, err)
	}
}

func TestCastErrorNamesFieldValueAndExpectation(t *testing.T) {
	_, err := Field{Name: "scraper_version", Type: "integer"}.Cast("v3")
	var ce *CastError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *CastError, got %T %v", err, err)
	}
	want := `field "scraper_version": cannot cast "v3" to integer: want an integer (digits with an optional sign)`
	if err.Error() != want {
		t.Fatalf("got  %s\nwant %s", err, want)
	}
	_, err = Field{Name: "d", Type: "date", Format: "%d/%m/%Y"}.Cast(strings.Repeat("x", 200))
	if !strings.Contains(err.Error(), `(format "%d/%m/%Y")`) || !strings.Contains(err.Error(), "…") || len(err.Error()) > 250 {
		t.Fatalf("a long value should be shortened and the format named: %s", err)
	}
}

func TestCastHonoursTheSchemaMissingValues(t *testing.T) {
	p, err := ParsePackage([]byte(`{"resources":[{"name":"r","path":"a.usv","schema":{
		"fields":[{"name":"n","type":"integer"}],"missingValues":["NA","-"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Resources[0].Schema
	tests := []struct {
		name string
		f    Field
		in   string
		want any
		err  bool
	}{
		{"a listed missing value reads as nil through Fields", s.Fields[0], "NA", nil, false},
		{"a listed missing value reads as nil through Field", mustField(t, s, "n"), "-", nil, false},
		{"an empty unit is not missing when the list omits it", s.Fields[0], "", nil, true},
		{"a hand-built field uses the default list", Field{Name: "n", Type: "integer"}, "NA", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.f.Cast(tt.in)
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("Cast(%q) = %#v, %v", tt.in, got, err)
			}
		})
	}
}

func mustField(t *testing.T, s *Schema, name string) Field {
	t.Helper()
	f, ok := s.Field(name)
	if !ok {
		t.Fatalf("no field %q", name)
	}
	return f
}

func TestDurationStringCastsBack(t *testing.T) {
	for _, in := range []string{"P1Y2M3DT4H5M6.5S", "-P1D", "PT0S", "P2W", "PT0.000000001S", "-PT36H"} {
		f := Field{Name: "d", Type: "duration"}
		v, err := f.Cast(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		d := v.(Duration)
		back, err := f.Cast(d.String())
		if err != nil || back != d {
			t.Fatalf("%s -> %s -> %#v, %v", in, d, back, err)
		}
	}
}
