-- Superset (apache/superset) browses a PostgreSQL database through
-- SQLAlchemy's inspector (superset/db_engine_specs/postgres.py builds on
-- sqlalchemy.dialects.postgresql). These are the statements SQLAlchemy 1.4's
-- PostgreSQL dialect sent, captured from DHSI's debug log while
-- clients/python/check_sqlalchemy.py ran, plus the preview query Superset's
-- SQL Lab writes. psycopg2 interpolates parameters on the client, so they
-- appear as literals; {{oid:name}} stands for the relation's oid. Format:
-- see bi_test.go.

-- name: the hstore probe on connect
-- source: sqlalchemy dialects/postgresql/psycopg2.py (hstore OIDs)
-- rows: 0
SELECT t.oid, typarray
FROM pg_type t JOIN pg_namespace ns
    ON typnamespace = ns.oid
WHERE typname = 'hstore';
;
-- name: the server version
-- source: sqlalchemy dialects/postgresql/base.py _get_server_version_info
-- min-rows: 1
select pg_catalog.version()
;
-- name: the default schema
-- source: sqlalchemy dialects/postgresql/base.py _get_default_schema_name
-- want: public
select current_schema()
;
-- name: the isolation level
-- source: sqlalchemy dialects/postgresql/base.py get_isolation_level
-- want: read committed
show transaction isolation level
;
-- name: the string-literal setting
-- source: sqlalchemy dialects/postgresql/base.py initialize
-- want: on
show standard_conforming_strings
;
-- name: the schemas Superset lists, internal ones hidden
-- source: Inspector.get_schema_names
-- want: public
-- want-not: dhsi_cache
SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' ORDER BY nspname
;
-- name: the tables of a schema
-- source: Inspector.get_table_names
-- want: bi_items
-- want-not: bi_cheap
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind in ('r', 'p')
;
-- name: the views of a schema, DHSI's own among them (psql's \dv lists them too)
-- source: Inspector.get_view_names
-- want: bi_cheap
-- want: bi_domains
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('v', 'm')
;
-- name: a relation's oid by name
-- source: PGDialect.get_table_oid
-- want: {{oid:bi_cheap}}
SELECT c.oid
            FROM pg_catalog.pg_class c
            LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE (pg_catalog.pg_table_is_visible(c.oid))
            AND c.relname = 'bi_cheap' AND c.relkind in
            ('r', 'v', 'm', 'f', 'p')
;
-- name: the columns of a table, with comments and identity options
-- source: PGDialect.get_columns
-- want: numeric(10,2)
-- want: the item name
SELECT a.attname,
              pg_catalog.format_type(a.atttypid, a.atttypmod),
              (
                SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid)
                FROM pg_catalog.pg_attrdef d
                WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum
                AND a.atthasdef
              ) AS DEFAULT,
              a.attnotnull,
              a.attrelid as table_oid,
              pgd.description as comment,
              a.attgenerated as generated,
                              (SELECT json_build_object(
                    'always', a.attidentity = 'a',
                    'start', s.seqstart,
                    'increment', s.seqincrement,
                    'minvalue', s.seqmin,
                    'maxvalue', s.seqmax,
                    'cache', s.seqcache,
                    'cycle', s.seqcycle)
                FROM pg_catalog.pg_sequence s
                JOIN pg_catalog.pg_class c on s.seqrelid = c."oid"
                WHERE c.relkind = 'S'
                AND a.attidentity != ''
                AND s.seqrelid = pg_catalog.pg_get_serial_sequence(
                    a.attrelid::regclass::text, a.attname
                )::regclass::oid
                ) as identity_options
            FROM pg_catalog.pg_attribute a
            LEFT JOIN pg_catalog.pg_description pgd ON (
                pgd.objoid = a.attrelid AND pgd.objsubid = a.attnum)
            WHERE a.attrelid = {{oid:bi_items}}
            AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum
;
-- name: domains (there are none)
-- source: PGDialect._load_domains
-- rows: 0
SELECT t.typname as "name",
               pg_catalog.format_type(t.typbasetype, t.typtypmod) as "attype",
               not t.typnotnull as "nullable",
               t.typdefault as "default",
               pg_catalog.pg_type_is_visible(t.oid) as "visible",
               n.nspname as "schema"
            FROM pg_catalog.pg_type t
               LEFT JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
            WHERE t.typtype = 'd'
