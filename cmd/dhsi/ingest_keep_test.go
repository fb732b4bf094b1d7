package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dhsi/dhsi/internal/testclients"
)

// TestIngestKeepColumnsOverSQL (issue 17): CALL ingest takes dhsi ingest's
// --keep-columns as the named argument keep_columns, with the same
// meaning (declared and inferred types, the dataset's own types) and the
// same refusals, each with a SQLSTATE and before anything is published.
func TestIngestKeepColumnsOverSQL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	csv := filepath.Join(dir, "shop.csv")
	if err := os.WriteFile(csv, []byte("url,lang,score,seen,price\nhttps://shop.example/a,en,3,2024-01-02T03:04:05Z,1.5\nhttps://shop.example/b,fr,,,2\nhttps://shop.example/c,,7,2024-02-03,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(list, []byte("https://list.example/a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServe(t, "--store", filepath.Join(dir, "store"), "--cache-dir", t.TempDir())
	c := connect(t, url)

	// a mistake is refused before anything is written: no dataset appears
	for _, bad := range []struct{ call, code, msg string }{
		{"CALL ingest('shop', '" + csv + "', keep_columns := 'Lang')", "22023", `column name "Lang"`},
		{"CALL ingest('shop', '" + csv + "', keep_columns := 'lang,lang')", "22023", `column "lang" is given twice`},
		{"CALL ingest('shop', '" + csv + "', keep_columns := 'lang:int')", "22023", `type "int"`},
		{"CALL ingest('shop', '" + csv + "', keep_columns := 'url')", "22023", "reserved"},
		{"CALL ingest('shop', '" + csv + "', keep_columns := 'status:int64')", "22023", "one of the CDX fields"},
		{"CALL ingest('shop', '" + csv + "', keep_columns := ' , ')", "22023", "no column named"},
		{"CALL ingest('shop', '" + csv + "', keep_columns := 'lang,nowhere')", "22023", `keep_columns: no column "nowhere" in header`},
		{"CALL ingest('shop', '" + list + "', keep_columns := 'lang')", "22023", "keep_columns does not apply to a plain list of URLs"},
		// a NULL is refused as for every argument of DHSI's functions
		// (duckdb-go would abort the server on it)
		{"CALL ingest('shop', '" + csv + "', keep_columns := NULL)", "22004", "NULL"},
		{"CALL ingest('shop', '" + csv + "', keep_columns := nullif('a', 'a'))", "22004", "NULL"},
		{"CALL ingest('shop', '" + csv + "', keep_column := 'lang')", "42883", "does not support the supplied arguments"},
	} {
		_, err := c.Exec(ctx, bad.call)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || bad.code != "" && pe.Code != bad.code || !strings.Contains(pe.Message, bad.msg) {
			t.Fatalf("%s: %v; want SQLSTATE %s saying %q", bad.call, err, bad.code, bad.msg)
		}
	}
	if _, err := c.Exec(ctx, "SELECT * FROM ingest('shop', $1, keep_columns := $2)", csv, nil); err == nil || !strings.Contains(err.Error(), "22004") {
		t.Fatalf("keep_columns := $2 bound to NULL: %v, want 22004", err)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM datasets"); n != 0 {
		t.Fatalf("refused ingests left %d datasets", n)
	}

	// what dhsi ingest --keep-columns lang,score,seen:timestamp,price
	// keeps (TestKeptFieldsOverSQL), CALL ingest keeps
	var written int64
	if err := c.QueryRow(ctx, "SELECT written FROM ingest('shop', $1, keep_columns := 'lang,score,seen:timestamp,price')", csv).Scan(&written); err != nil || written != 3 {
		t.Fatalf("ingest with keep_columns: %d written, %v", written, err)
	}
	id := func(name string) int32 {
		return one[int32](t, c, "SELECT dataset_id FROM datasets WHERE dataset = $1", name)
	}
	got := strings.Join(queryStrings(t, c, "SELECT url || ' ' || coalesce(fields, 'NULL') FROM domain_url_fields('shop.example', $1, 0, 10)", id("shop")), "\n")
	want := `https://shop.example/a {"lang":"en","score":3,"seen":"2024-01-02T03:04:05Z","price":1.5}
https://shop.example/b {"lang":"fr","price":2}
https://shop.example/c {"score":7,"seen":"2024-02-03T00:00:00Z"}`
	if got != want {
		t.Fatalf("fields after CALL ingest with keep_columns:\n%s\nwant\n%s", got, want)
	}
	types := strings.Join(queryStrings(t, c, "SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'urls' AND column_name IN ('lang', 'score', 'seen', 'price') ORDER BY ordinal_position"), ", ")
	if types != "lang text, score bigint, seen timestamp without time zone, price double precision" {
		t.Fatalf("the urls view's kept columns: %s", types)
	}
	// a column never changes type, as with dhsi ingest
	_, err := c.Exec(ctx, "CALL ingest('shop', '"+csv+"', keep_columns := 'lang:int64')")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22023" || !strings.Contains(pe.Message, `column "lang" is string in the dataset, not int64`) {
		t.Fatalf("retyping a kept column: %v", err)
	}

	// and from psql, as a person types it (the simple protocol, CALL)
	_, lerr := exec.LookPath("psql")
	testclients.Need(t, "psql", "apt-get install postgresql-client", lerr)
	out, err := exec.Command("psql", "-X", "-A", "-t", url, "-c",
		"CALL ingest('shop2', '"+csv+"', keep_columns := 'lang,price:string')").CombinedOutput()
	if err != nil {
		t.Fatalf("psql CALL ingest: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "|shop2|") {
		t.Fatalf("psql CALL ingest answered %s", out)
	}
	got = strings.Join(queryStrings(t, c, "SELECT fields FROM domain_url_fields('shop.example', $1, 0, 1)", id("shop2")), "\n")
	if got != `{"lang":"en","price":"1.5"}` {
		t.Fatalf("psql's CALL ingest kept %s", got)
	}
}

// TestKeepCDXJKeysWithDash (issue 17): Common Crawl's CDXJ key
// "mime-detected" is kept under its own name, which SQL quotes ("mime-detected")
// and the fields JSON spells as the CDXJ line does; every URL answers the
// value of its latest capture.
func TestKeepCDXJKeysWithDash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	cdxj := filepath.Join("..", "..", "testdata", "shared", "cdx", "cc-main-2024-30-cdx-00187.cdxj")
	ingestOK(t, "--store", store, "--dataset", "cc", "--keep-columns", "mime-detected,languages", cdxj)

	// what each URL's latest capture says
	want := readCDXJCaptures(t, cdxj)

	c := connect(t, startServe(t, "--store", store, "--cache-dir", t.TempDir()))
	id := one[int32](t, c, "SELECT dataset_id FROM datasets WHERE dataset = 'cc'")
	rows, err := c.Query(ctx, `SELECT url, "mime-detected" FROM urls WHERE dataset_id = $1`, id)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var url, detected string
		if err := rows.Scan(&url, &detected); err != nil {
			t.Fatal(err)
		}
		if w, ok := want[url]; !ok || w.keys["mime-detected"] != detected {
			t.Fatalf("%s: \"mime-detected\" %q, the CDXJ says %q", url, detected, w.keys["mime-detected"])
		}
		seen++
	}
	if rows.Err() != nil || seen != len(want) {
		t.Fatalf("the urls view has %d URLs with \"mime-detected\", want %d (%v)", seen, len(want), rows.Err())
	}
	// the first line of the file, through the rewrite of urls WHERE
	// domain = … and through domain_url_fields' JSON
	const u = "https://bibliotheque.missiondefrance.fr/index.php?id=319&lvl=bulletin_display"
	if w := want[u]; w.keys["mime-detected"] != "application/xhtml+xml" {
		t.Fatalf("the test's line: %+v", w)
	}
	if got := one[string](t, c, `SELECT "mime-detected" FROM urls WHERE domain = 'missiondefrance.fr' AND url = $1`, u); got != "application/xhtml+xml" {
		t.Fatalf(`urls WHERE domain = …: "mime-detected" %q`, got)
	}
	fields := queryStrings(t, c, "SELECT fields FROM domain_url_fields('missiondefrance.fr', $1, 0, 10000) WHERE url = $2", id, u)
	if len(fields) != 1 || fields[0] != `{"mime-detected":"application/xhtml+xml","languages":"fra"}` {
		t.Fatalf("domain_url_fields' fields: %q", fields)
	}
}
