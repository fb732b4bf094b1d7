-- name: read_csv of a host file
-- expect: nonadmin=42501 admin=42501
SELECT count(*) FROM read_csv('/etc/passwd', header = false, delim = ':');
-- name: read_csv_auto of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_csv_auto('/etc/passwd');
-- name: read_parquet of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_parquet('/etc/passwd');
-- name: read_json of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_json('/etc/passwd');
-- name: read_json_auto of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_json_auto('/etc/passwd');
-- name: read_ndjson_objects of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_ndjson_objects('/etc/passwd');
-- name: read_text of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_text('/etc/passwd');
-- name: read_blob of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_blob('/etc/passwd');
-- name: glob of a host directory
-- expect: nonadmin=42501 admin=42501
SELECT * FROM glob('/etc/*');
-- name: sniff_csv of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM sniff_csv('/etc/passwd');
-- name: parquet_metadata of a host file
-- expect: nonadmin=42501 admin=42501
SELECT * FROM parquet_metadata('/etc/passwd');
-- name: parquet_schema of the lake
-- expect: nonadmin=42501 admin=ok
SELECT count(*) FROM parquet_schema(:'lakeglob');
-- name: query() running a file read
-- expect: nonadmin=42501 admin=42501
SELECT * FROM query('SELECT * FROM read_text(''/etc/passwd'')');
-- name: query_table on a path
-- expect: nonadmin=42501 admin=error
SELECT * FROM query_table('/etc/passwd');
-- name: json_execute_serialized_sql
-- expect: nonadmin=42501
SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'));
-- name: a quoted, upper-case file function
-- expect: nonadmin=42501 admin=42501
SELECT * FROM "READ_TEXT"('/etc/passwd');
-- name: a schema-qualified file function
-- expect: nonadmin=42501 admin=42501
SELECT * FROM system.main.read_text('/etc/passwd');
-- name: a comment between a file function and its parenthesis
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_text/**/('/etc/passwd');
-- name: read_parquet of the lake directly (hidden dataset's rows)
-- expect: nonadmin=42501 admin=ok
SELECT count(*) FROM read_parquet(:'lakeglob', hive_partitioning = true) WHERE dataset_id = :secret_id;
-- name: the lake as a string relation (replacement scan)
-- expect: nonadmin=42501 admin=ok
SELECT count(*) FROM :'lakeglob';
-- name: the lake as a quoted relation name (replacement scan)
-- expect: nonadmin=42501
SELECT count(*) FROM :"lakeglob";
-- name: FROM-first replacement scan
-- expect: nonadmin=42501 admin=ok
FROM :'lakeglob' LIMIT 1;
-- name: a replacement scan in a subquery
-- expect: nonadmin=42501
SELECT count(*) FROM (SELECT * FROM :'lakeglob');
-- name: a replacement scan in a CTE
-- expect: nonadmin=42501
WITH x AS (SELECT * FROM :'lakeglob') SELECT count(*) FROM x;
-- name: a replacement scan as a joined relation
-- expect: nonadmin=42501
SELECT count(*) FROM datasets JOIN :'lakeglob' ON true;
-- name: a replacement scan after a comma
-- expect: nonadmin=42501
SELECT count(*) FROM datasets, :'lakeglob';
-- name: DESCRIBE of a path
-- expect: nonadmin=42501 admin=ok
DESCRIBE :'lakeglob';
-- name: SUMMARIZE of a path
-- expect: nonadmin=42501
SUMMARIZE :'lakeglob';
-- name: a path outside the lake as a relation
-- expect: nonadmin=42501 admin=42501
SELECT * FROM '/etc/passwd.csv';
-- name: path traversal out of the lake
-- expect: nonadmin=42501 admin=42501
SELECT * FROM read_text(:'lakefile' || '/../../../../../../../etc/passwd');
-- name: a string that is a domain argument is not a path
-- expect: reader=ok writer=ok admin=ok
SELECT count(*) FROM domain_datasets('https://www.example.com/a/b.parquet');
