package duckpattern

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/internal/duckcapi/duckcapitest"
)

// TestPatternsAgreeWithDuckDB is patmatch's M1: on random strings and
// patterns, every replaced function answers as DuckDB 1.5.5's own.
func TestPatternsAgreeWithDuckDB(t *testing.T) {
	builtin, ours := duckcapitest.DBs(t, Register)
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(alphabet []string, max int) string {
		var b strings.Builder
		for n := r.IntN(max + 1); n > 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	strs := []string{"a", "b", "A", "B", "é", "É", "ß", "ǅ", "İ", "x", "%", "_", "*", "?", "[", "]", "\\", "-", "!", "^", "€", "𝄞"}
	likePat := []string{"a", "b", "A", "é", "É", "ß", "%", "%", "_", "_", "\\", "x", "X", "€", "𝄞", "[", "*"}
	globPat := []string{"a", "b", "A", "é", "*", "*", "?", "?", "[", "]", "!", "-", "\\", "^", "a-b", "[a-b]", "[!a]", "[]]", "x"}
	escapes := []string{"", "\\", "x", "X", "%", "_", "a"}
	const rows = 3000
	type row struct{ s, p, e string }
	var like, glob, long, longGlob []row
	for len(like) < rows {
		x := row{pick(strs, 6), pick(likePat, 5), escapes[r.IntN(len(escapes))]}
		if x.e != "" && (strings.HasSuffix(x.p, x.e) || strings.HasSuffix(strings.ToLower(x.p), x.e)) {
			continue // may be an error: TestPatternErrors
		}
		like = append(like, x)
	}
	// patterns of more than 63 tokens: patmatch's many-word states
	for len(long) < rows/3 {
		x := row{pick(strs, 200), pick(likePat, 140), ""}
		if len(x.p) > 70 && r.IntN(2) == 0 {
			x.s = strings.Repeat(x.p, 2) // wildcards over a string like the pattern
		}
		long = append(long, x)
		longGlob = append(longGlob, row{pick(strs, 200), pick(globPat, 120), ""})
	}
	for i := 0; i < rows; i++ {
		glob = append(glob, row{pick(strs, 6), pick(globPat, 4), ""})
	}
	values := func(rs []row) string {
		var b strings.Builder
		for i, x := range rs {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "(%d,%s,%s,%s)", i, duckcapitest.Quote(x.s), duckcapitest.Quote(x.p), duckcapitest.Quote(x.e))
		}
		return b.String()
	}
	cases := []struct {
		rows []row
		expr string
	}{
		{like, "s LIKE p"}, {like, "s NOT LIKE p"}, {like, "s ILIKE p"}, {like, "s NOT ILIKE p"},
		{like, "like_escape(s, p, e)"}, {like, "not_like_escape(s, p, e)"},
		{like, "ilike_escape(s, p, e)"}, {like, "not_ilike_escape(s, p, e)"},
		{glob, "s GLOB p"}, {glob, "NOT (s GLOB p)"}, {long, "s LIKE p"}, {long, "s ILIKE p"}, {longGlob, "s GLOB p"},
	}
	for _, c := range cases {
		q := fmt.Sprintf("SELECT i, s, p, e, (%s)::VARCHAR FROM (VALUES %s) t(i, s, p, e) ORDER BY i", c.expr, values(c.rows))
		want, err := patternAnswers(builtin, q)
		if err != nil {
			t.Fatalf("%s on DuckDB's: %v", c.expr, err)
		}
		got, err := patternAnswers(ours, q)
		if err != nil {
			t.Fatalf("%s on ours: %v", c.expr, err)
		}
		bad, trues := 0, 0
		for i := range want {
			if strings.HasSuffix(want[i], "→ true") {
				trues++
			}
			if got[i] != want[i] {
				if bad++; bad <= 10 {
					t.Errorf("%s: DuckDB %s, ours %s", c.expr, want[i], got[i])
				}
			}
		}
		if trues == 0 || trues == len(want) {
			t.Errorf("%s: %d of %d rows true: the test tells nothing", c.expr, trues, len(want))
		}
		t.Logf("%s: %d of %d rows agree, %d true", c.expr, len(want)-bad, len(want), trues)
	}
}

func patternAnswers(db *sql.DB, q string) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var i int
		var s, p, e string
		var v sql.NullString
		if err := rows.Scan(&i, &s, &p, &e, &v); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%q %q esc %q → %v", s, p, e, v.String))
	}
	return out, rows.Err()
}

// TestPatternErrors: an escape of two characters is refused as DuckDB
// refuses it; NULL in gives NULL out.
func TestPatternErrors(t *testing.T) {
	_, ours := duckcapitest.DBs(t, Register)
	for _, e := range []string{"xy", "é"} {
		if _, err := ours.Exec(`SELECT like_escape('a', 'a', ` + duckcapitest.Quote(e) + `)`); err == nil || !strings.Contains(err.Error(), "Escape string must be empty or one character") {
			t.Errorf("escape %q: %v", e, err)
		}
	}
	for _, q := range []string{
		`SELECT like_escape(x, y, '\') FROM (VALUES ('a', 'a\')) t(x, y)`,
		`SELECT ilike_escape(x, y, '\') FROM (VALUES ('a', 'a\')) t(x, y)`,
	} {
		if _, err := ours.Exec(q); err == nil || !strings.Contains(err.Error(), "must not end with escape character") {
			t.Errorf("%s: %v", q, err)
		}
	}
	var v sql.NullBool
	if err := ours.QueryRow(`SELECT NULL::VARCHAR ILIKE 'a'`).Scan(&v); err != nil || v.Valid {
		t.Errorf("NULL ILIKE: %v %v", v, err)
	}
}

// TestPatternsLinear: the shapes that ran past 60 s on DuckDB's own
// functions (docs/security.md) answer at once.
func TestPatternsLinear(t *testing.T) {
	_, ours := duckcapitest.DBs(t, Register)
	for _, q := range []string{
		`SELECT repeat('a', 60) ILIKE repeat('%a', 12) || 'b'`,
		`SELECT repeat('a', 2000) ILIKE '%a%a%a%b'`,
		`SELECT repeat('a', 60) GLOB repeat('*a', 12) || 'b'`,
		`SELECT x LIKE y FROM (VALUES (repeat('a', 100000), repeat('%a', 300) || 'b')) t(x, y)`,
		`SELECT like_escape(repeat('a', 100000), repeat('%_', 300) || 'b', '\')`,
	} {
		start := time.Now()
		var v bool
		if err := ours.QueryRow(q).Scan(&v); err != nil || v {
			t.Errorf("%s: %v %v", q, v, err)
		}
		t.Logf("%s: %v", q, time.Since(start))
	}
}

// BenchmarkPatternScan: scans' patterns that DuckDB's optimizer cannot
// turn into prefix, suffix or contains, on 500k URL-like strings, DuckDB's
// functions against ours.
func BenchmarkPatternScan(b *testing.B) {
	builtin, ours := duckcapitest.DBs(b, Register)
	duckcapitest.URLs(b, 500000, builtin, ours)
	for _, which := range []string{"duckdb", "dhsi"} {
		db := builtin
		if which == "dhsi" {
			db = ours
		}
		for _, cond := range []string{`url LIKE '%a%b%c%'`, `url LIKE '%a_b%c%'`, `url ILIKE '%EXAMPLE1%'`, `url GLOB '*a*b*c*'`} {
			b.Run(which+"/"+cond, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					var n int
					if err := db.QueryRow(`SELECT count(*) FROM u WHERE ` + cond).Scan(&n); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
