// Package migrations brings the server's DuckDB database to the schema this
// build expects. Migrations are numbered SQL files embedded from
// sql/migrations; each runs once, in order, inside a transaction, and is
// recorded in dhsi_meta.schema_migrations.
//
// Rules: a migration, once released, never changes (its checksum is stored
// and verified); a database migrated by a newer build is refused rather than
// silently used by an older one.
package migrations

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	dhsisql "github.com/dhsi/dhsi/sql"
)

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

func (m Migration) checksum() string {
	sum := sha256.Sum256([]byte(m.SQL))
	return hex.EncodeToString(sum[:8])
}

// All returns the embedded migrations in version order.
func All() ([]Migration, error) {
	files, err := dhsisql.Migrations()
	if err != nil {
		return nil, err
	}
	var out []Migration
	for name, body := range files {
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %q: want NNNN_name.sql", name)
		}
		out = append(out, Migration{Version: v, Name: rest, SQL: body})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations are not numbered 1..n: found %d at position %d", m.Version, i+1)
		}
	}
	return out, nil
}

// Apply runs the migrations db has not seen.
func Apply(ctx context.Context, db *sql.DB) error {
	ms, err := All()
	if err != nil {
		return err
	}
	return apply(ctx, db, ms)
}

func apply(ctx context.Context, db *sql.DB, ms []Migration) error {
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS dhsi_meta;
		CREATE TABLE IF NOT EXISTS dhsi_meta.schema_migrations (
			version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	applied := map[int]string{}
	rows, err := db.QueryContext(ctx, "SELECT version, checksum FROM dhsi_meta.schema_migrations")
	if err != nil {
		return err
	}
	for rows.Next() {
		var v int
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			rows.Close()
			return err
		}
		applied[v] = sum
	}
	rows.Close()
	for v := range applied {
		if v > len(ms) {
			return fmt.Errorf("database was migrated to version %d by a newer dhsi; this build knows %d", v, len(ms))
		}
	}
	for _, m := range ms {
		if sum, ok := applied[m.Version]; ok {
			if sum != m.checksum() {
				return fmt.Errorf("migration %d (%s) changed after it was applied", m.Version, m.Name)
			}
			continue
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO dhsi_meta.schema_migrations (version, name, checksum) VALUES (?, ?, ?)",
			m.Version, m.Name, m.checksum()); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d (%s): commit: %w", m.Version, m.Name, err)
		}
	}
	return nil
}
