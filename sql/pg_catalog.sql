-- PostgreSQL catalog shim, installed into the in-memory schema dhsi_sys.pg
-- at server start. Every session's search_path ends with that schema, and the
-- wire server strips "pg_catalog." qualifiers, so these objects answer the
-- catalog queries of psql, drivers and BI tools. They are views over DuckDB's
-- own catalog functions, evaluated per query, so they never go stale.
--
-- Rules: statements are separated by a line holding only ";". Objects refer
-- to each other fully qualified (dhsi_sys.pg.x) so they work whatever the
-- session's search_path. Inside macros, table aliases start with m_: a macro
-- argument is substituted into the macro's text, so an argument "c.oid" would
-- bind to an inner alias "c".
-- pg_type_base and the type macros dhsi_scalar_oid, dhsi_array_oid and
-- dhsi_type_display are generated in Go
-- (sqlserver/catalog.go) from the same table that encodes values on the wire.
--
-- Schemas whose names start with "dhsi_" (dhsi_cache, dhsi_meta, ...) hold
-- DHSI's own bookkeeping; no catalog answer shows them or what they hold.
-- Session values (run-time parameters, the user, the search path) come from
-- DuckDB variables the wire server keeps in step with each session:
-- dhsi_settings (MAP of lower-case name to value), dhsi_user, dhsi_schemas.
-- information_schema is answered by the schema dhsi_sys.infoschema: the wire
-- server rewrites "information_schema." to it, because DuckDB reserves the
-- name information_schema in every database.

CREATE SCHEMA IF NOT EXISTS dhsi_sys.infoschema
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_hidden(p_schema) AS starts_with(p_schema, 'dhsi_')
;

CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_type_oid(p_t) AS
  CASE WHEN regexp_matches(p_t, '\[\d*\]$') THEN
         CASE WHEN regexp_matches(regexp_replace(p_t, '\[\d*\]$', ''), '\]$') THEN 114
              ELSE dhsi_sys.pg.dhsi_array_oid(dhsi_sys.pg.dhsi_scalar_oid(regexp_replace(p_t, '\[\d*\]$', ''))) END
       ELSE dhsi_sys.pg.dhsi_scalar_oid(p_t) END
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_type_typmod(p_t) AS
  CASE WHEN regexp_matches(p_t, '^DECIMAL\(\d+,\d+\)$')
       THEN ((CAST(regexp_extract(p_t, '\((\d+),', 1) AS INTEGER) << 16)
             | CAST(regexp_extract(p_t, ',(\d+)\)', 1) AS INTEGER)) + 4
       ELSE -1 END
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_namespace AS
  SELECT 11::BIGINT AS oid, 'pg_catalog' AS nspname, 10::BIGINT AS nspowner, NULL::VARCHAR[] AS nspacl
  UNION ALL
  SELECT 13000::BIGINT, 'information_schema', 10::BIGINT, NULL::VARCHAR[]
  UNION ALL
  SELECT s.oid, s.schema_name, 10::BIGINT, NULL::VARCHAR[]
  FROM duckdb_schemas() s
  WHERE s.database_name = current_database() AND NOT s.internal AND s.schema_name <> 'main'
        AND NOT dhsi_sys.pg.dhsi_hidden(s.schema_name)
     OR s.database_name = current_database() AND s.schema_name = 'main'
        AND EXISTS (SELECT 1 FROM duckdb_tables() t WHERE t.database_name = s.database_name AND t.schema_name = 'main')
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_class AS
  SELECT t.table_oid AS oid, t.table_name AS relname, t.schema_oid AS relnamespace,
         0::BIGINT AS reltype, 0::BIGINT AS reloftype, 10::BIGINT AS relowner, 2::BIGINT AS relam,
         t.table_oid AS relfilenode, 0::BIGINT AS reltablespace, 0::INTEGER AS relpages,
         t.estimated_size::FLOAT AS reltuples, 0::INTEGER AS relallvisible, 0::BIGINT AS reltoastrelid,
         (t.index_count > 0 OR t.has_primary_key) AS relhasindex, false AS relisshared,
         CASE WHEN t.temporary THEN 't' ELSE 'p' END AS relpersistence, 'r' AS relkind,
         t.column_count::SMALLINT AS relnatts, t.check_constraint_count::SMALLINT AS relchecks,
         false AS relhasrules, false AS relhastriggers, false AS relhassubclass,
         false AS relrowsecurity, false AS relforcerowsecurity, true AS relispopulated,
         'd' AS relreplident, false AS relispartition, 0::BIGINT AS relrewrite,
         0::BIGINT AS relfrozenxid, 0::BIGINT AS relminmxid, NULL::VARCHAR[] AS relacl,
         NULL::VARCHAR[] AS reloptions, NULL::VARCHAR AS relpartbound, t.comment AS dhsi_comment
  FROM duckdb_tables() t WHERE t.database_name = current_database() AND NOT dhsi_sys.pg.dhsi_hidden(t.schema_name)
  UNION ALL
  -- views, DHSI's own (domains, urls, ...) among them: psql's \dv and \d
  -- list them, \d domains describes a view (issue 18: a person looking for
  -- DHSI's views types \dv first)
  SELECT v.view_oid, v.view_name, v.schema_oid, 0, 0, 10, 0, 0, 0, 0, -1, 0, 0,
         false, false, CASE WHEN v.temporary THEN 't' ELSE 'p' END, 'v',
         v.column_count::SMALLINT, 0, true, false, false, false, false, true,
         'n', false, 0, 0, 0,
         NULL, NULL, NULL, v.comment
  FROM duckdb_views() v WHERE v.database_name = current_database() AND NOT v.internal
    AND NOT dhsi_sys.pg.dhsi_hidden(v.schema_name)
  UNION ALL
  SELECT i.index_oid, i.index_name, i.schema_oid, 0, 0, 10, 403, 0, 0, 0, 0, 0, 0,
         false, false, 'p', 'i', 0, 0, false, false, false, false, false, true, 'n', false, 0, 0, 0,
         NULL, NULL, NULL, i.comment
  FROM duckdb_indexes() i WHERE i.database_name = current_database() AND NOT dhsi_sys.pg.dhsi_hidden(i.schema_name)
  UNION ALL
  -- PRIMARY KEY and UNIQUE constraints are backed by indexes that
  -- duckdb_indexes() does not list; PostgreSQL clients find keys through
  -- them (psql's \d "Indexes:", JDBC's getPrimaryKeys, SQLAlchemy), so each
  -- gets an index entry. Its oid is the constraint's plus 1e9.
  SELECT k.table_oid * 1000 + k.constraint_index + 1000000000, k.constraint_name, k.schema_oid, 0, 0, 10, 403, 0, 0, 0, 0, 0, 0,
         false, false, 'p', 'i', len(k.constraint_column_indexes)::SMALLINT, 0, false, false, false, false, false, true, 'n', false, 0, 0, 0,
         NULL, NULL, NULL, NULL
  FROM duckdb_constraints() k
  WHERE k.database_name = current_database() AND k.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
    AND NOT dhsi_sys.pg.dhsi_hidden(k.schema_name)
  UNION ALL
  SELECT s.sequence_oid, s.sequence_name, s.schema_oid, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0,
         false, false, CASE WHEN s.temporary THEN 't' ELSE 'p' END, 'S', 3, 0, false, false, false,
         false, false, true, 'n', false, 0, 0, 0, NULL, NULL, NULL, s.comment
  FROM duckdb_sequences() s WHERE s.database_name = current_database() AND NOT dhsi_sys.pg.dhsi_hidden(s.schema_name)
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_attribute AS
  SELECT c.table_oid AS attrelid, c.column_name AS attname,
         dhsi_sys.pg.dhsi_type_oid(c.data_type) AS atttypid, -1 AS attstattarget,
         -1::SMALLINT AS attlen, c.column_index::SMALLINT AS attnum, 0 AS attndims, -1 AS attcacheoff,
         dhsi_sys.pg.dhsi_type_typmod(c.data_type) AS atttypmod, false AS attbyval, 'x' AS attstorage,
         'i' AS attalign, NOT c.is_nullable AS attnotnull, c.column_default IS NOT NULL AS atthasdef,
         false AS atthasmissing, '' AS attidentity, '' AS attgenerated, false AS attisdropped,
         true AS attislocal, 0 AS attinhcount, 0::BIGINT AS attcollation, NULL::VARCHAR[] AS attacl,
         NULL::VARCHAR[] AS attoptions, NULL::VARCHAR[] AS attfdwoptions, NULL AS attmissingval,
         '' AS attcompression,
         c.comment AS dhsi_comment
  FROM duckdb_columns() c WHERE c.database_name = current_database() AND NOT dhsi_sys.pg.dhsi_hidden(c.schema_name)
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_attrdef AS
  SELECT (c.table_oid * 1000 + c.column_index)::BIGINT AS oid, c.table_oid AS adrelid,
         c.column_index::SMALLINT AS adnum, c.column_default AS adbin
  FROM duckdb_columns() c WHERE c.database_name = current_database() AND c.column_default IS NOT NULL
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_type AS
  SELECT b.oid, b.typname, 11::BIGINT AS typnamespace, 10::BIGINT AS typowner, b.typlen,
         b.typlen > 0 AND b.typlen <= 8 AS typbyval,
         CASE WHEN b.typcategory = 'A' THEN 'b' WHEN b.oid = 705 THEN 'p' ELSE 'b' END AS typtype,
         b.typcategory, false AS typispreferred, true AS typisdefined, ',' AS typdelim,
         0::BIGINT AS typrelid, 0::BIGINT AS typsubscript, b.typelem, b.typarray,
         b.typname || 'in' AS typinput, b.typname || 'out' AS typoutput,
         b.typname || 'recv' AS typreceive, b.typname || 'send' AS typsend,
         '-' AS typmodin, '-' AS typmodout, '-' AS typanalyze, 'i' AS typalign, 'p' AS typstorage,
         false AS typnotnull, 0::BIGINT AS typbasetype, -1 AS typtypmod, 0 AS typndims,
         CASE WHEN b.typcategory = 'S' THEN 100 ELSE 0 END::BIGINT AS typcollation,
         NULL AS typdefaultbin, NULL AS typdefault, NULL::VARCHAR[] AS typacl
  FROM dhsi_sys.pg.pg_type_base b
;
CREATE OR REPLACE MACRO dhsi_sys.pg.format_type(p_type_oid, p_typmod) AS
  CASE WHEN p_type_oid IS NULL THEN NULL
       WHEN p_type_oid = 1700 AND p_typmod IS NOT NULL AND p_typmod >= 4
         THEN 'numeric(' || ((p_typmod - 4) >> 16) || ',' || ((p_typmod - 4) & 65535) || ')'
       ELSE coalesce(dhsi_sys.pg.dhsi_type_display(p_type_oid), '???') END
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_userbyid(p_role_oid) AS 'dhsi'
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_table_is_visible(p_rel_oid) AS
  coalesce((SELECT m_n.nspname FROM dhsi_sys.pg.pg_class m_c JOIN dhsi_sys.pg.pg_namespace m_n ON m_n.oid = m_c.relnamespace
            WHERE m_c.oid = p_rel_oid) = ANY(current_schemas(false)), false)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_type_is_visible(p_type_oid) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_function_is_visible(p_func_oid) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_expr(p_expr, p_relid) AS p_expr, (p_expr, p_relid, p_pretty) AS p_expr
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_indexdef(p_index_oid) AS
  (SELECT m_x.indexdef FROM dhsi_sys.pg.dhsi_indexes m_x WHERE m_x.oid = p_index_oid),
  (p_index_oid, p_col, p_pretty) AS
  -- column p_col of the index, or the whole definition for 0
  (SELECT CASE WHEN p_col = 0 THEN m_x.indexdef ELSE m_x.columns[p_col] END
   FROM dhsi_sys.pg.dhsi_indexes m_x WHERE m_x.oid = p_index_oid)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_constraintdef(p_con_oid) AS
  (SELECT m_c.consrc FROM dhsi_sys.pg.pg_constraint m_c WHERE m_c.oid = p_con_oid),
  (p_con_oid, p_pretty) AS
  (SELECT m_c.consrc FROM dhsi_sys.pg.pg_constraint m_c WHERE m_c.oid = p_con_oid)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_viewdef(p_view_oid) AS
  (SELECT m_v.sql FROM duckdb_views() m_v WHERE m_v.view_oid = p_view_oid),
  (p_view_oid, p_pretty) AS
  (SELECT m_v.sql FROM duckdb_views() m_v WHERE m_v.view_oid = p_view_oid)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_encoding_to_char(p_enc) AS 'UTF8'
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_char_to_encoding(p_name) AS 6
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_relation_is_publishable(p_rel) AS false
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_statisticsobjdef_columns(p_stat_oid) AS NULL::VARCHAR
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_function_result(p_func_oid) AS
  (SELECT m_p.dhsi_result FROM dhsi_sys.pg.pg_proc m_p WHERE m_p.oid = p_func_oid)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_function_arguments(p_func_oid) AS
  (SELECT m_p.dhsi_arguments FROM dhsi_sys.pg.pg_proc m_p WHERE m_p.oid = p_func_oid)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_function_identity_arguments(p_func_oid) AS
  (SELECT m_p.dhsi_arguments FROM dhsi_sys.pg.pg_proc m_p WHERE m_p.oid = p_func_oid)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.obj_description(p_obj) AS
  (SELECT m_c.dhsi_comment FROM dhsi_sys.pg.pg_class m_c WHERE m_c.oid = p_obj),
  (p_obj, p_catalog) AS
  (SELECT m_c.dhsi_comment FROM dhsi_sys.pg.pg_class m_c WHERE m_c.oid = p_obj)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.col_description(p_rel, p_col) AS
  (SELECT m_a.dhsi_comment FROM dhsi_sys.pg.pg_attribute m_a WHERE m_a.attrelid = p_rel AND m_a.attnum = p_col)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.shobj_description(p_obj, p_catalog) AS NULL::VARCHAR
;
CREATE OR REPLACE MACRO dhsi_sys.pg.array_upper(p_arr, p_dim) AS
  CASE WHEN p_dim = 1 AND len(p_arr) > 0 THEN len(p_arr) END
;
CREATE OR REPLACE MACRO dhsi_sys.pg.array_lower(p_arr, p_dim) AS
  CASE WHEN p_dim = 1 AND len(p_arr) > 0 THEN 1 END
;
CREATE OR REPLACE MACRO dhsi_sys.pg.has_table_privilege(p_tbl, p_priv) AS true, (p_usr, p_tbl, p_priv) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.has_schema_privilege(p_sch, p_priv) AS true, (p_usr, p_sch, p_priv) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.has_database_privilege(p_db, p_priv) AS true, (p_usr, p_db, p_priv) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.has_column_privilege(p_tbl, p_col, p_priv) AS true, (p_usr, p_tbl, p_col, p_priv) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_is_in_recovery() AS false
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_postmaster_start_time() AS get_current_timestamp()
;
CREATE OR REPLACE MACRO dhsi_sys.pg.txid_current() AS 1::BIGINT
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_triggerdef(p_trig) AS NULL::VARCHAR, (p_trig, p_pretty) AS NULL::VARCHAR
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_serial_sequence(p_tbl, p_col) AS NULL::VARCHAR
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_total_relation_size(p_rel) AS 0::BIGINT
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_relation_size(p_rel) AS 0::BIGINT
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_table_size(p_rel) AS 0::BIGINT
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_indexes_size(p_rel) AS 0::BIGINT
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_ruledef(p_rule) AS NULL::VARCHAR, (p_rule, p_pretty) AS NULL::VARCHAR
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_size_pretty(p_n) AS format_bytes(p_n::BIGINT)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.quote_ident(p_s) AS
  CASE WHEN regexp_matches(p_s, '^[a-z_][a-z0-9_$]*$') THEN p_s ELSE '"' || replace(p_s, '"', '""') || '"' END
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regclass_name(p_rel) AS
  coalesce((SELECT m_c.relname FROM dhsi_sys.pg.pg_class m_c WHERE m_c.oid = p_rel), CAST(p_rel AS VARCHAR))
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regclass_oid(p_name) AS
  coalesce(
  (SELECT m_c.oid FROM dhsi_sys.pg.pg_class m_c JOIN dhsi_sys.pg.pg_namespace m_n ON m_n.oid = m_c.relnamespace
   WHERE m_c.relname = CASE WHEN regexp_matches(split_part(p_name, '.', -1), '^".*"$')
                          THEN replace(split_part(p_name, '.', -1)[2:-2], '""', '"')
                          ELSE lower(split_part(p_name, '.', -1)) END
     AND (NOT contains(p_name, '.') OR m_n.nspname = lower(trim(split_part(p_name, '.', 1), '"')))
   ORDER BY (m_n.nspname = 'public') DESC LIMIT 1),
  -- the catalogs themselves, with PostgreSQL's fixed oids: clients compare
  -- pg_description.classoid with 'pg_class'::regclass
  CASE lower(split_part(p_name, '.', -1))
       WHEN 'pg_class' THEN 1259 WHEN 'pg_namespace' THEN 2615 WHEN 'pg_proc' THEN 1255
       WHEN 'pg_type' THEN 1247 WHEN 'pg_attribute' THEN 1249 WHEN 'pg_constraint' THEN 2606
       WHEN 'pg_database' THEN 1262 WHEN 'pg_index' THEN 2610 WHEN 'pg_attrdef' THEN 2604
       WHEN 'pg_trigger' THEN 2620 WHEN 'pg_authid' THEN 1260 WHEN 'pg_roles' THEN 1260 END::BIGINT)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regtype_name(p_type_oid) AS dhsi_sys.pg.format_type(p_type_oid, NULL)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regtype_oid(p_name) AS
  (SELECT m_b.oid FROM dhsi_sys.pg.pg_type_base m_b WHERE m_b.typname = lower(p_name) OR m_b.dhsi_display = lower(p_name) LIMIT 1)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regnamespace_name(p_ns) AS
  (SELECT m_n.nspname FROM dhsi_sys.pg.pg_namespace m_n WHERE m_n.oid = p_ns)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regnamespace_oid(p_name) AS
  (SELECT m_n.oid FROM dhsi_sys.pg.pg_namespace m_n WHERE m_n.nspname = p_name)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regproc_name(p_p) AS
  coalesce((SELECT m_f.proname FROM dhsi_sys.pg.pg_proc m_f WHERE m_f.oid = p_p), CAST(p_p AS VARCHAR))
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regproc_oid(p_name) AS
  (SELECT m_f.oid FROM dhsi_sys.pg.pg_proc m_f WHERE m_f.proname = p_name LIMIT 1)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regrole_name(p_r) AS 'dhsi'
;
CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_regrole_oid(p_name) AS 10::BIGINT
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_constraint AS
  SELECT (c.table_oid * 1000 + c.constraint_index)::BIGINT AS oid, c.constraint_name AS conname,
         c.schema_oid AS connamespace,
         CASE c.constraint_type WHEN 'PRIMARY KEY' THEN 'p' WHEN 'UNIQUE' THEN 'u' WHEN 'CHECK' THEN 'c'
              WHEN 'FOREIGN KEY' THEN 'f' ELSE 'n' END AS contype,
         false AS condeferrable, false AS condeferred, true AS convalidated, c.table_oid AS conrelid,
         0::BIGINT AS contypid,
         CASE WHEN c.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
              THEN c.table_oid * 1000 + c.constraint_index + 1000000000 ELSE 0 END::BIGINT AS conindid,
         0::BIGINT AS conparentid, coalesce(c.m_ref_oid, 0)::BIGINT AS confrelid,
         CASE WHEN c.constraint_type = 'FOREIGN KEY' THEN 'a' ELSE ' ' END AS confupdtype,
         CASE WHEN c.constraint_type = 'FOREIGN KEY' THEN 'a' ELSE ' ' END AS confdeltype,
         CASE WHEN c.constraint_type = 'FOREIGN KEY' THEN 's' ELSE ' ' END AS confmatchtype, true AS conislocal,
         0 AS coninhcount, false AS connoinherit,
         list_transform(c.constraint_column_indexes, x -> (x + 1)::SMALLINT) AS conkey,
         CASE WHEN c.constraint_type = 'FOREIGN KEY'
              THEN list_transform(c.referenced_column_names, x -> list_position(c.m_ref_cols, x)::SMALLINT) END AS confkey,
         c.expression AS conbin,
         CASE c.constraint_type
              WHEN 'CHECK' THEN 'CHECK (' || c.expression || ')'
              WHEN 'FOREIGN KEY' THEN 'FOREIGN KEY (' || array_to_string(c.constraint_column_names, ', ') || ') REFERENCES '
                   || c.referenced_table || '(' || array_to_string(c.referenced_column_names, ', ') || ')'
              ELSE c.constraint_type || ' (' || array_to_string(c.constraint_column_names, ', ') || ')' END AS consrc
  -- joins, not correlated subqueries: DuckDB cannot put a view with
  -- correlated subqueries on the right of a LEFT JOIN, where clients put it
  FROM (SELECT k.*, rc.table_oid AS m_ref_oid, rc.cols AS m_ref_cols
        FROM duckdb_constraints() k
        LEFT JOIN dhsi_sys.pg.dhsi_table_columns rc
          ON rc.database_name = k.database_name AND rc.schema_name = k.schema_name AND rc.table_name = k.referenced_table
        WHERE k.database_name = current_database() AND k.constraint_type <> 'NOT NULL'
          AND NOT dhsi_sys.pg.dhsi_hidden(k.schema_name)) c
;
-- dhsi_table_columns: each table's (and view's) column names in order.
CREATE OR REPLACE VIEW dhsi_sys.pg.dhsi_table_columns AS
  SELECT c.database_name, c.schema_name, c.table_name, c.table_oid, list(c.column_name ORDER BY c.column_index) AS cols
  FROM duckdb_columns() c GROUP BY ALL
