// Package sql holds DHSI's SQL text, embedded into the binary: the
// PostgreSQL catalog shim the wire server installs at start-up, and the
// migrations of DHSI's own DuckDB schema. Keeping SQL in .sql files lets it be
// read, linted and diffed as SQL.
package sql

import (
	"embed"
	"strings"
)

//go:embed pg_catalog.sql migrations/*.sql
var files embed.FS

// Migrations returns the migration files by name ("0001_meta.sql").
func Migrations() (map[string]string, error) {
	entries, err := files.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := files.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out[e.Name()] = string(b)
	}
	return out, nil
}

// PGCatalog returns the statements of the pg_catalog shim, in order.
func PGCatalog() []string { return statements("pg_catalog.sql") }

// statements splits a file at lines that are exactly ";" — the files keep
// one statement per block so the split needs no SQL lexer.
func statements(name string) []string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot happen
	}
	var out []string
	for _, block := range strings.Split(string(b), "\n;\n") {
		var kept []string
		for _, line := range strings.Split(block, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			kept = append(kept, line)
		}
		if s := strings.TrimSpace(strings.Join(kept, "\n")); s != "" {
			out = append(out, s)
		}
	}
	return out
}
