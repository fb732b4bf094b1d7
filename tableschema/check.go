package tableschema

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ConstraintError reports a typed value that breaks one of its field's
// constraints.
type ConstraintError struct {
	Field      string
	Constraint string // "required", "unique", "primaryKey", "minimum", ...
	Value      any    // the typed value (nil for required)
	Msg        string
}

func (e *ConstraintError) Error() string {
	if e.Value == nil {
		return fmt.Sprintf("field %q: %s: %s", e.Field, e.Constraint, e.Msg)
	}
	return fmt.Sprintf("field %q: %s: value %s %s", e.Field, e.Constraint, formatValue(e.Value), e.Msg)
}

// FieldError is one problem found by RowChecker.Check.
type FieldError struct {
	Field  string // the schema field; "" for a problem with the record's shape
	Column int    // 0-based column of the record, -1 if the field is absent
	Err    error  // a *CastError, a *ConstraintError or a shape error
}

func (e FieldError) Error() string { return e.Err.Error() }
func (e FieldError) Unwrap() error { return e.Err }

// fieldChecker is a field compiled for casting and constraint checks.
type fieldChecker struct {
	*caster
	required, unique     bool
	minLength, maxLength int // -1 when absent
	pattern              *regexp.Regexp
	minimum, maximum     any
	enum                 map[string]bool // by valueKey
	enumText             []string
}

// compileAnchored compiles a Table Schema pattern, which must match the
// whole value (XML Schema regular expressions are implicitly anchored).
func compileAnchored(p string) (*regexp.Regexp, error) {
	// Compile the pattern alone first so an error quotes what the user
	// wrote, not our anchoring.
	if _, err := regexp.Compile(p); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + p + `)$`)
}

// constraintValue types the JSON value of minimum, maximum or an enum
// member. The specification writes them in the field's own terms: a JSON
// number for integer, number and year, a JSON boolean for boolean, JSON
// objects and lists for object and array, and otherwise a string in the
// field's format.
func (c *caster) constraintValue(raw json.RawMessage) (any, error) {
	kind := jsonKind(raw)
	switch {
	case kind == "a string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		v, err := c.castPresent(s)
		if err != nil {
			var ce *CastError
			if errors.As(err, &ce) {
				return nil, fmt.Errorf("cannot cast %s to %s: want %s", quoteValue(s), c.typ, c.want)
			}
			return nil, err
		}
		return v, nil
	case kind == "a number" && (c.typ == TypeInteger || c.typ == TypeYear):
		n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %s", strings.TrimSpace(string(raw)))
		}
		return n, nil
	case kind == "a number" && c.typ == TypeNumber:
		v, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
		if err != nil {
			return nil, fmt.Errorf("want a number, got %s", strings.TrimSpace(string(raw)))
		}
		return v, nil
	case kind == "a boolean" && c.typ == TypeBoolean:
		return string(raw) == "true", nil
	case kind == "an object" && c.typ == TypeObject, kind == "a list" && c.typ == TypeArray:
		v, _ := decodeJSON(string(raw), raw[0])
		return v, nil
	}
	return nil, fmt.Errorf("want a value of type %s, got %s", c.typ, kind)
}

// compare orders two typed values of the same field; ok is false for
// values that have no order. A NaN compares as unordered.
func compare(a, b any) (int, bool) {
	switch a := a.(type) {
	case int64:
		b, ok := b.(int64)
		return cmp.Compare(a, b), ok
	case float64:
		b, ok := b.(float64)
		if math.IsNaN(a) || math.IsNaN(b) {
			return 0, false
		}
		return cmp.Compare(a, b), ok
	case time.Time:
		b, ok := b.(time.Time)
		return a.Compare(b), ok
	case YearMonth:
		b, ok := b.(YearMonth)
		return cmp.Compare(a.Year*12+int(a.Month), b.Year*12+int(b.Month)), ok
	}
	return 0, false
}

