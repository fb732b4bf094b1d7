package tableschema

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// pkgWithFields wraps a fields list (JSON) into a minimal package.
func pkgWithFields(fields string, schemaExtra ...string) string {
	extra := ""
	if len(schemaExtra) > 0 {
		extra = "," + strings.Join(schemaExtra, ",")
	}
	return `{"name":"p","resources":[{"name":"r","path":"shards/*.usv","schema":{"fields":` + fields + extra + `}}]}`
}

// problems flattens ParsePackage's joined error into "path: msg" lines.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var ve *ValidationError
		if !errors.As(e, &ve) {
			t.Errorf("problem %q is a %T, want *ValidationError", e, e)
		}
		out = append(out, e.Error())
	}
	walk(err)
	return out
}

func TestParsePackageRejects(t *testing.T) {
	const sf = `resources[0].schema.fields`
	tests := []struct {
		name string
		json string
		want []string // every problem, in order, as "path: message" prefixes
	}{
		{
			name: "an unknown type names the field by path and lists the types",
			json: pkgWithFields(`[{"name":"a"},{"name":"b","type":"string"},{"name":"c","type":"integr"}]`),
			want: []string{sf + `[2].type: unknown type "integr" (want one of string, number, integer, boolean, object, array, date, time, datetime, year, yearmonth, duration, geopoint, geojson, any)`},
		},
		{
			name: "a duplicate field name points at the second one",
			json: pkgWithFields(`[{"name":"a"},{"name":"a","type":"integer"}]`),
			want: []string{sf + `[1].name: duplicate field name "a" (also fields[0])`},
		},
		{
			name: "a primary key naming no field is refused",
			json: pkgWithFields(`[{"name":"a"}]`, `"primaryKey":"domain"`),
			want: []string{`resources[0].schema.primaryKey: primary key names "domain", which is not a field`},
		},
		{
			name: "a composite primary key is checked member by member",
			json: pkgWithFields(`[{"name":"a"},{"name":"b"}]`, `"primaryKey":["a","c","a"]`),
			want: []string{`resources[0].schema.primaryKey[1]: primary key names "c"`, `resources[0].schema.primaryKey[2]: primary key names "a" twice`},
		},
		{
			name: "minimum on a boolean is refused",
			json: pkgWithFields(`[{"name":"ok","type":"boolean","constraints":{"minimum":1}}]`),
			want: []string{sf + `[0].constraints.minimum: minimum does not apply to type boolean (only to integer, number, date, time, datetime, year, yearmonth)`},
		},
		{
			name: "pattern on an integer is refused",
			json: pkgWithFields(`[{"name":"n","type":"integer","constraints":{"pattern":"[0-9]+"}}]`),
			want: []string{sf + `[0].constraints.pattern: pattern does not apply to type integer`},
		},
		{
			name: "an invalid regular expression is refused",
			json: pkgWithFields(`[{"name":"s","constraints":{"pattern":"([a-z]"}}]`),
			want: []string{sf + `[0].constraints.pattern: invalid regular expression: error parsing regexp: missing closing )`},
		},
		{
			name: "a format not valid for the type is refused",
			json: pkgWithFields(`[{"name":"n","type":"integer","format":"hex"},{"name":"s","format":"phone"},{"name":"d","type":"date","format":"iso"}]`),
			want: []string{
				sf + `[0].format: format "hex" not valid for type integer (want default)`,
				sf + `[1].format: format "phone" not valid for type string (want default, email, uri, uuid or binary)`,
				sf + `[2].format: format "iso" not valid for type date (want default, any or a strptime pattern such as %Y-%m-%d)`,
			},
		},
		{
			name: "an unsupported strptime directive is refused",
			json: pkgWithFields(`[{"name":"d","type":"datetime","format":"%Y-%m-%dT%H:%M:%S%Q"}]`),
			want: []string{sf + `[0].format: format "%Y-%m-%dT%H:%M:%S%Q": unsupported directive %Q`},
		},
		{
			name: "missingValues must be a list of strings",
			json: pkgWithFields(`[{"name":"a"}]`, `"missingValues":["",0,null]`),
			want: []string{
				`resources[0].schema.missingValues[1]: want a string, got a number`,
				`resources[0].schema.missingValues[2]: want a string, got null`,
			},
		},
		{
			name: "missingValues as a string is refused",
			json: pkgWithFields(`[{"name":"a"}]`, `"missingValues":"NA"`),
			want: []string{`resources[0].schema.missingValues: want a list of strings, got a string`},
		},
		{
			name: "a minimum that does not cast to the field's type is refused",
			json: pkgWithFields(`[{"name":"d","type":"date","constraints":{"minimum":"2024-13-01"}},{"name":"n","type":"integer","constraints":{"maximum":1.5}}]`),
			want: []string{
				sf + `[0].constraints.minimum: cannot cast "2024-13-01" to date: want an ISO 8601 date, YYYY-MM-DD`,
				sf + `[1].constraints.maximum: want an integer, got 1.5`,
			},
		},
		{
			name: "a maximum below the minimum is refused",
			json: pkgWithFields(`[{"name":"n","type":"integer","constraints":{"minimum":10,"maximum":5}},{"name":"s","constraints":{"minLength":3,"maxLength":2}}]`),
			want: []string{sf + `[0].constraints.maximum: 5 is below minimum 10`, sf + `[1].constraints.maxLength: 2 is below minLength 3`},
		},
		{
			name: "enum members must cast and the list must not be empty",
			json: pkgWithFields(`[{"name":"n","type":"integer","constraints":{"enum":[1,"x"]}},{"name":"s","constraints":{"enum":[]}}]`),
			want: []string{sf + `[0].constraints.enum[1]: cannot cast "x" to integer`, sf + `[1].constraints.enum: want a non-empty list`},
		},
		{
			name: "constraint values of the wrong JSON type are refused",
			json: pkgWithFields(`[{"name":"s","constraints":{"required":"yes","minLength":-1}}]`),
			want: []string{sf + `[0].constraints.required: want true or false, got a string`, sf + `[0].constraints.minLength: want a non-negative integer, got -1`},
		},
		{
			name: "number options on the wrong type or with bad marks are refused",
			json: pkgWithFields(`[{"name":"s","decimalChar":",","bareNumber":false},{"name":"n","type":"number","decimalChar":"..","groupChar":"."},{"name":"b","type":"boolean","trueValues":["y"],"falseValues":["n","y"]}]`),
			want: []string{
				sf + `[0].bareNumber: applies only to number and integer fields, not string`,
				sf + `[0].decimalChar: applies only to number fields, not string`,
				sf + `[1].decimalChar: want a single character, got ".."`,
				sf + `[2].falseValues[1]: "y" is also a true value`,
			},
		},
		{
			name: "a field without a name and a field that is not an object are refused",
			json: pkgWithFields(`[{"type":"string"},"domain"]`),
			want: []string{sf + `[1]: want an object, got a string`, sf + `[0].name: a field needs a name`},
		},
		{
			name: "a field name of the wrong type is reported once",
			json: pkgWithFields(`[{"name":5}]`),
			want: []string{sf + `[0].name: want a string, got a number`},
		},
		{
			name: "every resource problem is reported together",
			json: `{"resources":[{"path":"/etc/passwd","schema":"schema.json"},{"name":"x","path":["a.usv","../b.usv"]},{"name":"x","data":[],"schema":{"fields":[]}}]}`,
			want: []string{
				`resources[0].schema: only an inline schema object is supported, got a reference`,
				`resources[0].name: a resource needs a name`,
				`resources[0].path: path "/etc/passwd" is absolute`,
				`resources[1].path[1]: path "../b.usv" contains ".."`,
				`resources[1].schema: a tabular resource needs an inline schema`,
				`resources[2].name: duplicate resource name "x" (also resources[1])`,
				`resources[2].path: inline data is not supported; want a path`,
				`resources[2].schema.fields: a schema needs at least one field`,
			},
		},
		{
			name: "a package needs resources",
			json: `{"name":"p"}`,
			want: []string{`resources: a package needs at least one resource`},
		},
		{
			name: "a package that is not an object is refused",
			json: `[]`,
			want: []string{`want an object, got a list`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePackage([]byte(tt.json))
			if p != nil {
				t.Fatal("ParsePackage returned a package with errors")
			}
			got := problems(t, err)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParsePackageRejectsInvalidJSON(t *testing.T) {
	_, err := ParsePackage([]byte(`{"name":`))
	var ve *ValidationError
	if err == nil || errors.As(err, &ve) || !strings.HasPrefix(err.Error(), "parse datapackage: ") {
		t.Fatalf("got %v", err)
	}
}

func TestSchemaValidatePathsAreRelativeToTheSchema(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "a", Type: "integer", Constraints: &Constraints{Pattern: "x"}}}, PrimaryKey: []string{"b"}}
	got := problems(t, s.Validate())
	want := []string{
		"fields[0].constraints.pattern: pattern does not apply to type integer (only to string)",
		`primaryKey: primary key names "b", which is not a field`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestEveryTypeAndFormatValidates(t *testing.T) {
	formats := map[string][]string{
		TypeString:   {"", "default", "email", "uri", "uuid", "binary"},
		TypeDate:     {"", "any", "%d/%m/%Y", "fmt:%Y%m%d"},
		TypeTime:     {"", "any", "%I:%M %p"},
		TypeDatetime: {"", "any", "%Y-%m-%dT%H:%M:%S%z", "%d %b %Y %H:%M %Z"},
		TypeGeoPoint: {"", "array", "object"},
		TypeGeoJSON:  {"", "topojson"},
	}
	for _, typ := range Types() {
		fs := formats[typ]
		if fs == nil {
			fs = []string{"", "default"}
		}
		for _, f := range fs {
			t.Run(fmt.Sprintf("type %s with format %q is valid", typ, f), func(t *testing.T) {
				s := &Schema{Fields: []Field{{Name: "x", Type: typ, Format: f}}}
				if err := s.Validate(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
