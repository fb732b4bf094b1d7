package sqlserver

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// likeRegexp is LIKE as DuckDB reads it without ESCAPE, as a regular
// expression: % any run of characters, _ one, every other byte itself.
func likeRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)\A`)
	for _, r := range p {
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`\z`)
	return regexp.MustCompile(b.String())
}

// TestLikeMatchesItsDefinition compares likeMatch with the regular
// expression of each pattern over random strings of a small alphabet
// (multi-byte characters and the wildcards themselves among them).
func TestLikeMatchesItsDefinition(t *testing.T) {
	alphabet := []string{"a", "b", "/", "%", "_", "é", "\\", "\n"}
	rnd := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		var b strings.Builder
		for range rnd.IntN(n) {
			b.WriteString(alphabet[rnd.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		p, s := word(6), word(8)
		want := likeRegexp(p).MatchString(s)
		if got := compileLike(p).match(s); got != want {
			t.Fatalf("%q LIKE %q: %v, want %v", s, p, got, want)
		}
	}
}

// unsortedRows hides SortedRows: apply then scans and sorts everything.
type unsortedRows struct{ NativeRows }

type sortedStrings struct {
	vals []string
	n    []int64
}

func (s sortedStrings) Len() int { return len(s.vals) }
func (s sortedStrings) Cell(row, col int) NativeValue {
	if col == 0 {
		return NativeString(s.vals[row])
	}
	return NativeInt(s.n[row])
}
func (s sortedStrings) SortedBy(col int) bool { return col == 0 }

// TestSortedRowsAnswerAsAScan: bounds and the early stop on rows sorted by
// a column give what filtering and sorting every row gives, for random
// conditions on that column and another, ORDER BY, LIMIT and OFFSET.
func TestSortedRowsAnswerAsAScan(t *testing.T) {
	fn := NativeFunction{Columns: []NativeColumn{{Name: "url", Type: duckdb.TYPE_VARCHAR}, {Name: "n", Type: duckdb.TYPE_BIGINT}}}
	scope := itemScope(fn.Columns, "f")
	rnd := rand.New(rand.NewPCG(3, 4))
	letters := "abc/"
	word := func() string {
		b := make([]byte, 1+rnd.IntN(4))
		for i := range b {
			b[i] = letters[rnd.IntN(len(letters))]
		}
		return string(b)
	}
	conds := []string{"url = $1", "url > $1", "url >= $1", "url < $1", "url <= $1", "url <> $1", "url LIKE $2", "url NOT LIKE $2", "n > 3", "n <> 2",
		"url IN ($1, 'b')", "url NOT IN ($1, 'a/')", "url BETWEEN $1 AND 'b/'", "url BETWEEN 'a' AND $1", "n IN (1, 3)", "n NOT IN (0)"}
	orders := []string{"", " ORDER BY url", " ORDER BY url DESC", " ORDER BY n, url", " ORDER BY url, n DESC"}
	for round := range 3000 {
		set := map[string]bool{}
		for range rnd.IntN(30) {
			set[word()] = true
		}
		rows := sortedStrings{}
		for w := range set {
			rows.vals = append(rows.vals, w)
		}
		slices.Sort(rows.vals)
		for range rows.vals {
			rows.n = append(rows.n, rnd.Int64N(6))
		}
		var where []string
		for range rnd.IntN(3) {
			where = append(where, conds[rnd.IntN(len(conds))])
		}
		q := "SELECT url, n FROM f()"
		if len(where) > 0 {
			q += " WHERE " + strings.Join(where, " AND ")
		}
		q += orders[rnd.IntN(len(orders))]
		if rnd.IntN(2) == 0 {
			q += fmt.Sprintf(" LIMIT %d", rnd.IntN(5))
		}
		if rnd.IntN(3) == 0 {
			q += fmt.Sprintf(" OFFSET %d", rnd.IntN(4))
		}
		sel, ok, err := matchNativeTail(pgsql.Significant(pgsql.Lex(q))[8:], &scope, nil)
		if err != nil || !ok {
			t.Fatalf("%s: not a native shape (%v)", q, err)
		}
		if sel == nil {
			continue
		}
		params := []any{word(), []string{"a%", "%b", "a_%", "ab", "%", "/%", "c%/"}[rnd.IntN(7)]}
		param := func(n int, t duckdb.Type) (any, error) { return compareValue(params[n-1], t) }
		got, err := sel.apply(newStopCheck(context.Background()), rows, param)
		if err != nil {
			t.Fatal(err)
		}
		want, err := sel.apply(newStopCheck(context.Background()), unsortedRows{rows}, param)
		if err != nil {
			t.Fatal(err)
		}
		show := func(r NativeRows) (out []string) {
			for i := range r.Len() {
				out = append(out, fmt.Sprint(r.Cell(i, 0).s, r.Cell(i, 1).n))
			}
			return out
		}
		if g, w := show(got), show(want); !slices.Equal(g, w) {
			t.Fatalf("round %d: %s with %q over %q:\nsorted %q\nscan   %q", round, q, params, rows.vals, g, w)
		}
	}
}

// randomSortCase is n rows of (BIGINT of 6 values, INTEGER of 5 or NULL,
// a string of texts values) with many ties, and an ORDER BY of 1 to 3 of
// those columns in random directions and NULL orders.
func randomSortCase(rng *rand.Rand, n, texts int) (boxedRows, *nativeSelect) {
	var rows boxedRows
	for range n {
		var maybeNull any = int32(rng.IntN(5))
		if rng.IntN(4) == 0 {
			maybeNull = nil
		}
		rows = append(rows, []any{int64(rng.IntN(6)), maybeNull, fmt.Sprint(rng.IntN(texts))})
	}
	var order []nativeOrder
	for range 1 + rng.IntN(3) {
		order = append(order, nativeOrder{col: rng.IntN(3), desc: rng.IntN(2) == 0, nullsFirst: rng.IntN(2) == 0})
	}
	return rows, &nativeSelect{order: order}
}

// TestSortRowsOrdersAsAStableSortWould: sortRows (one integer key: its
// fast path; else keys read once) orders rows as a stable sort of the
// function's rows by the ORDER BY keys does, ties in the function's order,
// NULLs where NULLS FIRST/LAST puts them: on random rows with many ties,
// NULLs in some columns, and every direction.
func TestSortRowsOrdersAsAStableSortWould(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 30))
	for trial := range 300 {
		rows, sel := randomSortCase(rng, rng.IntN(70), 4)
		order := sel.order
		idx := make([]int, len(rows))
		for i := range idx {
			idx[i] = i
		}
		want := slices.Clone(idx)
		slices.SortStableFunc(want, func(a, b int) int {
			for _, o := range order {
				x, y := rows.Cell(a, o.col), rows.Cell(b, o.col)
				if c := o.compare(&x, &y); c != 0 {
					return c
				}
			}
			return 0
		})
		if got := sel.sortRows(newStopCheck(context.Background()), rows, idx); !slices.Equal(got, want) {
			t.Fatalf("trial %d, order %+v over %v: %v, want %v", trial, order, rows, got, want)
		}
	}
}

// TestTopRowsAreTheSortsFirstRows: topRows (ORDER BY … LIMIT k with a
// heap of k) answers sortRows' first k rows, ties and NULLs included.
func TestTopRowsAreTheSortsFirstRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 31))
	for trial := range 500 {
		rows, sel := randomSortCase(rng, rng.IntN(90), 40)
		var idx []int
		for i := range rows {
			if rng.IntN(5) != 0 { // the rows a WHERE kept
				idx = append(idx, i)
			}
		}
		k := rng.IntN(len(idx) + 2)
		want := sel.sortRows(newStopCheck(context.Background()), rows, slices.Clone(idx))
		want = want[:min(k, len(want))]
		if got := sel.topRows(newStopCheck(context.Background()), rows, slices.Clone(idx), k); !slices.Equal(got, want) {
			t.Fatalf("trial %d, order %+v, k %d over %v: %v, want %v", trial, sel.order, k, rows, got, want)
		}
	}
}

// TestBoolNodeThreeValuedLogic: NOT, AND and OR of every pair of truths
// follow SQL's tables (false < NULL < true: AND the least, OR the
// greatest, NOT NULL is NULL).
func TestBoolNodeThreeValuedLogic(t *testing.T) {
	truths := []truth{truthFalse, truthNull, truthTrue}
	leaf := func(k int) truth { return truths[k] }
	not := map[truth]truth{truthFalse: truthTrue, truthNull: truthNull, truthTrue: truthFalse}
	for a := range truths {
		if got := (&boolNode{op: '!', kids: []*boolNode{{op: 'c', leaf: a}}}).eval(leaf); got != not[truths[a]] {
			t.Errorf("NOT %d = %d", truths[a], got)
		}
		for b := range truths {
			x, y := &boolNode{op: 'c', leaf: a}, &boolNode{op: 'c', leaf: b}
			and := (&boolNode{op: 'c', leaf: a}).join('&', y).eval(leaf)
			or := x.join('|', &boolNode{op: 'c', leaf: b}).eval(leaf)
			if and != min(truths[a], truths[b]) || or != max(truths[a], truths[b]) {
				t.Errorf("%d AND %d = %d, OR = %d", truths[a], truths[b], and, or)
			}
		}
	}
}

// TestInSetAgreesWithTheList: a long IN list's set finds a cell exactly
// when a pass over the list with compareCell does, for integers of either
// sign and Go type against cells of either kind, and for strings.
func TestInSetAgreesWithTheList(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 32))
	for trial := range 200 {
		var vals []any
		strs := trial%2 == 0
		for range inSetFrom + 1 + rng.IntN(40) {
			switch {
			case strs:
				vals = append(vals, fmt.Sprint(rng.IntN(60)))
			case rng.IntN(2) == 0:
				vals = append(vals, int64(rng.IntN(60)-30))
			default:
				vals = append(vals, uint64(rng.IntN(30)))
			}
		}
		list := inList{vals: vals}
		set := list.indexed()
		if set.set == nil {
			t.Fatalf("trial %d: no set for %d values", trial, len(vals))
		}
		for range 100 {
			var cell NativeValue
			switch {
			case strs:
				cell = NativeString(fmt.Sprint(rng.IntN(80)))
			case rng.IntN(2) == 0:
				cell = NativeInt(int64(rng.IntN(80) - 40))
			default:
				cell = NativeUint(uint64(rng.IntN(40)))
			}
			if got, want := set.has(cell), list.has(cell); got != want {
				t.Fatalf("trial %d: %v in %v: set %v, list %v", trial, cell, vals, got, want)
			}
		}
	}
}

// TestNoColumnWordsAreDuckDBs: the native path's words that are no bare
// column (duckNoColumn) are DuckDB's reserved words and the type_function
// words its parser refuses as a column, so a statement with one goes to
// DuckDB, which refuses it, and no other word does.
func TestNoColumnWordsAreDuckDBs(t *testing.T) {
	e, err := OpenEngine(context.Background(), EngineConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	words, err := e.keywords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reserved, err := e.reservedKeywords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for w := range words {
		_, refused := e.db.Exec(`SELECT ` + w + ` FROM (SELECT 1 AS "` + w + `") t`)
		if reserved[w] || refused != nil {
			want[w] = true
		}
	}
	if !maps.Equal(want, duckNoColumn) {
		t.Errorf("DuckDB reads as no column %v; the native path %v", slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(duckNoColumn)))
	}
	scope := itemScope([]NativeColumn{{Name: "offset"}, {Name: "url"}, {Name: "left"}}, "u")
	for _, c := range []struct {
		ref  string
		want int
	}{{"offset", -1}, {`"offset"`, 0}, {"u.offset", 0}, {"url", 1}, {"offset.url", -1}, {"left", -1}, {"u.left", 2}} {
		if col, _ := scope.resolve(pgsql.Significant(pgsql.Lex(c.ref)), 0); col != c.want {
			t.Errorf("%s resolves to column %d, want %d", c.ref, col, c.want)
		}
	}
}

// TestUsingListRefusesNoColumnWords: a bare reserved word in a join's
// USING list is DuckDB's syntax error, not a native join.
func TestUsingListRefusesNoColumnWords(t *testing.T) {
	fn := NativeFunction{
		Args:    []duckdb.Type{duckdb.TYPE_VARCHAR},
		Columns: []NativeColumn{{Name: "url", Type: duckdb.TYPE_VARCHAR, Unique: true}, {Name: "offset", Type: duckdb.TYPE_BIGINT}},
		Run:     func(context.Context, []any) ([][]any, error) { return nil, nil },
	}
	fns := map[string]NativeFunction{"f": fn}
	for q, native := range map[string]bool{
		`SELECT a.url FROM f('x') AS a JOIN f('y') AS b USING (url)`:                              true,
		`SELECT a.url FROM f('x') AS a JOIN f('y') AS b USING (url, "offset")`:                    true,
		`SELECT a.url FROM f('x') AS a JOIN f('y') AS b USING (url, offset)`:                      false,
		`SELECT a.url FROM f('x') AS a JOIN f('y') AS b ON a.url = b.url`:                         true,
		`SELECT a.url FROM f('x') AS a JOIN f('y') AS b ON a.offset = b.offset AND a.url = b.url`: true,
	} {
		nc, err := matchNative(pgsql.Significant(pgsql.Lex(q)), fns, nil, nil)
		if err != nil || (nc != nil) != native {
			t.Errorf("%s: native %v (%v), want %v", q, nc != nil, err, native)
		}
	}
}
