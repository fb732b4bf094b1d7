package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/netwait"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/tableschema"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func one[T any](t *testing.T, c *pgx.Conn, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := c.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func TestDomainRecordsThroughSQL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	url := startServe(t, "--store", dir, "--refresh-interval", "200ms")
	c := connect(t, url)

	t.Run("a record written with inbox_put is visible at once, typed", func(t *testing.T) {
		var domain, shard, key string
		err := c.QueryRow(ctx, `CALL inbox_put('Example.COM.', '{"company_name": "Example Inc", "scraper_version": 3, "updated_at": "2024-05-01T10:00:00Z"}')`).Scan(&domain, &shard, &key)
		if err != nil || domain != "example.com" || shard != "a3" || key != "indexes/domains/example.com.usv" {
			t.Fatalf("inbox_put: %q %q %q %v", domain, shard, key, err)
		}
		rows, err := c.Query(ctx, "SELECT domain, company_name, scraper_version, updated_at FROM domains WHERE domain = $1", "example.com")
		if err != nil {
			t.Fatal(err)
		}
		var (
			d, name string
			ver     int64
			at      time.Time
		)
		n := 0
		for rows.Next() {
			n++
			if err := rows.Scan(&d, &name, &ver, &at); err != nil {
				t.Fatal(err)
			}
		}
		fds := rows.FieldDescriptions()
		if n != 1 || name != "Example Inc" || ver != 3 || !at.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) {
			t.Fatalf("domains: %d rows, %q %d %v", n, name, ver, at)
		}
		if fds[2].DataTypeOID != 20 || fds[3].DataTypeOID != 1184 {
			t.Fatalf("scraper_version is oid %d (want int8 20), updated_at %d (want timestamptz 1184)", fds[2].DataTypeOID, fds[3].DataTypeOID)
		}
		if got := one[int64](t, c, "SELECT count(*) FROM domains_inbox"); got != 1 {
			t.Fatalf("domains_inbox has %d rows", got)
		}
	})

	t.Run("CALL compact_shard moves the record into its shard", func(t *testing.T) {
		var shard, status string
		var merged, before, after, written int64
		err := c.QueryRow(ctx, "SELECT shard, status, inbox_merged, records_before, records_after, bytes_written FROM compact_shard('a3')").
			Scan(&shard, &status, &merged, &before, &after, &written)
		if err != nil || shard != "a3" || status != "compacted" || merged != 1 || before != 0 || after != 1 || written == 0 {
			t.Fatalf("compact_shard: %s %s merged=%d %d→%d bytes=%d err=%v", shard, status, merged, before, after, written, err)
		}
		if got := one[int64](t, c, "SELECT count(*) FROM domains_shards"); got != 1 {
			t.Fatalf("domains_shards has %d rows", got)
		}
		if got := one[int64](t, c, "SELECT count(*) FROM domains_inbox"); got != 0 {
			t.Fatalf("domains_inbox has %d rows after compaction", got)
		}
		// CALL works too, and a second call has nothing to do
		rows, err := c.Query(ctx, "CALL compact_shard('a3')")
		if err != nil {
			t.Fatal(err)
		}
		var vals []any
		for rows.Next() {
			vals, _ = rows.Values()
		}
		if rows.Err() != nil || len(vals) != 10 || vals[0] != "a3" || vals[1] != "nothing-to-do" {
			t.Fatalf("CALL compact_shard: %v %v", vals, rows.Err())
		}
	})

	t.Run("the latest updated_at wins across the shard and the pending inbox", func(t *testing.T) {
		// older than the shard's record: must not win
		if code := run(ctx, []string{"put", "--store", dir, "domain=example.com", "company_name=Older", "updated_at=2023-01-01T00:00:00Z"}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("dhsi put exit %d", code)
		}
		c.Exec(ctx, "CALL compact_all()") // nothing lost either way; refresh now
		if got := one[string](t, c, "SELECT company_name FROM domains WHERE domain = 'example.com'"); got != "Example Inc" {
			t.Fatalf("an older record won: %q", got)
		}
		// newer, written by another process: visible after the refresh interval
		if code := run(ctx, []string{"put", "--store", dir, "domain=example.com", "company_name=Newer", "updated_at=2025-01-01T00:00:00Z"}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("dhsi put exit %d", code)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := one[string](t, c, "SELECT company_name FROM domains WHERE domain = 'example.com'")
			if got == "Newer" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a record written by another process never showed up: %q", got)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := one[int64](t, c, "SELECT count(*) FROM domains"); got != 1 {
			t.Fatalf("domains has %d rows for one domain", got)
		}
	})

	t.Run("records that fail the schema are refused by writers, listed in domain_errors and never served", func(t *testing.T) {
		_, err := c.Exec(ctx, `CALL inbox_put('bad.example', '{"scraper_version": "lots"}')`)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22023" || !strings.Contains(pe.Message, `field "scraper_version"`) {
			t.Fatalf("inbox_put of an uncastable value: %v; want 22023 naming the field", err)
		}
		// a record past 1 MiB: every server would keep it parsed until it
		// is compacted
		_, err = c.Exec(ctx, `CALL inbox_put('big.example', $1)`, `{"company_name": "`+strings.Repeat("x", 1<<20)+`"}`)
		if !errors.As(err, &pe) || pe.Code != "22023" || !strings.Contains(pe.Message, "more than a record's 1048576") {
			t.Fatalf("inbox_put of a 1 MiB record: %v; want 22023", err)
		}
		// the same record PUT raw, as any S3 client may
		body := "domain␟scraper_version␟updated_at␞bad.example␟lots␟2024-01-01T00:00:00Z␞"
		if err := os.WriteFile(filepath.Join(dir, "indexes", "domains", "bad.example.usv"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		var file, field, reason string
		var record int32
		for {
			err = c.QueryRow(ctx, "SELECT file, record, field, reason FROM domain_errors WHERE file LIKE '%bad.example%'").Scan(&file, &record, &field, &reason)
			if err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || field != "scraper_version" || record != 2 || !strings.Contains(reason, "lots") {
			t.Fatalf("domain_errors: %q %d %q %q %v", file, record, field, reason, err)
		}
		if got := one[int64](t, c, "SELECT count(*) FROM domains WHERE domain = 'bad.example'"); got != 0 {
			t.Fatalf("a record compaction refuses is served (%d rows)", got)
		}
	})

	t.Run("a tombstone (an empty inbox object) is neither a record nor an error", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, "indexes", "domains", "tomb.example.usv"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(600 * time.Millisecond) // the server's refresh interval is 200ms
		if got := one[int64](t, c, "SELECT count(*) FROM domains_inbox WHERE domain = 'tomb.example'") + one[int64](t, c, "SELECT count(*) FROM domain_errors WHERE file LIKE '%tomb.example%'"); got != 0 {
			t.Fatalf("a tombstone shows as %d rows", got)
		}
		if _, err := c.Exec(ctx, "CALL compact_shard($1)", shard.Default().Of("tomb.example")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "indexes", "domains", "tomb.example.usv")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("compaction left the tombstone: %v", err)
		}
	})

	t.Run("a prepared CALL runs again each time it is executed", func(t *testing.T) {
		for i := 0; i < 3; i++ { // pgx caches the prepared statement after the first
			rows, err := c.Query(ctx, "CALL inbox_put('again.example', '{}')")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			if rows.Err() != nil || n != 1 {
				t.Fatalf("execution %d: %d rows, %v", i+1, n, rows.Err())
			}
		}
	})

	t.Run("CALL with $n parameters is described before it runs, then runs once", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			rows, err := c.Query(ctx, "CALL inbox_put($1, $2)", "param.example", `{"company_name": "P"}`)
			if err != nil {
				t.Fatal(err)
			}
			var vals []any
			for rows.Next() {
				vals, _ = rows.Values()
			}
			if rows.Err() != nil || len(vals) != 3 || vals[0] != "param.example" {
				t.Fatalf("CALL with parameters: %v %v", vals, rows.Err())
			}
		}
		if got := one[int64](t, c, "SELECT count(*) FROM domains WHERE domain = 'param.example'"); got != 1 {
			t.Fatalf("param.example has %d rows", got)
		}
	})

	t.Run("shard_id agrees with the compiler", func(t *testing.T) {
		if got := one[string](t, c, "SELECT shard_id('example.com')"); got != "a3" {
			t.Fatalf("shard_id = %q", got)
		}
	})

	t.Run("bad calls get clear errors and the session goes on", func(t *testing.T) {
		for _, q := range []struct{ sql, says string }{
			{"CALL compact_shard('zz')", "not a shard id"},
			{"CALL inbox_put('example.com', 'not json')", "JSON object"},
			{"CALL inbox_put('bad domain', '{}')", "domain"},
		} {
			_, err := c.Exec(ctx, q.sql)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || !strings.Contains(pe.Message, q.says) {
				t.Errorf("%s: %v, want an error mentioning %q", q.sql, err, q.says)
			}
		}
		if got := one[int32](t, c, "SELECT 1"); got != 1 {
			t.Fatal("session unusable after errors")
		}
	})
}

