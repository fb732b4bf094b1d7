package sqlserver

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// appendDataRow appends one DataRow message of row to out, each value
// encoded straight into out in its column's format (no per-row scratch
// buffer, no copy). A nil value is SQL NULL. On an error out comes back as
// it was given.
func appendDataRow[T any](out []byte, cols []column, formats []int16, row []T, loc *time.Location) ([]byte, error) {
	if len(row) > math.MaxUint16 {
		return out, fmt.Errorf("a row of %d columns is more than a DataRow holds", len(row))
	}
	orig, start := out, len(out)
	out = append(out, 'D', 0, 0, 0, 0)
	out = binary.BigEndian.AppendUint16(out, uint16(len(row)))
	var err error
	for i := range row {
		v := any(row[i])
		if v == nil {
			out = append(out, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		at := len(out)
		out = append(out, 0, 0, 0, 0)
		if formatFor(formats, i) == 1 {
			out, err = cols[i].typ.encodeBinary(out, v, loc)
		} else {
			out, err = cols[i].typ.encodeText(out, v, loc)
		}
		if err != nil {
			// an encoder may return nil on error: orig keeps what was queued
			return orig[:start], fmt.Errorf("encode column %q: %w", cols[i].name, err)
		}
		binary.BigEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	}
	binary.BigEndian.PutUint32(out[start+1:], uint32(len(out)-start-1))
	return out, nil
}

// NativeRows is a NativeFunction's result in typed form (NativeFunction.Rows):
// the server encodes its cells straight into DataRows, without boxing each
// in an interface value.
type NativeRows interface {
	Len() int
	// Cell is row's value of column col (an index into the function's
	// Columns, whatever the statement projects).
	Cell(row, col int) NativeValue
}

// RowCells is NativeRows that hands over the cells of one row, in the
// columns cols lists, in one call: the server sends a row's columns from
// it instead of calling Cell once per column through the interface (in a
// profile of domain_datasets at 1 client, a tenth of the server's CPU
// sat on those calls).
type RowCells interface {
	NativeRows
	Cells(row int, cols []int, dst []NativeValue)
}

// FallibleRows are NativeRows that read what they hold lazily and may fail
// to: Err is the first error a Cell met (that cell answered NULL). The
// server checks it once the rows are filtered and sorted, before sending
// any, and again after the last, and then sends the error instead of
// CommandComplete.
type FallibleRows interface {
	NativeRows
	Err() error
}

// nativeRowsErr is the error of rows, or of the rows pickedRows picked
// from, if they are FallibleRows.
func nativeRowsErr(rows NativeRows) error {
	switch p := rows.(type) {
	case pickedRows:
		rows = p.rows
	case pickedCells:
		rows = p.rows
	}
	if f, ok := rows.(FallibleRows); ok {
		return f.Err()
	}
	return nil
}

// NativeValue is one cell of NativeRows. Its zero value is NULL.
type NativeValue struct {
	kind nativeKind
	n    uint64 // int64 bits (nvInt) or the value (nvUint)
	s    string
	t    time.Time
}

type nativeKind uint8

const (
	nvNull nativeKind = iota
	nvInt
	nvUint
	nvString
	nvTime
)

// NativeInt is a signed integer cell (INTEGER, BIGINT, ...).
func NativeInt(n int64) NativeValue { return NativeValue{kind: nvInt, n: uint64(n)} }

// NativeUint is an unsigned integer cell (UBIGINT, ...).
func NativeUint(n uint64) NativeValue { return NativeValue{kind: nvUint, n: n} }

// NativeString is a VARCHAR cell.
func NativeString(s string) NativeValue { return NativeValue{kind: nvString, s: s} }

// NativeTime is a TIMESTAMP (or TIMESTAMP WITH TIME ZONE) cell.
func NativeTime(t time.Time) NativeValue { return NativeValue{kind: nvTime, t: t} }

// NativeNull is a NULL cell.
func NativeNull() NativeValue { return NativeValue{} }

// SetInt, SetUint, SetString, SetTime and SetNull make v that cell in
// place, field by field. A RowCells implementation fills dst with them:
// building a NativeValue and copying it in stored it to the stack in
// narrow writes and read it back in wide ones, a store-forwarding stall
// that was 8% of a domain_datasets lookup's CPU (pprof -disasm, stop 43).
// The fields a kind does not read are left as they were, but a string's
// is cleared so that a reused cell does not keep its string alive.
func (v *NativeValue) SetInt(n int64)     { v.kind, v.n, v.s = nvInt, uint64(n), "" }
func (v *NativeValue) SetUint(n uint64)   { v.kind, v.n, v.s = nvUint, n, "" }
func (v *NativeValue) SetString(s string) { v.kind, v.s = nvString, s }
func (v *NativeValue) SetTime(t time.Time) {
	v.kind, v.t, v.s = nvTime, t, ""
}
func (v *NativeValue) SetNull() { v.kind, v.s = nvNull, "" }

// Value is the cell as the Go value DuckDB hands over for a column of type
// t (int32 for INTEGER, uint64 for UBIGINT, ...): what Run returns.
func (v NativeValue) Value(t duckdb.Type) any {
	switch v.kind {
	case nvInt, nvUint:
		switch t {
		case duckdb.TYPE_TINYINT:
			return int8(v.n)
		case duckdb.TYPE_SMALLINT:
			return int16(v.n)
		case duckdb.TYPE_INTEGER:
			return int32(v.n)
		case duckdb.TYPE_UTINYINT:
			return uint8(v.n)
		case duckdb.TYPE_USMALLINT:
			return uint16(v.n)
		case duckdb.TYPE_UINTEGER:
			return uint32(v.n)
		case duckdb.TYPE_UBIGINT:
			return v.n
		}
		if v.kind == nvUint {
			return v.n
		}
		return int64(v.n)
	case nvString:
		return v.s
	case nvTime:
		return v.t
	}
	return nil
}

// NativeValues boxes typed rows into the [][]any a NativeFunction's Run
// returns, so a function can compute its rows once, typed, for both paths.
func NativeValues(cols []NativeColumn, rows NativeRows) [][]any {
	if rows == nil {
		return nil
	}
	n := rows.Len()
	out := make([][]any, n)
	cells := make([]any, n*len(cols)) // one allocation for every row's cells
	for i := range n {
		row := cells[i*len(cols) : (i+1)*len(cols) : (i+1)*len(cols)]
		for c, col := range cols {
			row[c] = rows.Cell(i, c).Value(col.Type)
		}
		out[i] = row
	}
	return out
}

// nativeEnc is how one column of a typed native result is encoded: a fast
// path for the (DuckDB type, cell kind) pairs DHSI's functions produce,
// which writes exactly what the generic encoder writes for the boxed value
// (TestNativeRowsEncodeAsBoxed), and the generic encoder for the rest.
type nativeEnc struct {
	col  int         // index into the function's Columns
	duck duckdb.Type // its declared type
}

// rowReader reads the cells of rows that a statement sends, a row at a
// time, into one buffer: through RowCells where rows has it.
type rowReader struct {
	rows  NativeRows
	bulk  RowCells // rows, when it is RowCells
	cols  []int    // enc's columns
	enc   []nativeEnc
	cells []NativeValue
}

func newRowReader(rows NativeRows, enc []nativeEnc) *rowReader {
	r := &rowReader{rows: rows, enc: enc, cells: make([]NativeValue, len(enc))}
	if bulk, ok := rows.(RowCells); ok {
		r.bulk = bulk
		r.cols = make([]int, len(enc))
		for j, e := range enc {
			r.cols[j] = e.col
		}
	}
	return r
}

// row reads row i's cells; they stay valid until the next call.
func (r *rowReader) row(i int) []NativeValue {
	if r.bulk != nil {
		r.bulk.Cells(i, r.cols, r.cells)
		return r.cells
	}
	for j, e := range r.enc {
		r.cells[j] = r.rows.Cell(i, e.col)
	}
	return r.cells
}

// appendNativeCells appends one row's cells, in the columns enc lists, as
// a DataRow to out. On an error out comes back as it was given.
func appendNativeCells(out []byte, cols []column, enc []nativeEnc, formats []int16, cells []NativeValue, loc *time.Location) ([]byte, error) {
	orig, start := out, len(out)
	out = append(out, 'D', 0, 0, 0, 0)
	out = binary.BigEndian.AppendUint16(out, uint16(len(enc)))
	for j, e := range enc {
		v := &cells[j]
		if v.kind == nvNull {
			out = append(out, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		at := len(out)
		out = append(out, 0, 0, 0, 0)
		bin := formatFor(formats, j) == 1
		switch {
		case e.duck == duckdb.TYPE_VARCHAR && v.kind == nvString:
			out = append(out, v.s...) // text and binary alike
		case e.duck == duckdb.TYPE_UBIGINT && v.kind == nvUint:
			if bin {
				out = appendNumericBinaryUint(out, v.n)
			} else {
				out = strconv.AppendUint(out, v.n, 10)
			}
		case e.duck == duckdb.TYPE_BIGINT && v.kind == nvInt:
			if bin {
				out = binary.BigEndian.AppendUint64(out, v.n)
			} else {
				out = strconv.AppendInt(out, int64(v.n), 10)
			}
		case e.duck == duckdb.TYPE_INTEGER && v.kind == nvInt && int64(v.n) == int64(int32(v.n)):
			if bin {
				out = binary.BigEndian.AppendUint32(out, uint32(v.n))
			} else {
				out = strconv.AppendInt(out, int64(v.n), 10)
			}
		case e.duck == duckdb.TYPE_TIMESTAMP && v.kind == nvTime:
			if bin {
				out = appendTimestampBinary(out, v.t, false)
			} else {
				out = appendTimestampText(out, v.t)
			}
		default:
			var err error
			if bin {
				out, err = cols[j].typ.encodeBinary(out, v.Value(e.duck), loc)
			} else {
				out, err = cols[j].typ.encodeText(out, v.Value(e.duck), loc)
			}
			if err != nil {
				return orig[:start], fmt.Errorf("encode column %q: %w", cols[j].name, err)
			}
		}
		binary.BigEndian.PutUint32(out[at:], uint32(len(out)-at-4))
	}
	binary.BigEndian.PutUint32(out[start+1:], uint32(len(out)-start-1))
	return out, nil
}
