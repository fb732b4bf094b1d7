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
-- pg_type_base and dhsi_scalar_oid are generated in Go
-- (sqlserver/catalog.go) from the same table that encodes values on the wire.

CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_type_oid(p_t) AS
  CASE WHEN regexp_matches(p_t, '\[\d*\]$') THEN
         CASE WHEN regexp_matches(regexp_replace(p_t, '\[\d*\]$', ''), '\]$') THEN 114
              ELSE coalesce((SELECT m_b.typarray FROM dhsi_sys.pg.pg_type_base m_b
                             WHERE m_b.oid = dhsi_sys.pg.dhsi_scalar_oid(regexp_replace(p_t, '\[\d*\]$', ''))
                               AND m_b.typarray <> 0 AND m_b.oid <> 114), 114) END
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
  FROM duckdb_tables() t WHERE t.database_name = current_database()
  UNION ALL
  -- DHSI's own relations (views whose comment starts with "dhsi:") are shown
  -- as tables: they are the tables of the index to a client, and psql's \dt
  -- lists only tables.
  SELECT v.view_oid, v.view_name, v.schema_oid, 0, 0, 10, 0, 0, 0, 0, -1, 0, 0,
         false, false, CASE WHEN v.temporary THEN 't' ELSE 'p' END,
         CASE WHEN coalesce(v.comment, '') LIKE 'dhsi:%' THEN 'r' ELSE 'v' END,
         v.column_count::SMALLINT, 0, NOT (coalesce(v.comment, '') LIKE 'dhsi:%'), false, false, false, false, true,
         CASE WHEN coalesce(v.comment, '') LIKE 'dhsi:%' THEN 'd' ELSE 'n' END, false, 0, 0, 0,
         NULL, NULL, NULL, v.comment
  FROM duckdb_views() v WHERE v.database_name = current_database() AND NOT v.internal
  UNION ALL
  SELECT i.index_oid, i.index_name, i.schema_oid, 0, 0, 10, 403, 0, 0, 0, 0, 0, 0,
         false, false, 'p', 'i', 0, 0, false, false, false, false, false, true, 'n', false, 0, 0, 0,
         NULL, NULL, NULL, i.comment
  FROM duckdb_indexes() i WHERE i.database_name = current_database()
  UNION ALL
  SELECT s.sequence_oid, s.sequence_name, s.schema_oid, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0,
         false, false, CASE WHEN s.temporary THEN 't' ELSE 'p' END, 'S', 3, 0, false, false, false,
         false, false, true, 'n', false, 0, 0, 0, NULL, NULL, NULL, s.comment
  FROM duckdb_sequences() s WHERE s.database_name = current_database()
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
  FROM duckdb_columns() c WHERE c.database_name = current_database()
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
       ELSE coalesce((SELECT m_b.dhsi_display FROM dhsi_sys.pg.pg_type_base m_b WHERE m_b.oid = p_type_oid), '???') END
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
  (SELECT m_i.sql FROM duckdb_indexes() m_i WHERE m_i.index_oid = p_index_oid),
  (p_index_oid, p_col, p_pretty) AS
  (SELECT m_i.sql FROM duckdb_indexes() m_i WHERE m_i.index_oid = p_index_oid)
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
  (SELECT m_c.oid FROM dhsi_sys.pg.pg_class m_c JOIN dhsi_sys.pg.pg_namespace m_n ON m_n.oid = m_c.relnamespace
   WHERE m_c.relname = CASE WHEN regexp_matches(split_part(p_name, '.', -1), '^".*"$')
                          THEN replace(split_part(p_name, '.', -1)[2:-2], '""', '"')
                          ELSE lower(split_part(p_name, '.', -1)) END
     AND (NOT contains(p_name, '.') OR m_n.nspname = lower(trim(split_part(p_name, '.', 1), '"')))
   ORDER BY (m_n.nspname = 'public') DESC LIMIT 1)
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
         0::BIGINT AS contypid, 0::BIGINT AS conindid, 0::BIGINT AS conparentid, 0::BIGINT AS confrelid,
         ' ' AS confupdtype, ' ' AS confdeltype, ' ' AS confmatchtype, true AS conislocal,
         0 AS coninhcount, false AS connoinherit,
         list_transform(c.constraint_column_indexes, x -> (x + 1)::SMALLINT) AS conkey,
         NULL::SMALLINT[] AS confkey, c.expression AS conbin, c.constraint_text AS consrc
  FROM duckdb_constraints() c
  WHERE c.database_name = current_database() AND c.constraint_type <> 'NOT NULL'
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_index AS
  SELECT i.index_oid AS indexrelid, i.table_oid AS indrelid, 0::SMALLINT AS indnatts,
         0::SMALLINT AS indnkeyatts, i.is_unique AS indisunique, false AS indnullsnotdistinct,
         i.is_primary AS indisprimary, false AS indisexclusion, true AS indimmediate,
         false AS indisclustered, true AS indisvalid, false AS indcheckxmin, true AS indisready,
         true AS indislive, false AS indisreplident, []::SMALLINT[] AS indkey,
         NULL AS indexprs, NULL AS indpred
  FROM duckdb_indexes() i WHERE i.database_name = current_database()
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
  SELECT 10::BIGINT AS oid, 'dhsi' AS rolname, true AS rolsuper, true AS rolinherit,
         true AS rolcreaterole, true AS rolcreatedb, true AS rolcanlogin, false AS rolreplication,
         -1 AS rolconnlimit, '********' AS rolpassword, NULL::TIMESTAMP AS rolvaliduntil,
         false AS rolbypassrls, NULL::VARCHAR[] AS rolconfig
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
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_proc AS
  SELECT coalesce(f.function_oid, 0)::BIGINT AS oid, f.function_name AS proname,
         coalesce((SELECT n.oid FROM dhsi_sys.pg.pg_namespace n WHERE n.nspname = f.schema_name), 11)::BIGINT AS pronamespace,
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
  FROM duckdb_functions() f
  WHERE NOT f.internal OR f.schema_name NOT IN ('main', 'pg_catalog')
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_settings AS
  SELECT s.name, s.value AS setting, NULL::VARCHAR AS unit, 'DuckDB' AS category,
         s.description AS short_desc, NULL::VARCHAR AS extra_desc, 'user' AS context,
         lower(s.input_type) AS vartype, 'default' AS source, NULL::VARCHAR AS min_val,
         NULL::VARCHAR AS max_val, NULL::VARCHAR[] AS enumvals, s.value AS boot_val,
         s.value AS reset_val, NULL::VARCHAR AS sourcefile, NULL::INTEGER AS sourceline,
         false AS pending_restart
  FROM duckdb_settings() s
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
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_matviews AS
  SELECT NULL::VARCHAR AS schemaname, NULL::VARCHAR AS matviewname, NULL::VARCHAR AS matviewowner,
         NULL::VARCHAR AS tablespace, false AS hasindexes, false AS ispopulated, NULL::VARCHAR AS definition
  WHERE false
;
CREATE OR REPLACE VIEW dhsi_sys.pg.pg_indexes AS
  SELECT i.schema_name AS schemaname, i.table_name AS tablename, i.index_name AS indexname,
         NULL::VARCHAR AS tablespace, i.sql AS indexdef
  FROM duckdb_indexes() i WHERE i.database_name = current_database()
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
  SELECT current_database() AS datname, NULL::INTEGER AS pid, 'dhsi' AS usename,
         NULL::VARCHAR AS application_name, 'active' AS state, NULL::VARCHAR AS query
  WHERE false
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
