// Package tableschema owns the typing of DHSI's USV records: the Frictionless
// Data Package (`datapackage.json`) in an index directory beside shards/,
// the Table Schema inside it, and the rules that turn a unit's raw text into
// a typed value. It implements the subset of Frictionless Data Package and
// Table Schema v1 that DHSI needs; docs/format/datapackage.md lists it.
//
// Promises:
//
//   - ParsePackage returns a package only if it decodes and validates
//     cleanly; otherwise it reports every problem at once, each a
//     *ValidationError whose Path is the JSON path of the offending
//     property (resources[0].schema.fields[2].type).
//   - Properties this package does not model are kept verbatim and written
//     back by MarshalJSON, so reading and rewriting a package loses nothing
//     another tool put there.
//   - Field.Cast never panics. It returns nil for a missing value, a value of
//     the Go type documented on Cast, or a *CastError naming the field, the
//     value and what was expected.
//   - DuckDBCast produces SQL that types a raw VARCHAR column as Cast does
//     (tested value by value against the real DuckDB), up to DuckDB's
//     microsecond precision and its laxer JSON, and an error for formats it
//     cannot express; invalid values become NULL there, where Cast returns
//     an error. DuckDBQuery and DuckDBHeaderQuery build on it to read USV
//     files with plain DuckDB.
//
// Nothing here holds mutable package-level state; a RowChecker holds the
// state of one pass over one resource and is not safe for concurrent use.
package tableschema

import (
	"encoding/json"
)

// Package is a Frictionless Data Package descriptor (datapackage.json).
type Package struct {
	Name        string
	Title       string
	Description string
	Profile     string // e.g. "tabular-data-package"; free text, not checked
	Version     string
	Resources   []Resource
	// Extra holds every property not modelled above (licenses, sources,
	// keywords, created, ...), verbatim, so a rewrite keeps them.
	Extra map[string]json.RawMessage
}

// Resource is one data resource of a package. DHSI supports tabular
// resources whose data sit in files named by Path and whose Table Schema is
// inline.
type Resource struct {
	Name    string
	Path    []string // one or more paths or glob patterns, relative to the package
	Profile string   // e.g. "tabular-data-resource"
	Format  string   // e.g. "usv"; informative only
	Schema  *Schema
	Extra   map[string]json.RawMessage

	// pathList records that Path was written as a JSON list, so that a
	// one-element list does not come back as a bare string.
	pathList bool
}

// Schema is a Frictionless Table Schema.
type Schema struct {
	Fields     []Field
	PrimaryKey []string
	// MissingValues are the raw strings that mean "no value". nil means the
	// specification's default, [""]; an empty non-nil slice means that no
	// string is missing.
	MissingValues []string
	// ForeignKeys are kept verbatim and not interpreted: DHSI has one
	// resource per package, so there is nothing for them to point at.
	ForeignKeys json.RawMessage
	Extra       map[string]json.RawMessage

	primaryKeyList bool
}

// Field describes one column.
type Field struct {
	Name        string
	Type        string // "" means "string", as in the specification
	Format      string // "" means "default"
	Title       string
	Description string
	Constraints *Constraints

	// TrueValues and FalseValues apply to booleans; nil means the defaults
	// ("true", "True", "TRUE", "1" and "false", "False", "FALSE", "0").
	TrueValues  []string
	FalseValues []string
	// BareNumber applies to integer and number; nil means true. When false,
	// leading and trailing non-numeric text ("€", "%") is stripped.
	BareNumber *bool
	// DecimalChar (number only; default ".") and GroupChar (number and
	// integer; default none) are single characters.
	DecimalChar string
	GroupChar   string

	// Extra holds example, rdfType and any other property, verbatim.
	Extra map[string]json.RawMessage

	// missing is the enclosing schema's MissingValues, bound by the
	// decoder and by Schema.Field so that Cast can honour them; nil means
	// the default [""].
	missing []string
}

// Constraints restrict a field's values. Minimum, Maximum and the members
// of Enum are kept as raw JSON because their type is the field's: a number
// for integer and number fields, a string in the field's format for dates,
// times and the like.
type Constraints struct {
	Required  bool
	Unique    bool
	MinLength *int
	MaxLength *int
	Minimum   json.RawMessage
	Maximum   json.RawMessage
	// Pattern is a regular expression that must match the whole raw value
	// (the specification anchors it). It is compiled with Go's RE2 syntax,
	// which covers the XML Schema regular expressions in practical use.
	Pattern string
	Enum    []json.RawMessage
	Extra   map[string]json.RawMessage
}

// The Table Schema types.
const (
	TypeString    = "string"
	TypeNumber    = "number"
	TypeInteger   = "integer"
	TypeBoolean   = "boolean"
	TypeObject    = "object"
	TypeArray     = "array"
	TypeDate      = "date"
	TypeTime      = "time"
	TypeDatetime  = "datetime"
	TypeYear      = "year"
	TypeYearMonth = "yearmonth"
	TypeDuration  = "duration"
	TypeGeoPoint  = "geopoint"
	TypeGeoJSON   = "geojson"
	TypeAny       = "any"
)

// Types lists every supported type, in the specification's order.
func Types() []string {
	return []string{TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeObject, TypeArray,
		TypeDate, TypeTime, TypeDatetime, TypeYear, TypeYearMonth, TypeDuration,
		TypeGeoPoint, TypeGeoJSON, TypeAny}
}

// EffectiveType is the field's type with the specification's default
// applied: a field without a type is a string.
func (f Field) EffectiveType() string {
	if f.Type == "" {
		return TypeString
	}
	return f.Type
}

// EffectiveFormat is the field's format with the default applied, and the
// legacy "fmt:" prefix of custom date patterns removed.
func (f Field) EffectiveFormat() string {
	switch {
	case f.Format == "":
		return "default"
	case len(f.Format) > 4 && f.Format[:4] == "fmt:":
		return f.Format[4:]
	}
	return f.Format
}

// MissingValues is the list of raw strings Cast treats as missing: those of
// the schema the field was bound to, or the default [""].
func (f Field) MissingValues() []string {
	if f.missing == nil {
		return []string{""}
	}
	return f.missing
}

// EffectiveMissingValues is MissingValues with the default [""] applied.
func (s *Schema) EffectiveMissingValues() []string {
	if s.MissingValues == nil {
		return []string{""}
	}
	return s.MissingValues
}

// Field returns the named field bound to the schema's missing values, so
// that its Cast honours them.
func (s *Schema) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return s.bind(f), true
		}
	}
	return Field{}, false
}

// FieldNames lists the field names in schema order.
func (s *Schema) FieldNames() []string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return names
}

func (s *Schema) bind(f Field) Field {
	f.missing = s.EffectiveMissingValues()
	return f
}

// bindAll binds every field to the schema's missing values. It runs after
// decoding and before checking, so fields taken from s.Fields directly also
// honour the schema's list.
func (s *Schema) bindAll() {
	for i := range s.Fields {
		s.Fields[i] = s.bind(s.Fields[i])
	}
}
