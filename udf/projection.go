package udf

import (
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// columnRead reports whether DuckDB reads column col, of type t, of the
// chunks it asks a table function for, so the function can leave a column
// nobody reads undecoded (urls_scan) or uncomputed (dataset_domains' URL
// counts). duckdb-go (v2.10505.0) pushes projections into every table
// function and drops what SetValue writes to a column DuckDB does not
// read, but says which columns those are only to row functions
// (Row.IsProjected): a chunk's GetValue of such a column is an
// "unprojected column" error. So a value is written to row 0 and read
// back; the caller writes row 0 again, or the chunk's size leaves it out.
// Any other answer counts as read. TestColumnRead holds this to the
// duckdb-go it reads.
func columnRead(chunk duckdb.DataChunk, col int, t duckdb.Type) (bool, error) {
	if err := chunk.SetValue(col, 0, probeValue(t)); err != nil {
		return false, err
	}
	_, err := chunk.GetValue(col, 0)
	return err == nil || !strings.Contains(err.Error(), "unprojected column"), nil
}

// probeValue is a value of a column of type t that is not NULL (a NULL
// would stay NULL: duckdb-go sets a row's validity only to invalid).
func probeValue(t duckdb.Type) any {
	switch t {
	case duckdb.TYPE_INTEGER:
		return int32(0)
	case duckdb.TYPE_BIGINT:
		return int64(0)
	case duckdb.TYPE_UBIGINT:
		return uint64(0)
	case duckdb.TYPE_DOUBLE:
		return float64(0)
	case duckdb.TYPE_BOOLEAN:
		return false
	case duckdb.TYPE_TIMESTAMP:
		return time.Unix(0, 0).UTC()
	}
	return ""
}
