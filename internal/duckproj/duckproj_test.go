package duckproj

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// threeRows is a table function of a BIGINT, a VARCHAR and a TIMESTAMP
// column, whose second row's values are NULL, that records what Probe
// said before it wrote and what Written said after its first row.
type threeRows struct {
	cols   []duckdb.ColumnInfo
	done   bool
	seen   *[]bool
	probed *[]bool
}

func (s *threeRows) ColumnInfos() []duckdb.ColumnInfo     { return s.cols }
func (s *threeRows) Cardinality() *duckdb.CardinalityInfo { return nil }
func (s *threeRows) Init()                                { s.done = false }
func (s *threeRows) FillChunk(chunk duckdb.DataChunk) error {
	if s.done {
		return chunk.SetSize(0)
	}
	s.done = true
	*s.probed = nil
	for c, col := range s.cols {
		read, err := Probe(chunk, c, col.T.InternalType())
		if err != nil {
			return err
		}
		*s.probed = append(*s.probed, read)
	}
	rows := [][]any{{int64(1), "a", nil}, {nil, nil, nil}}
	var read Projection
	for i, row := range rows {
		if err := SetRow(chunk, i, row, &read); err != nil {
			return err
		}
	}
	*s.seen = read
	return chunk.SetSize(len(rows))
}

// TestWrittenAndProbeAreDuckDBsProjection hold Written and Probe to the
// duckdb-go they read: if an upgrade changes the error they look for,
// every column counts as read again (slower, not wrong: dataset_domains
// would look up every URL count, urls_scan decode every column), and this
// fails.
func TestWrittenAndProbeAreDuckDBsProjection(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	info := func(typ duckdb.Type) duckdb.TypeInfo {
		ti, err := duckdb.NewTypeInfo(typ)
		if err != nil {
			t.Fatal(err)
		}
		return ti
	}
	var seen, probed []bool
	f := duckdb.ChunkTableFunction{BindArguments: func(map[string]any, ...any) (duckdb.ChunkTableSource, error) {
		return &threeRows{cols: []duckdb.ColumnInfo{{Name: "a", T: info(duckdb.TYPE_BIGINT)}, {Name: "b", T: info(duckdb.TYPE_VARCHAR)}, {Name: "c", T: info(duckdb.TYPE_TIMESTAMP)}}, seen: &seen, probed: &probed}, nil
	}}
	if err := duckdb.RegisterTableUDF(conn, "three", f); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]struct{ read, rows string }{
		"SELECT * FROM three()":                 {"[true true true]", "1 a <nil>|<nil> <nil> <nil>|"},
		"SELECT b FROM three()":                 {"[false true false]", "a|<nil>|"},
		"SELECT a, c FROM three()":              {"[true false true]", "1 <nil>|<nil> <nil>|"},
		"SELECT a FROM three() WHERE b IS NULL": {"[true true false]", "<nil>|"},
		"SELECT count(*) FROM three()":          {"[true false false]", "2|"}, // DuckDB reads one column at least
	} {
		rows, err := conn.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		got := ""
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if i > 0 {
					got += " "
				}
				got += fmt.Sprint(v)
			}
			got += "|"
		}
		rows.Close()
		if fmt.Sprint(seen) != want.read || fmt.Sprint(probed) != want.read || got != want.rows {
			t.Errorf("%s: written %v, probed %v, rows %q; want %s, %q", q, seen, probed, got, want.read, want.rows)
		}
	}
}