;
-- dhsi_indexes lists every index a client can see, the ones DuckDB lists and
-- those backing PRIMARY KEY and UNIQUE constraints, with column names and a
-- PostgreSQL-style definition (pg_get_indexdef, pg_indexes).
CREATE OR REPLACE VIEW dhsi_sys.pg.dhsi_indexes AS
  SELECT x.*, 'CREATE ' || CASE WHEN x.is_unique THEN 'UNIQUE ' ELSE '' END || 'INDEX '
              || dhsi_sys.pg.quote_ident(x.index_name) || ' ON ' || dhsi_sys.pg.quote_ident(x.schema_name) || '.'
              || dhsi_sys.pg.quote_ident(x.table_name) || ' USING btree (' || array_to_string(x.columns, ', ') || ')' AS indexdef
  FROM (
    SELECT i.index_oid AS oid, i.index_name, i.schema_name, i.table_name, i.table_oid, i.is_unique, i.is_primary,
           -- duckdb_indexes().expressions is the text of a list: ['"domain"', 'lower(x)']
           list_transform(regexp_extract_all(i.expressions, '''([^'']*)''', 1),
                          m_e -> CASE WHEN regexp_matches(m_e, '^".*"$') THEN replace(m_e[2:-2], '""', '"') ELSE m_e END) AS columns,
           tc.cols AS table_columns
    FROM duckdb_indexes() i LEFT JOIN dhsi_sys.pg.dhsi_table_columns tc ON tc.table_oid = i.table_oid
    WHERE i.database_name = current_database() AND NOT dhsi_sys.pg.dhsi_hidden(i.schema_name)
    UNION ALL
    SELECT k.table_oid * 1000 + k.constraint_index + 1000000000, k.constraint_name, k.schema_name, k.table_name, k.table_oid,
           true, k.constraint_type = 'PRIMARY KEY', k.constraint_column_names, tc.cols
    FROM duckdb_constraints() k LEFT JOIN dhsi_sys.pg.dhsi_table_columns tc ON tc.table_oid = k.table_oid
    WHERE k.database_name = current_database() AND k.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
      AND NOT dhsi_sys.pg.dhsi_hidden(k.schema_name)) x
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_index AS
  SELECT i.oid AS indexrelid, i.table_oid AS indrelid, len(i.columns)::SMALLINT AS indnatts,
         len(i.columns)::SMALLINT AS indnkeyatts, i.is_unique AS indisunique, false AS indnullsnotdistinct,
         i.is_primary AS indisprimary, false AS indisexclusion, true AS indimmediate,
         false AS indisclustered, true AS indisvalid, false AS indcheckxmin, true AS indisready,
         true AS indislive, false AS indisreplident,
         -- attribute numbers of the key columns; 0 marks an expression
         list_transform(i.columns, m_k -> coalesce(list_position(i.table_columns, m_k), 0)::SMALLINT) AS indkey,
         list_transform(i.columns, m_k -> 0::BIGINT) AS indcollation,
         list_transform(i.columns, m_k -> 0::BIGINT) AS indclass,
         list_transform(i.columns, m_k -> 0::SMALLINT) AS indoption,
         NULL::VARCHAR AS indexprs, NULL::VARCHAR AS indpred
  FROM dhsi_sys.pg.dhsi_indexes i
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_database AS
  SELECT d.database_oid AS oid, d.database_name AS datname, 10::BIGINT AS datdba, 6 AS encoding,
         'c' AS datlocprovider, false AS datistemplate, true AS datallowconn, -1 AS datconnlimit,
         0::BIGINT AS datfrozenxid, 0::BIGINT AS datminmxid, 0::BIGINT AS dattablespace,
         'C.UTF-8' AS datcollate, 'C.UTF-8' AS datctype, NULL::VARCHAR AS daticulocale,
         NULL::VARCHAR AS daticurules, NULL::VARCHAR AS datcollversion, NULL::VARCHAR[] AS datacl
  FROM duckdb_databases() d WHERE d.database_name = current_database()
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_roles AS
  SELECT m_r.oid, m_r.rolname, m_r.rolsuper, true AS rolinherit,
         m_r.rolsuper AS rolcreaterole, m_r.rolsuper AS rolcreatedb, m_r.rolcanlogin, false AS rolreplication,
         -1 AS rolconnlimit, '********' AS rolpassword, NULL::TIMESTAMP AS rolvaliduntil,
         false AS rolbypassrls, NULL::VARCHAR[] AS rolconfig
  FROM dhsi_roles() m_r
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_auth_members AS
  SELECT (m_r.oid * 100000 + m_r.member_of)::BIGINT AS oid, m_r.member_of AS roleid, m_r.oid AS member,
         10::BIGINT AS grantor, false AS admin_option, true AS inherit_option, true AS set_option
  FROM dhsi_roles() m_r WHERE m_r.member_of IS NOT NULL
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_authid AS SELECT * FROM dhsi_sys.pg.pg_roles
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_user AS
  SELECT rolname AS usename, oid AS usesysid, rolcreatedb AS usecreatedb, rolsuper AS usesuper,
         false AS userepl, false AS usebypassrls, rolpassword AS passwd, rolvaliduntil AS valuntil,
         rolconfig AS useconfig
  FROM dhsi_sys.pg.pg_roles
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_am AS
  SELECT 2::BIGINT AS oid, 'heap' AS amname, 't' AS amtype, 'heap_tableam_handler' AS amhandler
  UNION ALL SELECT 403, 'btree', 'i', 'bthandler'
  UNION ALL SELECT 405, 'hash', 'i', 'hashhandler'
