package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/internal/s3test"
)

// TestURLsViewOnS3 is issue 17 §4's second half: on an S3 store, which
// DuckDB cannot read, the urls view is urls_scan(), the server reading the
// lake by byte range through its block cache; it answers every query as
// the view over a local store with the same datasets (read_parquet) does,
// and, like it, shows a principal only the datasets it may see.
func TestURLsViewOnS3(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	_, bucket := srv.NewStore(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	stores := []string{filepath.Join(dir, "store"), "s3://" + bucket}
	// the same inputs in the same order into both, so dataset ids agree:
	// URL lists, CDX and CDXJ with their kept fields, and CSV columns of
	// which one ("score") two datasets keep with different types
	urls := filepath.Join("..", "..", "testdata", "shared", "urls")
	cdx := filepath.Join("..", "..", "testdata", "shared", "cdx")
	shop := []string{
		"url,lang,score,seen,price\nhttps://www.iana.org/shop/a,en,3,2024-01-02T03:04:05Z,1.5\nhttps://iana.org/shop/b,fr,,,2\nhttps://www.iana.org/shop/c,,7,2024-02-03T00:00:00.25Z,\n",
		"url,score\nhttps://www.iana.org/shop/d,high\nhttps://www.iana.org/shop/e,\n",
	}
	inputs := [][]string{
		{"--dataset", "pywb", filepath.Join(urls, "pywb_sample_archive.txt")},
		{"--dataset", "cc", filepath.Join(urls, "cc_main_2024_30_cdx00187.txt")},
		{"--dataset", "iana", filepath.Join(cdx, "pywb-iana.cdx")},
		{"--dataset", "ccj", filepath.Join(cdx, "cc-main-2024-30-cdx-00187.cdxj")},
	}
	for i, body := range shop {
		csv := filepath.Join(dir, fmt.Sprintf("shop%d.csv", i))
		if err := os.WriteFile(csv, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cols := "lang,score,seen:timestamp,price"
		if i == 1 {
			cols = "score"
		}
		inputs = append(inputs, []string{"--dataset", fmt.Sprintf("shop%d", i), "--keep-columns", cols, csv})
	}
	for _, st := range stores {
		for _, in := range inputs {
			ingestOK(t, append([]string{"--store", st}, in...)...)
		}
	}
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("alice:alice-pw:admin\nrita:rita-pw:reader\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	as := map[string]map[string]*pgx.Conn{} // store → user → connection
	for _, st := range stores {
		port := regexp.MustCompile(`:(\d+)/`).FindStringSubmatch(startServe(t, "--store", st, "--cache-dir", t.TempDir(), "--users-file", users, "--refresh-interval", "100ms"))[1]
		as[st] = map[string]*pgx.Conn{}
		for _, u := range []string{"alice", "rita"} {
			as[st][u] = connect(t, fmt.Sprintf("postgres://%s:%s-pw@127.0.0.1:%s/dhsi?sslmode=disable", u, u, port))
		}
	}
	local, s3 := as[stores[0]], as[stores[1]]

	// the view on S3 is the server's scan; locally, DuckDB's
	plan := strings.ToUpper(rowsText(t, s3["alice"], "EXPLAIN SELECT count(*) FROM urls"))
	if !strings.Contains(plan, "URLS_SCAN") || strings.Contains(plan, "READ_PARQUET") {
		t.Fatalf("the plan of a scan of the view on S3 does not read urls_scan:\n%s", plan)
	}
	if plan := strings.ToUpper(rowsText(t, local["alice"], "EXPLAIN SELECT count(*) FROM urls")); strings.Contains(plan, "URLS_SCAN") {
		t.Fatalf("the view over a local store reads urls_scan:\n%s", plan)
	}
	cols := "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'urls'"
	if got, want := rowsText(t, s3["alice"], cols), rowsText(t, local["alice"], cols); got != want || !strings.Contains(got, "score text") {
		t.Fatalf("the view's columns on S3: %s; locally: %s", got, want)
	}
	queries := []string{
		"SELECT * FROM urls ORDER BY ALL",
		"SELECT count(*) FROM urls",
		"SELECT dataset_id, count(*), count(raw), count(ts), count(status), min(url), max(url_id), min(domain), max(domain_prefix) FROM urls GROUP BY dataset_id ORDER BY 1",
		"SELECT url, domain FROM urls WHERE url LIKE '%iana.org/%' ORDER BY ALL",
		"SELECT d.dataset, count(*), count(DISTINCT u.domain) FROM urls u JOIN datasets d USING (dataset_id) GROUP BY 1 ORDER BY 1",
		"SELECT url, ts, raw FROM urls ORDER BY url DESC, ts, raw, dataset_id LIMIT 17",
		"SELECT domain FROM urls ORDER BY ALL",
		"SELECT count(*) FROM (SELECT url_id FROM urls)",
		"SELECT status, mime, digest, length, \"offset\", filename, lang, score, seen, price FROM urls WHERE status IS NOT NULL OR score IS NOT NULL ORDER BY ALL",
		// answered from the postings on both (urls_by_domain)
		"SELECT * FROM urls WHERE domain = 'iana.org' ORDER BY ALL",
	}
	for _, q := range queries {
		for _, u := range []string{"alice", "rita"} {
			got, want := rowsText(t, s3[u], q), rowsText(t, local[u], q)
			if got != want {
				t.Fatalf("%s as %s:\nS3    %.2000q\nlocal %.2000q", q, u, got, want)
			}
			if got == "" || got == "0" {
				t.Fatalf("%s as %s: no row", q, u)
			}
		}
	}

	// grants: a dataset granted to alice only is hidden from rita on S3
	// as locally (no row, no error), and its rows are still alice's
	for _, st := range stores {
		if _, err := as[st]["alice"].Exec(ctx, "CALL grant_dataset('ccj', 'alice')"); err != nil {
			t.Fatal(err)
		}
	}
	const ccj = "SELECT count(*) FROM urls WHERE dataset_id = (SELECT dataset_id FROM datasets WHERE dataset = 'ccj')"
	const ccjByID = "SELECT count(*) FROM urls WHERE dataset_id = 4"
	if id := rowsText(t, s3["alice"], "SELECT dataset_id FROM datasets WHERE dataset = 'ccj'"); id != "4" {
		t.Fatalf("ccj is dataset %s, want 4", id)
	}
	for _, c := range []struct {
		user, q, want string
	}{
		{"alice", ccj, "1116"}, {"alice", ccjByID, "1116"},
		{"rita", ccj, "0"}, {"rita", ccjByID, "0"},
		{"rita", "SELECT count(*) FROM urls_scan() WHERE dataset_id = 4", "0"},
		{"rita", "SELECT count(DISTINCT dataset_id) FROM urls", "5"},
		{"alice", "SELECT count(DISTINCT dataset_id) FROM urls", "6"},
	} {
		if got := rowsText(t, s3[c.user], c.q); got != c.want {
			t.Errorf("on S3, %s as %s: %s, want %s", c.q, c.user, got, c.want)
		}
	}
	for _, q := range queries {
		if got, want := rowsText(t, s3["rita"], q), rowsText(t, local["rita"], q); got != want {
			t.Fatalf("%s as rita, ccj hidden:\nS3    %.2000q\nlocal %.2000q", q, got, want)
		}
	}
	if a, r := rowsText(t, s3["alice"], "SELECT count(*) FROM urls"), rowsText(t, s3["rita"], "SELECT count(*) FROM urls"); a == r {
		t.Fatalf("alice and rita both see %s rows on S3", a)
	}
	// a query that stops early (LIMIT) leaves the scan usable
	for range 3 {
		if got := rowsText(t, s3["alice"], "SELECT url FROM urls LIMIT 1"); got == "" {
			t.Fatal("LIMIT 1: no row")
		}
	}
}
