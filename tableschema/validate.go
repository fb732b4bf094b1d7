package tableschema

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ValidationError is one problem with a descriptor. Path is the JSON path
// of the offending property, relative to the document validated:
// "resources[0].schema.fields[2].type" from Package.Validate,
// "fields[2].type" from Schema.Validate.
type ValidationError struct {
	Path string
	Msg  string
}

func (e *ValidationError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Validate reports every problem with the package, joined; nil if none.
func (p *Package) Validate() error { return errors.Join(p.validate()...) }

// Validate reports every problem with the schema, joined; nil if none.
func (s *Schema) Validate() error { return errors.Join(s.validate("")...) }

func verr(path, format string, a ...any) error {
	return &ValidationError{Path: path, Msg: fmt.Sprintf(format, a...)}
}

func (p *Package) validate() []error {
	var errs []error
	if len(p.Resources) == 0 {
		errs = append(errs, verr("resources", "a package needs at least one resource"))
	}
	names := map[string]int{}
	for i, r := range p.Resources {
		rp := index("resources", i)
		if r.Name == "" {
			errs = append(errs, verr(join(rp, "name"), "a resource needs a name"))
		} else if j, dup := names[r.Name]; dup {
			errs = append(errs, verr(join(rp, "name"), "duplicate resource name %q (also resources[%d])", r.Name, j))
		} else {
			names[r.Name] = i
		}
		errs = append(errs, r.validate(rp)...)
	}
	return errs
}

func (r *Resource) validate(rp string) []error {
	var errs []error
	if len(r.Path) == 0 {
		msg := "a resource needs a path"
		if _, inline := r.Extra["data"]; inline {
			msg = "inline data is not supported; want a path"
		}
		errs = append(errs, verr(join(rp, "path"), "%s", msg))
	}
	for i, p := range r.Path {
		pp := join(rp, "path")
		if r.pathList {
			pp = index(pp, i)
		}
		// The specification forbids both, so that a package cannot point a
		// reader outside its own directory.
		switch {
		case p == "":
			errs = append(errs, verr(pp, "empty path"))
		case strings.HasPrefix(p, "/") || path.IsAbs(p):
			errs = append(errs, verr(pp, "path %q is absolute; want one relative to the package", p))
		case slices.Contains(strings.Split(p, "/"), ".."):
			errs = append(errs, verr(pp, "path %q contains \"..\"", p))
		}
	}
	if r.Schema == nil {
		errs = append(errs, verr(join(rp, "schema"), "a tabular resource needs an inline schema"))
	} else {
		errs = append(errs, r.Schema.validate(join(rp, "schema"))...)
	}
	return errs
}

func (s *Schema) validate(sp string) []error {
	var errs []error
	fp := join(sp, "fields")
	if len(s.Fields) == 0 {
		errs = append(errs, verr(fp, "a schema needs at least one field"))
	}
	names := map[string]int{}
	for i, f := range s.Fields {
		p := index(fp, i)
		if f.Name != "" {
			if j, dup := names[f.Name]; dup {
				errs = append(errs, verr(join(p, "name"), "duplicate field name %q (also fields[%d])", f.Name, j))
			} else {
				names[f.Name] = i
			}
		}
		_, ferrs := compileField(s.bind(f), p)
		errs = append(errs, ferrs...)
	}
	pk := join(sp, "primaryKey")
	for i, name := range s.PrimaryKey {
		p := pk
		if s.primaryKeyList || len(s.PrimaryKey) > 1 {
			p = index(pk, i)
		}
		if _, ok := names[name]; !ok {
			errs = append(errs, verr(p, "primary key names %q, which is not a field", name))
		}
		if slices.Index(s.PrimaryKey, name) < i {
			errs = append(errs, verr(p, "primary key names %q twice", name))
		}
	}
	return errs
}

// appliesTo lists the types a constraint is defined for; required, unique
// and enum apply to every type. These follow the specification's table,
// except that minimum and maximum are refused on duration: months and days
// have no fixed length, so durations have no total order.
func appliesTo(constraint string) []string {
	switch constraint {
	case "minLength", "maxLength":
		return []string{TypeString, TypeArray, TypeObject}
	case "pattern":
		return []string{TypeString}
	case "minimum", "maximum":
		return []string{TypeInteger, TypeNumber, TypeDate, TypeTime, TypeDatetime, TypeYear, TypeYearMonth}
	}
	return Types()
}

// compileField validates f (at JSON path p) and, if it is sound, compiles
// it for casting and checking. Validation and checking share this code so
// that a schema Validate accepts is one NewRowChecker can compile.
func compileField(f Field, p string) (*fieldChecker, []error) {
	var errs []error
	fail := func(key, format string, a ...any) { errs = append(errs, verr(join(p, key), format, a...)) }
	if f.Name == "" {
		fail("name", "a field needs a name")
	}
	typ := f.EffectiveType()
	if !slices.Contains(Types(), typ) {
		fail("type", "unknown type %q (want one of %s)", typ, strings.Join(Types(), ", "))
		return nil, errs // nothing else can be judged without a type
	}
	if err := checkFormat(typ, f.EffectiveFormat()); err != nil {
		fail("format", "%v", err)
	}
	if typ != TypeBoolean {
		if f.TrueValues != nil {
			fail("trueValues", "applies only to boolean fields, not %s", typ)
		}
		if f.FalseValues != nil {
			fail("falseValues", "applies only to boolean fields, not %s", typ)
		}
	} else {
		for i, v := range f.falseValues() {
			if slices.Contains(f.trueValues(), v) {
				fail(index("falseValues", i), "%q is also a true value", v)
			}
		}
	}
	numeric := typ == TypeNumber || typ == TypeInteger
	if f.BareNumber != nil && !numeric {
		fail("bareNumber", "applies only to number and integer fields, not %s", typ)
	}
	if f.DecimalChar != "" {
		if typ != TypeNumber {
			fail("decimalChar", "applies only to number fields, not %s", typ)
		} else if err := checkMark(f.DecimalChar); err != nil {
			fail("decimalChar", "%v", err)
		}
	}
	if f.GroupChar != "" {
		if !numeric {
			fail("groupChar", "applies only to number and integer fields, not %s", typ)
		} else if err := checkMark(f.GroupChar); err != nil {
			fail("groupChar", "%v", err)
		} else if f.GroupChar == f.decimalChar() {
			fail("groupChar", "%q is also the decimal mark", f.GroupChar)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	c, err := newCaster(f)
	if err != nil { // unreachable after the checks above, kept as a guard
		fail("type", "%v", err)
		return nil, errs
	}
	fc, cerrs := compileConstraints(c, join(p, "constraints"))
	return fc, append(errs, cerrs...)
}

// checkMark accepts a decimal or group mark: one character that cannot be
// part of a number's digits, sign or exponent.
func checkMark(m string) error {
	if utf8.RuneCountInString(m) != 1 {
		return fmt.Errorf("want a single character, got %q", m)
	}
	if strings.ContainsAny(m, "0123456789+-eE") {
		return fmt.Errorf("%q would be read as part of a number", m)
	}
	return nil
}

func compileConstraints(c *caster, p string) (*fieldChecker, []error) {
	// lengths are -1 when absent: 0 is a real bound ("must be empty")
	fc := &fieldChecker{caster: c, minLength: -1, maxLength: -1}
	k := c.f.Constraints
	if k == nil {
		return fc, nil
	}
	var errs []error
	fail := func(key, format string, a ...any) { errs = append(errs, verr(join(p, key), format, a...)) }
	present := map[string]bool{
		"minLength": k.MinLength != nil, "maxLength": k.MaxLength != nil, "pattern": k.Pattern != "",
		"minimum": len(k.Minimum) > 0, "maximum": len(k.Maximum) > 0,
	}
	for _, name := range []string{"minLength", "maxLength", "pattern", "minimum", "maximum"} {
		if present[name] && !slices.Contains(appliesTo(name), c.typ) {
			fail(name, "%s does not apply to type %s (only to %s)", name, c.typ, strings.Join(appliesTo(name), ", "))
			present[name] = false
		}
	}
	fc.required, fc.unique = k.Required, k.Unique
	if present["minLength"] {
		fc.minLength = *k.MinLength
	} else {
		fc.minLength = -1
	}
	if present["maxLength"] {
		fc.maxLength = *k.MaxLength
		if present["minLength"] && fc.minLength > fc.maxLength {
			fail("maxLength", "%d is below minLength %d", fc.maxLength, fc.minLength)
		}
	} else {
		fc.maxLength = -1
	}
	if present["pattern"] {
		re, err := compileAnchored(k.Pattern)
		if err != nil {
			fail("pattern", "invalid regular expression: %v", err)
		}
		fc.pattern = re
	}
	if present["minimum"] {
		v, err := c.constraintValue(k.Minimum)
		if err != nil {
			fail("minimum", "%v", err)
		}
		fc.minimum = v
	}
	if present["maximum"] {
		v, err := c.constraintValue(k.Maximum)
		if err != nil {
			fail("maximum", "%v", err)
		}
		fc.maximum = v
		if fc.minimum != nil && v != nil {
			if n, ok := compare(fc.minimum, v); ok && n > 0 {
				fail("maximum", "%s is below minimum %s", formatValue(v), formatValue(fc.minimum))
			}
		}
	}
	if k.Enum != nil {
		if len(k.Enum) == 0 {
			fail("enum", "want a non-empty list")
		}
		fc.enum = map[string]bool{}
		for i, raw := range k.Enum {
			v, err := c.constraintValue(raw)
			if err != nil {
				fail(index("enum", i), "%v", err)
				continue
			}
			fc.enum[valueKey(v)] = true
			fc.enumText = append(fc.enumText, formatValue(v))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return fc, nil
}

// formatValue renders a typed value for messages.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return quoteValue(v)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case fmt.Stringer:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
