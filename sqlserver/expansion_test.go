package sqlserver_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/sqlserver"
)

// TestTempExpansionIsBounded: P5. TEMP macros (or views) that each name
// the one before twice double with every level, and DuckDB expands them
// before statement_timeout applies (a chain of 14 took 3 s past a 2 s
// timeout, of 20 minutes). A reader's chain is refused with 54001 where it
// passes the bound, at once, by the simple and the extended protocol, and
// the session goes on; a rollback, a replacement or a rename does not
// hide a definition from the bound; an admin is not bounded.
func TestTempExpansionIsBounded(t *testing.T) {
	s := startServer(t, readerAndAdmin)
	ctx := ctxT(t)
	as := func(user string) *pgx.Conn { return s.connectAs(t, user, "pw") }
	exec := func(c *pgx.Conn, sql string) error {
		_, err := c.Exec(ctx, sql)
		return err
	}
	chain := func(c *pgx.Conn, kind string, n int) (refusedAt int) {
		t.Helper()
		first := "CREATE TEMP MACRO m0(x) AS x + 1"
		next := func(i int) string {
			return fmt.Sprintf("CREATE TEMP MACRO m%d(x) AS m%d(x) + m%d(x)", i, i-1, i-1)
		}
		if kind == "view" {
			first = "CREATE TEMP VIEW v0 AS SELECT 1 AS x"
			next = func(i int) string {
				return fmt.Sprintf("CREATE TEMP VIEW v%d AS SELECT * FROM v%d UNION ALL SELECT * FROM v%d", i, i-1, i-1)
			}
		}
		if err := exec(c, first); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= n; i++ {
			start := time.Now()
			err := exec(c, next(i))
			if err == nil {
				continue
			}
			if sqlstate(err) != "54001" {
				t.Fatalf("%s %d: %v, want 54001", kind, i, err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("%s %d refused after %v", kind, i, took)
			}
			return i
		}
		return 0
	}

	reader := as("rita")
	at := chain(reader, "macro", 20)
	t.Logf("the reader's macro chain refused at level %d", at)
	if at == 0 {
		t.Fatal("a reader created a chain of 20 macros")
	}
	if at < 8 {
		t.Errorf("refused at level %d: the bound is too tight for ordinary use", at)
	}
	// the longest chain allowed answers, by either protocol
	var n int64
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		if err := reader.QueryRow(ctx, fmt.Sprintf("SELECT m%d(1)", at-1), mode).Scan(&n); err != nil || n != 1<<at {
			t.Errorf("m%d(1) (%v): %d, %v", at-1, mode, n, err)
		}
		// named twice in one statement, it passes the bound
		if _, err := reader.Exec(ctx, fmt.Sprintf("SELECT m%d(1) + m%d(2)", at-1, at-1), mode); sqlstate(err) != "54001" {
			t.Errorf("m%d named twice (%v): %v, want 54001", at-1, mode, err)
		}
	}
	if at := chain(reader, "view", 20); at < 8 || at > 20 {
		t.Errorf("the view chain refused at level %d", at)
	}

	// a replacement rolled back: the session still counts the larger one
	if err := exec(reader, "CREATE TEMP MACRO big(x) AS x + 1"); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"BEGIN", fmt.Sprintf("CREATE OR REPLACE TEMP MACRO big(x) AS m%d(x)", at-1), "ROLLBACK"} {
		if err := exec(reader, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := exec(reader, "SELECT big(1) + big(2)"); sqlstate(err) != "54001" {
		t.Errorf("after a rolled-back replacement: %v, want 54001 (the bound counts every definition a name had)", err)
	}
	// a renamed view keeps its size under its new name
	if err := exec(reader, fmt.Sprintf("ALTER VIEW v%d RENAME TO w", at-2)); err != nil {
		t.Fatal(err)
	}
	if err := exec(reader, "SELECT count(*) FROM w a, w b, w c, w d, w e"); sqlstate(err) != "54001" {
		t.Errorf("a renamed view named five times: %v, want 54001", err)
	}
	// a statement prepared while what it names was small is checked again
	// once a macro it names grew: the server prepares it again at times
	// (after a SET, or while another portal holds it), binding the macro
	// as it is then
	if err := exec(reader, "CREATE TEMP MACRO grows(x) AS x + 1"); err != nil {
		t.Fatal(err)
	}
	many := "SELECT 0" + strings.Repeat(" + grows(1)", 100)
	if _, err := reader.Prepare(ctx, "many", many); err != nil {
		t.Fatal(err)
	}
	if err := exec(reader, "PREPARE many_sql AS "+many); err != nil {
		t.Fatal(err)
	}
	if err := reader.QueryRow(ctx, "many").Scan(&n); err != nil || n != 200 {
		t.Fatalf("the prepared statement before the replacement: %d, %v", n, err)
	}
	if err := exec(reader, fmt.Sprintf("CREATE OR REPLACE TEMP MACRO grows(x) AS m%d(x)", at-2)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := reader.Exec(ctx, "many"); sqlstate(err) != "54001" {
		t.Errorf("a prepared statement after what it names grew: %v, want 54001", err)
	}
	for _, q := range []string{"EXECUTE many_sql", "EXPLAIN EXECUTE many_sql", "EXPLAIN ANALYZE EXECUTE many_sql"} {
		if err := exec(reader, q); sqlstate(err) != "54001" {
			t.Errorf("%s after what it names grew: %v, want 54001", q, err)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the refusals took %v", took)
	}
	// a view with a column of its own name, a macro with a parameter of
	// its own name: no cycle
	for _, sql := range []string{"CREATE TEMP VIEW total AS SELECT 42 AS total", "CREATE TEMP MACRO twice(twice) AS twice * 2"} {
		if err := exec(reader, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := reader.QueryRow(ctx, "SELECT twice(total) FROM total").Scan(&n); err != nil || n != 84 {
		t.Errorf("a view and a macro that name themselves: %d, %v", n, err)
	}
	// the session goes on
	if err := reader.QueryRow(ctx, "SELECT m1(1)").Scan(&n); err != nil || n != 4 {
		t.Errorf("after the refusals: %d, %v", n, err)
	}

	// an admin's session is not bounded
	admin := as("ada")
	if at := chain(admin, "macro", 14); at != 0 {
		t.Errorf("the admin's chain refused at %d", at)
	}
}

// TestReadEpochPreparesOnlyWhatRuns: once the read epoch moved (E1), an
// EXECUTE, or EXPLAIN ANALYZE EXECUTE, prepares again the statement it
// runs, after P6 and P5 on it as its TEMP macros are now; the session's
// other SQL PREPAREs stay as they were, and a deallocated one stays gone.
func TestReadEpochPreparesOnlyWhatRuns(t *testing.T) {
	var epoch atomic.Uint64
	s := startServer(t, func(c *sqlserver.Config) {
		readerAndAdmin(c)
		c.ReadEpoch = epoch.Load
	})
	ctx := ctxT(t)
	rita := s.connectAs(t, "rita", "pw")
	simple := func(sql string) error {
		_, err := rita.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol)
		return err
	}
	for _, q := range []string{
		"CREATE TEMP MACRO grows(x) AS x + 1",
		"PREPARE big AS SELECT 0" + strings.Repeat(" + grows(1)", 100),
		"PREPARE small AS SELECT 41 + 1",
		"PREPARE gone AS SELECT 1",
		"DEALLOCATE gone",
		"CREATE TEMP MACRO m0(x) AS x + 1",
	} {
		if err := simple(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for i := 1; i <= 9; i++ {
		if err := simple(fmt.Sprintf("CREATE TEMP MACRO m%d(x) AS m%d(x) + m%d(x)", i, i-1, i-1)); err != nil {
			t.Fatal(err)
		}
	}
	// big now expands past P5's bound; small names nothing that grew
	if err := simple("CREATE OR REPLACE TEMP MACRO grows(x) AS m9(x)"); err != nil {
		t.Fatal(err)
	}
	epoch.Add(1)
	var n int
	if err := rita.QueryRow(ctx, "EXECUTE small", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 42 {
		t.Errorf("EXECUTE small after the epoch moved: %d, %v", n, err)
	}
	for _, q := range []string{"EXECUTE big", "EXPLAIN ANALYZE EXECUTE big"} {
		if err := simple(q); sqlstate(err) != "54001" {
			t.Errorf("%s after the epoch moved and what it names grew: %v, want 54001", q, err)
		}
	}
	if err := simple("EXECUTE gone"); err == nil {
		t.Error("a deallocated statement ran again after the epoch moved")
	}
	// a PREPARE DuckDB refuses leaves DuckDB's statement of that name, and
	// the server's record of it, as they were: EXECUTE is checked against
	// what runs
	if err := simple("PREPARE big AS SELECT no_such_column"); err == nil {
		t.Fatal("PREPARE of a missing column was accepted")
	}
	if err := simple("EXECUTE big"); sqlstate(err) != "54001" {
		t.Errorf("EXECUTE big after a refused PREPARE of its name: %v, want 54001", err)
	}
	// a name with capitals, which DuckDB keeps and finds whatever the case
	if err := simple(`PREPARE "MixedCase" AS SELECT 41 + 1`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		epoch.Add(1)
		if err := rita.QueryRow(ctx, "EXECUTE MixedCase", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 42 {
			t.Errorf("EXECUTE MixedCase after the epoch moved: %d, %v", n, err)
		}
	}
	// a statement parsed, never executed, prepares nothing
	if _, err := rita.Prepare(ctx, "parsed_only", "PREPARE small AS SELECT 0 + grows(1)"); err != nil {
		t.Fatal(err)
	}
	if err := rita.QueryRow(ctx, "EXECUTE small", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 42 {
		t.Errorf("EXECUTE small after a PREPARE of its name was only parsed: %d, %v", n, err)
	}
	if err := simple("EXECUTE never_prepared"); sqlstate(err) != "26000" {
		t.Errorf("EXECUTE of a name never prepared: %v, want 26000", err)
	}
	// DuckDB folds only A-Z in a statement's name: "ä" and "Ä" are two
	// statements, and the record of one is not the other's
	if err := simple(`CREATE OR REPLACE TEMP MACRO grows2(x) AS x + 1`); err != nil {
		t.Fatal(err)
	}
	if err := simple(`PREPARE "ä" AS SELECT 0` + strings.Repeat(" + grows2(1)", 100)); err != nil {
		t.Fatal(err)
	}
	if err := simple(`PREPARE "Ä" AS SELECT 1`); err != nil {
		t.Fatal(err)
	}
	if err := simple("CREATE OR REPLACE TEMP MACRO grows2(x) AS m9(x)"); err != nil {
		t.Fatal(err)
	}
	if err := simple(`EXECUTE "ä"`); sqlstate(err) != "54001" {
		t.Errorf(`EXECUTE "ä" after what it names grew, with "Ä" prepared after it: %v, want 54001`, err)
	}
	if err := rita.QueryRow(ctx, `EXECUTE "Ä"`, pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 1 {
		t.Errorf(`EXECUTE "Ä": %d, %v`, n, err)
	}
	// DEALLOCATE "ä2" ends "ä2" only: the record of "Ä2", which a statement
	// parsed before names, stays, and is what P5 checks when it runs
	for _, q := range []string{
		"CREATE OR REPLACE TEMP MACRO grows3(x) AS x + 1",
		`PREPARE "Ä2" AS SELECT 0` + strings.Repeat(" + grows3(1)", 100),
		`PREPARE "ä2" AS SELECT 1`,
	} {
		if err := simple(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := rita.Prepare(ctx, "exec_upper", `EXECUTE "Ä2"`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DEALLOCATE "ä2"`, "CREATE OR REPLACE TEMP MACRO grows3(x) AS m9(x)"} {
		if err := simple(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := rita.Exec(ctx, "exec_upper"); sqlstate(err) != "54001" {
		t.Errorf(`a statement of EXECUTE "Ä2" after DEALLOCATE "ä2" and its macro grew: %v, want 54001`, err)
	}
	epoch.Add(1)
	if err := rita.QueryRow(ctx, "EXPLAIN ANALYZE EXECUTE small", pgx.QueryExecModeSimpleProtocol).Scan(new(string), new(string)); err != nil {
		t.Errorf("EXPLAIN ANALYZE EXECUTE small after the epoch moved again: %v", err)
	}
}

// TestExecuteOfAReplacedPrepare: a protocol-level statement of EXECUTE p
// keeps no DuckDB statement (X1): run after p was prepared again or
// deallocated it answers what p is then, or that p does not exist. Before,
// DuckDB ran the kept statement on p's freed plan and the process died
// (SIGSEGV in duckdb_pending_prepared).
func TestExecuteOfAReplacedPrepare(t *testing.T) {
	asReaderAndAdmin(t, func(t *testing.T, ctx context.Context, c *pgx.Conn) {
		simple := func(sql string) {
			t.Helper()
			if _, err := c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		simple("PREPARE p AS SELECT 1")
		if _, err := c.Prepare(ctx, "ex", "EXECUTE p"); err != nil {
			t.Fatal(err)
		}
		var n int
		for want := 1; want <= 3; want++ {
			if want > 1 {
				simple(fmt.Sprintf("PREPARE p AS SELECT %d", want))
			}
			if err := c.QueryRow(ctx, "ex").Scan(&n); err != nil || n != want {
				t.Fatalf("EXECUTE p after p became SELECT %d: %d, %v", want, n, err)
			}
		}
		simple("DEALLOCATE p")
		if err := c.QueryRow(ctx, "ex").Scan(&n); err == nil {
			t.Fatal("EXECUTE p after DEALLOCATE p answered")
		}
		// a cursor over EXECUTE p, fetched after p changed shape: an
		// error, not values under the old description (and, in binary,
		// not a session that panicked encoding them)
		simple("PREPARE p AS SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID AS u")
		for _, binary := range []string{"", "BINARY "} {
			simple("BEGIN")
			simple("DECLARE c " + binary + "CURSOR FOR EXECUTE p")
			simple("DEALLOCATE p")
			simple("PREPARE p AS SELECT 'hello' AS u")
			rows, err := c.Query(ctx, "FETCH 1 FROM c", pgx.QueryExecModeSimpleProtocol)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
			}
			if err == nil {
				t.Errorf("%scursor over EXECUTE p after p changed shape: no error", binary)
			}
			t.Logf("%scursor over EXECUTE p after p changed shape: %v", binary, err)
			simple("ROLLBACK")
			simple("DEALLOCATE p")
			simple("PREPARE p AS SELECT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID AS u")
		}
		// the server is up, the session usable
		if err := c.QueryRow(ctx, "SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
			t.Fatalf("after: %d, %v", n, err)
		}
	})
}

// TestExecuteAsAName: a column, alias or table named execute is no
// EXECUTE: such statements prepare, bind and run again like any other
// (X1 took them for one, and its shape check then refused them all).
func TestExecuteAsAName(t *testing.T) {
	asReaderAndAdmin(t, func(t *testing.T, ctx context.Context, c *pgx.Conn) {
		if _, err := c.Exec(ctx, "CREATE TEMP TABLE t(a int)", pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{"INSERT INTO t SELECT $1::INTEGER AS execute FROM range(1)", []any{7}},
			{"UPDATE t SET a = 1 WHERE a IN (SELECT 1 AS execute FROM range(1))", nil},
			{"CREATE TEMP TABLE IF NOT EXISTS execute AS SELECT 1 AS a", nil},
			{"SELECT a AS execute FROM t WHERE a > $1::INTEGER", []any{0}},
		} {
			for range 3 { // prepared once, run again from the cache
				if _, err := c.Exec(ctx, q.sql, q.args...); err != nil {
					t.Fatalf("%s: %v", q.sql, err)
				}
			}
		}
	})
}
