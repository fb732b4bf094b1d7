package sqlserver_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// copyOut runs a COPY ... TO STDOUT and returns what it wrote.
func copyOut(t *testing.T, conn *pgx.Conn, sql string) (string, pgconn.CommandTag, error) {
	t.Helper()
	var buf bytes.Buffer
	tag, err := conn.PgConn().CopyTo(ctxT(t), &buf, sql)
	return buf.String(), tag, err
}

func TestCopyToStdout(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	mustExec(t, conn,
		"CREATE TABLE pets (id INTEGER, name VARCHAR, born DATE, tags VARCHAR[])",
		`INSERT INTO pets VALUES (1, 'Rex', '2020-01-02', ['a', 'b']), (2, 'tab	and
newline', NULL, []), (3, NULL, '2021-03-04', NULL)`)
	cases := []struct {
		name, sql, want string
	}{
		{"text format escapes tabs and newlines and writes NULL as \\N",
			"COPY (SELECT * FROM pets ORDER BY id) TO STDOUT",
			"1\tRex\t2020-01-02\t{a,b}\n2\ttab\\tand\\nnewline\t\\N\t{}\n3\t\\N\t2021-03-04\t\\N\n"},
		{"CSV with a header quotes what needs quoting",
			"COPY (SELECT id, name FROM pets ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER true)",
			"id,name\n1,Rex\n2,\"tab\tand\nnewline\"\n3,\n"},
		{"a whole table with a column list",
			"COPY pets (id, born) TO STDOUT",
			"1\t2020-01-02\n2\t\\N\n3\t2021-03-04\n"},
		{"the pre-9.0 option syntax psql and old drivers send",
			"COPY (SELECT id, name FROM pets WHERE id = 1) TO STDOUT WITH CSV HEADER DELIMITER AS ';' FORCE QUOTE *",
			"\"id\";\"name\"\n\"1\";\"Rex\"\n"},
		{"a custom delimiter and NULL string",
			"COPY (SELECT id, name FROM pets WHERE id = 3) TO STDOUT (DELIMITER '|', NULL 'nil')",
			"3|nil\n"},
		{"an empty string is quoted in CSV so it differs from NULL",
			"COPY (SELECT '' AS e, NULL AS n) TO STDOUT (FORMAT csv)",
			"\"\",\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, tag, err := copyOut(t, conn, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("COPY wrote %q, want %q", got, tc.want)
			}
			if !strings.HasPrefix(tag.String(), "COPY ") {
				t.Errorf("tag = %q", tag)
			}
		})
	}
	t.Run("COPY FROM STDIN and binary COPY are refused with 0A000", func(t *testing.T) {
		_, err := conn.PgConn().CopyFrom(ctxT(t), strings.NewReader("1\n"), "COPY pets (id) FROM STDIN")
		wantCode(t, err, "0A000")
		_, _, err = copyOut(t, conn, "COPY pets TO STDOUT (FORMAT binary)")
		wantCode(t, err, "0A000")
		var n int
		if err := conn.QueryRow(ctxT(t), "SELECT count(*) FROM pets").Scan(&n); err != nil || n != 3 {
			t.Errorf("after the refusals: count = %d, %v", n, err)
		}
	})
}

