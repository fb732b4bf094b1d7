package sqlserver_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestDeepNestingIsRefusedBeforeRewriting: statements nested thousands of
// levels deep made the server's own rewrites (ANY(ARRAY[...]), CAST ... AS
// regclass, format) hold gigabytes (6,000 levels of ANY(ARRAY[: 8.7 GB,
// then the process died). They are refused at once with 54001, by the
// simple and the extended protocol, and the session goes on; 500 levels
// still run. (1,001 redundant parentheses ran before: DuckDB accepts them.)
func TestDeepNestingIsRefusedBeforeRewriting(t *testing.T) {
	s := startServer(t)
	ctx := ctxT(t)
	conn := s.connect(t)
	deep := map[string]string{
		"any":     "SELECT " + strings.Repeat("1 = ANY(ARRAY[", 6000) + "1" + strings.Repeat("])", 6000),
		"regcast": "SELECT " + strings.Repeat("CAST(", 6000) + "1" + strings.Repeat(" AS regclass)", 6000),
		"format":  "SELECT " + strings.Repeat("format('%s', ", 6000) + "'x'" + strings.Repeat(")", 6000),
		"parens":  "SELECT " + strings.Repeat("(", 1001) + "1" + strings.Repeat(")", 1001),
	}
	for name, sql := range deep {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			if _, err := conn.Exec(ctx, sql, mode); sqlstate(err) != "54001" {
				t.Errorf("%s (%v): %v, want 54001", name, mode, err)
			}
		}
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT "+strings.Repeat("(", 500)+"1"+strings.Repeat(")", 500)).Scan(&n); err != nil || n != 1 {
		t.Errorf("500 nested parentheses: %d, %v", n, err)
	}
}

// TestDeepExpressionsAreRefusedForNonAdmins: DuckDB's binder takes time
// that grows with the cube of an expression's depth, past statement_timeout
// and cancels (900 levels of row( ran 76 s, of || 37 s, of + 18 s, with no
// parenthesis for the nesting limit above to count in the last two). A
// reader's or writer's session refuses an expression deeper than 200
// levels with 54001 at once; 150 levels run; an admin keeps DuckDB's own
// limit of 1,000.
func TestDeepExpressionsAreRefusedForNonAdmins(t *testing.T) {
	s := startServer(t, readerAndAdmin)
	ctx := ctxT(t)
	as := func(user string) *pgx.Conn { return s.connectAs(t, user, "pw") }
	plus := func(n int) string { return "SELECT 1" + strings.Repeat("+1", n) }
	reader, admin := as("rita"), as("ada")
	for name, sql := range map[string]string{
		"+":    plus(300),
		"||":   "SELECT length(" + strings.Repeat("'a' || ", 300) + "'a')",
		"row(": "SELECT " + strings.Repeat("row(", 300) + "1" + strings.Repeat(")", 300) + " IS NULL",
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			_, err := reader.Exec(ctx, sql, mode)
			if sqlstate(err) != "54001" || !strings.Contains(err.Error(), "nested more than 200 levels deep") {
				t.Errorf("reader, 300 levels of %s (%v): %v, want 54001", name, mode, err)
			}
		}
	}
	var n int
	if err := reader.QueryRow(ctx, plus(150)).Scan(&n); err != nil || n != 151 {
		t.Errorf("reader, 150 levels of +: %d, %v", n, err)
	}
	if err := admin.QueryRow(ctx, plus(300)).Scan(&n); err != nil || n != 301 {
		t.Errorf("admin, 300 levels of +: %d, %v", n, err)
	}
}
