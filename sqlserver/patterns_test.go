package sqlserver_test

import (
	"strings"
	"testing"
	"time"
)

// TestPatternMatchesEndAtOnce: the LIKE, ILIKE and GLOB shapes that ran
// past statement_timeout, cancels and SIGTERM on DuckDB 1.5.5's own
// functions (a reader's `repeat('a', 60) ILIKE repeat('%a', 12) || 'b'`
// past 60 s) answer at once, by either protocol, and ordinary patterns
// answer as before.
func TestPatternMatchesEndAtOnce(t *testing.T) {
	s := startServer(t, readerAndAdmin)
	ctx := ctxT(t)
	reader := s.connectAs(t, "rita", "pw")
	if _, err := reader.Exec(ctx, "SET statement_timeout = '2s'"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT repeat('a', 60) ILIKE repeat('%a', 12) || 'b'`,
		`SELECT repeat('a', 2000) ILIKE '%a%a%a%b'`,
		`SELECT repeat('a', 60) GLOB repeat('*a', 12) || 'b'`,
		`SELECT x LIKE y FROM (VALUES (repeat('a', 60), repeat('%a', 12) || 'b')) t(x, y)`,
		`SELECT x NOT LIKE y FROM (VALUES (repeat('a', 60), repeat('%_', 12) || 'b')) t(x, y)`,
		`SELECT like_escape(repeat('a', 60), repeat('%a', 12) || 'b', '\')`,
	} {
		start := time.Now()
		var v bool
		if err := reader.QueryRow(ctx, q).Scan(&v); err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: %v", q, took)
		}
		if want := strings.Contains(q, "NOT LIKE"); v != want {
			t.Errorf("%s = %v", q, v)
		}
	}
	var a, b, c, d bool
	if err := reader.QueryRow(ctx, `SELECT 'https://Example.com/a_b' LIKE 'https://%/a\_b' ESCAPE '\', 'ÉCOLE' ILIKE 'éc%', 'a.csv' GLOB '*.[ct]sv', $1::VARCHAR LIKE '%.com%'`, "x.com/y").Scan(&a, &b, &c, &d); err != nil || !a || !b || !c || !d {
		t.Errorf("ordinary patterns: %v %v %v %v %v", a, b, c, d, err)
	}
}
