// Package catalog owns the URL index as the server sees it (issue 4): the
// current manifest as one atomic pointer to an immutable snapshot that each
// query pins for its lifetime, the dataset registry, the block and row
// caches, and garbage collection of unreferenced versions. Its invariants
// are at the top of manifest.go and urlindex.go.
//
// The domain-record half is package records. The convention the server's
// pg_catalog shim relies on is fixed here: a view whose comment starts with
// "dhsi:" is one of DHSI's relations and is listed as a table (psql's \dt).
package catalog

// RelationCommentPrefix marks DHSI's own views (COMMENT ON VIEW x IS
// 'dhsi: ...'); clients see them as tables.
const RelationCommentPrefix = "dhsi:"
