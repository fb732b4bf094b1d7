package sqlserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The BI-tool fixtures in testdata/bi hold the catalog queries DBeaver,
// Metabase, Grafana and Superset send when they connect and browse a schema,
// taken from their source (each file says from where). Each statement runs
// through pgx's extended protocol, as the tools' JDBC and Go drivers send
// them, against the schema biSchema makes.
//
// A fixture is a block of directives, then the SQL, ended by a line holding
// only ";":
//
//	-- name: what the tool asks (the subtest's name)
//	-- source: where in the tool's source the query comes from
//	-- param: $n's value, in order: text, or @ns:name (a schema's oid) or
//	--        @rel:name (a relation's oid)
//	-- want: a value some cell of the result must equal
//	-- want-not: a value no cell may equal
//	-- rows: N / min-rows: N
//
// {{oid:name}} in the SQL or a want stands for the relation's oid.

// biSchema is what the fixtures browse: a table with a primary key, a
// secondary index and a commented column, a table with a foreign key and a
// check, a view, a DHSI relation (a view commented "dhsi:"), a macro, and an
// internal schema that must never show.
func biSchema() []string {
	return []string{
		"CREATE TABLE bi_items (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, price DECIMAL(10,2), added TIMESTAMP)",
		"CREATE INDEX bi_items_name ON bi_items (name)",
		"COMMENT ON COLUMN bi_items.name IS 'the item name'",
		"INSERT INTO bi_items VALUES (1, 'widget', 2.50, '2024-01-05 10:00:00'), (2, 'gadget', 20.00, '2024-01-05 11:00:00'), (3, 'doohickey', 7.25, '2024-01-05 12:00:00')",
		"CREATE TABLE bi_orders (id INTEGER, item_id INTEGER REFERENCES bi_items (id), qty INTEGER CHECK (qty > 0))",
		"CREATE VIEW bi_cheap AS SELECT id, name, price FROM bi_items WHERE price < 10",
		"CREATE VIEW bi_domains AS SELECT 'example.com' AS domain, 3::BIGINT AS version",
		"COMMENT ON VIEW bi_domains IS 'dhsi: one row per domain'",
		"CREATE MACRO bi_double(x) AS x * 2",
		"CREATE SCHEMA dhsi_cache",
		"CREATE TABLE dhsi_cache.hidden_rows (x INTEGER)",
	}
}

type biFixture struct {
	name, source, sql     string
	params, want, wantNot []string
	rows, minRows         int
}

// parseBIFixtures reads one fixture file.
func parseBIFixtures(t *testing.T, path string) []biFixture {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	directive := regexp.MustCompile(`^-- (name|source|param|want|want-not|rows|min-rows): ?(.*)$`)
	var out []biFixture
	for _, block := range strings.Split(string(b)+"\n", "\n;\n") {
		f := biFixture{rows: -1}
		var sql []string
		for _, line := range strings.Split(block, "\n") {
			m := directive.FindStringSubmatch(line)
			if m == nil {
				if len(sql) > 0 || !strings.HasPrefix(line, "--") {
					sql = append(sql, line)
				}
				continue
			}
			switch m[1] {
			case "name":
				f.name = m[2]
			case "source":
				f.source = m[2]
			case "param":
				f.params = append(f.params, m[2])
			case "want":
				f.want = append(f.want, m[2])
			case "want-not":
				f.wantNot = append(f.wantNot, m[2])
			case "rows", "min-rows":
				n, err := strconv.Atoi(m[2])
				if err != nil {
					t.Fatalf("%s: %s: %v", path, line, err)
				}
				if m[1] == "rows" {
					f.rows = n
				} else {
					f.minRows = n
				}
			}
		}
		f.sql = strings.TrimSpace(strings.Join(sql, "\n"))
		if f.sql == "" {
			continue
		}
		if f.name == "" || f.source == "" {
			t.Fatalf("%s: a fixture without -- name and -- source:\n%s", path, f.sql)
		}
		out = append(out, f)
	}
	return out
}

func TestBIToolIntrospection(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bi", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	s := startServer(t)
	setup := s.connect(t)
	mustExec(t, setup, biSchema()...)
	oidOf := func(kind, name string) string {
		q := "SELECT oid FROM pg_class WHERE relname = $1"
		if kind == "ns" {
			q = "SELECT oid FROM pg_namespace WHERE nspname = $1"
		}
		var oid int64
		if err := setup.QueryRow(ctxT(t), q, name).Scan(&oid); err != nil {
			t.Fatalf("oid of %s %s: %v", kind, name, err)
		}
		return strconv.FormatInt(oid, 10)
	}
	oidRef := regexp.MustCompile(`\{\{oid:(\w+)\}\}`)
	expand := func(s string) string {
		return oidRef.ReplaceAllStringFunc(s, func(m string) string { return oidOf("rel", oidRef.FindStringSubmatch(m)[1]) })
	}
	for _, file := range files {
		tool := strings.TrimSuffix(filepath.Base(file), ".sql")
		t.Run(tool, func(t *testing.T) {
			// a session per tool, as each tool has its own connection
			conn := s.connect(t)
			for _, f := range parseBIFixtures(t, file) {
				t.Run(f.name, func(t *testing.T) {
					args := make([]any, len(f.params))
					for i, p := range f.params {
						switch {
						case strings.HasPrefix(p, "@ns:"):
							args[i], _ = strconv.ParseInt(oidOf("ns", p[4:]), 10, 64)
						case strings.HasPrefix(p, "@rel:"):
							args[i], _ = strconv.ParseInt(oidOf("rel", p[5:]), 10, 64)
						default:
							args[i] = p
						}
					}
					rows, err := conn.Query(ctxT(t), expand(f.sql), args...)
					if err != nil {
						t.Fatalf("%s (from %s): %v", f.name, f.source, err)
					}
					cells, n, err := textCells(rows)
					if err != nil {
						t.Fatalf("%s (from %s): %v", f.name, f.source, err)
					}
					if f.rows >= 0 && n != f.rows {
						t.Errorf("%d rows, want %d", n, f.rows)
					}
					if n < f.minRows {
						t.Errorf("%d rows, want at least %d", n, f.minRows)
					}
					for _, w := range f.want {
						if !cells[expand(w)] {
							t.Errorf("no cell is %q (from %s)", expand(w), f.source)
						}
					}
					for _, w := range f.wantNot {
						if cells[expand(w)] {
							t.Errorf("a cell is %q, which must not show (from %s)", expand(w), f.source)
						}
					}
				})
			}
		})
	}
}

// textCells reads a result and returns the set of its values as text.
func textCells(rows pgx.Rows) (map[string]bool, int, error) {
	defer rows.Close()
	cells := map[string]bool{}
	n := 0
	for rows.Next() {
		n++
		vals, err := rows.Values()
		if err != nil {
			return nil, 0, err
		}
		for _, v := range vals {
			if v != nil {
				cells[fmt.Sprint(v)] = true
			}
		}
		for _, raw := range rows.RawValues() {
			if raw != nil {
				cells[string(raw)] = true
			}
		}
	}
	return cells, n, rows.Err()
}
