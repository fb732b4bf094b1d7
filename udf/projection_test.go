package udf

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// seenSource is a table function of two BIGINT columns that records which
// of them columnRead says DuckDB reads.
type seenSource struct {
	cols []duckdb.ColumnInfo
	seen *[]bool
	done bool
}

func (s *seenSource) ColumnInfos() []duckdb.ColumnInfo     { return s.cols }
func (s *seenSource) Cardinality() *duckdb.CardinalityInfo { return nil }
func (s *seenSource) Init()                                { s.done = false }
func (s *seenSource) FillChunk(chunk duckdb.DataChunk) error {
	if s.done {
		return chunk.SetSize(0)
	}
	s.done = true
	*s.seen = make([]bool, 2)
	for c := range 2 {
		read, err := columnRead(chunk, c, duckdb.TYPE_BIGINT)
		if err != nil {
			return err
		}
		(*s.seen)[c] = read
	}
	for c := range 2 {
		if err := chunk.SetValue(c, 0, int64(c+1)); err != nil {
			return err
		}
	}
	return chunk.SetSize(1)
}

// TestColumnRead holds columnRead to the duckdb-go it reads (an
// "unprojected column" error of GetValue): if an upgrade changes that,
// dataset_domains would look up every URL count again, and urls_scan
// decode every column.
func TestColumnRead(t *testing.T) {
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
	bigint, err := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	if err != nil {
		t.Fatal(err)
	}
	var seen []bool
	f := duckdb.ChunkTableFunction{BindArguments: func(map[string]any, ...any) (duckdb.ChunkTableSource, error) {
		return &seenSource{cols: []duckdb.ColumnInfo{{Name: "a", T: bigint}, {Name: "b", T: bigint}}, seen: &seen}, nil
	}}
	if err := duckdb.RegisterTableUDF(conn, "two", f); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"SELECT * FROM two()":             "[true true]",
		"SELECT b FROM two()":             "[false true]",
		"SELECT a FROM two()":             "[true false]",
		"SELECT a FROM two() WHERE b > 0": "[true true]",
		"SELECT count(*) FROM two()":      "[true false]", // DuckDB reads one column at least
	} {
		rows, err := conn.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		rows.Close()
		if got := fmt.Sprint(seen); got != want {
			t.Errorf("%s: projected %s, want %s", q, got, want)
		}
	}
}
