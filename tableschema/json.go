package tableschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ParsePackage decodes a datapackage.json and validates it. On any problem
// it returns nil and every problem found, joined; each is a
// *ValidationError except a JSON syntax error, which stops decoding.
func ParsePackage(data []byte) (*Package, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil { // json.Valid and json.Unmarshal disagree only on limits
			err = errors.New("invalid JSON")
		}
		return nil, fmt.Errorf("parse datapackage: %w", err)
	}
	var d decoder
	p := d.pkg(data)
	errs := d.errs
	// A property that failed to decode is left at its zero value; further
	// complaints about it or anything inside it ("a field needs a name")
	// are noise.
	var bad []string
	for _, e := range errs {
		var ve *ValidationError
		if errors.As(e, &ve) {
			bad = append(bad, ve.Path)
		}
	}
	for _, e := range p.validate() {
		var ve *ValidationError
		if errors.As(e, &ve) && slices.ContainsFunc(bad, func(b string) bool { return within(ve.Path, b) }) {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// within reports whether path is base or lies inside it.
func within(path, base string) bool {
	return base == "" || path == base || strings.HasPrefix(path, base+".") || strings.HasPrefix(path, base+"[")
}

// UnmarshalJSON decodes a package without validating it; properties of the
// wrong JSON type are reported as *ValidationError and left unset.
func (p *Package) UnmarshalJSON(data []byte) error {
	var d decoder
	*p = *d.pkg(data)
	return errors.Join(d.errs...)
}

// UnmarshalJSON decodes a schema without validating it, and binds its
// fields to its missing values.
func (s *Schema) UnmarshalJSON(data []byte) error {
	var d decoder
	*s = *d.schema("", data)
	return errors.Join(d.errs...)
}

// decoder turns raw JSON into the model and records, instead of stopping
// at, each property of the wrong JSON type, so that one pass reports them
// all with their paths.
type decoder struct{ errs []error }

func (d *decoder) failf(path, format string, a ...any) {
	d.errs = append(d.errs, &ValidationError{Path: path, Msg: fmt.Sprintf(format, a...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// jsonKind names the JSON type of raw for error messages.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimLeft(raw, " \t\r\n")
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func (d *decoder) object(path string, raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if jsonKind(raw) != "an object" || json.Unmarshal(raw, &m) != nil {
		d.failf(path, "want an object, got %s", jsonKind(raw))
		return nil, false
	}
	return m, true
}

func (d *decoder) list(path string, raw json.RawMessage) []json.RawMessage {
	var l []json.RawMessage
	if jsonKind(raw) != "a list" || json.Unmarshal(raw, &l) != nil {
		d.failf(path, "want a list, got %s", jsonKind(raw))
		return nil
	}
	return l
}

func (d *decoder) str(path string, raw json.RawMessage) string {
	var s string
	if jsonKind(raw) != "a string" || json.Unmarshal(raw, &s) != nil {
		d.failf(path, "want a string, got %s", jsonKind(raw))
	}
	return s
}

func (d *decoder) boolean(path string, raw json.RawMessage) bool {
	var b bool
	if jsonKind(raw) != "a boolean" || json.Unmarshal(raw, &b) != nil {
		d.failf(path, "want true or false, got %s", jsonKind(raw))
	}
	return b
}

// strings decodes a list of strings; the result is non-nil even when the
// list is empty, because an empty list and an absent one mean different
// things (no missing values versus the default).
func (d *decoder) strings(path string, raw json.RawMessage) []string {
	var l []json.RawMessage
	if jsonKind(raw) != "a list" || json.Unmarshal(raw, &l) != nil {
		d.failf(path, "want a list of strings, got %s", jsonKind(raw))
		return nil
	}
	out := make([]string, 0, len(l))
	for i, e := range l {
		var s string
		if jsonKind(e) != "a string" || json.Unmarshal(e, &s) != nil {
			d.failf(index(path, i), "want a string, got %s", jsonKind(e))
			continue
		}
		out = append(out, s)
	}
	return out
}

// stringOrList decodes a property the specification allows as a string or
// a list of strings (path, primaryKey); list reports which it was.
func (d *decoder) stringOrList(path string, raw json.RawMessage) (vals []string, list bool) {
	if jsonKind(raw) == "a string" {
		return []string{d.str(path, raw)}, false
	}
	if jsonKind(raw) != "a list" {
		d.failf(path, "want a string or a list of strings, got %s", jsonKind(raw))
		return nil, false
	}
	return d.strings(path, raw), true
}

func (d *decoder) nonNegInt(path string, raw json.RawMessage) *int {
	var n int
	if jsonKind(raw) != "a number" || json.Unmarshal(raw, &n) != nil || n < 0 {
		d.failf(path, "want a non-negative integer, got %s", strings.TrimSpace(string(raw)))
		return nil
	}
	return &n
}

// strProp pairs a string property with its destination; a slice of them,
// unlike a map, decodes (and reports errors) in a stable order.
type strProp struct {
	key string
	dst *string
}

func take(m map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	r, ok := m[key]
	delete(m, key)
	return r, ok
}

func extra(m map[string]json.RawMessage) map[string]json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	return m
}

func (d *decoder) pkg(raw json.RawMessage) *Package {
	p := &Package{}
	m, ok := d.object("", raw)
	if !ok {
		return p
	}
	for _, kv := range []strProp{{"name", &p.Name}, {"title", &p.Title},
		{"description", &p.Description}, {"profile", &p.Profile}, {"version", &p.Version}} {
		if r, ok := take(m, kv.key); ok {
			*kv.dst = d.str(kv.key, r)
		}
	}
	if r, ok := take(m, "resources"); ok {
		for i, e := range d.list("resources", r) {
			p.Resources = append(p.Resources, *d.resource(index("resources", i), e))
		}
	}
	p.Extra = extra(m)
	return p
}

func (d *decoder) resource(path string, raw json.RawMessage) *Resource {
	r := &Resource{}
	m, ok := d.object(path, raw)
	if !ok {
		return r
	}
	for _, kv := range []strProp{{"name", &r.Name}, {"profile", &r.Profile}, {"format", &r.Format}} {
		if v, ok := take(m, kv.key); ok {
			*kv.dst = d.str(join(path, kv.key), v)
		}
	}
	if v, ok := take(m, "path"); ok {
		r.Path, r.pathList = d.stringOrList(join(path, "path"), v)
	}
	if v, ok := take(m, "schema"); ok {
		if jsonKind(v) == "a string" {
			// A schema by reference would make reading a shard depend on
			// fetching another document; DHSI keeps the sidecar whole.
			d.failf(join(path, "schema"), "only an inline schema object is supported, got a reference")
		} else {
			r.Schema = d.schema(join(path, "schema"), v)
		}
	}
	r.Extra = extra(m)
	return r
}

func (d *decoder) schema(path string, raw json.RawMessage) *Schema {
	s := &Schema{}
	m, ok := d.object(path, raw)
	if !ok {
		return s
	}
	if v, ok := take(m, "fields"); ok {
		for i, e := range d.list(join(path, "fields"), v) {
			s.Fields = append(s.Fields, *d.field(index(join(path, "fields"), i), e))
		}
	}
	if v, ok := take(m, "primaryKey"); ok {
		s.PrimaryKey, s.primaryKeyList = d.stringOrList(join(path, "primaryKey"), v)
	}
	if v, ok := take(m, "missingValues"); ok {
		s.MissingValues = d.strings(join(path, "missingValues"), v)
	}
	if v, ok := take(m, "foreignKeys"); ok {
		s.ForeignKeys = v
	}
	s.Extra = extra(m)
	s.bindAll()
	return s
}

func (d *decoder) field(path string, raw json.RawMessage) *Field {
	f := &Field{}
	m, ok := d.object(path, raw)
	if !ok {
		return f
	}
	for _, kv := range []strProp{{"name", &f.Name}, {"type", &f.Type}, {"format", &f.Format},
		{"title", &f.Title}, {"description", &f.Description}, {"decimalChar", &f.DecimalChar}, {"groupChar", &f.GroupChar}} {
		if v, ok := take(m, kv.key); ok {
			*kv.dst = d.str(join(path, kv.key), v)
		}
	}
	if v, ok := take(m, "trueValues"); ok {
		f.TrueValues = d.strings(join(path, "trueValues"), v)
	}
	if v, ok := take(m, "falseValues"); ok {
		f.FalseValues = d.strings(join(path, "falseValues"), v)
	}
	if v, ok := take(m, "bareNumber"); ok {
		b := d.boolean(join(path, "bareNumber"), v)
		f.BareNumber = &b
	}
	if v, ok := take(m, "constraints"); ok {
		f.Constraints = d.constraints(join(path, "constraints"), v)
	}
	f.Extra = extra(m)
	return f
}

func (d *decoder) constraints(path string, raw json.RawMessage) *Constraints {
	c := &Constraints{}
	m, ok := d.object(path, raw)
	if !ok {
		return c
	}
	if v, ok := take(m, "required"); ok {
		c.Required = d.boolean(join(path, "required"), v)
	}
	if v, ok := take(m, "unique"); ok {
		c.Unique = d.boolean(join(path, "unique"), v)
	}
	if v, ok := take(m, "minLength"); ok {
		c.MinLength = d.nonNegInt(join(path, "minLength"), v)
	}
	if v, ok := take(m, "maxLength"); ok {
		c.MaxLength = d.nonNegInt(join(path, "maxLength"), v)
	}
	// minimum, maximum and enum members are typed by the field; Validate
	// checks them once the field's type is known.
	if v, ok := take(m, "minimum"); ok {
		c.Minimum = v
	}
	if v, ok := take(m, "maximum"); ok {
		c.Maximum = v
	}
	if v, ok := take(m, "pattern"); ok {
		c.Pattern = d.str(join(path, "pattern"), v)
	}
	if v, ok := take(m, "enum"); ok {
		c.Enum = d.list(join(path, "enum"), v)
		if c.Enum == nil {
			c.Enum = []json.RawMessage{} // present but wrong: Validate must not think it absent
		}
	}
	c.Extra = extra(m)
	return c
}

// objectWriter writes a JSON object with the modelled properties first, in
// a fixed order, then the preserved ones sorted by key, so that rewriting a
// package gives stable bytes.
type objectWriter struct {
	buf   bytes.Buffer
	known []string
	err   error
}

func (w *objectWriter) put(key string, v any) {
	if w.err != nil {
		return
	}
	w.known = append(w.known, key)
	b, err := json.Marshal(v)
	if err != nil {
		w.err = fmt.Errorf("marshal %s: %w", key, err)
		return
	}
	w.raw(key, b)
}

func (w *objectWriter) raw(key string, b []byte) {
	if w.buf.Len() == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	w.buf.Write(k)
	w.buf.WriteByte(':')
	w.buf.Write(b)
}

func (w *objectWriter) str(key, v string) {
	if v != "" {
		w.put(key, v)
	}
}

// done appends the preserved properties and closes the object. A preserved
// property that shadows a modelled one is dropped: the model wins, and the
// output never repeats a key.
func (w *objectWriter) done(extra map[string]json.RawMessage, reserved ...string) ([]byte, error) {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		if !slices.Contains(reserved, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if w.err != nil {
			break
		}
		b, err := json.Marshal(extra[k]) // validates and compacts the raw value
		if err != nil {
			w.err = fmt.Errorf("marshal %s: %w", k, err)
			break
		}
		w.raw(k, b)
	}
	if w.err != nil {
		return nil, w.err
	}
	if w.buf.Len() == 0 {
		return []byte("{}"), nil
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}

// MarshalJSON writes the package with its preserved properties.
func (p Package) MarshalJSON() ([]byte, error) {
	var w objectWriter
	w.str("name", p.Name)
	w.str("title", p.Title)
	w.str("description", p.Description)
	w.str("profile", p.Profile)
	w.str("version", p.Version)
	w.put("resources", p.Resources)
	return w.done(p.Extra, "name", "title", "description", "profile", "version", "resources")
}

// MarshalJSON writes the resource; a single path is written as a string
// unless it was read as a list.
func (r Resource) MarshalJSON() ([]byte, error) {
	var w objectWriter
	w.str("name", r.Name)
	switch {
	case len(r.Path) == 1 && !r.pathList:
		w.put("path", r.Path[0])
	case len(r.Path) > 0 || r.pathList:
		w.put("path", r.Path)
	}
	w.str("profile", r.Profile)
	w.str("format", r.Format)
	if r.Schema != nil {
		w.put("schema", r.Schema)
	}
	return w.done(r.Extra, "name", "path", "profile", "format", "schema")
}

// MarshalJSON writes the schema; nil MissingValues (the default) is left
// out, an empty list is written.
func (s Schema) MarshalJSON() ([]byte, error) {
	var w objectWriter
	fields := s.Fields
	if fields == nil {
		fields = []Field{}
	}
	w.put("fields", fields)
	switch {
	case len(s.PrimaryKey) == 1 && !s.primaryKeyList:
		w.put("primaryKey", s.PrimaryKey[0])
	case len(s.PrimaryKey) > 0 || s.primaryKeyList:
		w.put("primaryKey", s.PrimaryKey)
	}
	if s.MissingValues != nil {
		w.put("missingValues", s.MissingValues)
	}
	if len(s.ForeignKeys) > 0 {
		w.put("foreignKeys", s.ForeignKeys)
	}
	return w.done(s.Extra, "fields", "primaryKey", "missingValues", "foreignKeys")
}

// MarshalJSON writes the field with its preserved properties.
func (f Field) MarshalJSON() ([]byte, error) {
	var w objectWriter
	w.put("name", f.Name)
	w.str("type", f.Type)
	w.str("format", f.Format)
	w.str("title", f.Title)
	w.str("description", f.Description)
	if f.Constraints != nil {
		w.put("constraints", f.Constraints)
	}
	if f.TrueValues != nil {
		w.put("trueValues", f.TrueValues)
	}
	if f.FalseValues != nil {
		w.put("falseValues", f.FalseValues)
	}
	if f.BareNumber != nil {
		w.put("bareNumber", *f.BareNumber)
	}
	w.str("decimalChar", f.DecimalChar)
	w.str("groupChar", f.GroupChar)
	return w.done(f.Extra, "name", "type", "format", "title", "description", "constraints",
		"trueValues", "falseValues", "bareNumber", "decimalChar", "groupChar")
}

// MarshalJSON writes the constraints; false booleans are left out.
func (c Constraints) MarshalJSON() ([]byte, error) {
	var w objectWriter
	if c.Required {
		w.put("required", true)
	}
	if c.Unique {
		w.put("unique", true)
	}
	if c.MinLength != nil {
		w.put("minLength", *c.MinLength)
	}
	if c.MaxLength != nil {
		w.put("maxLength", *c.MaxLength)
	}
	if len(c.Minimum) > 0 {
		w.put("minimum", c.Minimum)
	}
	if len(c.Maximum) > 0 {
		w.put("maximum", c.Maximum)
	}
	w.str("pattern", c.Pattern)
	if c.Enum != nil {
		w.put("enum", c.Enum)
	}
	return w.done(c.Extra, "required", "unique", "minLength", "maxLength", "minimum", "maximum", "pattern", "enum")
}
