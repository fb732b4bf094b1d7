package ingest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dhsi/dhsi/catalog"
)

// KeepColumn is one column of `dhsi ingest --keep-columns`: a column of a
// CSV, TSV, JSON-lines, Parquet or CDXJ input to keep for each URL, with
// its type, or "" to infer one from the input's values.
type KeepColumn struct {
	Name string
	Type string
}

// ParseKeepColumns reads --keep-columns' "name[:type],...".
func ParseKeepColumns(s string) ([]KeepColumn, error) {
	var out []KeepColumn
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, typ, _ := strings.Cut(part, ":")
		k := KeepColumn{Name: strings.TrimSpace(name), Type: strings.TrimSpace(typ)}
		check := catalog.Column{Name: k.Name, Type: k.Type}
		if check.Type == "" {
			check.Type = catalog.TypeString // the name alone
			if f, ok := catalog.IsCDXColumn(k.Name); ok {
				check.Type = f.Type
			}
		}
		if err := catalog.ValidateColumn(check); err != nil {
			return nil, err
		}
		if seen[k.Name] {
			return nil, fmt.Errorf("column %q is given twice", k.Name)
		}
		seen[k.Name] = true
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no column named")
	}
	return out, nil
}

// fieldPlan says which fields of each record an ingest keeps: the
// dataset's columns (cols), set on each Record's Fields by position. In
// inference mode (infer != nil) it keeps nothing and instead records which
// types each column's values parse as.
type fieldPlan struct {
	cols []catalog.Column
	// keep are the columns --keep-columns names (read from CSV, TSV, JSON
	// lines, Parquet and CDXJ inputs); the CDX fields are read from CDX and
	// CDXJ inputs whenever cols has them
	keep  []string
	seen  []bool // per column: some input had it (JSON lines, CDXJ)
	infer []uint8
	// flag names the option that asked for keep in errors ("" is
	// "--keep-columns")
	flag string
	// notTyped counts CDX field values that did not parse (kept as NULL)
	notTyped int64
}

func newFieldPlan(cols []catalog.Column, keep []string) *fieldPlan {
	if len(cols) == 0 {
		return nil
	}
	return &fieldPlan{cols: cols, keep: keep, seen: make([]bool, len(cols))}
}

// inference masks: the types every non-empty value seen so far parses as
const (
	canInt64 uint8 = 1 << iota
	canDouble
	canBool
	canTimestamp
	canAll = canInt64 | canDouble | canBool | canTimestamp
)

func (p *fieldPlan) inferred(i int) string {
	m := p.infer[i]
	switch {
	case m&canInt64 != 0:
		return catalog.TypeInt64
	case m&canDouble != 0:
		return catalog.TypeDouble
	case m&canBool != 0:
		return catalog.TypeBool
	case m&canTimestamp != 0:
		return catalog.TypeTimestamp
	}
	return catalog.TypeString
}

// index is the position of a kept column, or -1.
func (p *fieldPlan) index(name string) int {
	if p == nil {
		return -1
	}
	return catalog.ColumnIndex(p.cols, name)
}

// set casts raw, column i's value in the input, into fields[i]. An empty
// value is NULL. lenient (the CDX fields) turns what does not parse into
// NULL, counted, where a --keep-columns column rejects the line.
func (p *fieldPlan) set(fields []any, i int, raw string, lenient bool) error {
	if i < 0 {
		return nil
	}
	p.seen[i] = true
	if raw == "" || lenient && raw == "-" {
		return nil
	}
	if p.infer != nil {
		m := p.infer[i]
		if m&canInt64 != 0 {
			if _, err := strconv.ParseInt(raw, 10, 64); err != nil {
				m &^= canInt64
			}
		}
		if m&canDouble != 0 {
			if _, err := castField(catalog.TypeDouble, raw); err != nil {
				m &^= canDouble
			}
		}
		if m&canBool != 0 {
			if _, err := strconv.ParseBool(raw); err != nil {
				m &^= canBool
			}
		}
		if m&canTimestamp != 0 {
			if _, ok := ParseTimestamp(raw); !ok {
				m &^= canTimestamp
			}
		}
		p.infer[i] = m
		return nil
	}
	v, err := castField(p.cols[i].Type, raw)
	if err != nil {
		if lenient {
			p.notTyped++
			return nil
		}
		return fmt.Errorf("column %q: %w", p.cols[i].Name, err)
	}
	fields[i] = v
	return nil
}