;
-- DHSI's own functions, documented for the catalog (udf.FunctionDocs,
-- filled by udf.InstallFunctionDocs once they are registered): DuckDB
-- lists Go functions as internal, with arguments named col0, col1, ...
CREATE TABLE IF NOT EXISTS dhsi_sys.pg.dhsi_functions (name VARCHAR, arguments VARCHAR, result VARCHAR, description VARCHAR)
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_proc AS
  SELECT coalesce(f.function_oid, 0)::BIGINT AS oid, f.function_name AS proname,
         coalesce(n.oid, 11)::BIGINT AS pronamespace,
         10::BIGINT AS proowner, 12::BIGINT AS prolang, 1::FLOAT AS procost, 0::FLOAT AS prorows,
         0::BIGINT AS provariadic, '-' AS prosupport,
         CASE WHEN f.function_type = 'aggregate' THEN 'a' WHEN f.function_type = 'table' OR f.function_type = 'table_macro' THEN 'f' ELSE 'f' END AS prokind,
         false AS prosecdef, false AS proleakproof, false AS proisstrict, f.function_type LIKE 'table%' AS proretset,
         CASE f.stability WHEN 'CONSISTENT' THEN 'i' WHEN 'VOLATILE' THEN 'v' ELSE 's' END AS provolatile,
         's' AS proparallel, len(f.parameters)::SMALLINT AS pronargs, 0::SMALLINT AS pronargdefaults,
         dhsi_sys.pg.dhsi_type_oid(coalesce(f.return_type, 'VARCHAR')) AS prorettype,
         NULL AS proargtypes, NULL AS proallargtypes, NULL AS proargmodes,
         f.parameters AS proargnames, NULL AS proargdefaults, NULL AS protrftypes,
         coalesce(f.macro_definition, f.function_name) AS prosrc, NULL AS probin, NULL AS prosqlbody,
         NULL::VARCHAR[] AS proconfig, NULL::VARCHAR[] AS proacl,
         coalesce(lower(f.return_type), 'void') AS dhsi_result,
         array_to_string(list_transform(list_zip(f.parameters, coalesce(f.parameter_types, [])),
                         x -> x[1] || CASE WHEN x[2] IS NULL THEN '' ELSE ' ' || lower(x[2]) END), ', ') AS dhsi_arguments,
         f.description AS dhsi_comment
  FROM duckdb_functions() f LEFT JOIN dhsi_sys.pg.pg_namespace n ON n.nspname = f.schema_name
  WHERE (NOT f.internal OR f.schema_name NOT IN ('main', 'pg_catalog')) AND NOT dhsi_sys.pg.dhsi_hidden(f.schema_name)
    -- a DHSI function DuckDB lists as a macro of public (domain_record)
    -- appears once, as documented below
    AND NOT (f.schema_name = 'public' AND f.function_name IN (SELECT m_d.name FROM dhsi_sys.pg.dhsi_functions m_d))
  UNION ALL
  -- DHSI's functions, in schema public where its views are; an oid of
  -- their own (2e9 + a hash of the name) so \sf and regproc find them
  SELECT (2000000000 + hash(d.name) % 1000000000)::BIGINT, d.name,
         coalesce((SELECT m_n.oid FROM dhsi_sys.pg.pg_namespace m_n WHERE m_n.nspname = 'public'), 2200)::BIGINT,
         10, 13, 1, 0, 0, '-', 'f', false, false, false, d.result LIKE 'TABLE(%', 'v', 's',
         (CASE WHEN d.arguments = '' THEN 0 ELSE len(string_split(d.arguments, ', ')) END)::SMALLINT, 0::SMALLINT,
         dhsi_sys.pg.dhsi_type_oid(CASE WHEN d.result LIKE 'TABLE(%' THEN 'VARCHAR' ELSE d.result END),
         NULL, NULL, NULL, NULL, NULL, NULL,
         d.name, NULL, NULL, NULL::VARCHAR[], NULL::VARCHAR[],
         d.result, d.arguments, d.description
  FROM dhsi_sys.pg.dhsi_functions d
