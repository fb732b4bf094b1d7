package sqlserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestMacroExpansionIsBounded: P6. A reader's statement that DuckDB's
// binder would copy past the bound — built-in macros nested (nullif copies
// its first argument twice), a TEMP macro that names its parameter twice,
// a chain of NOT MATERIALIZED CTEs — is refused with 54001 at once, where
// it took DuckDB 37 s and more, past statement_timeout and cancels; the
// shapes people write, and an admin's, answer.
func TestMacroExpansionIsBounded(t *testing.T) {
	s := startServer(t, readerAndAdmin)
	ctx := ctxT(t)
	reader := s.connectAs(t, "rita", "pw")
	nested := func(fn string, n int) string {
		x := "1"
		for i := 0; i < n; i++ {
			x = fn + "(" + x + ", 2)"
		}
		return "SELECT " + x
	}
	chain := func(n int) string {
		var b strings.Builder
		b.WriteString("WITH a0 AS (SELECT 1 AS x)")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, ", a%d AS NOT MATERIALIZED (SELECT * FROM a%d UNION ALL SELECT * FROM a%d)", i, i-1, i-1)
		}
		fmt.Fprintf(&b, " SELECT count(*) FROM a%d", n)
		return b.String()
	}
	if _, err := reader.Exec(ctx, "CREATE TEMP MACRO twice(x, y := 0) AS x + x"); err != nil {
		t.Fatal(err)
	}
	method := func(fn string, n int) string { // (1).nullif(2).nullif(2)...
		return "SELECT (1)" + strings.Repeat("."+fn+"(2)", n)
	}
	simpleCase := func(n int) string {
		x := "1"
		for i := 0; i < n; i++ {
			x = "CASE " + x + " WHEN 1 THEN 1 WHEN 2 THEN 2 WHEN 3 THEN 3 END"
		}
		return "SELECT " + x
	}
	for _, q := range []string{nested("nullif", 20), nested("twice", 20), chain(20), "CREATE TEMP VIEW v AS " + nested("nullif", 20),
		method("nullif", 22), method("twice", 20), simpleCase(15)} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			start := time.Now()
			_, err := reader.Exec(ctx, q, mode)
			if sqlstate(err) != "54001" {
				t.Errorf("%.60s… (%v): %v, want 54001", q, mode, err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("%.60s… refused after %v", q, took)
			}
		}
	}
	for _, q := range []string{nested("nullif", 6), nested("twice", 6), chain(6), method("nullif", 6), simpleCase(4),
		"SELECT CASE WHEN 1 = 1 THEN 'a' WHEN 2 = 2 THEN 'b' ELSE 'c' END",
		"WITH RECURSIVE r(n) AS NOT MATERIALIZED (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT count(*) FROM r"} {
		if _, err := reader.Exec(ctx, q); err != nil {
			t.Errorf("%.60s…: %v", q, err)
		}
	}
	// a SQL PREPARE of a TEMP macro that grows afterwards: its EXECUTE is
	// checked as what it runs
	for _, q := range []string{"CREATE TEMP MACRO grows(x, y) AS x", "PREPARE g AS " + nested("grows", 20), "CREATE OR REPLACE TEMP MACRO grows(x, y) AS x + x"} {
		if _, err := reader.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%.60s…: %v", q, err)
		}
	}
	if _, err := reader.Exec(ctx, "EXECUTE g", pgx.QueryExecModeSimpleProtocol); sqlstate(err) != "54001" {
		t.Errorf("EXECUTE of a statement whose macro grew: %v, want 54001", err)
	}
	admin := s.connectAs(t, "ada", "pw")
	if _, err := admin.Exec(ctx, nested("nullif", 12)); err != nil {
		t.Errorf("an admin's nullif nested 12 deep: %v", err)
	}
}

// TestPrepareHonoursStatementTimeout: DuckDB's binder, which P6 bounds for
// readers, runs for an admin too; preparing now answers statement_timeout
// and cancels. nullif nested 17 deep binds in about 10 s and then answers
// 1; under a timeout of 1 s it ends with 57014 (its binder looks for an
// interrupt only now and then: 2-3 s after it).
func TestPrepareHonoursStatementTimeout(t *testing.T) {
	s := startServer(t, readerAndAdmin)
	// the binder's pauses grow with the machine's load: 6 s alone, 25 s
	// beside four busy loops; the test asserts the code, not the time
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := s.connectAs(t, "ada", "pw")
	if _, err := admin.Exec(ctx, "SET statement_timeout = '1s'"); err != nil {
		t.Fatal(err)
	}
	x := "1"
	for i := 0; i < 17; i++ {
		x = "nullif(" + x + ", 2)"
	}
	start := time.Now()
	_, err := admin.Exec(ctx, "SELECT "+x)
	took := time.Since(start)
	if sqlstate(err) != "57014" {
		t.Errorf("%v after %v, want 57014", err, took)
	}
	t.Logf("ended after %v", took)
	var one int
	if err := admin.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("the session after: %v %v", one, err)
	}
}
