// Package duckcapitest is what the tests of DHSI's replacements of DuckDB
// functions share: DuckDB with its own functions beside DuckDB with the
// replacements, on the same inputs.
package duckcapitest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" driver
)

// DBs opens two in-memory databases, closed when the test ends: builtin
// has DuckDB's own functions, ours those register installs.
func DBs(t testing.TB, register func(*sql.Conn) error) (builtin, ours *sql.DB) {
	t.Helper()
	var dbs [2]*sql.DB
	for i := range dbs {
		db, err := sql.Open("duckdb", "")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	conn, err := dbs[1].Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := register(conn); err != nil {
		t.Fatal(err)
	}
	return dbs[0], dbs[1]
}

// URLs creates, in each of dbs, table u of n URL-like strings in column
// url (about 70 bytes, 977 hosts).
func URLs(t testing.TB, n int, dbs ...*sql.DB) {
	t.Helper()
	for _, db := range dbs {
		if _, err := db.Exec(`CREATE TABLE u AS SELECT 'https://www.example' || (i % 977) || '.com/path/' || md5(i::VARCHAR) || '.html' AS url FROM range($1) r(i)`, n); err != nil {
			t.Fatal(err)
		}
	}
}

// Quote is s as a SQL string literal.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