;
-- psql's \sf: the definition of a DuckDB macro, or a description of a
-- function built into the server
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_functiondef(p_func_oid) AS
  (SELECT 'CREATE OR REPLACE FUNCTION ' || m_n.nspname || '.' || m_p.proname || '(' || coalesce(m_p.dhsi_arguments, '') || ')' || chr(10) ||
          ' RETURNS ' || CASE WHEN m_p.proretset AND m_p.dhsi_result NOT LIKE 'TABLE(%' THEN 'SETOF ' ELSE '' END || m_p.dhsi_result || chr(10) ||
          CASE WHEN m_p.prosrc = m_p.proname
               THEN ' LANGUAGE internal' || chr(10) || 'AS $function$' || chr(10) || '-- built into the dhsi server' ||
                    coalesce(': ' || m_p.dhsi_comment, '') || chr(10) || '$function$' || chr(10)
               ELSE ' LANGUAGE sql' || chr(10) || 'AS $function$' || chr(10) || m_p.prosrc || chr(10) || '$function$' || chr(10) END
   FROM dhsi_sys.pg.pg_proc m_p JOIN dhsi_sys.pg.pg_namespace m_n ON m_n.oid = m_p.pronamespace
   WHERE m_p.oid = p_func_oid LIMIT 1)
;
-- The session's PostgreSQL parameters first (from the dhsi_settings
-- variable), then DuckDB's own settings: those the dhsi_duck_settings
-- variable holds, which for a non-admin leaves out the ones that name host
-- paths (H1, sqlserver/hostpaths.go).
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_settings AS
  SELECT e.kv.key AS name, e.kv.value AS setting, NULL::VARCHAR AS unit, 'DHSI' AS category,
         NULL::VARCHAR AS short_desc, NULL::VARCHAR AS extra_desc, 'user' AS context,
         'string' AS vartype, 'session' AS source, NULL::VARCHAR AS min_val,
         NULL::VARCHAR AS max_val, NULL::VARCHAR[] AS enumvals, e.kv.value AS boot_val,
         e.kv.value AS reset_val, NULL::VARCHAR AS sourcefile, NULL::INTEGER AS sourceline,
         false AS pending_restart
  FROM (SELECT unnest(map_entries(getvariable('dhsi_settings'))) AS kv) e
  UNION ALL
  SELECT s.name, s.value, NULL, 'DuckDB', s.description, NULL, 'user', lower(s.input_type), 'default', NULL,
         NULL, NULL, s.value, s.value, NULL, NULL, false
  FROM duckdb_settings() s
  WHERE NOT coalesce(map_contains(getvariable('dhsi_settings'), s.name), false)
    AND coalesce(map_contains(getvariable('dhsi_duck_settings'), s.name), false)
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_description AS
  SELECT c.oid AS objoid, 1259::BIGINT AS classoid, 0 AS objsubid, c.dhsi_comment AS description
  FROM dhsi_sys.pg.pg_class c WHERE c.dhsi_comment IS NOT NULL
  UNION ALL
  SELECT a.attrelid, 1259, a.attnum, a.dhsi_comment FROM dhsi_sys.pg.pg_attribute a WHERE a.dhsi_comment IS NOT NULL
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_tables AS
  SELECT n.nspname AS schemaname, c.relname AS tablename, 'dhsi' AS tableowner,
         NULL::VARCHAR AS tablespace, c.relhasindex AS hasindexes, false AS hasrules,
         false AS hastriggers, false AS rowsecurity
  FROM dhsi_sys.pg.pg_class c JOIN dhsi_sys.pg.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind = 'r'
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_views AS
  SELECT v.schema_name AS schemaname, v.view_name AS viewname, 'dhsi' AS viewowner, v.sql AS definition
  FROM duckdb_views() v WHERE v.database_name = current_database() AND NOT v.internal
    AND NOT dhsi_sys.pg.dhsi_hidden(v.schema_name)
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_matviews AS
  SELECT NULL::VARCHAR AS schemaname, NULL::VARCHAR AS matviewname, NULL::VARCHAR AS matviewowner,
         NULL::VARCHAR AS tablespace, false AS hasindexes, false AS ispopulated, NULL::VARCHAR AS definition
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_indexes AS
  SELECT i.schema_name AS schemaname, i.table_name AS tablename, i.index_name AS indexname,
         NULL::VARCHAR AS tablespace, i.indexdef
  FROM dhsi_sys.pg.dhsi_indexes i
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_tablespace AS
  SELECT 1663::BIGINT AS oid, 'pg_default' AS spcname, 10::BIGINT AS spcowner, NULL::VARCHAR[] AS spcacl, NULL::VARCHAR[] AS spcoptions
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_collation AS
  SELECT 100::BIGINT AS oid, 'default' AS collname, 11::BIGINT AS collnamespace, 10::BIGINT AS collowner,
         'd' AS collprovider, true AS collisdeterministic, -1 AS collencoding,
         NULL::VARCHAR AS collcollate, NULL::VARCHAR AS collctype, NULL::VARCHAR AS colliculocale,
         NULL::VARCHAR AS collversion
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_enum AS
  SELECT NULL::BIGINT AS oid, NULL::BIGINT AS enumtypid, NULL::FLOAT AS enumsortorder, NULL::VARCHAR AS enumlabel WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_range AS
  SELECT NULL::BIGINT AS rngtypid, NULL::BIGINT AS rngsubtype, NULL::BIGINT AS rngmultitypid WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_inherits AS
  SELECT NULL::BIGINT AS inhrelid, NULL::BIGINT AS inhparent, NULL::INTEGER AS inhseqno, false AS inhdetachpending WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_policy AS
  SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS polname, NULL::BIGINT AS polrelid, NULL::VARCHAR AS polcmd,
         true AS polpermissive, NULL::BIGINT[] AS polroles, NULL::VARCHAR AS polqual, NULL::VARCHAR AS polwithcheck
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_statistic_ext AS
  SELECT NULL::BIGINT AS oid, NULL::BIGINT AS stxrelid, NULL::VARCHAR AS stxname, NULL::BIGINT AS stxnamespace,
         NULL::BIGINT AS stxowner, NULL::INTEGER AS stxstattarget, NULL::SMALLINT[] AS stxkeys,
         NULL::VARCHAR[] AS stxkind, NULL AS stxexprs
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_publication AS
  SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS pubname, NULL::BIGINT AS pubowner, false AS puballtables,
         false AS pubinsert, false AS pubupdate, false AS pubdelete, false AS pubtruncate, false AS pubviaroot
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_publication_namespace AS
  SELECT NULL::BIGINT AS oid, NULL::BIGINT AS pnpubid, NULL::BIGINT AS pnnspid WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_publication_rel AS
  SELECT NULL::BIGINT AS oid, NULL::BIGINT AS prpubid, NULL::BIGINT AS prrelid, NULL AS prqual, NULL::SMALLINT[] AS prattrs WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_trigger AS
  SELECT NULL::BIGINT AS oid, NULL::BIGINT AS tgrelid, NULL::BIGINT AS tgparentid, NULL::VARCHAR AS tgname,
         NULL::BIGINT AS tgfoid, NULL::SMALLINT AS tgtype, 'O' AS tgenabled, false AS tgisinternal
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_rewrite AS
  SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS rulename, NULL::BIGINT AS ev_class, NULL::VARCHAR AS ev_type,
         NULL::VARCHAR AS ev_enabled, false AS is_instead, NULL AS ev_qual, NULL AS ev_action
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_depend AS
  SELECT NULL::BIGINT AS classid, NULL::BIGINT AS objid, NULL::INTEGER AS objsubid, NULL::BIGINT AS refclassid,
         NULL::BIGINT AS refobjid, NULL::INTEGER AS refobjsubid, NULL::VARCHAR AS deptype
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_extension AS
  SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS extname, NULL::BIGINT AS extowner, NULL::BIGINT AS extnamespace,
         false AS extrelocatable, NULL::VARCHAR AS extversion
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_event_trigger AS
  SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS evtname, NULL::VARCHAR AS evtevent WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_foreign_table AS
  SELECT NULL::BIGINT AS ftrelid, NULL::BIGINT AS ftserver, NULL::VARCHAR[] AS ftoptions WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_foreign_server AS
  SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS srvname WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_sequence AS
  SELECT s.sequence_oid AS seqrelid, 20::BIGINT AS seqtypid, s.start_value AS seqstart,
         s.increment_by AS seqincrement, s.max_value AS seqmax, s.min_value AS seqmin,
         1::BIGINT AS seqcache, s.cycle AS seqcycle
  FROM duckdb_sequences() s WHERE s.database_name = current_database()
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_language AS
  SELECT 12::BIGINT AS oid, 'internal' AS lanname UNION ALL SELECT 14, 'sql'
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_stat_activity AS
  SELECT 1::BIGINT AS datid, m_s.datname, m_s.pid, NULL::INTEGER AS leader_pid, 10::BIGINT AS usesysid,
         m_s.usename, m_s.application_name, m_s.client_addr, NULL::VARCHAR AS client_hostname, m_s.client_port,
         m_s.backend_start, m_s.xact_start, m_s.query_start, m_s.state_change,
         NULL::VARCHAR AS wait_event_type, NULL::VARCHAR AS wait_event, m_s.state,
         NULL::VARCHAR AS backend_xid, NULL::VARCHAR AS backend_xmin, NULL::BIGINT AS query_id,
         m_s.query, 'client backend' AS backend_type
  FROM dhsi_sessions() m_s
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_locks AS
  SELECT NULL::VARCHAR AS locktype, NULL::BIGINT AS relation, NULL::INTEGER AS pid, NULL::VARCHAR AS mode, false AS granted WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_cast AS
  SELECT NULL::BIGINT AS oid, NULL::BIGINT AS castsource, NULL::BIGINT AS casttarget, NULL::BIGINT AS castfunc,
         NULL::VARCHAR AS castcontext, NULL::VARCHAR AS castmethod
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_operator AS
  SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS oprname, NULL::BIGINT AS oprnamespace, NULL::BIGINT AS oprleft,
         NULL::BIGINT AS oprright, NULL::BIGINT AS oprresult
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_opclass AS
  SELECT NULL::BIGINT AS oid, NULL::VARCHAR AS opcname, NULL::BIGINT AS opcmethod WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_aggregate AS
  SELECT NULL::BIGINT AS aggfnoid, 'n' AS aggkind WHERE false