// TestSpecificationUSVFromAWorker: an inbox object in the USV
// specification's terminated form, put raw into the store as a worker would,
// is served, compacted into its shard and served from there (issue 15 §1:
// such objects were all rejected with "header has an empty field name").
func TestSpecificationUSVFromAWorker(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	obj := "domain␟company_name␟scraper_version␟updated_at␟␞\nworker.example␟Worker Inc␟7␟2024-06-01T00:00:00Z␟␞\n"
	if _, err := st.Put(ctx, "indexes/domains/worker.example.usv", strings.NewReader(obj), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	c := connect(t, startServe(t, "--store", dir, "--refresh-interval", "200ms"))
	check := func(where string) {
		t.Helper()
		var name string
		var ver int64
		if err := c.QueryRow(ctx, "SELECT company_name, scraper_version FROM domains WHERE domain = 'worker.example'").Scan(&name, &ver); err != nil || name != "Worker Inc" || ver != 7 {
			t.Fatalf("%s: %q %d %v", where, name, ver, err)
		}
		if n := one[int64](t, c, "SELECT count(*) FROM domain_errors"); n != 0 {
			t.Fatalf("%s: %d domain_errors", where, n)
		}
	}
	check("from the inbox")
	if _, err := c.Exec(ctx, "CALL compact_all()"); err != nil {
		t.Fatal(err)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM domains_inbox"); n != 0 {
		t.Fatalf("after compact_all the inbox still has %d records", n)
	}
	check("from its shard")
}

// TestLoopingWorkerIdlesOnMalformedObjects: compact --loop --idle-exit
// exits while a malformed inbox object remains, reporting it once, instead
// of retrying it at full CPU forever (issue 15 §5).
func TestLoopingWorkerIdlesOnMalformedObjects(t *testing.T) {
	dir := t.TempDir()
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for key, body := range map[string]string{
		"indexes/domains/broken.example.usv": "domain␟updated_at␞broken.example␞", // a record of one unit
		"indexes/domains/fine.example.usv":   "domain␟updated_at␞fine.example␟2024-01-01T00:00:00Z␞",
	} {
		if _, err := st.Put(ctx, key, strings.NewReader(body), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out, errb strings.Builder
	start := time.Now()
	code := run(cctx, []string{"compact", "--store", dir, "--loop", "--idle-exit", "1s", "--workers", "1"}, &out, &errb)
	if code != 0 || cctx.Err() != nil {
		t.Fatalf("compact --loop: exit %d after %v (context %v): %s", code, time.Since(start), cctx.Err(), errb.String())
	}
	if n := strings.Count(errb.String(), "not mergeable"); n != 1 {
		t.Errorf("the malformed object was reported %d times, want once:\n%s", n, errb.String())
	}
	if _, err := st.Head(ctx, "indexes/domains/fine.example.usv"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the good object was not merged: %v", err)
	}
	if _, err := st.Head(ctx, "indexes/domains/broken.example.usv"); err != nil {
		t.Errorf("the malformed object was not kept: %v", err)
	}
}

// TestOneRuleForARecord is issue 15 §5: writers, the compiler and the views
// apply one rule (compiler/rule.go). What compaction would refuse is never
// served and is listed in domain_errors with every problem; valid records
// of a partly bad object are served and merged; domain keys are registered
// domains spelled as etld1() spells them, and shard_id names their shard.
func TestOneRuleForARecord(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const h = "domain␟company_name␟scraper_version␟updated_at␞"
	for key, body := range map[string]string{
		"UPPER.ORG":       h + "UPPER.ORG␟Upper␟1␟2024-01-01T00:00:00Z␞",
		"no-time.example": h + "no-time.example␟No time␟1␟␞",
		"bom.example":     "\ufeff" + h + "bom.example␟Bom␟1␟2024-01-01T00:00:00Z␞",
		"partly.example": h + "partly.example␟Good␟1␟2024-01-01T00:00:00Z␞" +
			"partly.example␟Newer but bad␟two␟2025-01-01T00:00:00Z␞" +
			"partly.example␟Short␞",
	} {
		if _, err := st.Put(ctx, "indexes/domains/"+key+".usv", strings.NewReader(body), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	c := connect(t, startServe(t, "--store", dir, "--refresh-interval", "100ms"))
	served := func() string {
		t.Helper()
		rows, err := c.Query(ctx, "SELECT domain || '=' || company_name FROM domains ORDER BY domain")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	const want = "bom.example=Bom partly.example=Good"
	if got := served(); got != want {
		t.Fatalf("domains serves %q, want %q", got, want)
	}
	errs := map[string]string{}
	rows, err := c.Query(ctx, "SELECT file, string_agg(record || ':' || reason, ' | ' ORDER BY record) FROM domain_errors GROUP BY file")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f, r string
		if err := rows.Scan(&f, &r); err != nil {
			t.Fatal(err)
		}
		errs[strings.TrimSuffix(strings.TrimPrefix(f, "indexes/domains/"), ".usv")] = r
	}
	for key, want := range map[string][]string{
		"UPPER.ORG":       {`want "upper.org"`},
		"no-time.example": {`2:updated_at "" is not an RFC 3339 timestamp`},
		"partly.example":  {`3:field "scraper_version"`, "4:has 2 units, header has 4"},
	} {
		for _, w := range want {
			if !strings.Contains(errs[key], w) {
				t.Errorf("domain_errors for %s = %q, want it to say %q", key, errs[key], w)
			}
		}
	}
	if len(errs) != 3 {
		t.Errorf("domain_errors lists %d objects, want 3: %v", len(errs), errs)
	}

	// compaction merges exactly what was served, and keeps what it refuses
	if _, err := c.Exec(ctx, "CALL compact_all()"); err != nil {
		t.Fatal(err)
	}
	if got := served(); got != want {
		t.Fatalf("after compact_all domains serves %q, want %q", got, want)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM domains_shards"); n != 2 {
		t.Fatalf("the shards hold %d records, want the 2 served", n)
	}
	for _, key := range []string{"UPPER.ORG", "no-time.example", "partly.example"} {
		if _, err := st.Head(ctx, "indexes/domains/"+key+".usv"); err != nil {
			t.Errorf("%s: refused records must stay in the inbox until fixed: %v", key, err)
		}
	}

	t.Run("keys are registered domains, spelled as etld1() spells them", func(t *testing.T) {
		var errb strings.Builder
		if code := run(ctx, []string{"put", "--store", dir, "domain=Bücher.de", "company_name=Bücher", "updated_at=2024-01-01T00:00:00Z"}, io.Discard, &errb); code != 0 {
			t.Fatalf("put Bücher.de: exit %d: %s", code, errb.String())
		}
		c.Exec(ctx, "CALL compact_all()")
		var key, viaEtld1 string
		if err := c.QueryRow(ctx, "SELECT domain, etld1('https://www.Bücher.de/') FROM domains WHERE company_name = 'Bücher'").Scan(&key, &viaEtld1); err != nil || key != "xn--bcher-kva.de" || key != viaEtld1 {
			t.Fatalf("stored as %q, etld1 says %q (%v)", key, viaEtld1, err)
		}
		sid := one[string](t, c, "SELECT shard_id('Bücher.DE')")
		if sid != shard.Default().Of("xn--bcher-kva.de") {
			t.Fatalf("shard_id('Bücher.DE') = %s, the record lives in %s", sid, shard.Default().Of("xn--bcher-kva.de"))
		}
		if _, err := os.Stat(filepath.Join(dir, "indexes/domains/shards", sid+".usv")); err != nil {
			t.Fatalf("no shard %s: %v", sid, err)
		}
		for _, bad := range []string{"com", "www.example.com"} {
			errb.Reset()
			if code := run(ctx, []string{"put", "--store", dir, "domain=" + bad, "updated_at=2024-01-01T00:00:00Z"}, io.Discard, &errb); code == 0 || !strings.Contains(errb.String(), "registered domain") {
				t.Errorf("put domain=%s: exit %d, %q; want a refusal that names registered domains", bad, code, errb.String())
			}
			_, err := c.Exec(ctx, "CALL inbox_put($1, '{\"updated_at\": \"2024-01-01T00:00:00Z\"}')", bad)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "22023" || !strings.Contains(pe.Message, "registered domain") {
				t.Errorf("inbox_put(%q): %v; want 22023 naming registered domains", bad, err)
			}
		}
	})
}

// TestPutLandsBatches: dhsi put of many records lands batch objects, one per
// shard, written once (issue 15 §4); the views serve them at once, a
// refused record is reported and the rest land, and compaction moves them
// into shards and removes the batch objects.
func TestPutLandsBatches(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("domain␟company_name␟scraper_version␟updated_at␟␞\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&b, "Batch%d.Example␟Co %d␟1␟2024-01-01T00:00:00Z␟␞\n", i, i)
	}
	b.WriteString("com␟Suffix␟1␟2024-01-01T00:00:00Z␟␞\n")
	file := filepath.Join(t.TempDir(), "records.usv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := run(ctx, []string{"put", "--store", dir, file}, &out, &errb)
	if code != 1 || !strings.Contains(out.String(), "landed 500 in") || !strings.Contains(errb.String(), "public suffix") {
		t.Fatalf("put: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	c := connect(t, startServe(t, "--store", dir, "--refresh-interval", "100ms"))
	if n := one[int64](t, c, "SELECT count(*) FROM domains WHERE domain LIKE 'batch%.example'"); n != 500 {
		t.Fatalf("domains serves %d of the 500 batched records before compaction", n)
	}
	if _, err := c.Exec(ctx, "CALL compact_all()"); err != nil {
		t.Fatal(err)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM domains_shards WHERE domain LIKE 'batch%.example'"); n != 500 {
		t.Fatalf("the shards hold %d of the 500 records", n)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM domains_inbox"); n != 0 {
		t.Fatalf("%d records still pending after compact_all", n)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "indexes/domains/batches/*/*.usv"))
	if len(left) != 0 {
		t.Fatalf("batch objects left after compaction: %v", left)
	}
}

// TestDomainLookupsAgreeWithTheScan: the shapes of a lookup people and
// tools write, which the server answers from the one shard a domain hashes
// to (pgsql.PointLookups → domain_record), answer exactly what the same
// question answered by a scan of every shard does; a NULL parameter is no
// row, not a crash.
func TestDomainLookupsAgreeWithTheScan(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("domain␟company_name␟scraper_version␟updated_at␟␞\n")
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&b, "look%d.example␟Co %d␟%d␟2024-01-01T00:00:00Z␟␞\n", i, i, i%5)
	}
	file := filepath.Join(t.TempDir(), "records.usv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"put", "--store", dir, file}, {"compact", "--all", "--store", dir}} {
		var out strings.Builder
		if code := run(ctx, args, &out, &out); code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, out.String())
		}
	}
	// newer records of every third domain wait in the inbox over the shards
	b.Reset()
	b.WriteString("domain␟company_name␟scraper_version␟updated_at␟␞\n")
	for i := 0; i < 600; i += 3 {
		fmt.Fprintf(&b, "look%d.example␟Newer %d␟9␟2025-01-01T00:00:00Z␟␞\n", i, i)
	}
	// and ties on updated_at with the shard's record, either way round:
	// the merge rule's tie-break decides, in the lookup as in the scan
	for i := 7; i < 600; i += 7 { // the domains the loop below looks up
		if i%3 == 0 {
			continue
		}
		fmt.Fprintf(&b, "look%d.example␟%s␟%d␟2024-01-01T00:00:00Z␟␞\n", i, []string{"A tie", "Zed tie"}[i%2], i%5)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(ctx, []string{"put", "--store", dir, file}, io.Discard, io.Discard); code != 0 {
		t.Fatal("put of the newer records failed")
	}
	c := connect(t, startServe(t, "--store", dir, "--refresh-interval", "100ms"))
	var plan string
	if err := c.QueryRow(ctx, "EXPLAIN SELECT * FROM domains WHERE domain = $1", "look1.example").Scan(new(string), &plan); err != nil || !strings.Contains(plan, "DHSI_DOMAIN_LOOKUP") {
		t.Fatalf("the lookup is not answered by domain_record: %v\n%s", err, plan)
	}
	collect := func(q string, args ...any) string { t.Helper(); return rowsText(t, c, q, args...) }
	// the first two are answered natively (records.NativeLookup), the
	// rest by DuckDB over domain_record
	shapes := []struct{ lookup, scan string }{
		{"SELECT * FROM domains WHERE domain = $1", "SELECT * FROM domains WHERE domain || '' = $1"},
		{"SELECT updated_at AS at, scraper_version, company_name FROM domains d WHERE d.domain = $1", "SELECT updated_at AS at, scraper_version, company_name FROM domains WHERE domain || '' = $1"},
		{"SELECT company_name, updated_at FROM public.domains WHERE domain = $1::text", "SELECT company_name, updated_at FROM domains WHERE domain || '' = $1"},
		{"SELECT d.company_name FROM domains d WHERE d.domain = $1 AND d.scraper_version >= 0 ORDER BY 1", "SELECT d.company_name FROM domains d WHERE d.domain || '' = $1 AND d.scraper_version >= 0 ORDER BY 1"},
		{"SELECT count(*) FROM domains WHERE $1 = domain AND company_name LIKE 'Newer%'", "SELECT count(*) FROM domains WHERE domain || '' = $1 AND company_name LIKE 'Newer%'"},
	}
	for i := 0; i < 610; i += 7 { // 610: a few domains no record has
		d := fmt.Sprintf("look%d.example", i)
		for _, s := range shapes {
			if got, want := collect(s.lookup, d), collect(s.scan, d); got != want {
				t.Fatalf("%s with %s:\n got  %q\n want %q (%s)", s.lookup, d, got, want, s.scan)
			}
		}
	}
	// several domains at once: the union of their lookups, each once
	for i := 0; i < 610; i += 61 {
		a, b := fmt.Sprintf("look%d.example", i), fmt.Sprintf("look%d.example", i+7)
		for _, q := range []string{
			"SELECT * FROM domains WHERE domain IN ($1, $2, $1) ORDER BY ALL",
			"SELECT domain, company_name FROM domains WHERE domain = $1 OR domain = $2 OR domain = 'look0.example' ORDER BY ALL",
		} {
			scan := strings.NewReplacer("domain IN", "domain || '' IN", "domain =", "domain || '' =").Replace(q)
			if got, want := collect(q, a, b), collect(scan, a, b); got != want || got == "" {
				t.Fatalf("%s with %s, %s:\n got  %q\n want %q", q, a, b, got, want)
			}
		}
	}
	if got := collect("SELECT company_name FROM domains WHERE domain = $1", "look3.example"); got != "Newer 3" {
		t.Fatalf("look3.example: %q, want the inbox's newer record", got)
	}
	if got := collect("SELECT * FROM domains WHERE domain = $1", nil); got != "" {
		t.Fatalf("a NULL parameter: %q, want no row", got)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM domains"); n != 600 {
		t.Fatalf("after the lookups the server answers %d domains, want 600", n)
	}
}

// TestNativeLookupFollowsASchemaChange: after datapackage.json gains a
// field, a running server's domains lookups answer with it, natively, with
// no restart; a statement prepared before the change is refused as
// PostgreSQL refuses one whose table changed (0A000), and pgx, which
// prepares it again, gets the new columns (issue 15: the native lookup
// refused until a restart).
func TestNativeLookupFollowsASchemaChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	putAndCompact(t, dir, "example.com", "example.org")
	port, err := netwait.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	metricsAt := "127.0.0.1:" + strconv.Itoa(port)
	c := connect(t, startServe(t, "--store", dir, "--refresh-interval", "100ms", "--metrics", metricsAt))
	nativeLookups := func() int {
		resp, err := http.Get("http://" + metricsAt + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`dhsi_statements_total\{kind="native:domain_record",outcome="ok"\} (\d+)`).FindStringSubmatch(string(body))
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	const lookup = "SELECT * FROM domains WHERE domain = $1"
	tryColumns := func() ([]string, error) {
		rows, err := c.Query(ctx, lookup, "example.com")
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var names []string
		for _, f := range rows.FieldDescriptions() {
			names = append(names, f.Name)
		}
		for rows.Next() {
		}
		return names, rows.Err()
	}
	columns := func() []string {
		names, err := tryColumns()
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	before := columns()
	if slices.Contains(before, "country") || nativeLookups() != 1 {
		t.Fatalf("before the change: columns %v, %d native lookups", before, nativeLookups())
	}
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pkg, etag, err := records.LoadPackageVersion(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	sch := pkg.Resources[0].Schema
	sch.Fields = append(sch.Fields, tableschema.Field{Name: "country", Type: "string"})
	b, err := json.Marshal(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, compiler.SchemaKey, bytes.NewReader(b), store.Cond{IfMatch: etag}); err != nil {
		t.Fatal(err)
	}
	var after []string
	refused := 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		names, err := tryColumns()
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe) && pe.Code == "0A000":
			refused++ // the statement pgx kept; it prepares it again
			continue
		case err != nil:
			t.Fatal(err)
		}
		if after = names; slices.Contains(after, "country") {
			break
		}
	}
	if !slices.Contains(after, "country") || refused != 1 {
		t.Fatalf("after the change the lookup answers columns %v; the kept statement was refused %d times, want once", after, refused)
	}
	// the last answers came from the native path again, not from DuckDB
	n := nativeLookups()
	columns()
	if nativeLookups() != n+1 {
		t.Errorf("a lookup after the change was not answered natively (%d, then %d native lookups)", n, nativeLookups())
	}
}
