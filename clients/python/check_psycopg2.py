"""psycopg2 checks against a DHSI server, run by sqlserver/clients_test.go.

Usage: /usr/bin/python3 check_psycopg2.py HOST PORT

Each check prints "PASS name" or "FAIL name: detail"; the Go test turns every
line into a subtest. Debian's python3-psycopg2 loads only in /usr/bin/python3.
"""

import decimal
import io
import sys

import psycopg2
import psycopg2.extras

from checks import Checks

host, port = sys.argv[1], int(sys.argv[2])
c = Checks()
conn = psycopg2.connect(host=host, port=port, user="py2", dbname="dhsi", sslmode="disable",
                        application_name="psycopg2-check")


@c.check("parameters are bound and typed values come back")
def _():
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE p2 (id INTEGER PRIMARY KEY, name VARCHAR, price DECIMAL(10,2), tags VARCHAR[])")
        cur.executemany("INSERT INTO p2 VALUES (%s, %s, %s, %s)",
                        [(i, "n%d" % i, decimal.Decimal("%d.50" % i), ["a", "b%d" % i]) for i in range(1, 6)])
        conn.commit()
        cur.execute("SELECT id, name, price, tags FROM p2 WHERE id = %(id)s AND name LIKE %(pat)s", {"id": 3, "pat": "n%"})
        row = cur.fetchone()
        c.expect(row == (3, "n3", decimal.Decimal("3.50"), ["a", "b3"]), "row %r" % (row,))
        cur.execute("SELECT %s::DATE, %s, %s", ("2024-03-01", None, True))
        row = cur.fetchone()
        c.expect(str(row[0]) == "2024-03-01" and row[1] is None and row[2] is True, "row %r" % (row,))
    conn.commit()


@c.check("a named (server-side) cursor fetches a large result in batches")
def _():
    with conn.cursor(name="big") as cur:
        cur.itersize = 500
        cur.execute("SELECT i, i * 2 FROM range(20000) t(i) WHERE i >= %s", (0,))
        n = 0
        total = 0
        for i, j in cur:
            c.expect(j == 2 * i, "row %d" % i)
            n += 1
            total += i
        c.expect(n == 20000 and total == 20000 * 19999 // 2, "rows %d sum %d" % (n, total))
    conn.commit()


@c.check("fetchmany on a named cursor and scrolling forward")
def _():
    with conn.cursor(name="few") as cur:
        cur.execute("SELECT id FROM p2 ORDER BY id")
        c.expect([r[0] for r in cur.fetchmany(2)] == [1, 2], "first two")
        c.expect([r[0] for r in cur.fetchmany(2)] == [3, 4], "next two")
        c.expect([r[0] for r in cur.fetchall()] == [5], "rest")
    conn.commit()


@c.check("copy_expert writes COPY TO STDOUT as CSV with a header")
def _():
    buf = io.StringIO()
    with conn.cursor() as cur:
        cur.copy_expert("COPY (SELECT id, name, price FROM p2 WHERE id <= 2 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)", buf)
    got = buf.getvalue()
    c.expect(got == "id,name,price\n1,n1,1.50\n2,n2,2.50\n", "csv %r" % got)
    conn.commit()


@c.check("copy_expert writes COPY TO STDOUT in text format, NULLs as \\N")
def _():
    buf = io.StringIO()
    with conn.cursor() as cur:
        cur.copy_expert("COPY (SELECT 1 AS a, NULL AS b, 'x\ty' AS c) TO STDOUT", buf)
    got = buf.getvalue()
    c.expect(got == "1\t\\N\tx\\ty\n", "text %r" % got)
    conn.commit()


@c.check("copy_to of a whole table")
def _():
    buf = io.StringIO()
    with conn.cursor() as cur:
        cur.copy_to(buf, "p2", columns=("id", "name"))
    lines = buf.getvalue().splitlines()
    c.expect(lines[:2] == ["1\tn1", "2\tn2"] and len(lines) == 5, "lines %r" % lines)
    conn.commit()


@c.check("errors raise with their SQLSTATE and rollback recovers")
def _():
    with conn.cursor() as cur:
        try:
            cur.execute("SELECT * FROM no_such_table")
            c.expect(False, "no error")
        except psycopg2.Error as e:
            c.expect(e.pgcode == "42P01", "pgcode %r" % e.pgcode)
        conn.rollback()
        cur.execute("SELECT 1")
        c.expect(cur.fetchone() == (1,), "after rollback")
    conn.commit()


@c.check("server settings psycopg2 reads")
def _():
    c.expect(conn.server_version >= 160000, "server_version %r" % conn.server_version)
    c.expect(conn.get_parameter_status("application_name") == "psycopg2-check", "application_name")
    with conn.cursor() as cur:
        cur.execute("SHOW application_name")
        c.expect(cur.fetchone()[0] == "psycopg2-check", "SHOW application_name")
        cur.execute("SELECT current_setting('application_name')")
        c.expect(cur.fetchone()[0] == "psycopg2-check", "current_setting")
    conn.commit()


conn.close()
sys.exit(c.done())
