"""SQLAlchemy checks against a DHSI server, run by sqlserver/clients_test.go.

Usage: /usr/bin/python3 check_sqlalchemy.py HOST PORT

SQLAlchemy's PostgreSQL dialect (over psycopg2) introspects through
pg_catalog; these checks inspect DHSI's views and run a select().
"""

import sys

import sqlalchemy as sa

from checks import Checks

host, port = sys.argv[1], int(sys.argv[2])
c = Checks()
engine = sa.create_engine("postgresql+psycopg2://sqla@%s:%d/dhsi?sslmode=disable" % (host, port))


@c.check("connect and set up a table and views")
def _():
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE sa_items (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, price DECIMAL(10,2))")
        conn.exec_driver_sql("INSERT INTO sa_items VALUES (1, 'a', 1.50), (2, 'b', 20.00)")
        conn.exec_driver_sql("CREATE VIEW sa_cheap AS SELECT id, name, price FROM sa_items WHERE price < 10")
        conn.exec_driver_sql("CREATE VIEW sa_domains AS SELECT 'example.com' AS domain, 3::BIGINT AS version")
        conn.exec_driver_sql("COMMENT ON VIEW sa_domains IS 'dhsi: one row per domain'")


@c.check("get_table_names lists tables, get_view_names the views, DHSI's own among them")
def _():
    insp = sa.inspect(engine)
    tables = insp.get_table_names()
    c.expect("sa_items" in tables, "tables %r" % tables)
    c.expect("sa_cheap" not in tables and "sa_domains" not in tables, "a view listed as a table: %r" % tables)
    views = insp.get_view_names()
    c.expect("sa_cheap" in views and "sa_domains" in views, "views %r" % views)
    c.expect("public" in insp.get_schema_names(), "schemas %r" % insp.get_schema_names())
    c.expect(not [s for s in insp.get_schema_names() if s.startswith("dhsi_")], "internal schemas listed")


@c.check("get_columns describes a view with types and nullability")
def _():
    insp = sa.inspect(engine)
    cols = {col["name"]: col for col in insp.get_columns("sa_cheap")}
    c.expect(list(cols) == ["id", "name", "price"], "columns %r" % list(cols))
    c.expect(isinstance(cols["id"]["type"], sa.Integer), "id type %r" % cols["id"]["type"])
    c.expect(isinstance(cols["price"]["type"], sa.Numeric) and cols["price"]["type"].precision == 10
             and cols["price"]["type"].scale == 2, "price type %r" % cols["price"]["type"])
    dom = {col["name"]: col for col in insp.get_columns("sa_domains")}
    c.expect(isinstance(dom["domain"]["type"], sa.String) and isinstance(dom["version"]["type"], sa.BigInteger),
             "sa_domains types %r" % dom)
    items = {col["name"]: col for col in insp.get_columns("sa_items")}
    c.expect(items["name"]["nullable"] is False and items["price"]["nullable"] is True, "nullability %r" % items)


@c.check("get_pk_constraint, get_indexes and get_foreign_keys on a table")
def _():
    insp = sa.inspect(engine)
    pk = insp.get_pk_constraint("sa_items")
    c.expect(pk["constrained_columns"] == ["id"], "pk %r" % pk)
    c.expect(insp.get_foreign_keys("sa_items") == [], "foreign keys")
    insp.get_indexes("sa_items")
    insp.get_unique_constraints("sa_items")
    insp.get_check_constraints("sa_items")
    c.expect(insp.get_table_comment("sa_domains")["text"] == "dhsi: one row per domain", "comment")


@c.check("a reflected table answers a select() with a bound parameter")
def _():
    md = sa.MetaData()
    cheap = sa.Table("sa_cheap", md, autoload_with=engine)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(cheap.c.id, cheap.c.name).where(cheap.c.price < sa.bindparam("p")), {"p": 5}).all()
    c.expect([tuple(r) for r in rows] == [(1, "a")], "rows %r" % rows)


@c.check("has_table and the ORM-free core round trip")
def _():
    insp = sa.inspect(engine)
    c.expect(insp.has_table("sa_items") and not insp.has_table("sa_nope"), "has_table")
    with engine.connect() as conn:
        n = conn.execute(sa.text("SELECT count(*) FROM sa_items WHERE id > :i"), {"i": 0}).scalar()
    c.expect(n == 2, "count %r" % n)


sys.exit(c.done())
