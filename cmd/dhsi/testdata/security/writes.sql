-- name: COPY a query to a host file
-- expect: nonadmin=42501 admin=42501
COPY (SELECT 'x') TO '/tmp/dhsi-bypass-copy.csv';
-- name: COPY into the lake directory
-- expect: nonadmin=42501
COPY (SELECT 'x' AS url) TO :'lakefile';
-- name: COPY a table from a host file
-- expect: nonadmin=42501
COPY dhsi_cache.meta FROM '/etc/passwd';
-- name: COPY TO STDOUT is open to everyone
-- expect: reader==1 writer==1 admin==1
COPY (SELECT 1) TO STDOUT;
-- name: EXPORT DATABASE
-- expect: nonadmin=42501 admin=42501
EXPORT DATABASE '/tmp/dhsi-bypass-export';
-- name: IMPORT DATABASE
-- expect: nonadmin=42501 admin=42501
IMPORT DATABASE '/tmp/dhsi-bypass-export';
-- name: ATTACH a database file
-- expect: nonadmin=42501 admin=42501
ATTACH '/tmp/dhsi-bypass.duckdb' AS evil;
-- name: ATTACH in memory
-- expect: nonadmin=42501 admin=ok
ATTACH ':memory:' AS scratch;
-- name: DETACH the catalog shim
-- expect: nonadmin=42501
DETACH dhsi_sys;
-- name: INSTALL an extension
-- expect: nonadmin=42501 admin=42501
INSTALL httpfs;
-- name: LOAD an extension that is not bundled
-- expect: nonadmin=42501 admin=42501
LOAD httpfs;
-- name: LOAD an extension from a path
-- expect: nonadmin=42501 admin=42501
LOAD '/tmp/evil.duckdb_extension';
-- name: CREATE SECRET
-- expect: nonadmin=42501
CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y');
-- name: CHECKPOINT
-- expect: nonadmin=42501
CHECKPOINT;
-- name: VACUUM
-- expect: nonadmin=42501
VACUUM;
-- name: USE another schema
-- expect: nonadmin=42501
USE dhsi_sys.pg;
-- name: EXPLAIN ANALYZE of a COPY to a file
-- expect: nonadmin=42501
EXPLAIN ANALYZE COPY (SELECT 1) TO '/tmp/dhsi-bypass-explain.csv';
-- name: a SQL PREPARE of a COPY to a file
-- expect: nonadmin=42501
PREPARE p AS COPY (SELECT 1) TO '/tmp/dhsi-bypass-prepare.csv';
