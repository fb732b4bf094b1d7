package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPreviousReleaseStore is issue 18 §5: a store written by the previous
// release (testdata/stores/previous-release, made by commit 4846878) is
// served and extended by this one: its separated-form shards and inbox
// object, its index version (whose missing dataset_to_domains.roar the
// server builds in memory for dataset_domains), then new records (batch
// objects), a compaction that rewrites its shards, and a new ingest; dhsi
// verify finds nothing wrong before or after.
func TestPreviousReleaseStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "testdata", "stores", "previous-release"))); err != nil {
		t.Fatal(err)
	}
	verifyOK := func(when string) {
		t.Helper()
		var out strings.Builder
		if code := run(ctx, []string{"verify", "--store", dir, "--deep"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), ": 0 problems, 0 warnings") {
			t.Fatalf("verify %s: exit %d\n%s", when, code, out.String())
		}
	}
	verifyOK("as the previous release left it")

	log := &syncBuffer{}
	c := connect(t, startServeLogging(t, log, "--store", dir, "--refresh-interval", "100ms", "--log-level", "info"))
	type rec struct {
		name string
		ver  int64
	}
	records := func() map[string]rec {
		t.Helper()
		rows, err := c.Query(ctx, "SELECT domain, company_name, scraper_version FROM domains")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]rec{}
		for rows.Next() {
			var d string
			var r rec
			if err := rows.Scan(&d, &r.name, &r.ver); err != nil {
				t.Fatal(err)
			}
			out[d] = r
		}
		return out
	}
	want := map[string]rec{"example.com": {"Example Inc", 3}, "example.org": {"Org", 1}, "example.net": {"Pending Net", 2}}
	if got := records(); len(got) != 3 || got["example.com"] != want["example.com"] || got["example.org"] != want["example.org"] || got["example.net"] != want["example.net"] {
		t.Fatalf("domains of the old store: %v", got)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM domain_errors"); n != 0 {
		t.Fatalf("%d domain_errors on the old store", n)
	}
	var urls int64
	if err := c.QueryRow(ctx, "SELECT sum(urls)::BIGINT FROM datasets").Scan(&urls); err != nil || urls != 52 {
		t.Fatalf("datasets of the old index: %d URLs, %v", urls, err)
	}
	// its version has no dataset_to_domains.roar: the server transposes
	// the membership file, and answers as domain_datasets does
	reverseAgrees := func(when string) {
		t.Helper()
		m, ids := bruteForceMembership(t, c)
		for _, id := range ids {
			got, err := reverseRows(t, c, "SELECT * FROM dataset_domains($1)", id)
			if want := m.expectDomains(id); err != nil || !slices.Equal(got, want) || len(want) == 0 {
				t.Fatalf("dataset_domains(%d) %s: %v %v, want %v", id, when, got, err, want)
			}
			got, err = reverseRows(t, c, "SELECT * FROM dataset_domains_set($1, 'or', $2)", id, ids[0])
			if want := m.expectSet(id, "or", ids[0]); err != nil || !slices.Equal(got, want) {
				t.Fatalf("dataset_domains_set(%d, 'or', %d) %s: %v %v, want %v", id, ids[0], when, got, err, want)
			}
		}
	}
	reverseAgrees("on the old index")
	if !strings.Contains(log.String(), "built each dataset's domains in memory") || !strings.Contains(log.String(), "domain_to_datasets.roar") {
		t.Errorf("the server did not say it built the old version's reverse in memory:\n%s", log.String())
	}

	// extend it with this release
	file := filepath.Join(t.TempDir(), "more.usv")
	body := "domain␟company_name␟scraper_version␟updated_at␟␞\nexample.org␟Org Two␟4␟2025-01-01T00:00:00Z␟␞\nexample.info␟Info␟1␟2025-01-01T00:00:00Z␟␞\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(ctx, []string{"put", "--store", dir, file}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("put exit %d", code)
	}
	if _, err := c.Exec(ctx, "CALL compact_all()"); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join("..", "..", "testdata", "shared", "urls", "cdx_toolkit_api_mocks.txt")
	if code := run(ctx, []string{"ingest", "--store", dir, "--dataset", "more", list}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("ingest exit %d", code)
	}
	for deadline := time.Now().Add(20 * time.Second); one[int64](t, c, "SELECT count(*) FROM datasets") < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the new dataset is not served 20s after its ingest")
		}
	}
	reverseAgrees("after this release's ingest")
	want["example.org"] = rec{"Org Two", 4}
	want["example.info"] = rec{"Info", 1}
	got := records()
	for d, w := range want {
		if got[d] != w {
			t.Errorf("%s: %v, want %v", d, got[d], w)
		}
	}
	// the urls view reads the old files' raw column and the new files'
	// raw_edit (docs/format/lake.md, layout 4) together
	var raws, normal int64
	for deadline := time.Now().Add(10 * time.Second); one[int64](t, c, "SELECT count(*) FROM urls") != 52+16; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server does not serve the new dataset in the urls view")
		}
	}
	if err := c.QueryRow(ctx, "SELECT count(raw), count(*) FILTER (WHERE norm_url(raw) = url AND url_id = url_id(raw)) FROM urls").Scan(&raws, &normal); err != nil || raws != 8 || normal != raws {
		t.Errorf("urls view: %d raw URLs (want 5 of the old files and 3 of the new), %d of them normalize to their url with their url_id; %v", raws, normal, err)
	}
	// and urls_scan, the view on S3, reads both layouts as the view does
	if got, want := rowsText(t, c, "SELECT * FROM urls_scan() ORDER BY ALL"), rowsText(t, c, "SELECT * FROM urls ORDER BY ALL"); got != want {
		t.Errorf("urls_scan() over the old and new files:\n%s\nthe urls view:\n%s", got, want)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM domains_inbox"); n != 0 {
		t.Errorf("%d records still pending after compact_all", n)
	}
	shard, err := os.ReadFile(filepath.Join(dir, "indexes", "domains", "shards", "bf.usv"))
	if err != nil || !strings.Contains(string(shard), "updated_at␟␞") {
		t.Errorf("the rewritten shard is not in the terminated form: %q %v", shard, err)
	}
	verifyOK("after this release extended it")
}

