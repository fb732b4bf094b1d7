-- DBeaver's PostgreSQL plugin (dbeaver/dbeaver,
-- plugins/org.jkiss.dbeaver.ext.postgresql/src/.../model/): what it reads
-- when it connects and a user expands a database, a schema and a table. The
-- schema caches (PostgreSchema.java) are copied from the source, JDBC ?
-- parameters as $n; the connection bootstrap (PostgreDataSource,
-- PostgreDatabase, PostgreDataTypeCache) is reconstructed from the same
-- source tree. Format: see bi_test.go.

-- name: the session's schema and user
-- source: PostgreDataSource: current schema and user on connect
-- want: public
-- want: tester
SELECT current_schema(),session_user
;
-- name: the string-literal setting DBeaver checks
-- source: PostgreDataSource: standard_conforming_strings
-- want: on
select * from pg_catalog.pg_settings where name='standard_conforming_strings'
;
-- name: the databases that accept connections
-- source: PostgreDataSource: database list
-- want: dhsi
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datallowconn AND NOT datistemplate ORDER BY db.datname
;
-- name: the schemas with their descriptions, internal ones hidden
-- source: PostgreDatabase: schema cache
-- want: public
-- want-not: dhsi_cache
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass
 ORDER BY nspname
;
-- name: the roles
-- source: PostgreDatabase: role cache
-- want: dhsi
SELECT a.oid,a.* FROM pg_catalog.pg_roles a
ORDER BY a.oid
;
-- name: the data types with their base types
-- source: PostgreDataTypeCache
-- want: int4
-- want: numeric
SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description
FROM pg_catalog.pg_type t
LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem
LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid
LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid
WHERE t.typname IS NOT NULL
AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')
;
-- name: the SQL keywords for the editor
-- source: PostgreDialect: keywords
-- min-rows: 1
select string_agg(word, ',') from pg_catalog.pg_get_keywords()
;
-- name: the tables and views of a schema
-- source: PostgreSchema.java TableCache.prepareLookupStatement
-- param: @ns:public
-- want: bi_items
-- want: bi_cheap
-- want: v
SELECT c.oid,c.*,d.description,(select array_agg(i.inhparent) from pg_catalog.pg_inherits i where i.inhrelid = c.oid) parents
FROM pg_catalog.pg_class c
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0
WHERE c.relnamespace=$1 AND c.relkind not in ('i','c')
;
-- name: the columns of every table of a schema
-- source: PostgreSchema.java TableCache.prepareChildrenStatement
-- param: @ns:public
-- want: price
-- want: the item name
SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description
FROM pg_catalog.pg_attribute a
INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid)
LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum)
LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)
WHERE NOT a.attisdropped AND c.relnamespace=$1 AND c.relkind not in ('i','c')  ORDER BY a.attnum
;
-- name: the constraints of a table
-- source: PostgreSchema.java ConstraintCache.prepareObjectsStatement
-- param: @rel:bi_orders
-- want: f
-- want: bi_orders
SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace
FROM pg_catalog.pg_constraint c
INNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid
LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid
WHERE c.conrelid=$1
ORDER BY c.oid
;
-- name: the indexes of a schema, the primary key's included
-- source: PostgreSchema.java IndexCache.prepareObjectsStatement
-- param: @ns:public
-- want: bi_items_name
-- want: bi_items
SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,tc.relname as tabrelname,dsc.description,pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr
FROM pg_catalog.pg_index i
INNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid
INNER JOIN pg_catalog.pg_class tc ON tc.oid=i.indrelid
LEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid
WHERE  c.relnamespace=$1 ORDER BY c.relname
;
-- name: the functions of a schema
-- source: PostgreSchema.java ProceduresCache.prepareLookupStatement
-- param: @ns:public
-- want: bi_double
SELECT p.oid,p.*,d.description
FROM pg_catalog.pg_proc p
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=p.oid
WHERE p.pronamespace=$1
ORDER BY p.proname
;
-- name: the extensions of a schema (none)
-- source: PostgreSchema.java ExtensionCache
-- param: @ns:public
-- rows: 0
SELECT e.oid,e.* FROM pg_catalog.pg_extension e 
WHERE e.extnamespace=$1
ORDER BY e.oid
;
-- name: the collations of the catalog schema
-- source: PostgreSchema.java CollationCache
-- param: 11
-- want: default
SELECT c.oid,c.* FROM pg_catalog.pg_collation c 
WHERE c.collnamespace=$1
ORDER BY c.oid
;
-- name: the data grid's first page of a table
-- source: DBeaver's data editor
-- want: widget
SELECT * FROM public.bi_items
LIMIT 200
