package sqlserver

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"
)

// refEncodeRow is how rows were encoded before DataRows were written
// straight into the output buffer (up to 25853ef, verbatim but for the
// cell encoder): each value into a scratch buffer, then copied by
// pgproto3's DataRow encoder. Integers of numeric columns went through
// their decimal text (numericString, appendNumericBinary).
func refEncodeRow(t *testing.T, cols []column, formats []int16, row []any, loc *time.Location) []byte {
	t.Helper()
	var buf []byte
	offs := make([]int, len(row)+1)
	vals := make([][]byte, len(row))
	for i := range row {
		v := row[i]
		if v == nil {
			offs[i+1] = len(buf)
			continue
		}
		var err error
		buf, err = refEncodeCell(&cols[i].typ, formatFor(formats, i) == 1, buf, v, loc)
		if err != nil {
			t.Fatalf("reference encoder, column %q: %v", cols[i].name, err)
		}
		offs[i+1] = len(buf)
	}
	for i := range row {
		vals[i] = nil
		if row[i] != nil {
			vals[i] = buf[offs[i]:offs[i+1]:offs[i+1]]
			if vals[i] == nil {
				vals[i] = []byte{}
			}
		}
	}
	out, err := (&pgproto3.DataRow{Values: vals}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func refEncodeCell(c *colType, bin bool, buf []byte, v any, loc *time.Location) ([]byte, error) {
	if c.kind == kNumeric {
		s, ok := numericString(v)
		if !ok {
			return nil, fmt.Errorf("not a number: %T", v)
		}
		if bin {
			return appendNumericBinary(buf, s)
		}
		return append(buf, s...), nil
	}
	if bin {
		return c.encodeBinary(buf, v, loc)
	}
	return c.encodeText(buf, v, loc)
}

// typedRows is NativeRows over a table of cells.
type typedRows [][]NativeValue

func (r typedRows) Len() int                      { return len(r) }
func (r typedRows) Cell(row, col int) NativeValue { return r[row][col] }

// TestNativeRowsEncodeAsBoxed: a typed native result (NativeFunction.Rows)
// puts on the wire exactly the bytes its boxed rows (Run) did before, for
// every column type the native path sends, in text and binary, projected
// and not, with NULLs; and so does the generic encoder DuckDB's rows go
// through.
func TestNativeRowsEncodeAsBoxed(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600)
	}
	ints := []int64{0, 1, -1, 9, 10, 255, 256, 9999, 10000, -10000, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1, math.MaxInt64, math.MinInt64}
	uints := []uint64{0, 1, 9, 9999, 10000, 10001, 99990000, 100000000, 1234567890123, 12345678901234567890, math.MaxInt64, 1 << 63, math.MaxUint64, 10000000000000000000}
	strs := []string{"", "a", "https://example.com/a/b?c=d&e=f", "Bücher ☃ 𝄞", "tab\tnew\nline\\back\"quote", "NULL", strings.Repeat("x", 70000)}
	times := []time.Time{
		time.Date(2024, 7, 1, 12, 34, 56, 789012000, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Unix(0, 0).UTC(),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 3, 1, 0, 0, 0, 0, time.UTC), // 1 BC
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2024, 3, 31, 2, 30, 0, 0, berlin),
		time.UnixMicro(1721000000123456),
		timestampInfinities[0][0], timestampInfinities[0][1],
	}
	type colCase struct {
		duck  duckdb.Type
		cells []NativeValue
	}
	var cases []colCase
	var c colCase
	c = colCase{duck: duckdb.TYPE_INTEGER}
	for _, n := range ints {
		c.cells = append(c.cells, NativeInt(n)) // out of int32's range: the generic path, as boxed
	}
	cases = append(cases, c)
	c = colCase{duck: duckdb.TYPE_BIGINT}
	for _, n := range ints {
		c.cells = append(c.cells, NativeInt(n))
	}
	cases = append(cases, c)
	c = colCase{duck: duckdb.TYPE_UBIGINT}
	for _, n := range uints {
		c.cells = append(c.cells, NativeUint(n))
	}
	cases = append(cases, c)
	c = colCase{duck: duckdb.TYPE_VARCHAR}
	for _, s := range strs {
		c.cells = append(c.cells, NativeString(s))
	}
	cases = append(cases, c)
	c = colCase{duck: duckdb.TYPE_TIMESTAMP}
	for _, tm := range times {
		c.cells = append(c.cells, NativeTime(tm))
	}
	cases = append(cases, c)
	c = colCase{duck: duckdb.TYPE_TIMESTAMP_TZ} // not sent natively today: the generic path
	for _, tm := range times {
		c.cells = append(c.cells, NativeTime(tm))
	}
	cases = append(cases, c)
	for i := range cases {
		cases[i].cells = append(cases[i].cells, NativeNull())
	}

	// a table with one column of each type; rows run through every value of
	// the longest column, the others repeating theirs
	var fnCols []NativeColumn
	rowsN := 0
	for i, c := range cases {
		fnCols = append(fnCols, NativeColumn{Name: fmt.Sprintf("c%d_%d", i, c.duck), Type: c.duck})
		rowsN = max(rowsN, len(c.cells))
	}
	var rows typedRows
	for r := range rowsN {
		row := make([]NativeValue, len(cases))
		for i, c := range cases {
			row[i] = c.cells[r%len(c.cells)]
		}
		rows = append(rows, row)
	}
	boxed := NativeValues(fnCols, rows)

	projections := [][]int{nil, {1}, {2, 0}, {4, 3, 2, 1, 0}, {0, 0, 5}}
	for _, projIdx := range projections {
		nc := &nativeCall{fn: NativeFunction{Columns: fnCols}}
		for _, col := range projIdx {
			nc.proj = append(nc.proj, projected{col: col, name: fnCols[col].Name})
		}
		p := &prepared{native: nc}
		if err := p.describeNative(nil); err != nil {
			t.Fatal(err)
		}
		sent := nc.columns()
		formatSets := [][]int16{nil, {0}, {1}}
		mixed := make([]int16, len(sent))
		for i := range mixed {
			mixed[i] = int16(i % 2)
		}
		formatSets = append(formatSets, mixed)
		for _, formats := range formatSets {
			for _, loc := range []*time.Location{time.UTC, berlin} {
				for r := range rows {
					row := make([]any, len(sent))
					for j, pc := range sent {
						row[j] = boxed[r][pc.col]
					}
					want := refEncodeRow(t, p.cols, formats, row, loc)
					generic, err := appendDataRow([]byte("prefix"), p.cols, formats, row, loc)
					if err != nil {
						t.Fatal(err)
					}
					typed, err := appendNativeCells([]byte("prefix"), p.cols, nc.enc, formats, newRowReader(rows, nc.enc).row(r), loc)
					if err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("projection %v formats %v %s row %d %v", projIdx, formats, loc, r, row)
					if len(what) > 300 {
						what = what[:300]
					}
					if !bytes.Equal(generic[6:], want) {
						t.Errorf("%s: generic encoder\n got %q\nwant %q", what, trunc(generic[6:]), trunc(want))
					}
					if !bytes.Equal(typed[6:], want) {
						t.Errorf("%s: typed encoder\n got %q\nwant %q", what, trunc(typed[6:]), trunc(want))
					}
					if string(generic[:6]) != "prefix" || string(typed[:6]) != "prefix" {
						t.Fatalf("%s: what was queued before the row changed", what)
					}
				}
			}
		}
	}
}