// valueKey is a string equal for equal typed values, used for unique,
// primaryKey and enum: datetimes compare as instants, 0 equals -0, and
// objects compare by content.
func valueKey(v any) string {
	switch v := v.(type) {
	case string:
		return "s" + v
	case int64:
		return "i" + strconv.FormatInt(v, 10)
	case float64:
		if v == 0 {
			v = 0 // folds -0 into 0
		}
		return "f" + strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return "b" + strconv.FormatBool(v)
	case time.Time:
		return "t" + v.UTC().Format(time.RFC3339Nano)
	case YearMonth:
		return "m" + v.String()
	case Duration:
		return fmt.Sprintf("d%d/%d/%d", v.Months, v.Days, v.Nanoseconds)
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys: a canonical form
	return "j" + string(b)
}

func length(v any) (int, bool) {
	switch v := v.(type) {
	case string:
		return utf8.RuneCountInString(v), true
	case []any:
		return len(v), true
	case map[string]any:
		return len(v), true
	}
	return 0, false
}

// check enforces the single-value constraints (all but unique) on v, the
// typed value cast from raw.
func (fc *fieldChecker) check(v any, raw string) error {
	name := fc.f.Name
	if v == nil {
		if fc.required {
			return &ConstraintError{Field: name, Constraint: "required", Msg: "a value is required"}
		}
		return nil // the other constraints apply to values only
	}
	fail := func(constraint, format string, a ...any) error {
		return &ConstraintError{Field: name, Constraint: constraint, Value: v, Msg: fmt.Sprintf(format, a...)}
	}
	if n, ok := length(v); ok {
		if fc.minLength >= 0 && n < fc.minLength {
			return fail("minLength", "has length %d, below %d", n, fc.minLength)
		}
		if fc.maxLength >= 0 && n > fc.maxLength {
			return fail("maxLength", "has length %d, above %d", n, fc.maxLength)
		}
	}
	if fc.pattern != nil && !fc.pattern.MatchString(raw) {
		return fail("pattern", "does not match %q", fc.f.Constraints.Pattern)
	}
	if fc.minimum != nil {
		if n, ok := compare(v, fc.minimum); !ok || n < 0 {
			return fail("minimum", "is below %s", formatValue(fc.minimum))
		}
	}
	if fc.maximum != nil {
		if n, ok := compare(v, fc.maximum); !ok || n > 0 {
			return fail("maximum", "is above %s", formatValue(fc.maximum))
		}
	}
	if fc.enum != nil && !fc.enum[valueKey(v)] {
		return fail("enum", "is not one of %s", strings.Join(fc.enumText, ", "))
	}
	return nil
}

// CheckConstraints checks the typed value v (as returned by Cast) against
// the field's constraints, except unique, which needs the other rows and
// is enforced by RowChecker. pattern is matched against v's text, so it
// applies to string fields, whose value is their raw text.
func (f Field) CheckConstraints(v any) error {
	fc, errs := compileField(f, "")
	if len(errs) > 0 {
		return fmt.Errorf("field %q: %w", f.Name, errors.Join(errs...))
	}
	raw, _ := v.(string)
	return fc.check(v, raw)
}

// Mapper maps the columns of a file, named by its header record, to the
// fields of a schema. Columns match fields by exact, case-sensitive name;
// the order of the file does not matter. A column no field names is an
// extra, kept but not checked; a field no column names reads as missing.
type Mapper struct {
	fields  []string
	cols    []int // cols[i] is the column of field i, or -1
	width   int
	extra   []string
	missing []string
}

// Mapper maps a file's header to the schema's fields. The only error is a
// header that names a column twice, which would make the mapping
// ambiguous.
func (s *Schema) Mapper(header []string) (*Mapper, error) {
	m := &Mapper{fields: s.FieldNames(), width: len(header)}
	at := make(map[string]int, len(header))
	for i, h := range header {
		if j, dup := at[h]; dup {
			return nil, fmt.Errorf("map header: column %q appears twice (columns %d and %d)", h, j, i)
		}
		at[h] = i
	}
	m.cols = make([]int, len(m.fields))
	for i, name := range m.fields {
		col, ok := at[name]
		if !ok {
			col = -1
			m.missing = append(m.missing, name)
		}
		m.cols[i] = col
		delete(at, name)
	}
	for _, h := range header {
		if _, ok := at[h]; ok {
			m.extra = append(m.extra, h)
		}
	}
	return m, nil
}

// Column is the record column holding field i (schema order), or -1.
func (m *Mapper) Column(field int) int { return m.cols[field] }

// Width is the number of columns in the header.
func (m *Mapper) Width() int { return m.width }

// Missing lists the schema fields the header lacks, in schema order.
func (m *Mapper) Missing() []string { return m.missing }

// Extra lists the header's columns that no field names, in file order.
func (m *Mapper) Extra() []string { return m.extra }

// RowChecker casts and checks the rows of one resource, remembering what
// unique and primaryKey need across rows (and files: one checker should
// see every file of a resource). It is not safe for concurrent use.
type RowChecker struct {
	schema *Schema
	fields []*fieldChecker
	mapper *Mapper
	seen   []map[string]bool // per field with unique, else nil
	pk     []int
	pkSeen map[string]bool
}

// NewRowChecker compiles the schema for checking rows. Rows are taken in
// schema field order until SetHeader says otherwise. Fields of the primary
// key are required, and their combination unique.
func (s *Schema) NewRowChecker() (*RowChecker, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("compile row checker: %w", err)
	}
	rc := &RowChecker{schema: s, seen: make([]map[string]bool, len(s.Fields))}
	for i, f := range s.Fields {
		fc, _ := compileField(s.bind(f), "") // cannot fail: Validate passed
		rc.fields = append(rc.fields, fc)
		if fc.unique {
			rc.seen[i] = map[string]bool{}
		}
	}
	for _, name := range s.PrimaryKey {
		for i, f := range s.Fields {
			if f.Name == name {
				rc.pk = append(rc.pk, i)
				rc.fields[i].required = true
			}
		}
	}
	if len(rc.pk) > 0 {
		rc.pkSeen = map[string]bool{}
	}
	rc.mapper, _ = s.Mapper(s.FieldNames()) // cannot fail: names are unique
	return rc, nil
}