;
-- ---- session values (variables kept by the wire server, see the header) ----
CREATE OR REPLACE MACRO dhsi_sys.pg.current_setting(p_name) AS
  coalesce(getvariable('dhsi_settings')[lower(p_name)], getvariable('dhsi_duck_settings')[lower(p_name)]),
  (p_name, p_missing_ok) AS
  coalesce(getvariable('dhsi_settings')[lower(p_name)], getvariable('dhsi_duck_settings')[lower(p_name)])
;
CREATE OR REPLACE MACRO dhsi_sys.pg.current_user() AS coalesce(getvariable('dhsi_user'), 'dhsi')
;
CREATE OR REPLACE MACRO dhsi_sys.pg.session_user() AS coalesce(getvariable('dhsi_user'), 'dhsi')
;
CREATE OR REPLACE MACRO dhsi_sys.pg.current_role() AS coalesce(getvariable('dhsi_user'), 'dhsi')
;
CREATE OR REPLACE MACRO dhsi_sys.pg.current_schemas(p_implicit) AS
  CASE WHEN p_implicit THEN ['pg_catalog'] ELSE []::VARCHAR[] END
  || coalesce(getvariable('dhsi_schemas'), ['public'])::VARCHAR[]
;
CREATE OR REPLACE MACRO dhsi_sys.pg.has_any_column_privilege(p_tbl, p_priv) AS true, (p_usr, p_tbl, p_priv) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.has_sequence_privilege(p_seq, p_priv) AS true, (p_usr, p_seq, p_priv) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.has_function_privilege(p_fn, p_priv) AS true, (p_usr, p_fn, p_priv) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_has_role(p_role, p_priv) AS true, (p_usr, p_role, p_priv) AS true
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_partkeydef(p_rel) AS NULL::VARCHAR
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_backend_pid() AS coalesce(getvariable('dhsi_pid'), 0)::INTEGER
;
CREATE OR REPLACE MACRO dhsi_sys.pg.pg_get_keywords() AS TABLE
  SELECT k.keyword_name AS word,
         CASE k.keyword_category WHEN 'reserved' THEN 'R' WHEN 'unreserved' THEN 'U'
              WHEN 'type_function' THEN 'T' ELSE 'C' END AS catcode,
         k.keyword_category AS catdesc
  FROM duckdb_keywords() k
;
-- information_schema._pg_expandarray: the elements of an array with their
-- positions, as (x, n) rows (JDBC's getPrimaryKeys, Metabase's indexes).
CREATE OR REPLACE MACRO dhsi_sys.infoschema._pg_expandarray(p_arr) AS
  unnest(list_transform(range(1, len(p_arr) + 1), m_i -> {'x': p_arr[m_i], 'n': m_i}))
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_stat_user_tables AS
  SELECT c.oid AS relid, n.nspname AS schemaname, c.relname, 0::BIGINT AS seq_scan, 0::BIGINT AS seq_tup_read,
         0::BIGINT AS idx_scan, 0::BIGINT AS idx_tup_fetch, 0::BIGINT AS n_tup_ins, 0::BIGINT AS n_tup_upd,
         0::BIGINT AS n_tup_del, 0::BIGINT AS n_tup_hot_upd, greatest(c.reltuples, 0)::BIGINT AS n_live_tup,
         0::BIGINT AS n_dead_tup, NULL::TIMESTAMPTZ AS last_vacuum, NULL::TIMESTAMPTZ AS last_autovacuum,
         NULL::TIMESTAMPTZ AS last_analyze, NULL::TIMESTAMPTZ AS last_autoanalyze
  FROM dhsi_sys.pg.pg_class c JOIN dhsi_sys.pg.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'm')
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_stat_all_tables AS SELECT * FROM dhsi_sys.pg.pg_stat_user_tables
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_cursors AS
  SELECT NULL::VARCHAR AS name, NULL::VARCHAR AS statement, false AS is_holdable, false AS is_binary,
         false AS is_scrollable, NULL::TIMESTAMPTZ AS creation_time
  WHERE false
