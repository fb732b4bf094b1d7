package tableschema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }
func intPtr(n int) *int            { return &n }

func TestCheckConstraints(t *testing.T) {
	tests := []struct {
		name  string
		field Field
		in    string // cast first, then checked
		err   string // substring; "" means the value passes
	}{
		{"a required field refuses a missing value", Field{Type: "integer", Constraints: &Constraints{Required: true}}, "", `required: a value is required`},
		{"an optional field accepts a missing value whatever its other constraints", Field{Type: "integer", Constraints: &Constraints{Minimum: raw(`10`)}}, "", ""},
		{"minimum is inclusive", Field{Type: "integer", Constraints: &Constraints{Minimum: raw(`10`)}}, "10", ""},
		{"below the minimum fails", Field{Type: "integer", Constraints: &Constraints{Minimum: raw(`10`)}}, "9", `minimum: value 9 is below 10`},
		{"above the maximum fails for numbers", Field{Type: "number", Constraints: &Constraints{Maximum: raw(`1.5`)}}, "1.6", `maximum: value 1.6 is above 1.5`},
		{"NaN satisfies no bound", Field{Type: "number", Constraints: &Constraints{Maximum: raw(`1`)}}, "NaN", `maximum`},
		{"a date minimum is written in the field's format", Field{Type: "date", Format: "%d/%m/%Y", Constraints: &Constraints{Minimum: raw(`"01/01/2020"`)}}, "31/12/2019", `minimum: value 2019-12-31T00:00:00Z is below 2020-01-01T00:00:00Z`},
		{"datetime bounds compare instants across offsets", Field{Type: "datetime", Constraints: &Constraints{Maximum: raw(`"2024-01-01T00:00:00Z"`)}}, "2024-01-01T01:00:00+01:00", ""},
		{"a yearmonth maximum", Field{Type: "yearmonth", Constraints: &Constraints{Maximum: raw(`"2024-06"`)}}, "2024-07", `maximum: value 2024-07 is above 2024-06`},
		{"a time minimum", Field{Type: "time", Constraints: &Constraints{Minimum: raw(`"09:00:00"`)}}, "08:59:59", `minimum`},
		{"a year minimum as a JSON number", Field{Type: "year", Constraints: &Constraints{Minimum: raw(`2000`)}}, "1999", `minimum`},
		{"minLength counts characters, not bytes", Field{Constraints: &Constraints{MinLength: intPtr(3)}}, "äöü", ""},
		{"too short fails minLength", Field{Constraints: &Constraints{MinLength: intPtr(3)}}, "ab", `minLength: value "ab" has length 2, below 3`},
		{"too long fails maxLength", Field{Constraints: &Constraints{MaxLength: intPtr(2)}}, "abc", `maxLength`},
		{"maxLength counts array members", Field{Type: "array", Constraints: &Constraints{MaxLength: intPtr(1)}}, `[1,2]`, `has length 2, above 1`},
		{"minLength counts object keys", Field{Type: "object", Constraints: &Constraints{MinLength: intPtr(1)}}, `{}`, `has length 0, below 1`},
		{"a pattern must match the whole value", Field{Constraints: &Constraints{Pattern: `[a-z]+`}}, "abc1", `pattern: value "abc1" does not match "[a-z]+"`},
		{"a matching pattern passes", Field{Constraints: &Constraints{Pattern: `[a-z]+\.(com|org)`}}, "example.org", ""},
		{"alternation in a pattern stays anchored", Field{Constraints: &Constraints{Pattern: `a|b`}}, "ab", `pattern`},
		{"enum of strings", Field{Constraints: &Constraints{Enum: []json.RawMessage{raw(`"a"`), raw(`"b"`)}}}, "c", `enum: value "c" is not one of "a", "b"`},
		{"enum of integers written as JSON numbers", Field{Type: "integer", Constraints: &Constraints{Enum: []json.RawMessage{raw(`1`), raw(`2`)}}}, "02", ""},
		{"enum of booleans", Field{Type: "boolean", Constraints: &Constraints{Enum: []json.RawMessage{raw(`true`)}}}, "0", `enum: value false is not one of true`},
		{"enum of datetimes compares instants", Field{Type: "datetime", Constraints: &Constraints{Enum: []json.RawMessage{raw(`"2024-01-01T00:00:00Z"`)}}}, "2024-01-01T02:00:00+02:00", ""},
		{"enum of objects compares content", Field{Type: "object", Constraints: &Constraints{Enum: []json.RawMessage{raw(`{"a":1,"b":2}`)}}}, `{"b":2,"a":1}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.field.Name = "f"
			v, err := tt.field.Cast(tt.in)
			if err != nil {
				t.Fatalf("Cast(%q): %v", tt.in, err)
			}
			err = tt.field.CheckConstraints(v)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("CheckConstraints(%#v): %v", v, err)
				}
				return
			}
			var ce *ConstraintError
			if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("CheckConstraints(%#v) = %v, want a *ConstraintError containing %q", v, err, tt.err)
			}
		})
	}
}

func TestCheckConstraintsReportsAnInvalidField(t *testing.T) {
	err := Field{Name: "b", Type: "boolean", Constraints: &Constraints{Minimum: raw(`1`)}}.CheckConstraints(true)
	if err == nil || !strings.Contains(err.Error(), `field "b": constraints.minimum: minimum does not apply to type boolean`) {
		t.Fatalf("got %v", err)
	}
}

func TestMapper(t *testing.T) {
	s := DefaultDomainPackage().Resources[0].Schema
	tests := []struct {
		name    string
		header  []string
		cols    []int
		missing []string
		extra   []string
		err     string
	}{
		{"the schema's own order maps one to one", []string{"domain", "company_name", "scraper_version", "updated_at"}, []int{0, 1, 2, 3}, nil, nil, ""},
		{"reordered columns map by name", []string{"updated_at", "domain", "scraper_version", "company_name"}, []int{1, 3, 2, 0}, nil, nil, ""},
		{"a field the file lacks is missing", []string{"domain", "updated_at"}, []int{0, -1, -1, 1}, []string{"company_name", "scraper_version"}, nil, ""},
		{"a column the schema lacks is an extra", []string{"domain", "source", "company_name", "scraper_version", "updated_at", "Domain"}, []int{0, 2, 3, 4}, nil, []string{"source", "Domain"}, ""},
		{"names match exactly, case and spaces included", []string{"Domain", " domain"}, []int{-1, -1, -1, -1}, []string{"domain", "company_name", "scraper_version", "updated_at"}, []string{"Domain", " domain"}, ""},
		{"a column named twice is ambiguous", []string{"domain", "x", "domain"}, nil, nil, nil, `map header: column "domain" appears twice (columns 0 and 2)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := s.Mapper(tt.header)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("got %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var cols []int
			for i := range s.Fields {
				cols = append(cols, m.Column(i))
			}
			if !reflect.DeepEqual(cols, tt.cols) || !reflect.DeepEqual(m.Missing(), tt.missing) || !reflect.DeepEqual(m.Extra(), tt.extra) {
				t.Fatalf("cols %v missing %q extra %q; want %v %q %q", cols, m.Missing(), m.Extra(), tt.cols, tt.missing, tt.extra)
			}
			if m.Width() != len(tt.header) {
				t.Fatalf("width %d", m.Width())
			}
		})
	}
}