// TestMigrateKeysOfAnEarlierRelease: records an earlier release kept under
// keys that are not domain keys (a UTF-8 name, a public suffix) are served
// under their old keys until `dhsi migrate-keys` moves them: then a lookup
// of the domain key finds the record, the suffix is quarantined and listed,
// verify finds nothing wrong, and a second run has nothing to move.
func TestMigrateKeysOfAnEarlierRelease(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	if code := run(ctx, []string{"put", "--store", dir, "domain=example.com", "company_name=Example", "scraper_version=1", "updated_at=2026-01-01T00:00:00Z"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("put: exit %d", code)
	}
	if code := run(ctx, []string{"compact", "--store", dir, "--all"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("compact: exit %d", code)
	}
	// as an earlier release wrote them: in the shards their spellings hash to
	shards := filepath.Join(dir, "indexes", "domains", "shards")
	for id, rec := range map[string]string{"de": "bücher.de␟Bücher GmbH␟2␟2025-01-01T00:00:00Z␟␞\n", "71": "com␟Verisign␟1␟2025-01-01T00:00:00Z␟␞\n"} {
		body := "domain␟company_name␟scraper_version␟updated_at␟␞\n" + rec
		if err := os.WriteFile(filepath.Join(shards, id+".usv"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var verify strings.Builder
	if code := run(ctx, []string{"verify", "--store", dir}, &verify, io.Discard); code != 0 || !strings.Contains(verify.String(), "1 records under keys that are not domain keys") || !strings.Contains(verify.String(), "dhsi migrate-keys") {
		t.Errorf("verify before the migration: exit %d, want a warning for each old shard that names dhsi migrate-keys\n%s", code, verify.String())
	}
	c := connect(t, startServe(t, "--store", dir, "--refresh-interval", "100ms"))
	lookup := func(d string) string {
		t.Helper()
		var name string
		err := c.QueryRow(ctx, "SELECT company_name FROM domains WHERE domain = $1", d).Scan(&name)
		if err != nil && !strings.Contains(err.Error(), "no rows") {
			t.Fatal(err)
		}
		return name
	}
	if got := lookup("xn--bcher-kva.de"); got != "" {
		t.Fatalf("before the migration the domain key found %q; the old key holds the record", got)
	}
	if got := one[int64](t, c, "SELECT count(*) FROM domains"); got != 3 {
		t.Fatalf("before the migration: %d records, want 3 (two under old keys)", got)
	}
	var out strings.Builder
	if code := run(ctx, []string{"migrate-keys", "--store", dir}, &out, io.Discard); code != 0 {
		t.Fatalf("migrate-keys: exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), `quarantined "com" from shard 71`) || !strings.Contains(out.String(), "1 records moved under their domain keys, 1 quarantined") {
		t.Fatalf("migrate-keys said:\n%s", out.String())
	}
	deadline := time.Now().Add(10 * time.Second)
	for lookup("xn--bcher-kva.de") != "Bücher GmbH" || one[int64](t, c, "SELECT count(*) FROM domains") != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after the migration: lookup %q, %d records; want Bücher GmbH under xn--bcher-kva.de and 2 records",
				lookup("xn--bcher-kva.de"), one[int64](t, c, "SELECT count(*) FROM domains"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := lookup("com"); got != "" {
		t.Errorf("the quarantined suffix is still served: %q", got)
	}
	verify.Reset()
	if code := run(ctx, []string{"verify", "--store", dir}, &verify, io.Discard); code != 0 || !strings.Contains(verify.String(), ": 0 problems, 0 warnings") {
		t.Errorf("verify after the migration: exit %d\n%s", code, verify.String())
	}
	out.Reset()
	if code := run(ctx, []string{"migrate-keys", "--store", dir}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "0 records moved under their domain keys, 0 quarantined") {
		t.Errorf("a second migrate-keys: exit %d\n%s", code, out.String())
	}
}