// SetHeader maps the following rows by a file's header (its first
// record), and returns the mapping so the caller can report extras and
// missing fields.
func (rc *RowChecker) SetHeader(header []string) (*Mapper, error) {
	m, err := rc.schema.Mapper(header)
	if err != nil {
		return nil, err
	}
	rc.mapper = m
	return m, nil
}

// Check casts one record and enforces the constraints. It returns the
// typed values in schema field order (nil where missing or not castable)
// and every problem found. A record whose length differs from the
// header's is reported; absent trailing units read as missing.
func (rc *RowChecker) Check(row []string) ([]any, []FieldError) {
	vals := make([]any, len(rc.fields))
	var errs []FieldError
	if len(row) != rc.mapper.width {
		errs = append(errs, FieldError{Column: -1,
			Err: fmt.Errorf("record has %d units, header has %d", len(row), rc.mapper.width)})
	}
	castOK := make([]bool, len(rc.fields))
	for i, fc := range rc.fields {
		col := rc.mapper.cols[i]
		var v any
		raw := ""
		if col >= 0 && col < len(row) {
			raw = row[col]
			var err error
			if v, err = fc.cast(raw); err != nil {
				errs = append(errs, FieldError{Field: fc.f.Name, Column: col, Err: err})
				continue
			}
		}
		castOK[i] = true
		vals[i] = v
		if err := fc.check(v, raw); err != nil {
			errs = append(errs, FieldError{Field: fc.f.Name, Column: col, Err: err})
		}
		if rc.seen[i] != nil && v != nil {
			k := valueKey(v)
			if rc.seen[i][k] {
				errs = append(errs, FieldError{Field: fc.f.Name, Column: col,
					Err: &ConstraintError{Field: fc.f.Name, Constraint: "unique", Value: v, Msg: "appeared in an earlier row"}})
			}
			rc.seen[i][k] = true
		}
	}
	if len(rc.pk) > 0 {
		var key strings.Builder
		complete := true
		for _, i := range rc.pk {
			complete = complete && castOK[i] && vals[i] != nil
			key.WriteString(valueKey(vals[i]))
			key.WriteByte(0)
		}
		if complete {
			if rc.pkSeen[key.String()] {
				names := make([]string, len(rc.pk))
				shown := make([]string, len(rc.pk))
				for j, i := range rc.pk {
					names[j], shown[j] = rc.fields[i].f.Name, formatValue(vals[i])
				}
				ce := &ConstraintError{Field: strings.Join(names, ","), Constraint: "primaryKey",
					Msg: fmt.Sprintf("(%s) appeared in an earlier row", strings.Join(shown, ", "))}
				errs = append(errs, FieldError{Field: ce.Field, Column: rc.mapper.cols[rc.pk[0]], Err: ce})
			}
			rc.pkSeen[key.String()] = true
		}
	}
	return vals, errs
}
