-- name: a dollar tag of a non-letter byte hides a second statement (L1)
-- expect: nonadmin=42501
SELECT $€$ ( $€$ AS x \; CREATE TABLE public.lexer_bypass AS SELECT 42 AS x \; SELECT 2 AS y;
-- name: the statement after a non-letter dollar tag never ran
-- expect: reader==0 admin==0
SELECT count(*) FROM duckdb_tables() WHERE table_name = 'lexer_bypass';
-- name: a non-letter byte before E'' hides a file function (L1)
-- expect: nonadmin=42501
SELECT €E'\' AS a, (SELECT count(*) FROM read_parquet(:'lakeglob')) AS b -- '
;
-- name: a file after a join's ON condition (P3)
-- expect: nonadmin=42501
SELECT count(*) FROM datasets a JOIN datasets b ON true, :'lakeglob' f;
-- name: a quoted path after a join's ON condition (P3)
-- expect: nonadmin=42501
SELECT count(*) FROM datasets a JOIN datasets b ON a.dataset_id = b.dataset_id, :"lakeglob" f;
-- name: a file after a join's USING columns (P3)
-- expect: nonadmin=42501
SELECT count(*) FROM datasets a JOIN datasets b USING (dataset_id), :'lakeglob' f;
-- name: a file after an ASOF join (P3)
-- expect: nonadmin=42501
SELECT count(*) FROM datasets a ASOF JOIN datasets b ON a.dataset_id >= b.dataset_id, :'lakeglob' f;
-- name: a file in DELETE ... USING (P3)
-- expect: nonadmin=42501
CREATE TEMP TABLE t(x int);
DELETE FROM t USING :'lakeglob' f RETURNING *;
-- name: a file in MERGE ... USING (P3)
-- expect: nonadmin=42501
CREATE TEMP TABLE t(x int);
MERGE INTO t USING :'lakeglob' AS s ON false WHEN NOT MATCHED THEN INSERT VALUES (1);
-- name: strings in a join condition are values, not relations
-- expect: nonadmin==0
SELECT count(*) FROM datasets a JOIN datasets b ON a.dataset_id = b.dataset_id AND a.dataset_id::VARCHAR IN ('no such', 'dataset'), datasets c;
-- name: DROP MACRO TABLE behind a TEMP table called "table" (P4)
-- expect: nonadmin=42501
CREATE TEMP TABLE "table"(x int);
DROP MACRO TABLE domain_record;
-- name: domain_record is still there
-- expect: reader=ok
SELECT count(*) FROM domain_record('example.com');
-- name: DROP MACRO of a name only a TEMP table has (P4)
-- expect: nonadmin=42501
CREATE TEMP TABLE mytable(x int);
DROP MACRO mytable;
-- name: a TEMP table renamed to a shared macro's name (P4)
-- expect: nonadmin=42501
CREATE TEMP TABLE t(x int);
ALTER TABLE t RENAME TO pg_postmaster_start_time;
-- name: a TEMP table renamed to datasets (P4)
-- expect: nonadmin=42501
CREATE TEMP TABLE t(x int);
ALTER TABLE t RENAME TO datasets;
-- name: a TEMP view renamed to urls (P4)
-- expect: nonadmin=42501
CREATE TEMP VIEW v AS SELECT 1 AS x;
ALTER VIEW v RENAME TO urls;
-- name: TEMP objects renamed and dropped as their owner means
-- expect: nonadmin==1
CREATE TEMP TABLE t(x int);
ALTER TABLE t RENAME TO t2;
DROP TABLE t2;
CREATE TEMP MACRO m(x) AS x + 1;
DROP MACRO m;
CREATE TEMP MACRO tm(x) AS TABLE SELECT x;
DROP MACRO TABLE tm;
SELECT 1;
-- name: json_structure, which overflows DuckDB's stack on deep JSON (P2)
-- expect: nonadmin=42501 admin==["UBIGINT"]
SELECT json_structure('[1]');
-- name: json_contains, which overflows DuckDB's stack on deep JSON (P2)
-- expect: nonadmin=42501 admin==t
SELECT json_contains('[1]', '1');
-- name: json_group_structure, which overflows DuckDB's stack on deep JSON (P2)
-- expect: nonadmin=42501
SELECT json_group_structure(j::JSON) FROM (VALUES ('[1]')) v(j);
-- name: a file after a relation aliased set (P3)
-- expect: nonadmin=42501
SELECT count(*) FROM datasets set, :'lakeglob' f;
-- name: a file after a relation aliased AS values (P3)
-- expect: nonadmin=42501
SELECT count(*) FROM datasets AS values, :'lakeglob' f;
-- name: a file after a subquery aliased values, FROM first (P3)
-- expect: nonadmin=42501
FROM (SELECT 1) values, :'lakeglob' f SELECT count(*);
-- name: json_merge_patch, which overflows DuckDB's stack on deep JSON (P2)
-- expect: nonadmin=42501
SELECT json_merge_patch('{}', '{}');
-- name: json_transform, which overflows DuckDB's stack on a deep structure (P2)
-- expect: nonadmin=42501
SELECT json_transform('1', '"INTEGER"');
-- name: from_json, json_transform's other name (P2)
-- expect: nonadmin=42501
SELECT from_json('1', '"INTEGER"');
-- name: json_deserialize_sql, which overflows DuckDB's stack on deep input (P2)
-- expect: nonadmin=42501
SELECT json_deserialize_sql(json_serialize_sql('SELECT 1'));
-- name: a cast to VARIANT, which overflows DuckDB's stack on deep JSON (P2)
-- expect: nonadmin=42501
SELECT ('[1]'::JSON)::VARIANT IS NULL;
