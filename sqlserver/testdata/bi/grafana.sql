-- Grafana's PostgreSQL data source (grafana/grafana,
-- public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts):
-- the queries its configuration page and query editor send. Copied as
-- rendered, with the table name 'bi_items' where the editor interpolates the
-- table the user picked. Format: see bi_test.go.

-- DuckDB's / divides integers exactly (PostgreSQL truncates), so this is
-- 1600.06; Grafana reads it with parseInt, which gives 1600 all the same.
-- name: the server version, which Grafana reads to pick features
-- source: postgresMetaQuery.ts getVersion
-- want: 1600.06
SELECT current_setting('server_version_num')::int/100 as version
;
-- name: the TimescaleDB check finds no extension
-- source: postgresMetaQuery.ts getTimescaleDBVersion
-- rows: 0
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'
;
-- name: the schema list holds public and no internal schema
-- source: postgresMetaQuery.ts showSchemas
-- want: public
-- want-not: dhsi_cache
SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name
;
-- name: the tables of one schema
-- source: postgresMetaQuery.ts showTables(schema)
-- want: bi_items
-- want: bi_cheap
-- want: bi_domains
SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'public'
      ORDER BY 1
;
-- name: the tables on the search path come first and unqualified
-- source: postgresMetaQuery.ts showTables() with buildSchemaConstraint
-- want: bi_items
-- want-not: hidden_rows
-- want-not: dhsi_cache.hidden_rows
SELECT
    CASE WHEN 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          ) THEN 0 ELSE 1 END, 1
;
-- name: the columns of a table picked in the query editor
-- source: postgresMetaQuery.ts getSchema
-- want: price
-- want: numeric
-- want: timestamp without time zone
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('bi_items'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('bi_items'))[1]
          AND quote_ident(table_name) = (parse_ident('bi_items'))[2]
        ELSE quote_ident(table_name) = 'bi_items'
          AND 
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
;
-- name: a schema-qualified table name is split with parse_ident
-- source: postgresMetaQuery.ts getSchema
-- want: id
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('public.bi_items'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('public.bi_items'))[1]
          AND quote_ident(table_name) = (parse_ident('public.bi_items'))[2]
        ELSE quote_ident(table_name) = 'public.bi_items'
      END
;
-- name: a time-series panel query with Grafana's expanded macros
-- source: Grafana's $__timeFilter and $__timeGroupAlias expansion for PostgreSQL
-- want: 3
SELECT
  floor(extract(epoch from added)/86400)*86400 AS "time",
  count(*) AS "n"
FROM bi_items
WHERE added BETWEEN '2024-01-01T00:00:00Z' AND '2024-12-31T00:00:00Z'
GROUP BY 1
ORDER BY 1
