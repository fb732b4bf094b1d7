package main

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A reader's TEMP tables cannot fill the disk the server's cache and a
// local store live on: DuckDB's spills and every session's TEMP tables
// share --duckdb-temp-limit, a statement past it fails with 53100, and the
// server, the session and everybody else carry on.
func TestTempLimitBoundsTempTables(t *testing.T) {
	dir := t.TempDir()
	tempDir := filepath.Join(dir, "spill")
	const limit = 64 << 20
	conn := startServeLogging(t, &syncBuffer{}, "--store", filepath.Join(dir, "store"),
		"--user", "rita:pw:reader", "--user", "alice:pw:admin",
		"--memory-limit", "512MiB", "--duckdb-memory-limit", "64MiB",
		"--duckdb-temp-dir", tempDir, "--duckdb-temp-limit", "64MiB")
	as := func(user string) string {
		return strings.Replace(strings.Replace(conn, "anyone@", user+":pw@", 1), "/anydb", "/dhsi", 1)
	}
	ctx := context.Background()
	reader := connect(t, as("rita"))
	// ~400 MB of rows: far past DuckDB's 64 MiB of memory and the 64 MiB
	// of disk
	_, err := reader.Exec(ctx, "CREATE TEMP TABLE big AS SELECT i, repeat('x', 120) || i::varchar AS s FROM range(3000000) r(i)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53100" {
		t.Fatalf("a TEMP table past --duckdb-temp-limit: %v, want SQLSTATE 53100", err)
	}
	if !strings.Contains(pe.Message, "temp space is full") || !strings.Contains(pe.Hint, "--duckdb-temp-limit") || strings.Contains(pe.Message+pe.Hint, "PRAGMA") {
		t.Errorf("the error tells a reader what it cannot do: %q / %q", pe.Message, pe.Hint)
	}
	if used := dirBytes(t, tempDir); used > limit+limit/4 {
		t.Errorf("the temp directory holds %d bytes past a limit of %d", used, limit)
	}
	// the same session goes on, and the failed statement gave its space back
	var n int64
	if err := reader.QueryRow(ctx, "SELECT count(*) FROM range(10)").Scan(&n); err != nil || n != 10 {
		t.Fatalf("the reader's session after 53100: %d %v", n, err)
	}
	if _, err := reader.Exec(ctx, "CREATE TEMP TABLE small AS SELECT i, repeat('x', 120) || i::varchar AS s FROM range(200000) r(i)"); err != nil {
		t.Fatalf("a TEMP table that fits, after the one that did not: %v", err)
	}
	// the limit is the server's: a reader may not move it, an admin sees it
	if _, err := reader.Exec(ctx, "SET max_temp_directory_size = '100GiB'"); !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("a reader's SET max_temp_directory_size: %v, want 42501", err)
	}
	var shown string
	if err := connect(t, as("alice")).QueryRow(ctx, "SELECT current_setting('max_temp_directory_size')").Scan(&shown); err != nil || shown != "64.0 MiB" {
		t.Errorf("max_temp_directory_size as an admin sees it: %q %v", shown, err)
	}
}

// dirBytes is the size of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return total
}

func TestDuckTempLimitDefaultsToAQuarterOfTheFreeSpace(t *testing.T) {
	dir := t.TempDir()
	free, err := diskFree(dir)
	if err != nil || free <= 0 {
		t.Fatalf("diskFree: %d %v", free, err)
	}
	// a directory the server creates later answers for its disk
	got, err := duckTempLimit("", filepath.Join(dir, "not", "yet"))
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := free/4-free/20, free/4+free/20; got < lo || got > hi {
		t.Errorf("default %d, want about a quarter of %d", got, free)
	}
	if got, err := duckTempLimit("0", dir); err != nil || got != 0 {
		t.Errorf("0: %d %v", got, err)
	}
	if got, err := duckTempLimit("20GiB", dir); err != nil || got != 20<<30 {
		t.Errorf("20GiB: %d %v", got, err)
	}
}
