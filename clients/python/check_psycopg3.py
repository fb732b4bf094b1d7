"""psycopg 3 checks against a DHSI server, run by sqlserver/clients_test.go.

Usage: /usr/bin/python3 check_psycopg3.py HOST PORT

Each check prints "PASS name" or "FAIL name: detail"; the Go test turns every
line into a subtest. Debian's python3-psycopg loads only in /usr/bin/python3.
"""

import datetime
import decimal
import sys

import psycopg

from checks import Checks

host, port = sys.argv[1], int(sys.argv[2])
c = Checks()
conn = psycopg.connect(host=host, port=port, user="py3", dbname="dhsi", sslmode="disable",
                       application_name="psycopg3-check")


@c.check("parameters go over the extended protocol and typed values come back")
def _():
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE p3 (id INTEGER PRIMARY KEY, name VARCHAR, price DECIMAL(10,2), seen TIMESTAMP)")
        cur.executemany("INSERT INTO p3 VALUES (%s, %s, %s, %s)",
                        [(i, "n%d" % i, decimal.Decimal("%d.50" % i), datetime.datetime(2024, 1, i, 12, 0))
                         for i in range(1, 6)])
        conn.commit()
        cur.execute("SELECT id, name, price, seen FROM p3 WHERE id = %s AND name = %s", (3, "n3"))
        row = cur.fetchone()
        c.expect(row == (3, "n3", decimal.Decimal("3.50"), datetime.datetime(2024, 1, 3, 12, 0)), "row %r" % (row,))
    conn.commit()


@c.check("binary results decode to the same values")
def _():
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT id, name, price, seen FROM p3 WHERE id = %b", (2,))
        row = cur.fetchone()
        c.expect(row == (2, "n2", decimal.Decimal("2.50"), datetime.datetime(2024, 1, 2, 12, 0)), "row %r" % (row,))
    conn.commit()


@c.check("a server-side cursor fetches a large result in batches")
def _():
    with conn.cursor(name="big3") as cur:
        cur.itersize = 700
        cur.execute("SELECT i FROM range(30000) t(i) WHERE i >= %s", (0,))
        n = 0
        total = 0
        for (i,) in cur:
            n += 1
            total += i
        c.expect(n == 30000 and total == 30000 * 29999 // 2, "rows %d sum %d" % (n, total))
    conn.commit()


@c.check("a server-side cursor describes its columns and fetches in steps")
def _():
    with conn.cursor(name="few3") as cur:
        cur.execute("SELECT id, name FROM p3 ORDER BY id")
        c.expect([d.name for d in cur.description] == ["id", "name"], "description %r" % (cur.description,))
        c.expect([r[0] for r in cur.fetchmany(2)] == [1, 2], "first two")
        c.expect(cur.fetchone()[0] == 3, "third")
        c.expect([r[0] for r in cur.fetchall()] == [4, 5], "rest")
    conn.commit()


@c.check("COPY TO STDOUT as CSV with a header through cursor.copy")
def _():
    with conn.cursor() as cur:
        data = b""
        with cur.copy("COPY (SELECT id, name FROM p3 WHERE id <= 2 ORDER BY id) TO STDOUT (FORMAT csv, HEADER true)") as cp:
            for chunk in cp:
                data += bytes(chunk)
        c.expect(data == b"id,name\n1,n1\n2,n2\n", "csv %r" % data)
        rows = []
        with cur.copy("COPY (SELECT id, name FROM p3 WHERE id <= 2 ORDER BY id) TO STDOUT") as cp:
            for row in cp.rows():
                rows.append(row)
        c.expect(rows == [("1", "n1"), ("2", "n2")], "rows %r" % rows)
    conn.commit()


@c.check("autocommit mode and transactions")
def _():
    with psycopg.connect(host=host, port=port, user="py3", dbname="dhsi", sslmode="disable", autocommit=True) as ac:
        ac.execute("CREATE TABLE p3tx (i INTEGER)")
        with ac.transaction():
            ac.execute("INSERT INTO p3tx VALUES (1)")
        try:
            with ac.transaction():
                ac.execute("INSERT INTO p3tx VALUES (2)")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        n = ac.execute("SELECT count(*) FROM p3tx").fetchone()[0]
        c.expect(n == 1, "rows %d" % n)


@c.check("errors raise with their SQLSTATE")
def _():
    try:
        conn.execute("SELECT 1/0::INTEGER + x FROM no_such_table")
        c.expect(False, "no error")
    except psycopg.Error as e:
        c.expect(e.sqlstate == "42P01", "sqlstate %r" % e.sqlstate)
    conn.rollback()
    c.expect(conn.execute("SELECT 1").fetchone() == (1,), "after rollback")
    conn.commit()


@c.check("pipeline mode: statements sent together are answered in order")
def _():
    # psycopg sends them without a Sync, and asks for the answers with
    # Flush or Sync (libpq's pipeline mode)
    with conn.pipeline():
        cur = conn.execute("SELECT %s::INTEGER", (1,))
        cur2 = conn.execute("SELECT %s::VARCHAR, %s::BIGINT", ("two", 2))
        cur3 = conn.execute("SELECT i FROM range(5000) t(i) WHERE i >= %s", (0,))
        with conn.cursor() as cur4:
            cur4.executemany("INSERT INTO p3 (id, name) VALUES (%s, %s)", [(100 + i, "pipe%d" % i) for i in range(20)])
        first = cur.fetchone()
        second = cur2.fetchone()
        many = cur3.fetchall()
    c.expect(first == (1,), "first %r" % (first,))
    c.expect(second == ("two", 2), "second %r" % (second,))
    c.expect(len(many) == 5000 and many[-1] == (4999,), "rows %d" % len(many))
    conn.commit()
    n = conn.execute("SELECT count(*) FROM p3 WHERE name LIKE 'pipe%'").fetchone()[0]
    c.expect(n == 20, "inserted %d" % n)
    conn.commit()


@c.check("pipeline mode: an error mid-pipeline aborts the rest, and the session goes on")
def _():
    try:
        with conn.pipeline():
            conn.execute("SELECT 1")
            conn.execute("SELECT 1/0::INTEGER + x FROM no_such_table")
            conn.execute("SELECT 3")
        c.expect(False, "no error")
    except psycopg.Error as e:
        c.expect(e.sqlstate == "42P01", "sqlstate %r" % e.sqlstate)
    conn.rollback()
    c.expect(conn.execute("SELECT 42").fetchone() == (42,), "after rollback")
    conn.commit()


@c.check("server information psycopg reads")
def _():
    c.expect(conn.info.server_version >= 160000, "server_version %r" % conn.info.server_version)
    c.expect(conn.info.parameter_status("application_name") == "psycopg3-check", "application_name %r" % conn.info.parameter_status("application_name"))
    c.expect(conn.info.vendor == "PostgreSQL", "vendor")


conn.close()
sys.exit(c.done())