func TestRowChecker(t *testing.T) {
	p, err := ParsePackage([]byte(`{"resources":[{"name":"r","path":"x.usv","schema":{
		"fields":[
			{"name":"domain","constraints":{"required":true}},
			{"name":"n","type":"integer","constraints":{"minimum":0}},
			{"name":"email","format":"email","constraints":{"unique":true}},
			{"name":"at","type":"datetime"}
		],
		"primaryKey":["domain","at"],
		"missingValues":["","NA"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Resources[0].Schema
	at := "2024-01-01T00:00:00Z"
	// Each step either switches header (header != nil) or checks a row.
	steps := []struct {
		name   string
		header []string
		row    []string
		vals   []any
		errs   []string // substrings, one per FieldError, in order
	}{
		{name: "a good row in schema order casts every unit", row: []string{"a.com", "1", "x@a.com", at},
			vals: []any{"a.com", int64(1), "x@a.com", utc(2024, 1, 1, 0, 0, 0, 0)}},
		{name: "missing values cast to nil and only required complains", row: []string{"NA", "NA", "", ""},
			vals: []any{nil, nil, nil, nil}, errs: []string{`field "domain": required`, `field "at": required`}},
		{name: "a cast failure and a constraint failure are both reported", row: []string{"b.com", "-1", "not-an-email", "yesterday"},
			vals: []any{"b.com", int64(-1), nil, nil},
			errs: []string{`field "n": minimum`, `field "email": cannot cast "not-an-email"`, `field "at": cannot cast "yesterday"`}},
		{name: "a repeated unique value is reported", row: []string{"c.com", "2", "x@a.com", at},
			vals: []any{"c.com", int64(2), "x@a.com", utc(2024, 1, 1, 0, 0, 0, 0)}, errs: []string{`field "email": unique: value "x@a.com" appeared in an earlier row`}},
		{name: "a repeated primary key is reported even written differently", row: []string{"a.com", "3", "y@a.com", "2024-01-01T01:00:00+01:00"},
			vals: []any{"a.com", int64(3), "y@a.com", utc(2024, 1, 1, 0, 0, 0, 0)}, errs: []string{`field "domain,at": primaryKey: ("a.com", 2024-01-01T00:00:00Z) appeared in an earlier row`}},
		{name: "a short record is reported and its absent units read as missing", row: []string{"d.com", "4"},
			vals: []any{"d.com", int64(4), nil, nil}, errs: []string{`record has 2 units, header has 4`, `field "at": required`}},
		{name: "a file header with reordered, missing and extra columns", header: []string{"at", "source", "domain"}},
		{name: "rows then map by that header", row: []string{at, "crawler", "e.com"},
			vals: []any{"e.com", nil, nil, utc(2024, 1, 1, 0, 0, 0, 0)}},
		{name: "uniqueness spans files", row: []string{at, "crawler", "a.com"},
			vals: []any{"a.com", nil, nil, utc(2024, 1, 1, 0, 0, 0, 0)}, errs: []string{`primaryKey`}},
	}
	rc, err := s.NewRowChecker()
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.header != nil {
				m, err := rc.SetHeader(st.header)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(m.Extra(), []string{"source"}) || !reflect.DeepEqual(m.Missing(), []string{"n", "email"}) {
					t.Fatalf("extra %q missing %q", m.Extra(), m.Missing())
				}
				return
			}
			vals, errs := rc.Check(st.row)
			for i := range vals {
				if !sameValue(s.Fields[i], st.vals[i], vals[i]) && !reflect.DeepEqual(st.vals[i], vals[i]) {
					t.Errorf("value %d = %#v, want %#v", i, vals[i], st.vals[i])
				}
			}
			if len(errs) != len(st.errs) {
				t.Fatalf("got %d errors, want %d: %v", len(errs), len(st.errs), errs)
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), st.errs[i]) {
					t.Errorf("error %d = %q, want it to contain %q", i, e, st.errs[i])
				}
			}
		})
	}
}

func TestNewRowCheckerRefusesAnInvalidSchema(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "a", Type: "integr"}}}
	if _, err := s.NewRowChecker(); err == nil || !strings.Contains(err.Error(), `compile row checker: fields[0].type: unknown type "integr"`) {
		t.Fatalf("got %v", err)
	}
}
