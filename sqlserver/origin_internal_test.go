package sqlserver

import (
	"fmt"
	"testing"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

func TestSingleTableSelectFindsColumnOrigins(t *testing.T) {
	cases := []struct {
		name, sql string
		want      string // schema.table:items, or "" when no origin is certain
	}{
		{"plain columns of one table", "SELECT id, name FROM items WHERE id > 1 ORDER BY id, name",
			".items:[{false id} {false name}]"},
		{"a star, a qualified column, an alias and an expression", `SELECT *, i.name AS n, price * 2 FROM public.items AS i`,
			"public.items:[{true } {false name} {false }]"},
		{"a quoted table name keeps its case", `SELECT "Id" FROM "Items"`, `.Items:[{false Id}]`},
		{"a join has no certain origin", "SELECT a.id FROM a JOIN b ON a.id = b.id", ""},
		{"two FROM items have no certain origin", "SELECT a.id FROM a, b", ""},
		{"a union has no certain origin", "SELECT id FROM a UNION SELECT id FROM b", ""},
		{"a table function is not a table", "SELECT i FROM range(3) t(i)", ""},
		{"a subquery in FROM is not a table", "SELECT x FROM (SELECT 1 AS x) s", ""},
		{"a statement that is not a SELECT", "INSERT INTO t VALUES (1)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema, table, items, ok := singleTableSelect(pgsql.Split(c.sql)[0].Significant())
			got := ""
			if ok {
				got = fmt.Sprintf("%s.%s:%v", schema, table, items)
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
