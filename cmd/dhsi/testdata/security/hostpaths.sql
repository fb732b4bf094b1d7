-- name: DuckDB's settings name host paths
-- expect: nonadmin=42501 admin=ok
SELECT name, value FROM duckdb_settings();
-- name: DuckDB's settings, qualified
-- expect: nonadmin=42501 admin=ok
SELECT value FROM system.main.duckdb_settings() WHERE name = 'temp_directory';
-- name: database files
-- expect: nonadmin=42501 admin=ok
SELECT path FROM duckdb_databases();
-- name: database files, as a view
-- expect: nonadmin=42501 admin=ok
SELECT path FROM duckdb_databases;
-- name: database files, as the SQLite-style view
-- expect: nonadmin=42501 admin=ok
SELECT file FROM pragma_database_list;
-- name: DuckDB's own pg_settings
-- expect: nonadmin=42501 admin=ok
SELECT setting FROM system.pg_catalog.pg_settings WHERE name = 'temp_directory';
-- name: DuckDB's own pg_settings, quoted
-- expect: nonadmin=42501 admin=ok
SELECT setting FROM "system".pg_catalog.pg_settings WHERE name = 'temp_directory';
-- name: DuckDB's own pg_settings, found by its catalog alone
-- expect: nonadmin=42501 admin=ok
SELECT setting FROM system.pg_settings WHERE name = 'temp_directory';
-- name: DuckDB's own pg_settings, spaced and quoted
-- expect: nonadmin=42501 admin=ok
SELECT setting FROM SYSTEM . "pg_catalog" . pg_settings WHERE name = 'temp_directory';
-- name: DuckDB's own pg_settings, its schema quoted in capitals
-- expect: nonadmin==0
SELECT count(*) FROM "PG_CATALOG".pg_settings WHERE name IN ('temp_directory', 'secret_directory', 'allowed_directories', 'allowed_paths');
-- name: DuckDB's own pg_settings, both names quoted in mixed case
-- expect: nonadmin==0
SELECT count(*) FROM "Pg_Catalog"."pg_settings" WHERE name = 'temp_directory';
-- name: DuckDB's own current_setting, qualified by the schema
-- expect: nonadmin=42501 admin=ok
SELECT main.current_setting('temp_directory');
-- name: DuckDB's own current_setting, qualified by catalog and schema
-- expect: nonadmin=42501 admin=ok
SELECT system.main.current_setting('allowed_directories');
-- name: DuckDB's own current_setting, quoted
-- expect: nonadmin=42501
SELECT "main"."current_setting"('secret_directory');
-- name: DuckDB's own current_setting inside a TEMP macro
-- expect: nonadmin=42501
CREATE TEMP MACRO hp(n) AS system.main.current_setting(n);
-- name: the extension directory
-- expect: nonadmin=42501 admin=error
SELECT install_path FROM duckdb_extensions();
-- name: pg_settings holds no host path for a non-admin
-- expect: nonadmin==0
SELECT count(*) FROM pg_settings WHERE starts_with(setting, '/') OR starts_with(setting, '[/');
-- name: an admin's pg_settings shows them
-- expect: admin==t
SELECT count(*) >= 3 FROM pg_settings WHERE starts_with(setting, '/') OR starts_with(setting, '[/');
-- name: pg_settings, qualified as clients write it
-- expect: nonadmin==0
SELECT count(*) FROM pg_catalog.pg_settings WHERE name IN ('temp_directory', 'secret_directory', 'allowed_directories', 'allowed_paths');
-- name: current_setting of a host path
-- expect: nonadmin==t admin==f
SELECT current_setting('temp_directory') IS NULL AND current_setting('secret_directory') IS NULL AND current_setting('allowed_paths') IS NULL;
-- name: current_setting of a host path, its name folded from parts
-- expect: nonadmin==t
SELECT current_setting('temp_' || 'directory') IS NULL;
-- name: the variable current_setting reads
-- expect: nonadmin==0
SELECT count(*) FROM duckdb_variables() WHERE value::VARCHAR LIKE '%.dhsi-cache%' OR value::VARCHAR LIKE '%stored_secrets%';
-- name: other settings still show
-- expect: nonadmin==t admin==t
SELECT current_setting('memory_limit') IS NOT NULL AND (SELECT count(*) FROM pg_settings WHERE name = 'threads') = 1;