func (p *fieldPlan) newFields() []any {
	if p == nil || p.infer != nil {
		return nil
	}
	return make([]any, len(p.cols))
}

// castField turns an input's text into a value of type typ.
func castField(typ, s string) (any, error) {
	switch typ {
	case catalog.TypeString:
		return s, nil
	case catalog.TypeInt32:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a 32-bit integer", s)
		}
		return int32(n), nil
	case catalog.TypeInt64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a 64-bit integer", s)
		}
		return n, nil
	case catalog.TypeDouble:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%q is not a finite number", s)
		}
		return f, nil
	case catalog.TypeBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean (true, false, 1, 0, t, f)", s)
		}
		return b, nil
	case catalog.TypeTimestamp:
		t, ok := ParseTimestamp(s)
		if !ok {
			return nil, fmt.Errorf("%q is not a timestamp (14-digit CDX, RFC 3339, a date or Unix seconds)", s)
		}
		return t.Truncate(time.Microsecond), nil
	}
	return nil, fmt.Errorf("unknown column type %q", typ)
}

// jsonText is a JSON value as the text castField reads: a string as is,
// a number in its shortest form, a boolean as true/false, and an object or
// array as its JSON; null (or absent) is not a value.
func jsonText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// fromJSON sets the kept columns of a JSON object (JSON lines, CDXJ): the
// CDX fields leniently where cdx, the --keep-columns ones strictly.
func (p *fieldPlan) fromJSON(fields []any, m map[string]any, cdx bool) error {
	if p == nil {
		return nil
	}
	if cdx {
		for _, c := range catalog.CDXColumns {
			if s, ok := jsonText(m[c.Name]); ok {
				if err := p.set(fields, p.index(c.Name), s, true); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range p.keep {
		if _, isCDX := catalog.IsCDXColumn(k); cdx && isCDX {
			continue
		}
		if s, ok := jsonText(m[k]); ok {
			if err := p.set(fields, p.index(k), s, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// cdxLetters are the classic CDX header letters of the CDX fields.
var cdxLetters = map[string]string{"m": "mime", "s": "status", "k": "digest", "S": "length", "V": "offset", "g": "filename"}

// planColumns decides a batch's columns before anything is written: the
// dataset's (have), the CDX fields if an input is CDX or CDXJ, and the
// --keep-columns ones, typed as declared, as the dataset has them, or
// inferred from every value of the inputs (one more read of each). A kept
// column no input has, a type the dataset's column does not have, and
// --keep-columns over an input with no columns are errors.
func planColumns(ctx context.Context, o Options, files []string, have []catalog.Column) ([]catalog.Column, error) {
	var cdx bool
	for _, f := range files {
		format := o.Format
		if format == "" {
			format = DetectFormat(f)
		}
		switch format {
		case FormatCDX, FormatCDXJ:
			cdx = true
			if len(o.KeepColumns) > 0 && format == FormatCDX {
				return nil, fmt.Errorf("%s: %s does not apply to a classic CDX input, which keeps its fixed fields (docs/format/lake.md)", f, keepColumnsName(o.KeepColumnsName))
			}
		case FormatList:
			if len(o.KeepColumns) > 0 {
				return nil, fmt.Errorf("%s: %s does not apply to a plain list of URLs, which has no other column", f, keepColumnsName(o.KeepColumnsName))
			}
		}
	}
	cols := have
	var err error
	if cdx {
		if cols, err = catalog.MergeColumns(cols, catalog.CDXColumns); err != nil {
			return nil, err
		}
	}
	if len(o.KeepColumns) == 0 {
		return cols, nil
	}
	var declared []catalog.Column
	var infer []string
	for _, k := range o.KeepColumns {
		t := k.Type
		if h := catalog.ColumnIndex(cols, k.Name); h >= 0 && t == "" {
			t = cols[h].Type // the dataset's own
		}
		if f, ok := catalog.IsCDXColumn(k.Name); ok && t == "" {
			t = f.Type
		}
		if t == "" {
			infer = append(infer, k.Name)
			continue
		}
		declared = append(declared, catalog.Column{Name: k.Name, Type: t})
	}
	if len(infer) > 0 {
		tmp := make([]catalog.Column, len(infer))
		for i, n := range infer {
			tmp[i] = catalog.Column{Name: n, Type: catalog.TypeString}
		}
		p := &fieldPlan{cols: tmp, keep: infer, seen: make([]bool, len(tmp)), infer: make([]uint8, len(tmp)), flag: o.KeepColumnsName}
		for i := range p.infer {
			p.infer[i] = canAll
		}
		for _, f := range files {
			if err := scan(ctx, f, o.Format, o.ParquetMemory, p, func(Record) error { return nil }, func(Reject) {}); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		}
		if err := p.unseen(); err != nil {
			return nil, err
		}
		for i, n := range infer {
			declared = append(declared, catalog.Column{Name: n, Type: p.inferred(i)})
		}
	}
	// in the order --keep-columns gives them
	order := map[string]int{}
	for i, k := range o.KeepColumns {
		order[k.Name] = i
	}
	keep := make([]catalog.Column, len(o.KeepColumns))
	for _, c := range declared {
		keep[order[c.Name]] = c
	}
	return catalog.MergeColumns(cols, keep)
}

// flagName is what errors call the columns asked for.
func (p *fieldPlan) flagName() string { return keepColumnsName(p.flag) }

func keepColumnsName(s string) string {
	if s == "" {
		return "--keep-columns"
	}
	return s
}

// unseen is an error naming the --keep-columns columns no input had.
func (p *fieldPlan) unseen() error {
	if p == nil {
		return nil
	}
	var missing []string
	for _, k := range p.keep {
		if i := p.index(k); i >= 0 && !p.seen[i] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: no input has a column %s", p.flagName(), strings.Join(missing, ", "))
	}
	return nil
}

// appendFields encodes a record's kept fields for the staging buffer: per
// column a byte, 0 for NULL, else 1 and the value (varint integers and
// microseconds, 8 bytes of a double, a byte of a bool, uvarint length and
// bytes of a string).
func appendFields(s []byte, cols []catalog.Column, fields []any) []byte {
	for i := range cols {
		var v any
		if i < len(fields) {
			v = fields[i]
		}
		// the value must be of the column's type (castField made it);
		// anything else is NULL
		switch x := v.(type) {
		case int32:
			s = binary.AppendVarint(append(s, 1), int64(x))
		case int64:
			s = binary.AppendVarint(append(s, 1), x)
		case float64:
			s = binary.LittleEndian.AppendUint64(append(s, 1), math.Float64bits(x))
		case bool:
			b := byte(0)
			if x {
				b = 1
			}
			s = append(s, 1, b)
		case time.Time:
			s = binary.AppendVarint(append(s, 1), x.UnixMicro())
		case string:
			s = binary.AppendUvarint(append(s, 1), uint64(len(x)))
			s = append(s, x...)
		default:
			s = append(s, 0)
		}
	}
	return s
}

// fieldLen is the length of the encoded fields at the start of b.
func fieldLen(b []byte, cols []catalog.Column) (int, error) {
	at := 0
	for _, c := range cols {
		if at >= len(b) {
			return 0, errors.New("staged fields are truncated")
		}
		if b[at] == 0 {
			at++
			continue
		}
		at++
		switch c.Type {
		case catalog.TypeInt32, catalog.TypeInt64, catalog.TypeTimestamp:
			_, k := binary.Varint(b[at:])
			if k <= 0 {
				return 0, errors.New("staged fields are corrupt")
			}
			at += k
		case catalog.TypeDouble:
			at += 8
		case catalog.TypeBool:
			at++
		case catalog.TypeString:
			n, k := binary.Uvarint(b[at:])
			if k <= 0 || n > uint64(len(b)-at-k) {
				return 0, errors.New("staged fields are corrupt")
			}
			at += k + int(n)
		}
		if at > len(b) {
			return 0, errors.New("staged fields are truncated")
		}
	}
	return at, nil
}

// markSeen records that an input has column name (a CSV header, a Parquet
// schema), whatever its values.
func (p *fieldPlan) markSeen(name string) {
	if i := p.index(name); i >= 0 {
		p.seen[i] = true
	}
}
