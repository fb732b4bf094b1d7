// Package duckproj tells a Go table function which of its columns DuckDB
// reads.
//
// duckdb-go (v2.10505.0) pushes projections into every table function and
// drops what DataChunk.SetValue writes to a column DuckDB does not read,
// but it builds an error (fmt.Errorf) for each such value before it drops
// it, and says which columns those are only to row functions
// (Row.IsProjected). Writing a column nobody reads cost more than the rest
// of urls_by_domain: 55% of the CPU of a count over one domain's 66,595
// URLs went to those errors. A chunk's GetValue of such a column is an
// "unprojected column" error, which is how Written and Probe tell.
package duckproj

import (
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// Written reports, for each of the first n columns of chunk, whether
// DuckDB reads it. The caller has written row 0 of every column (a NULL
// will do) with SetValue, so reading it back is safe; it asks once per
// execution, after its first row, and then writes only the columns read.
// Any answer but "unprojected column" counts as read.
func Written(chunk duckdb.DataChunk, n int) []bool {
	read := make([]bool, n)
	for c := range read {
		_, err := chunk.GetValue(c, 0)
		read[c] = err == nil || !strings.Contains(err.Error(), "unprojected column")
	}
	return read
}

// Projection is what Written learned of one execution's chunks: nil
// until the first row is written. A table function keeps one and resets
// it at Init.
type Projection []bool

// SetRow writes vals as row of chunk: every column in the execution's
// first row, which tells *p which columns DuckDB reads (Written), and only
// those after it.
func SetRow[V any](chunk duckdb.DataChunk, row int, vals []V, p *Projection) error {
	for c, v := range vals {
		if *p != nil && !(*p)[c] {
			continue
		}
		if err := chunk.SetValue(c, row, v); err != nil {
			return err
		}
	}
	if *p == nil {
		*p = Written(chunk, len(vals))
	}
	return nil
}

// Probe reports whether DuckDB reads column col, of type t, before
// anything is written: so a function can leave a column nobody reads
// undecoded (urls_scan) or uncomputed (dataset_domains' URL counts). It
// writes a value to row 0 and reads it back; the caller writes row 0
// again, or the chunk's size leaves it out. Any answer but "unprojected
// column" counts as read.
func Probe(chunk duckdb.DataChunk, col int, t duckdb.Type) (bool, error) {
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