func TestSQLCursors(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	exec := func(sql string) ([]*pgconn.Result, error) {
		return conn.PgConn().Exec(ctxT(t), sql).ReadAll()
	}
	t.Run("DECLARE outside a transaction is refused with 25P01", func(t *testing.T) {
		_, err := exec("DECLARE c CURSOR FOR SELECT 1")
		wantCode(t, err, "25P01")
	})
	t.Run("FETCH reads forward in steps and MOVE skips", func(t *testing.T) {
		res, err := exec("BEGIN; DECLARE c CURSOR FOR SELECT i FROM range(10) t(i); FETCH 3 FROM c; MOVE FORWARD 2 IN c; FETCH NEXT FROM c; FETCH ALL c")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res {
			got = append(got, r.CommandTag.String()+" "+rowsText(r.Rows))
		}
		want := []string{"BEGIN ", "DECLARE CURSOR ", "FETCH 3 0,1,2", "MOVE 2 ", "FETCH 1 5", "FETCH 4 6,7,8,9"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("got  %q\nwant %q", got, want)
		}
		res, err = exec("FETCH 5 FROM c; CLOSE c; COMMIT")
		if err != nil || res[0].CommandTag.String() != "FETCH 0" || res[1].CommandTag.String() != "CLOSE CURSOR" {
			t.Errorf("after the end: %v, %v", res, err)
		}
	})
	t.Run("a cursor is a portal: Describe answers for it", func(t *testing.T) {
		if _, err := exec("BEGIN; DECLARE d CURSOR FOR SELECT 1 AS one, 'x' AS two"); err != nil {
			t.Fatal(err)
		}
		sd, err := conn.Prepare(ctxT(t), "", "FETCH 1 FROM d")
		if err != nil {
			t.Fatal(err)
		}
		if len(sd.Fields) != 2 || sd.Fields[0].Name != "one" || sd.Fields[1].Name != "two" {
			t.Errorf("fields = %+v", sd.Fields)
		}
		if _, err := exec("COMMIT"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a WITH HOLD cursor outlives its transaction; others do not", func(t *testing.T) {
		if _, err := exec("BEGIN; DECLARE h CURSOR WITH HOLD FOR SELECT 42; DECLARE n CURSOR FOR SELECT 1; COMMIT"); err != nil {
			t.Fatal(err)
		}
		res, err := exec("FETCH ALL FROM h")
		if err != nil || rowsText(res[0].Rows) != "42" {
			t.Errorf("FETCH from the held cursor: %v, %v", res, err)
		}
		_, err = exec("FETCH ALL FROM n")
		wantCode(t, err, "34000")
		if _, err := exec("CLOSE ALL"); err != nil {
			t.Fatal(err)
		}
		_, err = exec("FETCH ALL FROM h")
		wantCode(t, err, "34000")
	})
	t.Run("a scrollable cursor is refused with 0A000", func(t *testing.T) {
		_, err := exec("BEGIN; DECLARE s SCROLL CURSOR FOR SELECT 1")
		wantCode(t, err, "0A000")
		exec("ROLLBACK")
	})
}

// rowsText renders rows as "a,b,c" (first column only).
func rowsText(rows [][][]byte) string {
	var out []string
	for _, r := range rows {
		out = append(out, string(r[0]))
	}
	return strings.Join(out, ",")
}

func TestSessionParametersDriversSet(t *testing.T) {
	s := startServer(t)
	// the simple protocol, as psql and psycopg2 speak it: DISCARD ALL below
	// drops prepared statements, which pgx's statement cache would not know
	conn := s.connect(t, withMode(pgx.QueryExecModeSimpleProtocol),
		func(c *pgx.ConnConfig) { c.RuntimeParams["application_name"] = "compat-test" })
	one := func(sql string) string {
		t.Helper()
		var v string
		if err := conn.QueryRow(ctxT(t), sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	t.Run("application_name is reported, shown and read by current_setting and pg_settings", func(t *testing.T) {
		if got := conn.PgConn().ParameterStatus("application_name"); got != "compat-test" {
			t.Errorf("ParameterStatus = %q", got)
		}
		mustExec(t, conn, "SET application_name = 'renamed'")
		if got := conn.PgConn().ParameterStatus("application_name"); got != "renamed" {
			t.Errorf("ParameterStatus after SET = %q", got)
		}
		for _, q := range []string{"SHOW application_name", "SELECT current_setting('application_name')",
			"SELECT setting FROM pg_catalog.pg_settings WHERE name = 'application_name'"} {
			if got := one(q); got != "renamed" {
				t.Errorf("%s = %q", q, got)
			}
		}
	})
	t.Run("a SET of the same value twice, then of DuckDB's settings, reach current_setting", func(t *testing.T) {
		// syncVariables skips a SET that changes nothing and reads DuckDB's
		// own settings again only after one may have changed
		mustExec(t, conn, "SET application_name = 'same'", "SET application_name = 'same'")
		if got := one("SELECT current_setting('application_name')"); got != "same" {
			t.Errorf("application_name = %q", got)
		}
		mustExec(t, conn, "SET TimeZone = 'Asia/Tokyo'")
		if got := one("SELECT current_setting('TimeZone')"); got != "Asia/Tokyo" {
			t.Errorf("TimeZone = %q", got)
		}
		mustExec(t, conn, "SET threads = 1")
		if got := one("SELECT current_setting('threads')"); got != "1" {
			t.Errorf("threads = %q, after SET threads = 1", got)
		}
		mustExec(t, conn, "SET application_name = 'renamed'")
	})
	t.Run("extra_float_digits is accepted and shown", func(t *testing.T) {
		mustExec(t, conn, "SET extra_float_digits = 3")
		if got := one("SHOW extra_float_digits"); got != "3" {
			t.Errorf("extra_float_digits = %q", got)
		}
	})
	t.Run("search_path decides current_schema and current_schemas", func(t *testing.T) {
		mustExec(t, conn, "CREATE SCHEMA IF NOT EXISTS other", "SET search_path TO other, public")
		if got := one("SELECT current_schema()"); got != "other" {
			t.Errorf("current_schema() = %q", got)
		}
		if got := one("SELECT array_to_string(current_schemas(true), ',')"); got != "pg_catalog,other,public" {
			t.Errorf("current_schemas(true) = %q", got)
		}
		mustExec(t, conn, "RESET search_path")
		if got := one("SELECT current_schema()"); got != "public" {
			t.Errorf("current_schema() after RESET = %q", got)
		}
	})
	t.Run("session characteristics decide the next transaction's isolation", func(t *testing.T) {
		mustExec(t, conn, "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE")
		if got := one("SHOW TRANSACTION ISOLATION LEVEL"); got != "serializable" {
			t.Errorf("transaction_isolation = %q", got)
		}
		mustExec(t, conn, "BEGIN", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
		if got := one("SHOW transaction_isolation"); got != "repeatable read" {
			t.Errorf("inside the transaction = %q", got)
		}
		mustExec(t, conn, "COMMIT")
		if got := one("SHOW transaction_isolation"); got != "serializable" {
			t.Errorf("after COMMIT = %q", got)
		}
		mustExec(t, conn, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
	})
	t.Run("DISCARD ALL resets what the session set", func(t *testing.T) {
		mustExec(t, conn, "DISCARD ALL")
		if got := one("SHOW application_name"); got != "" {
			t.Errorf("application_name after DISCARD ALL = %q", got)
		}
		if got := one("SELECT current_setting('extra_float_digits')"); got != "1" {
			t.Errorf("extra_float_digits after DISCARD ALL = %q", got)
		}
		// and deallocates a SQL PREPARE, as DEALLOCATE ALL does (DuckDB
		// reads "DEALLOCATE ALL" as the name ALL: both left every one),
		// and a SET made after it shows
		mustExec(t, conn, "PREPARE dq AS SELECT 41 + 1", "DISCARD ALL")
		if _, err := conn.Exec(ctxT(t), "EXECUTE dq"); err == nil {
			t.Error("EXECUTE of a statement DISCARD ALL deallocated ran")
		}
		mustExec(t, conn, "PREPARE dq AS SELECT 41 + 1", "PREPARE \"Dq2\" AS SELECT 1", "DEALLOCATE ALL")
		for _, q := range []string{"EXECUTE dq", "EXECUTE \"Dq2\""} {
			if _, err := conn.Exec(ctxT(t), q); err == nil {
				t.Errorf("%s after DEALLOCATE ALL ran", q)
			}
		}
		mustExec(t, conn, "DISCARD ALL", "SET application_name = 'after'")
		if got := one("SELECT current_setting('application_name')"); got != "after" {
			t.Errorf("application_name after DISCARD ALL and SET = %q", got)
		}
	})
	t.Run("the session user is current_user and session_user", func(t *testing.T) {
		if got := one("SELECT current_user || ',' || session_user || ',' || pg_catalog.pg_get_userbyid(10)"); got != "tester,tester,dhsi" {
			t.Errorf("users = %q", got)
		}
	})
}

func TestCatalogAnswersClientsRead(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	mustExec(t, conn,
		"CREATE TABLE shop (id INTEGER PRIMARY KEY, price DECIMAL(10,2) NOT NULL, name VARCHAR)",
		"CREATE VIEW cheap AS SELECT id, price FROM shop WHERE price < 10",
		"CREATE SCHEMA dhsi_meta", "CREATE TABLE dhsi_meta.facts (k VARCHAR)")
	one := func(sql string) string {
		t.Helper()
		var v string
		if err := conn.QueryRow(ctxT(t), sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	t.Run("version() is a PostgreSQL 16 banner", func(t *testing.T) {
		if got := one("SELECT version()"); !strings.HasPrefix(got, "PostgreSQL 16.") {
			t.Errorf("version() = %q", got)
		}
	})
	t.Run("regclass casts and format_type with a numeric typmod", func(t *testing.T) {
		got := one(`SELECT string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod), ',' ORDER BY a.attnum)
		            FROM pg_catalog.pg_attribute a WHERE a.attrelid = 'public.shop'::regclass`)
		if got != "id:integer,price:numeric(10,2),name:text" {
			t.Errorf("columns = %q", got)
		}
		if got := one("SELECT 'shop'::regclass::oid::regclass::text"); got != "shop" {
			t.Errorf("round trip = %q", got)
		}
	})
	t.Run("types have PostgreSQL's OIDs", func(t *testing.T) {
		got := one("SELECT string_agg(typname || '=' || oid, ',' ORDER BY oid) FROM pg_type WHERE typname IN ('bool', 'int4', 'text', 'numeric', 'timestamptz', '_int4')")
		if got != "bool=16,int4=23,text=25,_int4=1007,timestamptz=1184,numeric=1700" {
			t.Errorf("pg_type = %q", got)
		}
	})
	t.Run("internal schemas are hidden everywhere a client lists relations", func(t *testing.T) {
		for _, q := range []string{
			"SELECT count(*)::TEXT FROM pg_namespace WHERE nspname LIKE 'dhsi%'",
			"SELECT count(*)::TEXT FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'facts'",
			"SELECT count(*)::TEXT FROM information_schema.tables WHERE table_schema LIKE 'dhsi%'",
			"SELECT count(*)::TEXT FROM information_schema.columns WHERE table_schema LIKE 'dhsi%'",
			"SELECT count(*)::TEXT FROM information_schema.schemata WHERE schema_name LIKE 'dhsi%'",
		} {
			if got := one(q); got != "0" {
				t.Errorf("%s = %s", q, got)
			}
		}
	})
	t.Run("information_schema describes tables, views, columns and keys", func(t *testing.T) {
		got := one(`SELECT string_agg(table_name || ':' || table_type, ',' ORDER BY table_name) FROM information_schema.tables WHERE table_schema = 'public'`)
		if got != "cheap:VIEW,shop:BASE TABLE" {
			t.Errorf("tables = %q", got)
		}
		got = one(`SELECT string_agg(column_name || ':' || data_type || ':' || udt_name || ':' || is_nullable || ':' || coalesce(numeric_precision::TEXT, '') || ':' || coalesce(numeric_scale::TEXT, ''), ',' ORDER BY ordinal_position)
		           FROM information_schema.columns WHERE table_name = 'shop'`)
		if got != "id:integer:int4:NO:32:0,price:numeric:numeric:NO:10:2,name:text:text:YES::" {
			t.Errorf("columns = %q", got)
		}
		got = one(`SELECT tc.constraint_type || ':' || kcu.column_name FROM information_schema.table_constraints tc
		           JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name
		           WHERE tc.table_name = 'shop'`)
		if got != "PRIMARY KEY:id" {
			t.Errorf("keys = %q", got)
		}
	})
	t.Run("RowDescription names the table and column of plain column references", func(t *testing.T) {
		sd, err := conn.Prepare(ctxT(t), "", "SELECT name, id, price * 2 AS twice FROM shop s WHERE id > $1")
		if err != nil {
			t.Fatal(err)
		}
		var oid uint32
		if err := conn.QueryRow(ctxT(t), "SELECT 'shop'::regclass::oid").Scan(&oid); err != nil {
			t.Fatal(err)
		}
		f := sd.Fields
		if f[0].TableOID != oid || f[0].TableAttributeNumber != 3 || f[1].TableOID != oid || f[1].TableAttributeNumber != 1 {
			t.Errorf("origins = (%d,%d) (%d,%d), want table %d", f[0].TableOID, f[0].TableAttributeNumber, f[1].TableOID, f[1].TableAttributeNumber, oid)
		}
		if f[2].TableOID != 0 || f[2].TableAttributeNumber != 0 {
			t.Errorf("an expression has an origin: %+v", f[2])
		}
		sd, err = conn.Prepare(ctxT(t), "", "SELECT * FROM cheap")
		if err != nil {
			t.Fatal(err)
		}
		if sd.Fields[0].TableOID == 0 || sd.Fields[1].TableAttributeNumber != 2 || sd.Fields[1].TypeModifier != (10<<16|2)+4 {
			t.Errorf("view fields = %+v", sd.Fields)
		}
	})
	t.Run("origins follow a replaced view and an altered table, though the server keeps them", func(t *testing.T) {
		attnum := func(q string) uint16 {
			t.Helper()
			sd, err := conn.Prepare(ctxT(t), "", q)
			if err != nil {
				t.Fatal(err)
			}
			return sd.Fields[0].TableAttributeNumber
		}
		mustExec(t, conn, "CREATE VIEW shifting AS SELECT 1 AS a, 2 AS b")
		for range 2 { // the second from the server's cache
			if got := attnum("SELECT b FROM shifting"); got != 2 {
				t.Fatalf("b of shifting is column %d, want 2", got)
			}
		}
		mustExec(t, conn, "CREATE OR REPLACE VIEW shifting AS SELECT 2 AS b, 1 AS a")
		if got := attnum("SELECT b FROM shifting"); got != 1 {
			t.Errorf("b of the replaced view is column %d, want 1", got)
		}
		mustExec(t, conn, "CREATE TABLE widening (a INTEGER)")
		if got := attnum("SELECT a FROM widening"); got != 1 {
			t.Fatalf("a of widening is column %d, want 1", got)
		}
		mustExec(t, conn, "ALTER TABLE widening ADD COLUMN b INTEGER")
		if got := attnum("SELECT b FROM widening"); got != 2 {
			t.Errorf("b of the altered table is column %d, want 2", got)
		}
		// a view keeps its OID and text while the table it reads is
		// created again otherwise (O1)
		mustExec(t, conn, "CREATE TABLE based (a INTEGER, b INTEGER)", "CREATE VIEW onbased AS SELECT * FROM based")
		if got := attnum("SELECT b FROM onbased"); got != 2 {
			t.Fatalf("b of onbased is column %d, want 2", got)
		}
		mustExec(t, conn, "DROP TABLE based", "CREATE TABLE based (b INTEGER, a INTEGER)")
		if got := attnum("SELECT b FROM onbased"); got != 1 {
			t.Errorf("b of onbased over the new table is column %d, want 1", got)
		}
		// another session's TEMP namesake is its own (O2)
		mustExec(t, conn, "CREATE TABLE shadowed (a INTEGER, b INTEGER)")
		other := s.connect(t)
		mustExec(t, other, "CREATE TEMP TABLE shadowed (z INTEGER, y INTEGER, a INTEGER)")
		if _, err := other.Prepare(ctxT(t), "", "SELECT a FROM shadowed"); err != nil {
			t.Fatal(err)
		}
		if got := attnum("SELECT a FROM shadowed"); got != 1 {
			t.Errorf("a of shadowed is column %d after a TEMP namesake's Describe, want 1", got)
		}
	})
}

func TestWriteConflictsAreSerializationFailures(t *testing.T) {
	s := startServer(t)
	a, b := s.connect(t), s.connect(t)
	mustExec(t, a, "CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER)", "INSERT INTO counter VALUES (1, 0)")
	mustExec(t, a, "BEGIN", "UPDATE counter SET n = n + 1 WHERE id = 1")
	mustExec(t, b, "BEGIN")
	_, err := b.Exec(ctxT(t), "UPDATE counter SET n = n + 10 WHERE id = 1")
	pe := wantCode(t, err, "40001")
	if !strings.Contains(strings.ToLower(pe.Message), "conflict") {
		t.Errorf("message = %q", pe.Message)
	}
	// the client retries after ROLLBACK, as it would on PostgreSQL
	mustExec(t, b, "ROLLBACK")
	mustExec(t, a, "COMMIT")
	mustExec(t, b, "UPDATE counter SET n = n + 10 WHERE id = 1")
	var n int
	if err := a.QueryRow(context.Background(), "SELECT n FROM counter").Scan(&n); err != nil || n != 11 {
		t.Errorf("n = %d, %v", n, err)
	}
}

func TestPgxQueryExecModesAndBatches(t *testing.T) {
	s := startServer(t)
	setup := s.connect(t)
	mustExec(t, setup, "CREATE TABLE modes (id INTEGER, amount DECIMAL(12,3), seen TIMESTAMPTZ)",
		"INSERT INTO modes VALUES (1, 1.5, '2024-05-06 07:08:09+00'), (2, 2.25, NULL)")
	for _, m := range []struct {
		name string
		mode pgx.QueryExecMode
	}{
		{"cache statement", pgx.QueryExecModeCacheStatement},
		{"cache describe", pgx.QueryExecModeCacheDescribe},
		{"describe exec", pgx.QueryExecModeDescribeExec},
		{"exec", pgx.QueryExecModeExec},
		{"simple protocol", pgx.QueryExecModeSimpleProtocol},
	} {
		t.Run(m.name+" runs a parameterized query and a batch", func(t *testing.T) {
			conn := s.connect(t, withMode(m.mode))
			for range 3 { // the cached modes reuse what the first run prepared
				var amount float64
				var n int
				if err := conn.QueryRow(ctxT(t), "SELECT amount::DOUBLE, (SELECT count(*) FROM modes WHERE id >= $2) FROM modes WHERE id = $1", 2, 1).Scan(&amount, &n); err != nil || amount != 2.25 || n != 2 {
					t.Fatalf("row = %v %d, %v", amount, n, err)
				}
			}
			b := &pgx.Batch{}
			b.Queue("INSERT INTO modes (id) VALUES ($1)", 10)
			b.Queue("SELECT count(*) FROM modes WHERE id >= $1", 10)
			b.Queue("DELETE FROM modes WHERE id = $1", 10)
			br := conn.SendBatch(ctxT(t), b)
			if _, err := br.Exec(); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := br.QueryRow().Scan(&n); err != nil || n != 1 {
				t.Fatalf("count in the batch = %d, %v", n, err)
			}
			if tag, err := br.Exec(); err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("delete = %v, %v", tag, err)
			}
			if err := br.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