;
-- name: enums (there are none)
-- source: PGDialect._load_enums
-- rows: 0
SELECT t.typname as "name",
               -- no enum defaults in 8.4 at least
               -- t.typdefault as "default",
               pg_catalog.pg_type_is_visible(t.oid) as "visible",
               n.nspname as "schema",
               e.enumlabel as "label"
            FROM pg_catalog.pg_type t
                 LEFT JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
                 LEFT JOIN pg_catalog.pg_enum e ON t.oid = e.enumtypid
            WHERE t.typtype = 'e'
        ORDER BY "schema", "name", e.oid
;
-- name: the primary key's columns in order
-- source: PGDialect.get_pk_constraint
-- want: id
SELECT a.attname
                FROM pg_attribute a JOIN (
                    SELECT unnest(ix.indkey) attnum,
                           generate_subscripts(ix.indkey, 1) ord
                    FROM pg_index ix
                    WHERE ix.indrelid = {{oid:bi_items}} AND ix.indisprimary
                    ) k ON a.attnum=k.attnum
                WHERE a.attrelid = {{oid:bi_items}}
                ORDER BY k.ord
;
-- name: the primary key's name
-- source: PGDialect.get_pk_constraint
-- min-rows: 1
SELECT conname
           FROM  pg_catalog.pg_constraint r
           WHERE r.conrelid = {{oid:bi_items}} AND r.contype = 'p'
           ORDER BY 1
;
-- name: the foreign keys of a table
-- source: PGDialect.get_foreign_keys
-- want: FOREIGN KEY (item_id) REFERENCES bi_items(id)
SELECT r.conname,
                pg_catalog.pg_get_constraintdef(r.oid, true) as condef,
                n.nspname as conschema
          FROM  pg_catalog.pg_constraint r,
                pg_namespace n,
                pg_class c

          WHERE r.conrelid = {{oid:bi_orders}} AND
                r.contype = 'f' AND
                c.oid = confrelid AND
                n.oid = c.relnamespace
          ORDER BY 1
;
-- name: the indexes of a table but its primary key
-- source: PGDialect.get_indexes
-- want: bi_items_name
SELECT
                  i.relname as relname,
                  ix.indisunique, ix.indexprs,
                  a.attname, a.attnum, c.conrelid, ix.indkey::varchar,
                  ix.indoption::varchar, i.reloptions, am.amname,
                  pg_get_expr(ix.indpred, ix.indrelid),
                  ix.indnkeyatts as indnkeyatts
              FROM
                  pg_class t
                        join pg_index ix on t.oid = ix.indrelid
                        join pg_class i on i.oid = ix.indexrelid
                        left outer join
                            pg_attribute a
                            on t.oid = a.attrelid and a.attnum = ANY(ix.indkey)
                        left outer join
                            pg_constraint c
                            on (ix.indrelid = c.conrelid and
                                ix.indexrelid = c.conindid and
                                c.contype in ('p', 'u', 'x'))
                        left outer join
                            pg_am am
                            on i.relam = am.oid
              WHERE
                  t.relkind IN ('r', 'v', 'f', 'm', 'p')
                  and t.oid = {{oid:bi_items}}
                  and ix.indisprimary = 'f'
              ORDER BY
                  t.relname,
                  i.relname
;
-- name: the unique constraints of a table
-- source: PGDialect.get_unique_constraints
-- rows: 0
SELECT
                cons.conname as name,
                cons.conkey as key,
                a.attnum as col_num,
                a.attname as col_name
            FROM
                pg_catalog.pg_constraint cons
                join pg_attribute a
                  on cons.conrelid = a.attrelid AND
                    a.attnum = ANY(cons.conkey)
            WHERE
                cons.conrelid = {{oid:bi_items}} AND
                cons.contype = 'u'
;
-- name: the check constraints of a table
-- source: PGDialect.get_check_constraints
-- want: CHECK ((qty > 0))
SELECT
                cons.conname as name,
                pg_get_constraintdef(cons.oid) as src
            FROM
                pg_catalog.pg_constraint cons
            WHERE
                cons.conrelid = {{oid:bi_orders}} AND
                cons.contype = 'c'
;
-- name: a table's comment
-- source: PGDialect.get_table_comment
-- want: dhsi: one row per domain
SELECT
                pgd.description as table_comment
            FROM
                pg_catalog.pg_description pgd
            WHERE
                pgd.objsubid = 0 AND
                pgd.objoid = {{oid:bi_domains}}
;
-- name: has_table for a visible table
-- source: PGDialect.has_table
-- want: bi_items
select relname from pg_class c join pg_namespace n on n.oid=c.relnamespace where pg_catalog.pg_table_is_visible(c.oid) and relname='bi_items'
;
-- name: SQL Lab's preview of a table
-- source: superset BaseEngineSpec.select_star
-- want: widget
SELECT id, name, price, added
FROM public.bi_items
LIMIT 100
