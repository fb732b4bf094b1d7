package ingest

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
	pqfile "github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/dhsi/dhsi/catalog"
)

// fieldNodes are the Parquet columns of a dataset's kept columns, after
// the lake's own (docs/format/lake.md, "Kept fields"): optional, named as
// the column.
func fieldNodes(cols []catalog.Column) []schema.Node {
	var out []schema.Node
	opt := parquet.Repetitions.Optional
	for _, c := range cols {
		var n schema.Node
		switch c.Type {
		case catalog.TypeInt32:
			n = schema.MustPrimitive(schema.NewPrimitiveNodeLogical(c.Name, opt, schema.NewIntLogicalType(32, true), parquet.Types.Int32, -1, -1))
		case catalog.TypeInt64:
			n = schema.MustPrimitive(schema.NewPrimitiveNodeLogical(c.Name, opt, schema.NewIntLogicalType(64, true), parquet.Types.Int64, -1, -1))
		case catalog.TypeTimestamp:
			n = schema.MustPrimitive(schema.NewPrimitiveNodeLogical(c.Name, opt, schema.NewTimestampLogicalType(false, schema.TimeUnitMicros), parquet.Types.Int64, -1, -1))
		case catalog.TypeDouble:
			n = schema.MustPrimitive(schema.NewPrimitiveNode(c.Name, opt, parquet.Types.Double, -1, -1))
		case catalog.TypeBool:
			n = schema.MustPrimitive(schema.NewPrimitiveNode(c.Name, opt, parquet.Types.Boolean, -1, -1))
		default:
			n = schema.MustPrimitive(schema.NewPrimitiveNodeLogical(c.Name, opt, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1))
		}
		out = append(out, n)
	}
	return out
}

// fieldProps are the encodings of the kept columns: strings and 32-bit
// integers (a status, a mime type, a WARC file name: few distinct values)
// dictionary-coded, except digest, whose values are all distinct; 64-bit
// integers and timestamps delta-coded; every one with statistics, whose
// null count lets a reader skip a row group's chunk with no value.
func fieldProps(cols []catalog.Column) []parquet.WriterProperty {
	var out []parquet.WriterProperty
	for _, c := range cols {
		out = append(out, parquet.WithStatsFor(c.Name, true))
		switch {
		case c.Name == "digest":
			out = append(out, parquet.WithEncodingFor(c.Name, parquet.Encodings.Plain))
		case c.Type == catalog.TypeString || c.Type == catalog.TypeInt32:
			out = append(out, parquet.WithDictionaryFor(c.Name, true))
		case c.Type == catalog.TypeInt64 || c.Type == catalog.TypeTimestamp:
			out = append(out, parquet.WithEncodingFor(c.Name, parquet.Encodings.DeltaBinaryPacked))
		}
	}
	return out
}

// fieldWriter gathers one row group's kept fields from the staged rows
// and writes them, column by column, after the lake's own columns.
type fieldWriter struct {
	cols  []catalog.Column
	defs  [][]int16
	i32   [][]int32
	i64   [][]int64
	f64   [][]float64
	bools [][]bool
	strs  [][]parquet.ByteArray
}

func newFieldWriter(cols []catalog.Column) *fieldWriter {
	if len(cols) == 0 {
		return nil
	}
	n := len(cols)
	return &fieldWriter{cols: cols, defs: make([][]int16, n), i32: make([][]int32, n), i64: make([][]int64, n),
		f64: make([][]float64, n), bools: make([][]bool, n), strs: make([][]parquet.ByteArray, n)}
}

func (w *fieldWriter) reset() {
	if w == nil {
		return
	}
	for i := range w.cols {
		w.defs[i], w.i32[i], w.i64[i], w.f64[i] = w.defs[i][:0], w.i32[i][:0], w.i64[i][:0], w.f64[i][:0]
		w.bools[i], w.strs[i] = w.bools[i][:0], w.strs[i][:0]
	}
}

// add decodes one row's staged fields (appendFields). Strings point into
// the staged rows, which outlive the file's writing.
func (w *fieldWriter) add(blob string) error {
	b := unsafe.Slice(unsafe.StringData(blob), len(blob))
	at := 0
	for i, c := range w.cols {
		if at >= len(b) {
			return fmt.Errorf("staged fields are truncated")
		}
		if b[at] == 0 {
			w.defs[i] = append(w.defs[i], 0)
			at++
			continue
		}
		at++
		w.defs[i] = append(w.defs[i], 1)
		switch c.Type {
		case catalog.TypeInt32, catalog.TypeInt64, catalog.TypeTimestamp:
			v, k := binary.Varint(b[at:])
			if k <= 0 {
				return fmt.Errorf("staged fields are corrupt")
			}
			at += k
			if c.Type == catalog.TypeInt32 {
				w.i32[i] = append(w.i32[i], int32(v))
			} else {
				w.i64[i] = append(w.i64[i], v)
			}
		case catalog.TypeDouble:
			w.f64[i] = append(w.f64[i], math.Float64frombits(binary.LittleEndian.Uint64(b[at:])))
			at += 8
		case catalog.TypeBool:
			w.bools[i] = append(w.bools[i], b[at] == 1)
			at++
		default:
			n, k := binary.Uvarint(b[at:])
			if k <= 0 {
				return fmt.Errorf("staged fields are corrupt")
			}
			at += k
			w.strs[i] = append(w.strs[i], parquet.ByteArray(b[at:at+int(n):at+int(n)]))
			at += int(n)
		}
	}
	return nil
}

// write writes the row group's kept columns, in the schema's order.
func (w *fieldWriter) write(rgw pqfile.SerialRowGroupWriter) error {
	if w == nil {
		return nil
	}
	for i, c := range w.cols {
		var err error
		switch c.Type {
		case catalog.TypeInt32:
			err = writeColumn[int32, *pqfile.Int32ColumnChunkWriter](rgw, w.i32[i], w.defs[i])
		case catalog.TypeInt64, catalog.TypeTimestamp:
			err = writeColumn[int64, *pqfile.Int64ColumnChunkWriter](rgw, w.i64[i], w.defs[i])
		case catalog.TypeDouble:
			err = writeColumn[float64, *pqfile.Float64ColumnChunkWriter](rgw, w.f64[i], w.defs[i])
		case catalog.TypeBool:
			err = writeColumn[bool, *pqfile.BooleanColumnChunkWriter](rgw, w.bools[i], w.defs[i])
		default:
			err = writeColumn[parquet.ByteArray, *pqfile.ByteArrayColumnChunkWriter](rgw, w.strs[i], w.defs[i])
		}
		if err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
	}
	return nil
}
