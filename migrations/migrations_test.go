package migrations

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

func TestApply(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.duckdb")
	open := func() *sql.DB {
		db, err := sql.Open("duckdb", path)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	t.Run("a new database gets every migration once", func(t *testing.T) {
		db := open()
		defer db.Close()
		for i := 0; i < 2; i++ {
			if err := Apply(ctx, db); err != nil {
				t.Fatal(err)
			}
		}
		ms, _ := All()
		var n int
		db.QueryRowContext(ctx, "SELECT count(*) FROM dhsi_meta.schema_migrations").Scan(&n)
		if n != len(ms) {
			t.Fatalf("%d migrations recorded, want %d", n, len(ms))
		}
	})
	t.Run("a changed migration is refused", func(t *testing.T) {
		db := open()
		defer db.Close()
		ms, _ := All()
		ms[0].SQL += "\n-- edited"
		err := apply(ctx, db, ms)
		if err == nil || !strings.Contains(err.Error(), "changed after it was applied") {
			t.Fatalf("apply of an edited migration: %v", err)
		}
	})
	t.Run("a database from a newer build is refused", func(t *testing.T) {
		db := open()
		defer db.Close()
		ms, _ := All()
		err := apply(ctx, db, ms[:0])
		if err == nil || !strings.Contains(err.Error(), "newer dhsi") {
			t.Fatalf("apply with fewer migrations: %v", err)
		}
	})
}
