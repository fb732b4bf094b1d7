package udf

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/shard"
)

func TestShardIDThroughSQL(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(2)
	ctx := context.Background()
	if err := Register(ctx, db, shard.Default); err != nil {
		t.Fatal(err)
	}
	t.Run("shard_id hashes like the shard package", func(t *testing.T) {
		var got string
		if err := db.QueryRowContext(ctx, "SELECT shard_id('example.com')").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != "a3" {
			t.Fatalf("shard_id('example.com') = %q, want a3", got)
		}
	})
	t.Run("shard_id of NULL is NULL", func(t *testing.T) {
		var got sql.NullString
		if err := db.QueryRowContext(ctx, "SELECT shard_id(NULL)").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got.Valid {
			t.Fatalf("shard_id(NULL) = %q, want NULL", got.String)
		}
	})
	t.Run("shard_id is visible on another connection", func(t *testing.T) {
		c1, _ := db.Conn(ctx)
		defer c1.Close()
		c2, _ := db.Conn(ctx)
		defer c2.Close()
		var n int
		if err := c2.QueryRowContext(ctx, "SELECT count(DISTINCT shard_id(i::VARCHAR)) FROM range(10000) t(i)").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 256 {
			t.Fatalf("10000 keys fell into %d shards, want all 256", n)
		}
	})
}
