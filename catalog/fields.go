package catalog

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	pqfile "github.com/apache/arrow-go/v18/parquet/file"
)

// Column is one kept field of a dataset (issue 17 §1): what an input said
// about each URL besides the URL and its timestamp, stored as a typed
// column of the dataset's lake files under its own name
// (docs/format/lake.md, "Kept fields"). The registry lists a dataset's
// columns in datasets.json; files written before a column was added lack
// it, and read as NULL there.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"` // one of ColumnTypes
}

// Column types: the Go value a reader returns for each is int32, int64,
// float64, bool, time.Time (UTC, µs) or string; NULL is nil.
const (
	TypeInt32     = "int32"
	TypeInt64     = "int64"
	TypeDouble    = "double"
	TypeBool      = "bool"
	TypeTimestamp = "timestamp"
	TypeString    = "string"
)

// ColumnTypes are the types a kept column may have.
var ColumnTypes = []string{TypeInt64, TypeDouble, TypeBool, TypeTimestamp, TypeString, TypeInt32}

// CDXColumns are the fields of a CDX or CDXJ line that every ingest of one
// keeps, under the names CDXJ gives them (and pywb's and the Wayback CDX
// server's field names in the CDX API). Any dataset may keep a column of
// one of these names, with this type.
var CDXColumns = []Column{
	{"status", TypeInt32},    // HTTP status; CDX's "-" is NULL
	{"mime", TypeString},     // the Content-Type the server declared
	{"digest", TypeString},   // the payload's digest (base32 SHA-1 in crawls)
	{"length", TypeInt64},    // the WARC record's length, compressed
	{"offset", TypeInt64},    // its offset in filename
	{"filename", TypeString}, // the WARC file
}

