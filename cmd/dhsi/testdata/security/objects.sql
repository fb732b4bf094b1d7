-- name: DROP VIEW datasets
-- expect: nonadmin=42501
DROP VIEW datasets;
-- name: DROP VIEW urls CASCADE
-- expect: nonadmin=42501
DROP VIEW urls CASCADE;
-- name: replace the datasets view
-- expect: nonadmin=42501
CREATE OR REPLACE VIEW datasets AS SELECT 1 AS dataset_id;
-- name: replace the urls view by its qualified name
-- expect: nonadmin=42501
CREATE OR REPLACE VIEW public.urls AS SELECT 1 AS url;
-- name: rename the domains view
-- expect: nonadmin=42501
ALTER VIEW domains RENAME TO gone;
-- name: delete the domain-record mirror
-- expect: nonadmin=42501
DELETE FROM dhsi_cache.rows;
-- name: insert into the mirror
-- expect: nonadmin=42501
INSERT INTO dhsi_cache.meta VALUES ('k', 'v');
-- name: update the migrations table
-- expect: nonadmin=42501
UPDATE dhsi_meta.schema_migrations SET version = 0;
-- name: truncate the mirror
-- expect: nonadmin=42501
TRUNCATE dhsi_cache.objects;
-- name: drop the catalog shim
-- expect: nonadmin=42501
DROP SCHEMA dhsi_sys.pg CASCADE;
-- name: a macro that shadows domain_datasets
-- expect: nonadmin=42501
CREATE MACRO domain_datasets(d) AS TABLE SELECT 1 AS dataset_id;
-- name: a TEMP macro that shadows domain_datasets
-- expect: nonadmin=42501
CREATE TEMP MACRO domain_datasets(d) AS TABLE SELECT 1 AS dataset_id;
-- name: a TEMP macro that shadows etld1
-- expect: nonadmin=42501
CREATE OR REPLACE TEMP MACRO etld1(x) AS x;
-- name: a TEMP view that shadows datasets
-- expect: nonadmin=42501
CREATE TEMP VIEW datasets AS SELECT 1 AS dataset_id;
-- name: a TEMP macro wrapping a file function
-- expect: nonadmin=42501
CREATE TEMP MACRO m() AS TABLE SELECT * FROM read_text('/etc/passwd');
-- name: a shared table in public
-- expect: nonadmin=42501
CREATE TABLE public.mine (x INTEGER);
-- name: COMMENT ON a DHSI view
-- expect: nonadmin=42501
COMMENT ON VIEW datasets IS 'mine';
-- name: TEMP tables of one's own session
-- expect: reader==2 writer==2 admin==2
CREATE TEMP TABLE t AS SELECT 1 AS x; INSERT INTO t VALUES (2); UPDATE t SET x = x; DELETE FROM t WHERE x > 5; SELECT count(*) FROM t;
-- name: TEMP views of one's own session, and dropping them
-- expect: reader==0 writer==0 admin==0
CREATE TEMP VIEW mine AS SELECT * FROM domain_datasets('example.com') WHERE dataset = 'secret'; SELECT count(*) FROM mine; DROP VIEW mine;
-- name: an unqualified DROP of a shared name when no TEMP object has it
-- expect: nonadmin=42501
DROP TABLE IF EXISTS dhsi_cache.rows;
-- name: a TEMP macro that shadows domain_record (the domains lookup)
-- expect: nonadmin=42501
CREATE TEMP MACRO domain_record(d) AS TABLE SELECT 'x' AS domain;
-- name: the raw record rows behind the domains views
-- expect: nonadmin=42501 admin=ok
SELECT count(*) FROM dhsi_domain_rows('all');
-- name: a NULL source for the raw record rows (would abort the process in DuckDB's bind)
-- expect: admin=22004
SELECT count(*) FROM dhsi_domain_rows(NULL);
-- name: a NULL lookup, and a NULL computed inside the lookup
-- expect: reader==0 writer==0 admin==0
SELECT count(*) FROM domain_record(NULL) UNION ALL SELECT count(*) FROM domain_record(CAST(NULL AS VARCHAR) || 'x') LIMIT 1;
-- name: a lookup of a subquery (DuckDB refuses it; the server stays up)
-- expect: reader=error writer=error admin=error
SELECT count(*) FROM domain_record((SELECT NULL));
-- name: the lookup of a domain no record has
-- expect: reader==0 writer==0 admin==0
SELECT count(*) FROM domains WHERE domain = 'nobody.example';
-- name: a NULL to a table function named in quotes (aborted the server past a check of bare names)
-- expect: nonadmin=22004 admin=22004
SELECT * FROM "domain_datasets"(CAST(NULL AS VARCHAR));
-- name: a NULL to a table function named in quotes and capitals, with a literal NULL
-- expect: nonadmin=22004 admin=22004
SELECT * FROM "DOMAIN_URLS"(NULL, 1, 0, 10);
-- name: a NULL through SQL PREPARE and EXECUTE, which no Bind checks (aborted the server)
-- expect: nonadmin=22004 admin=22004
PREPARE p AS SELECT * FROM domain_datasets($1); EXECUTE p(NULL);
-- name: SQL PREPARE and EXECUTE of a table function still answer
-- expect: nonadmin==0 admin==0
PREPARE p AS SELECT count(*) FROM domain_urls($1, $2, 0, 10); EXECUTE p('no-such-domain.example', 1);
-- name: json_serialize_plan binds the SQL in its string, where no check looks (listed a hidden dataset's files)
-- expect: nonadmin=42501 admin=ok
SELECT json_serialize_plan('SELECT 1');
-- name: json_serialize_sql parses the SQL in its string
-- expect: nonadmin=42501 admin=ok
SELECT json_serialize_sql('SELECT 1');
-- name: json_serialize_plan named in quotes
-- expect: nonadmin=42501
SELECT "JSON_SERIALIZE_PLAN"('SELECT 1');
-- name: DuckDB's duckdb_logs view, named without parentheses (showed other sessions' SQL and a hidden dataset's files once logging was on)
-- expect: nonadmin=42501 admin=ok
SELECT count(*) FROM duckdb_logs;
-- name: duckdb_logs quoted and qualified
-- expect: nonadmin=42501
SELECT count(*) FROM system.main."DUCKDB_LOGS";
