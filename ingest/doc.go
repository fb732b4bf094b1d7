// Package ingest turns input files of URLs (plain lists, CSV/TSV, JSON lines,
// CDX, CDXJ, Parquet) into a new version of the URL index: normalized URLs in
// the Parquet lake, and the sidecar indexes (domain dictionary, Roaring
// membership, postings, file registry, dataset registry) that answer
// domain → datasets → URLs without scanning.
//
// Promises: nothing read is dropped silently — every input line is either
// ingested or counted as a reject with a reason and written to the rejects
// file, and an ingested URL indexed under a host that is itself a public
// suffix is counted as flagged (Summary.Flagged); a run publishes through catalog.Publish, so readers see either the
// old version or the new one; an ingest may run while a server serves the
// same store, and never opens the server's DuckDB file.
package ingest

import _ "github.com/duckdb/duckdb-go/v2" // DuckDB reads Parquet inputs (inputs.go)