func trunc(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:200:200], "..."...)
	}
	return b
}

// NativeValues boxes cells as the Go types DuckDB hands over for each
// column type, which Run's rows were before typed rows existed.
func TestNativeValuesAreDuckDBsGoTypes(t *testing.T) {
	ts := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	cols := []NativeColumn{{Name: "i", Type: duckdb.TYPE_INTEGER}, {Name: "b", Type: duckdb.TYPE_BIGINT}, {Name: "u", Type: duckdb.TYPE_UBIGINT}, {Name: "s", Type: duckdb.TYPE_VARCHAR}, {Name: "t", Type: duckdb.TYPE_TIMESTAMP}}
	got := NativeValues(cols, typedRows{
		{NativeInt(7), NativeInt(-8), NativeUint(math.MaxUint64), NativeString("x"), NativeTime(ts)},
		{NativeNull(), NativeNull(), NativeNull(), NativeNull(), NativeNull()},
	})
	want := [][]any{{int32(7), int64(-8), uint64(math.MaxUint64), "x", ts}, {nil, nil, nil, nil, nil}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	if NativeValues(cols, nil) != nil {
		t.Error("no rows should box to nil")
	}
}

// An encoding error leaves what was queued before the row as it was.
func TestDataRowEncodingErrorKeepsTheQueue(t *testing.T) {
	cols := []column{{name: "n", typ: colType{OID: oidNumeric, Typmod: -1, Len: -1, kind: kNumeric}}}
	for _, bin := range []int16{0, 1} {
		out, err := appendDataRow([]byte("queued"), cols, []int16{bin}, []any{"12a"}, time.UTC)
		if bin == 1 && err == nil {
			t.Errorf("binary numeric of %q: no error", "12a")
		}
		if err != nil && string(out) != "queued" {
			t.Errorf("after an error the queue is %q", out)
		}
	}
}

// countingCells is boxedRows that is also RowCells, counting Cells calls.
type countingCells struct {
	boxedRows
	cells int
}

func (c *countingCells) Cells(row int, cols []int, dst []NativeValue) {
	c.cells++
	for j, col := range cols {
		dst[j] = c.boxedRows.Cell(row, col)
	}
}

// TestRowReaderReadsARowInOneCall: rows that are RowCells (domain_urls',
// domain_datasets') are read a row per call, through a pick of them too,
// and give the cells Cell gives.
func TestRowReaderReadsARowInOneCall(t *testing.T) {
	base := boxedRows{{int64(1), "a", nil}, {int64(2), "b", "x"}, {int64(3), "c", "y"}}
	enc := []nativeEnc{{col: 2}, {col: 0}}
	for _, rows := range []NativeRows{&countingCells{boxedRows: base}, picked(&countingCells{boxedRows: base}, []int{2, 0})} {
		r := newRowReader(rows, enc)
		for i := range rows.Len() {
			got := r.row(i)
			for j, e := range enc {
				if want := rows.Cell(i, e.col); got[j] != want {
					t.Errorf("%T row %d column %d: %+v, want %+v", rows, i, e.col, got[j], want)
				}
			}
		}
		var c *countingCells
		switch x := rows.(type) {
		case *countingCells:
			c = x
		case pickedCells:
			c = x.rows.(*countingCells)
		}
		if c.cells != rows.Len() {
			t.Errorf("%T: %d Cells calls for %d rows", rows, c.cells, rows.Len())
		}
	}
}
