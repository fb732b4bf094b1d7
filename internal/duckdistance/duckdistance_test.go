package duckdistance

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/internal/duckcapi/duckcapitest"
)

// TestAgreesWithDuckDB: on random pairs, ASCII and not, empty and not,
// each function answers as DuckDB 1.5.5's own.
func TestAgreesWithDuckDB(t *testing.T) {
	builtin, ours := duckcapitest.DBs(t, Register)
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", "c", "ab", "ba", "é", "€", "x"}
	pick := func(max int) string {
		var b strings.Builder
		for n := r.IntN(max + 1); n > 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	var values strings.Builder
	for i := 0; i < 3000; i++ {
		if i > 0 {
			values.WriteString(",")
		}
		max := 8
		if i%10 == 0 {
			max = 60
		}
		fmt.Fprintf(&values, "(%d,%s,%s)", i, duckcapitest.Quote(pick(max)), duckcapitest.Quote(pick(max)))
	}
	for _, fn := range []string{"levenshtein", "editdist3", "damerau_levenshtein"} {
		q := fmt.Sprintf("SELECT a, b, %s(a, b) FROM (VALUES %s) t(i, a, b) ORDER BY i", fn, values.String())
		want, err := answers(builtin, q)
		if err != nil {
			t.Fatalf("%s, DuckDB's: %v", fn, err)
		}
		got, err := answers(ours, q)
		if err != nil {
			t.Fatalf("%s, ours: %v", fn, err)
		}
		bad := 0
		for i := range want {
			if got[i] != want[i] {
				if bad++; bad <= 10 {
					t.Errorf("%s: DuckDB %s, ours %s", fn, want[i], got[i])
				}
			}
		}
	}
	// NULL in, NULL out
	var v sql.NullInt64
	if err := ours.QueryRow(`SELECT levenshtein(NULL::VARCHAR, 'a')`).Scan(&v); err != nil || v.Valid {
		t.Errorf("levenshtein(NULL, 'a') = %v, %v", v, err)
	}
}

func answers(db *sql.DB, q string) ([]string, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a, b string
		var d int64
		if err := rows.Scan(&a, &b, &d); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%q %q → %d", a, b, d))
	}
	return out, rows.Err()
}

// TestBounded: a pair past the bound is an error at once, where DuckDB's
// own would compute for minutes.
func TestBounded(t *testing.T) {
	_, ours := duckcapitest.DBs(t, Register)
	for _, q := range []string{
		`SELECT levenshtein(repeat('a', 100000), repeat('b', 100000))`,
		`SELECT damerau_levenshtein(repeat('a', 10000), repeat('b', 10000))`,
	} {
		start := time.Now()
		_, err := ours.Exec(q)
		if err == nil || !strings.Contains(err.Error(), ErrTooLarge.Error()) {
			t.Errorf("%s: %v", q, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: %v", q, took)
		}
	}
	if _, err := Levenshtein(strings.Repeat("a", 8000), strings.Repeat("b", 8000)); err != nil {
		t.Errorf("8,000 bytes each: %v", err)
	}
	if _, err := DamerauLevenshtein(strings.Repeat("a", 3000), strings.Repeat("b", 3000)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("damerau 3,000 bytes each: %v", err)
	}
}

// BenchmarkDistanceScan: edit distances over 500k URL-like strings,
// DuckDB's functions against ours.
func BenchmarkDistanceScan(b *testing.B) {
	builtin, ours := duckcapitest.DBs(b, Register)
	duckcapitest.URLs(b, 500000, builtin, ours)
	for _, which := range []string{"duckdb", "dhsi"} {
		db := builtin
		if which == "dhsi" {
			db = ours
		}
		for _, fn := range []string{"levenshtein", "damerau_levenshtein"} {
			b.Run(which+"/"+fn, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					var n int64
					if err := db.QueryRow(`SELECT sum(` + fn + `(url, 'https://www.example12.com/path/0123456789abcdef.html')) FROM u`).Scan(&n); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkLevenshtein8000(b *testing.B) {
	x, y := strings.Repeat("ab", 4000), strings.Repeat("ba", 4000)
	for i := 0; i < b.N; i++ {
		Levenshtein(x, y)
	}
}
