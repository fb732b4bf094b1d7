// Package catalog will own the index's metadata as the server sees it: the
// current manifest as one atomic pointer to an immutable Snapshot that each
// query pins for its lifetime, the recorded shard layout, the dataset
// registry, and the SQL relations DHSI publishes (domains, urls, datasets,
// domain_datasets, domain_urls).
//
// Status: empty. The domain-record views arrive with issue 3 and the
// manifest, dataset registry and URL relations with issue 4. The convention
// the server's pg_catalog shim already relies on is fixed here: a view whose
// comment starts with "dhsi:" is one of DHSI's relations and is listed as a
// table (psql's \dt).
package catalog

// RelationCommentPrefix marks DHSI's own views (COMMENT ON VIEW x IS
// 'dhsi: ...'); clients see them as tables.
const RelationCommentPrefix = "dhsi:"