;
-- ---- information_schema (dhsi_sys.infoschema) ----
CREATE OR REPLACE VIEW dhsi_sys.infoschema.schemata AS
  SELECT current_database() AS catalog_name, n.nspname AS schema_name, 'dhsi' AS schema_owner,
         NULL::VARCHAR AS default_character_set_catalog, NULL::VARCHAR AS default_character_set_schema,
         NULL::VARCHAR AS default_character_set_name, NULL::VARCHAR AS sql_path
  FROM dhsi_sys.pg.pg_namespace n
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.tables AS
  SELECT current_database() AS table_catalog, n.nspname AS table_schema, c.relname AS table_name,
         CASE WHEN c.relpersistence = 't' THEN 'LOCAL TEMPORARY' WHEN c.relkind IN ('r', 'p') THEN 'BASE TABLE'
              WHEN c.relkind = 'f' THEN 'FOREIGN' ELSE 'VIEW' END AS table_type,
         NULL::VARCHAR AS self_referencing_column_name, NULL::VARCHAR AS reference_generation,
         NULL::VARCHAR AS user_defined_type_catalog, NULL::VARCHAR AS user_defined_type_schema,
         NULL::VARCHAR AS user_defined_type_name,
         CASE WHEN c.relkind IN ('r', 'p') THEN 'YES' ELSE 'NO' END AS is_insertable_into,
         'NO' AS is_typed, NULL::VARCHAR AS commit_action
  FROM dhsi_sys.pg.pg_class c JOIN dhsi_sys.pg.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'f', 'm')
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.views AS
  SELECT current_database() AS table_catalog, v.schema_name AS table_schema, v.view_name AS table_name,
         v.sql AS view_definition, 'NONE' AS check_option, 'NO' AS is_updatable, 'NO' AS is_insertable_into,
         'NO' AS is_trigger_updatable, 'NO' AS is_trigger_deletable, 'NO' AS is_trigger_insertable_into
  FROM duckdb_views() v
  WHERE v.database_name = current_database() AND NOT v.internal AND NOT dhsi_sys.pg.dhsi_hidden(v.schema_name)
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.columns AS
  SELECT current_database() AS table_catalog, col.schema_name AS table_schema, col.table_name,
         col.column_name, col.column_index::INTEGER AS ordinal_position, col.column_default,
         CASE WHEN col.is_nullable THEN 'YES' ELSE 'NO' END AS is_nullable,
         CASE WHEN t.typcategory = 'A' THEN 'ARRAY' ELSE coalesce(t.dhsi_display, 'text') END AS data_type,
         NULL::INTEGER AS character_maximum_length,
         CASE WHEN col.m_oid IN (25, 1043) THEN 1073741824 END::INTEGER AS character_octet_length,
         CASE col.m_oid WHEN 21 THEN 16 WHEN 23 THEN 32 WHEN 20 THEN 64 WHEN 700 THEN 24 WHEN 701 THEN 53
              WHEN 1700 THEN CASE WHEN col.m_typmod >= 4 THEN (col.m_typmod - 4) >> 16 END END::INTEGER AS numeric_precision,
         CASE WHEN col.m_oid IN (21, 23, 20, 700, 701) THEN 2 WHEN col.m_oid = 1700 THEN 10 END::INTEGER AS numeric_precision_radix,
         CASE WHEN col.m_oid IN (21, 23, 20) THEN 0
              WHEN col.m_oid = 1700 AND col.m_typmod >= 4 THEN (col.m_typmod - 4) & 65535 END::INTEGER AS numeric_scale,
         CASE WHEN col.m_oid = 1082 THEN 0 WHEN col.m_oid IN (1083, 1114, 1184, 1266, 1186) THEN 6 END::INTEGER AS datetime_precision,
         NULL::VARCHAR AS interval_type, NULL::INTEGER AS interval_precision,
         NULL::VARCHAR AS character_set_catalog, NULL::VARCHAR AS character_set_schema, NULL::VARCHAR AS character_set_name,
         NULL::VARCHAR AS collation_catalog, NULL::VARCHAR AS collation_schema, NULL::VARCHAR AS collation_name,
         NULL::VARCHAR AS domain_catalog, NULL::VARCHAR AS domain_schema, NULL::VARCHAR AS domain_name,
         current_database() AS udt_catalog, 'pg_catalog' AS udt_schema, coalesce(t.typname, 'text') AS udt_name,
         NULL::VARCHAR AS scope_catalog, NULL::VARCHAR AS scope_schema, NULL::VARCHAR AS scope_name,
         NULL::INTEGER AS maximum_cardinality, CAST(col.column_index AS VARCHAR) AS dtd_identifier,
         'NO' AS is_self_referencing, 'NO' AS is_identity, NULL::VARCHAR AS identity_generation,
         NULL::VARCHAR AS identity_start, NULL::VARCHAR AS identity_increment, NULL::VARCHAR AS identity_maximum,
         NULL::VARCHAR AS identity_minimum, NULL::VARCHAR AS identity_cycle, 'NEVER' AS is_generated,
         NULL::VARCHAR AS generation_expression,
         CASE WHEN v.view_name IS NULL THEN 'YES' ELSE 'NO' END AS is_updatable
  FROM (SELECT c.*, dhsi_sys.pg.dhsi_type_oid(c.data_type) AS m_oid, dhsi_sys.pg.dhsi_type_typmod(c.data_type) AS m_typmod
        FROM duckdb_columns() c
        WHERE c.database_name = current_database() AND NOT dhsi_sys.pg.dhsi_hidden(c.schema_name)) col
  LEFT JOIN dhsi_sys.pg.pg_type_base t ON t.oid = col.m_oid
  LEFT JOIN duckdb_views() v ON v.view_oid = col.table_oid
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.table_constraints AS
  SELECT current_database() AS constraint_catalog, n.nspname AS constraint_schema, k.conname AS constraint_name,
         current_database() AS table_catalog, n.nspname AS table_schema, c.relname AS table_name,
         CASE k.contype WHEN 'p' THEN 'PRIMARY KEY' WHEN 'u' THEN 'UNIQUE' WHEN 'f' THEN 'FOREIGN KEY' ELSE 'CHECK' END AS constraint_type,
         'NO' AS is_deferrable, 'NO' AS initially_deferred, 'YES' AS enforced, NULL::VARCHAR AS nulls_distinct
  FROM dhsi_sys.pg.pg_constraint k
  JOIN dhsi_sys.pg.pg_class c ON c.oid = k.conrelid JOIN dhsi_sys.pg.pg_namespace n ON n.oid = c.relnamespace
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.key_column_usage AS
  SELECT current_database() AS constraint_catalog, k.schema_name AS constraint_schema, k.constraint_name,
         current_database() AS table_catalog, k.schema_name AS table_schema, k.table_name,
         k.constraint_column_names[k.m_i] AS column_name, k.m_i::INTEGER AS ordinal_position,
         CASE WHEN k.constraint_type = 'FOREIGN KEY' THEN k.m_i END::INTEGER AS position_in_unique_constraint
  FROM (SELECT m_k.*, unnest(range(1, len(m_k.constraint_column_names) + 1)) AS m_i
        FROM duckdb_constraints() m_k
        WHERE m_k.database_name = current_database() AND m_k.constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')
          AND NOT dhsi_sys.pg.dhsi_hidden(m_k.schema_name)) k
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.constraint_column_usage AS
  SELECT current_database() AS table_catalog, k.schema_name AS table_schema,
         CASE WHEN k.constraint_type = 'FOREIGN KEY' THEN k.referenced_table ELSE k.table_name END AS table_name,
         k.m_col AS column_name, current_database() AS constraint_catalog, k.schema_name AS constraint_schema,
         k.constraint_name
  FROM (SELECT m_k.*, unnest(CASE WHEN m_k.constraint_type = 'FOREIGN KEY' THEN m_k.referenced_column_names
                                  ELSE m_k.constraint_column_names END) AS m_col
        FROM duckdb_constraints() m_k
        WHERE m_k.database_name = current_database() AND m_k.constraint_type IN ('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY', 'CHECK')
          AND NOT dhsi_sys.pg.dhsi_hidden(m_k.schema_name)) k
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.referential_constraints AS
  SELECT current_database() AS constraint_catalog, k.schema_name AS constraint_schema, k.constraint_name,
         current_database() AS unique_constraint_catalog, k.schema_name AS unique_constraint_schema,
         (SELECT u.constraint_name FROM duckdb_constraints() u
          WHERE u.database_name = k.database_name AND u.schema_name = k.schema_name AND u.table_name = k.referenced_table
            AND u.constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND u.constraint_column_names = k.referenced_column_names
          LIMIT 1) AS unique_constraint_name,
         'NONE' AS match_option, 'NO ACTION' AS update_rule, 'NO ACTION' AS delete_rule
  FROM duckdb_constraints() k
  WHERE k.database_name = current_database() AND k.constraint_type = 'FOREIGN KEY' AND NOT dhsi_sys.pg.dhsi_hidden(k.schema_name)
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.check_constraints AS
  SELECT current_database() AS constraint_catalog, k.schema_name AS constraint_schema, k.constraint_name,
         k.expression AS check_clause
  FROM duckdb_constraints() k
  WHERE k.database_name = current_database() AND k.constraint_type = 'CHECK' AND NOT dhsi_sys.pg.dhsi_hidden(k.schema_name)
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.routines AS
  SELECT current_database() AS specific_catalog, n.nspname AS specific_schema, p.proname || '_' || p.oid AS specific_name,
         current_database() AS routine_catalog, n.nspname AS routine_schema, p.proname AS routine_name,
         'FUNCTION' AS routine_type, p.dhsi_result AS data_type, 'pg_catalog' AS type_udt_schema,
         p.dhsi_result AS type_udt_name, 'SQL' AS routine_body, p.prosrc AS routine_definition,
         'SQL' AS external_language, CASE WHEN p.provolatile = 'i' THEN 'YES' ELSE 'NO' END AS is_deterministic,
         'MODIFIES' AS sql_data_access, 'NO' AS is_null_call, 'INVOKER' AS security_type
  FROM dhsi_sys.pg.pg_proc p JOIN dhsi_sys.pg.pg_namespace n ON n.oid = p.pronamespace
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.parameters AS
  SELECT NULL::VARCHAR AS specific_catalog, NULL::VARCHAR AS specific_schema, NULL::VARCHAR AS specific_name,
         NULL::INTEGER AS ordinal_position, NULL::VARCHAR AS parameter_mode, NULL::VARCHAR AS parameter_name,
         NULL::VARCHAR AS data_type, NULL::VARCHAR AS udt_name, NULL::VARCHAR AS parameter_default
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.sequences AS
  SELECT current_database() AS sequence_catalog, s.schema_name AS sequence_schema, s.sequence_name,
         'bigint' AS data_type, 64 AS numeric_precision, 2 AS numeric_precision_radix, 0 AS numeric_scale,
         CAST(s.start_value AS VARCHAR) AS start_value, CAST(s.min_value AS VARCHAR) AS minimum_value,
         CAST(s.max_value AS VARCHAR) AS maximum_value, CAST(s.increment_by AS VARCHAR) AS increment,
         CASE WHEN s.cycle THEN 'YES' ELSE 'NO' END AS cycle_option
  FROM duckdb_sequences() s
  WHERE s.database_name = current_database() AND NOT dhsi_sys.pg.dhsi_hidden(s.schema_name)
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.table_privileges AS
  SELECT 'dhsi' AS grantor, coalesce(getvariable('dhsi_user'), 'dhsi') AS grantee, t.table_catalog,
         t.table_schema, t.table_name, p.privilege_type, 'YES' AS is_grantable, 'NO' AS with_hierarchy
  FROM dhsi_sys.infoschema.tables t,
       (SELECT unnest(['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS privilege_type) p
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.role_table_grants AS SELECT * FROM dhsi_sys.infoschema.table_privileges
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.character_sets AS
  SELECT NULL::VARCHAR AS character_set_catalog, NULL::VARCHAR AS character_set_schema, 'UTF8' AS character_set_name,
         'UCS' AS character_repertoire, 'UTF8' AS form_of_use, current_database() AS default_collate_catalog,
         'pg_catalog' AS default_collate_schema, 'C.UTF-8' AS default_collate_name
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.enabled_roles AS
  SELECT coalesce(getvariable('dhsi_user'), 'dhsi') AS role_name
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.applicable_roles AS
  SELECT NULL::VARCHAR AS grantee, NULL::VARCHAR AS role_name, NULL::VARCHAR AS is_grantable WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.triggers AS
  SELECT NULL::VARCHAR AS trigger_catalog, NULL::VARCHAR AS trigger_schema, NULL::VARCHAR AS trigger_name,
         NULL::VARCHAR AS event_manipulation, NULL::VARCHAR AS event_object_catalog,
         NULL::VARCHAR AS event_object_schema, NULL::VARCHAR AS event_object_table, NULL::VARCHAR AS action_statement,
         NULL::VARCHAR AS action_orientation, NULL::VARCHAR AS action_timing
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.domains AS
  SELECT NULL::VARCHAR AS domain_catalog, NULL::VARCHAR AS domain_schema, NULL::VARCHAR AS domain_name,
         NULL::VARCHAR AS data_type
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.infoschema.element_types AS
  SELECT NULL::VARCHAR AS object_catalog, NULL::VARCHAR AS object_schema, NULL::VARCHAR AS object_name,
         NULL::VARCHAR AS object_type, NULL::VARCHAR AS collection_type_identifier, NULL::VARCHAR AS data_type
  WHERE false
;
CREATE OR REPLACE MACRO dhsi_sys.pg.parse_ident(p_s) AS
  list_transform(string_split(p_s, '.'),
                 m_x -> CASE WHEN m_x LIKE '"%"' THEN replace(m_x[2:-2], '""', '"') ELSE lower(trim(m_x)) END),
  (p_s, p_strict) AS
  list_transform(string_split(p_s, '.'),
                 m_x -> CASE WHEN m_x LIKE '"%"' THEN replace(m_x[2:-2], '""', '"') ELSE lower(trim(m_x)) END)
;
CREATE OR REPLACE MACRO dhsi_sys.pg.quote_literal(p_s) AS '''' || replace(CAST(p_s AS VARCHAR), '''', '''''') || ''''
;
CREATE OR REPLACE MACRO dhsi_sys.pg.quote_nullable(p_s) AS
  CASE WHEN p_s IS NULL THEN 'NULL' ELSE '''' || replace(CAST(p_s AS VARCHAR), '''', '''''') || '''' END
;