// IsCDXColumn reports whether name is one of CDXColumns.
func IsCDXColumn(name string) (Column, bool) {
	for _, c := range CDXColumns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// reservedColumns are names a kept column may not have: the lake's own
// columns of every layout, the hive partitions and the urls view's
// columns. Future layouts add columns only under these names or names
// starting with "dhsi_".
var reservedColumns = map[string]bool{
	"url": true, "raw": true, "raw_edit": true, "ts": true, "ts_seconds": true, "domain": true,
	"domain_offset": true, "domain_length": true, "url_id": true, "dataset_id": true,
	"domain_prefix": true, "dataset": true, "fields": true,
}

// columnName: '-' too, for CDXJ's keys (Common Crawl's "mime-detected"),
// kept under the key itself so that SQL ("mime-detected", quoted), the
// fields JSON and the CDX API all name a field as its CDXJ line does
var columnName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,62}$`)

// ValidateColumn says whether c may be a kept column.
func ValidateColumn(c Column) error {
	if !columnName.MatchString(c.Name) {
		return fmt.Errorf("column name %q: want 1 to 63 lower-case letters, digits, '_' or '-', starting with a letter or '_'", c.Name)
	}
	if reservedColumns[c.Name] || strings.HasPrefix(c.Name, "dhsi_") {
		return fmt.Errorf("column name %q is reserved (the lake's and the urls view's own columns, and names starting with dhsi_)", c.Name)
	}
	ok := false
	for _, t := range ColumnTypes {
		ok = ok || c.Type == t
	}
	if !ok {
		return fmt.Errorf("column %q: type %q: want one of %s", c.Name, c.Type, strings.Join(ColumnTypes[:5], ", "))
	}
	if f, isCDX := IsCDXColumn(c.Name); isCDX && f.Type != c.Type {
		return fmt.Errorf("column %q is one of the CDX fields, whose type is %s, not %s", c.Name, f.Type, c.Type)
	}
	return nil
}

// MergeColumns is a dataset's columns once an ingest adds add: have, in
// order, then the columns of add it lacks. A column may be added to a
// dataset at any time (its older files read as NULL) but never change
// type: that is an error naming both.
func MergeColumns(have, add []Column) ([]Column, error) {
	out := append([]Column(nil), have...)
	for _, c := range add {
		found := false
		for _, h := range have {
			if h.Name == c.Name {
				found = true
				if h.Type != c.Type {
					return nil, fmt.Errorf("column %q is %s in the dataset, not %s: a kept column never changes type (ingest into a new dataset, or keep it as %s)", c.Name, h.Type, c.Type, h.Type)
				}
			}
		}
		if !found {
			if err := ValidateColumn(c); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// ColumnIndex is the position of name in cols, or -1.
func ColumnIndex(cols []Column, name string) int {
	for i, c := range cols {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// readFields decodes rows [first, first+count) of the kept columns cols
// of row group g: per row, a value per column (nil: NULL). A column the
// file lacks (written before the dataset kept it) or whose chunk holds no
// value reads as NULL; a column of another type than cols says is an
// error.
func readFields(g *pqfile.RowGroupReader, col func(string) int, cols []Column, first, count int64) ([][]any, error) {
	cells := make([]any, count*int64(len(cols)))
	out := make([][]any, count)
	for i := range out {
		out[i] = cells[int64(i)*int64(len(cols)) : int64(i+1)*int64(len(cols)) : int64(i+1)*int64(len(cols))]
	}
	for j, c := range cols {
		k := withValues(g, col(c.Name))
		if k < 0 {
			continue
		}
		want := map[string]parquet.Type{TypeInt32: parquet.Types.Int32, TypeInt64: parquet.Types.Int64, TypeTimestamp: parquet.Types.Int64,
			TypeDouble: parquet.Types.Double, TypeBool: parquet.Types.Boolean, TypeString: parquet.Types.ByteArray}[c.Type]
		if got := g.MetaData().Schema.Column(k).PhysicalType(); got != want {
			return nil, fmt.Errorf("column %s is %s in the file, want %s for type %s", c.Name, got, want, c.Type)
		}
		var valid []bool
		var err error
		set := func(i int, v any) { out[i][j] = v }
		switch c.Type {
		case TypeInt32:
			var vals []int32
			var release func()
			if vals, valid, release, err = readColumn[int32, *pqfile.Int32ColumnChunkReader](g, k, first, count); err == nil {
				release()
				for i, ok := range valid {
					if ok {
						set(i, vals[i])
					}
				}
			}
		case TypeInt64, TypeTimestamp:
			var vals []int64
			if vals, valid, err = readInt64s(g, k, first, count); err == nil {
				for i, ok := range valid {
					if ok && c.Type == TypeTimestamp {
						set(i, time.UnixMicro(vals[i]).UTC())
					} else if ok {
						set(i, vals[i])
					}
				}
			}
		case TypeDouble:
			var vals []float64
			var release func()
			if vals, valid, release, err = readColumn[float64, *pqfile.Float64ColumnChunkReader](g, k, first, count); err == nil {
				release()
				for i, ok := range valid {
					if ok {
						set(i, vals[i])
					}
				}
			}
		case TypeBool:
			var vals []bool
			var release func()
			if vals, valid, release, err = readColumn[bool, *pqfile.BooleanColumnChunkReader](g, k, first, count); err == nil {
				release()
				for i, ok := range valid {
					if ok {
						set(i, vals[i])
					}
				}
			}
		default:
			var vals []string
			if vals, valid, err = readStrings(g, k, first, count); err == nil {
				for i, ok := range valid {
					if ok {
						set(i, vals[i])
					}
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s column: %w", c.Name, err)
		}
	}
	return out, nil
}

// FieldValue is a kept field as JSON encodes it: a timestamp in RFC 3339
// (UTC), everything else as itself.
func FieldValue(v any) any {
	if t, ok := v.(time.Time); ok {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// OtherFieldsJSON is the JSON object of a row's kept fields that are not
// CDX fields (domain_url_fields' fields column), in the dataset's column
// order, NULL fields left out; ok is false when none is left.
func OtherFieldsJSON(cols []Column, vals []any) (string, bool) {
	return fieldsJSON(cols, vals, true)
}

// FieldsJSON is the JSON object of all a row's kept fields, in the
// dataset's column order, NULL fields left out; ok is false when none is
// left.
func FieldsJSON(cols []Column, vals []any) (string, bool) {
	return fieldsJSON(cols, vals, false)
}

func fieldsJSON(cols []Column, vals []any, skipCDX bool) (string, bool) {
	var b strings.Builder
	for i, c := range cols {
		if i >= len(vals) || vals[i] == nil {
			continue
		}
		if _, cdx := IsCDXColumn(c.Name); cdx && skipCDX {
			continue
		}
		k, _ := json.Marshal(c.Name)
		v, err := json.Marshal(FieldValue(vals[i]))
		if err != nil {
			continue // a value castField made always encodes
		}
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	if b.Len() == 0 {
		return "", false
	}
	b.WriteByte('}')
	return b.String(), true
}
