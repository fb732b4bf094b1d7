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
