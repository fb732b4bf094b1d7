package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/internal/netwait"
)

// TestNativeSelectAgreesWithDuckDB: the shapes people and BI tools write
// over domain_datasets, domain_urls and domains — projections, WHERE on
// their columns, ORDER BY, LIMIT/OFFSET — answered in Go by the native path
// (sqlserver/nativeselect.go) equal what DuckDB answers for the same
// statement on a server started with --no-native, for every domain of two
// corpora, with parameters and literals.
func TestNativeSelectAgreesWithDuckDB(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ingestSampleDatasets(t, dir)
	// and dataset 4 with the CDX fields kept
	ingestOK(t, "--store", dir, "--dataset", "cdxj", filepath.Join("..", "..", "testdata", "shared", "cdx", "cc-main-2024-30-cdx-00187.cdxj"))
	// domain records too, some fields empty (NULL in SQL)
	var b strings.Builder
	b.WriteString("domain␟company_name␟scraper_version␟updated_at␟␞\n")
	for i := 0; i < 40; i++ {
		company := fmt.Sprintf("Co %d", i%7)
		if i%5 == 0 {
			company = ""
		}
		fmt.Fprintf(&b, "sel%d.example␟%s␟%d␟2024-01-%02dT00:00:00Z␟␞\n", i, company, i%4, 1+i%28)
	}
	file := filepath.Join(t.TempDir(), "r.usv")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run(ctx, []string{"put", "--store", dir, file}, io.Discard, io.Discard); code != 0 {
		t.Fatal("put failed")
	}
	native, duck, metricsAt := nativeAndDuckDB(t, dir)

	domains := queryStrings(t, native, "SELECT DISTINCT etld1(url) FROM urls ORDER BY 1")
	if len(domains) < 3 {
		t.Fatalf("%d domains", len(domains))
	}
	answer := func(c *pgx.Conn, q string, args []any, ordered bool) string {
		return answerOf(ctx, c, q, args, ordered)
	}
	type shape struct {
		q       string
		args    func(d string) []any
		ordered bool // the ORDER BY determines the order fully
	}
	d1 := func(d string) []any { return []any{d} }
	shapes := []shape{
		{"SELECT dataset_id, url_count FROM domain_datasets($1) WHERE url_count > 0 ORDER BY url_count DESC, dataset_id", d1, true},
		{"SELECT dataset_id, url_count FROM domain_datasets($1) WHERE url_count > 0 ORDER BY url_count DESC", d1, false},
		{"SELECT * FROM domain_datasets($1) d WHERE d.dataset = 'pywb'", d1, false},
		{"SELECT dataset FROM domain_datasets($1) WHERE dataset <> $2 AND url_count >= $3 ORDER BY dataset", func(d string) []any { return []any{d, "cc", "2"} }, true},
		{"SELECT * FROM domain_datasets($1) ORDER BY dataset DESC LIMIT 1", d1, true},
		{"SELECT * FROM domain_datasets($1) ORDER BY dataset LIMIT 2 OFFSET 1", d1, true},
		{"SELECT url_count AS n FROM domain_datasets($1) WHERE url_count < 3", d1, false},
		{"SELECT url, ts FROM domain_urls($1, 1, 0, 1000) WHERE url > 'http' ORDER BY url DESC LIMIT 5", d1, true},
		{"SELECT url_id, url FROM domain_urls($1, 2, 0, 50) u WHERE u.ts IS NOT NULL ORDER BY u.url_id", d1, true},
		{"SELECT url FROM domain_urls($1, 3, 0, 100) WHERE url_id > 9223372036854775807 ORDER BY url", d1, true},
		{"SELECT url FROM domain_urls($1, 1, 0, 100) ORDER BY ts NULLS FIRST, url OFFSET 2", d1, true},
		{"SELECT url AS ts, url_id FROM domain_urls($1, 1, 0, 100) ORDER BY ts DESC", d1, true},
		{"SELECT dataset AS url_count, url_count AS dataset FROM domain_datasets($1) WHERE url_count > 1 ORDER BY url_count, dataset", d1, true},
		// ORDER BY the select list's n-th column
		{"SELECT dataset, url_count FROM domain_datasets($1) ORDER BY 2 DESC, 1", d1, true},
		{"SELECT * FROM domain_datasets($1) ORDER BY 3, 1 DESC LIMIT 2", d1, true},
		// OR, NOT and parentheses, in three-valued logic
		{"SELECT dataset, url_count FROM domain_datasets($1) WHERE dataset = 'cc' OR url_count > 3 ORDER BY dataset", d1, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE NOT (dataset = 'cc' OR url_count < 2) ORDER BY dataset", d1, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE (dataset = $2 OR dataset_id = 1) AND url_count > 0 ORDER BY dataset", func(d string) []any { return []any{d, nil} }, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE NOT dataset = $2 OR dataset_id IN (2, $3) ORDER BY dataset", func(d string) []any { return []any{d, nil, nil} }, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE NOT dataset = $2 OR dataset_id NOT IN (2, $3) ORDER BY dataset", func(d string) []any { return []any{d, "cc", nil} }, true},
		{"SELECT url FROM domain_urls($1, 1, 0, 1000) WHERE NOT (ts IS NULL OR url LIKE 'https://%') ORDER BY url", d1, true},
		{"SELECT url, ts FROM urls WHERE domain = $1 AND (url LIKE '%.html' OR ts IS NULL OR dataset_id NOT IN (1, $2)) ORDER BY url, dataset_id", func(d string) []any { return []any{d, nil} }, true},
		{"SELECT url FROM urls WHERE domain = $1 AND (url LIKE '%.html' OR dataset_id NOT IN (1, 3)) ORDER BY url, dataset_id", d1, true},
		{"SELECT count(*) FROM urls WHERE domain = $1 AND (NOT url > 'https' OR url_id BETWEEN 0 AND 9223372036854775807)", d1, true},
		// IN lists (NULLs in them as DuckDB reads them) and BETWEEN
		{"SELECT dataset_id, url_count FROM domain_datasets($1) WHERE dataset_id IN (1, 3) ORDER BY dataset_id", d1, true},
		// LIMIT and OFFSET whose sum overflows int64 (topRows once panicked)
		{"SELECT dataset, url_count FROM domain_datasets($1) ORDER BY url_count DESC, dataset LIMIT 9223372036854775807 OFFSET 9223372036854775807", d1, true},
		{"SELECT dataset, url_count FROM domain_datasets($1) ORDER BY url_count DESC, dataset LIMIT 9223372036854775807 OFFSET 1", d1, true},
		// lists long enough for a set (inSetFrom)
		{"SELECT dataset_id, url_count FROM domain_datasets($1) WHERE dataset_id IN (0, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18) ORDER BY dataset_id", d1, true},
		{"SELECT dataset_id FROM domain_datasets($1) WHERE dataset_id NOT IN (0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, $2) ORDER BY dataset_id", func(d string) []any { return []any{d, "4"} }, true},
		{"SELECT url FROM urls WHERE domain = $1 AND domain_prefix IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'http://', 'https://www.', $2) ORDER BY url, dataset_id", func(d string) []any { return []any{d, "https://"} }, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE dataset NOT IN ($2, 'cc') ORDER BY dataset", func(d string) []any { return []any{d, "pywb"} }, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE dataset IN ($2, 'cc') ORDER BY dataset", func(d string) []any { return []any{d, nil} }, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE dataset NOT IN ($2, 'cc') ORDER BY dataset", func(d string) []any { return []any{d, nil} }, true},
		{"SELECT count(*) FROM domain_datasets($1) WHERE url_count BETWEEN $2 AND 100", func(d string) []any { return []any{d, "2"} }, true},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = 1 AND url BETWEEN 'http://' AND 'https://zz' ORDER BY url", d1, true},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id IN (1, 2) ORDER BY url, dataset_id", d1, true},
		// the urls view by domain (urls_by_domain[_dataset]): the filtered
		// first page, keyset pages, LIKE in DuckDB's sense, kept fields
		{"SELECT url, ts FROM urls WHERE domain = $1 AND dataset_id = 1 AND url LIKE 'https://%' ORDER BY url LIMIT 5", d1, true},
		{"SELECT url, ts FROM urls WHERE domain = $1 AND dataset_id = $2 AND url LIKE $3 ORDER BY url LIMIT 3", func(d string) []any { return []any{d, "2", "http://%"} }, true},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2 AND url > $3 ORDER BY url LIMIT 2", func(d string) []any { return []any{d, "1", "https://" + d + "/b"} }, true},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = 3 AND url >= 'http' AND url < 'https' ORDER BY url", d1, true},
		{"SELECT url FROM urls u WHERE u.domain = $1 AND u.dataset_id = 1 AND u.url <= 'https://m' ORDER BY u.url DESC LIMIT 4", d1, true},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = 2 AND url = $2", func(d string) []any { return []any{d, "https://" + d + "/"} }, false},
		{"SELECT * FROM urls WHERE domain = $1 AND url NOT LIKE '%/_%' ORDER BY url, dataset_id", d1, true},
		{"SELECT dataset_id, url, raw FROM urls WHERE domain = $1 AND url LIKE '%_%.%' ORDER BY url, dataset_id OFFSET 1", d1, true},
		{"SELECT url, status, mime, digest, length, \"offset\", filename FROM urls WHERE domain = $1 AND dataset_id = $2 AND status = 200 ORDER BY url", func(d string) []any { return []any{d, "4"} }, true},
		{"SELECT url, mime FROM urls WHERE domain = $1 AND mime IS NOT NULL ORDER BY url, mime LIMIT 7", d1, true},
		{"SELECT url_id, domain_prefix, domain FROM urls WHERE domain = $1 AND dataset_id = 1 ORDER BY url LIMIT 2 OFFSET 1", d1, true},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = 999 ORDER BY url", d1, true},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = -1", d1, true},
		// count(*) alone, counted natively (the counts check below)
		{"SELECT count(*) FROM urls WHERE domain = $1 AND dataset_id = $2", func(d string) []any { return []any{d, "1"} }, true},
		{"SELECT count(*) AS n FROM urls WHERE domain = $1 AND url LIKE 'https://%'", d1, true},
		{"SELECT count(url), max(url), min(url_id) FROM urls WHERE domain = $1 AND dataset_id = $2", func(d string) []any { return []any{d, "2"} }, true},
		{"SELECT max(status) AS s, count(mime), min(filename) FROM urls WHERE domain = $1 AND dataset_id = 4", d1, true},
	}
	// shapes the native path leaves to DuckDB, compared all the same
	duckOnly := []shape{
		{"SELECT count(*) FROM urls WHERE domain = $1 AND dataset_id = 2 AND url > 'http' LIMIT 1", d1, true},
		{"SELECT count(*) FROM domain_datasets($1) ORDER BY 1", d1, true},
		{"SELECT count(*) FROM domain_urls($1, 1, 0, 100) OFFSET 1", d1, true},
		{"SELECT max(domain), min(\"offset\") FROM urls WHERE domain = $1 AND dataset_id = 4", d1, true}, // names DuckDB quotes
		{"SELECT sum(url), min(ts) FROM domain_urls($1, 1, 0, 100)", d1, true},
		{"SELECT avg(url_count) FROM domain_datasets($1)", d1, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE dataset IN ('cc', NULL) ORDER BY dataset", d1, true},
		{"SELECT dataset FROM domain_datasets($1) WHERE url_count NOT BETWEEN 2 AND 5 ORDER BY dataset", d1, true},
		{"SELECT url_count year FROM domain_datasets($1)", d1, true}, // DuckDB: a syntax error
		{"SELECT count(*) FROM domain_datasets($1) group", d1, true},
		// literal arguments DuckDB casts or refuses as it binds
		{"SELECT count(*) FROM domain_urls($1, '1', 0, 10)", d1, true},
		{"SELECT url FROM domain_urls($1, 1.0, 0, 10) ORDER BY url", d1, true},
		{"SELECT url FROM domain_urls($1, 3000000000, 0, 10) ORDER BY url", d1, true},
		// unions of lookups written by hand are DuckDB's (a NULL argument
		// is 22004 there), whatever their shape
		{"SELECT count(*) FROM (SELECT * FROM urls_by_domain($1) UNION ALL SELECT * FROM urls_by_domain($1)) u", d1, true},
		{"SELECT count(*) FROM (SELECT * FROM urls_by_domain($1) UNION ALL SELECT * FROM urls_by_domain('iana.org') WHERE url LIKE '%.css') u", d1, true},
		{"SELECT count(*) FROM (SELECT * FROM urls_by_domain($1) UNION SELECT * FROM urls_by_domain('iana.org')) u", d1, true},
		{"SELECT count(*) FROM (SELECT * FROM urls_by_domain($1) UNION ALL SELECT * FROM urls_by_domain('iana.org') WHERE 'iana.org' IS DISTINCT FROM 'x') u", d1, true},
		{"SELECT count(*) FROM (SELECT * FROM urls_by_domain($1) UNION ALL SELECT * FROM urls_by_domain_dataset('iana.org', 1)) u", d1, true},
		{"SELECT urls_by_domain.url FROM (SELECT * FROM urls_by_domain($1) UNION ALL SELECT * FROM urls_by_domain('iana.org')) ORDER BY 1 LIMIT 1", d1, true},
		{"SELECT count(*) FROM (SELECT * FROM urls_by_domain($1) UNION ALL SELECT * FROM urls_by_domain($2)) u", func(d string) []any { return []any{d, nil} }, true},
		{"SELECT count(*) FROM (SELECT * FROM urls_by_domain($1) UNION ALL SELECT * FROM urls_by_domain($2) WHERE ($2 <> $1 OR $1 IS NULL)) u", func(d string) []any { return []any{d, nil} }, true},
		{"SELECT count(*) FROM (SELECT * FROM domain_datasets($1) UNION ALL SELECT * FROM domain_datasets($2)) u", func(d string) []any { return []any{d, nil} }, true},
	}
	countShapes := []shape{
		{"SELECT count(*) FROM domain_datasets($1)", d1, true},
		{"SELECT count(*) AS n FROM domain_datasets($1) WHERE url_count > 0", d1, true},
		{"SELECT COUNT(*) datasets FROM domain_datasets($1) d WHERE d.url_count >= $2", func(d string) []any { return []any{d, "2"} }, true},
		{"select count(*) \"Total\" from domain_urls($1, 1, 0, 1000)", d1, true},
		{"SELECT count(*) FROM domain_urls($1, 2, 1, 3) WHERE ts IS NULL", d1, true},
		// and the other aggregates the native path computes
		{"SELECT sum(url_count), min(url_count), max(url_count), count(dataset) FROM domain_datasets($1)", d1, true},
		{"SELECT sum(url_count) AS total, count(*) n FROM domain_datasets($1) WHERE url_count > 1000000", d1, true},
		{"SELECT min(dataset) AS first, MAX(d.dataset), Sum(D.url_count) FROM domain_datasets($1) d WHERE d.url_count > 0", d1, true},
		{"SELECT count(ts), min(url), max(url_id), sum(url_id), min(url_id) FROM domain_urls($1, 1, 0, 1000)", d1, true},
		// aliases keep their case in DuckDB (PostgreSQL folds them)
		{"SELECT count(*) AS Total, MAX(url_count) MaxN FROM domain_datasets($1) DD WHERE dd.url_count > 0", d1, true},
		{"SELECT url_count AS Total, dataset AS Name FROM domain_datasets($1) ORDER BY total DESC, NAME", d1, true},
	}
	shapes = append(shapes, countShapes...)
	// LIKE as DuckDB reads it (no escape; _ is one UTF-8 character)
	for _, pattern := range []string{"%", "", "_%", "%a%", "http_://%", "%.html", "%/%/%", "h%p%s%", "%é%", "%\\%", "%_", "__%__", "https://%/", "%%", "%?%=%"} {
		shapes = append(shapes, shape{"SELECT url FROM urls WHERE domain = $1 AND url LIKE $2 ORDER BY url, dataset_id", func(d string) []any { return []any{d, pattern} }, true})
	}
	recordShapes := []shape{
		{"SELECT company_name FROM domains WHERE domain = $1 AND scraper_version >= 2", d1, false},
		{"SELECT * FROM domains d WHERE d.domain = $1 AND d.company_name IS NULL", d1, false},
		{"SELECT scraper_version FROM domains WHERE domain = $1 AND company_name <> 'Co 3' ORDER BY scraper_version", d1, true},
		{"SELECT domain FROM domains WHERE domain = $1 AND scraper_version < 2", d1, true},
		{"SELECT domain FROM domains WHERE domain = $1 AND scraper_version <= 2", d1, true},
		{"SELECT domain FROM domains WHERE domain = $1 AND scraper_version > 2", d1, true},
		{"SELECT domain FROM domains WHERE domain = $1 AND scraper_version != $2", func(d string) []any { return []any{d, "1"} }, true},
		{"SELECT domain FROM domains WHERE domain = $1 AND company_name >= 'Co 4'", d1, true},
		{"SELECT count(*) FROM domains WHERE domain = $1", d1, true},
		{"SELECT count(*) c FROM domains WHERE domain = $1 AND company_name IS NULL", d1, true},
		{"SELECT max(scraper_version), min(company_name), count(company_name) FROM domains WHERE domain = $1", d1, true},
	}
	// joins with the datasets view (nativefrom.go), and of two lookups;
	// each is native (the metrics check below)
	joinShapes := []shape{
		{"SELECT d.dataset, d.url_count, s.urls, s.domains FROM domain_datasets($1) d JOIN datasets s ON s.dataset_id = d.dataset_id ORDER BY d.url_count DESC, d.dataset", d1, true},
		{"SELECT * FROM domain_datasets($1) JOIN datasets USING (dataset_id)", d1, false},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s ON d.dataset_id = s.dataset_id AND s.dataset = d.dataset", d1, false},
		{"SELECT dataset_id, s.source, url_count FROM datasets s NATURAL JOIN domain_datasets($1)", d1, false},
		{"SELECT s.dataset, d.url_count FROM datasets s LEFT JOIN domain_datasets($1) d USING (dataset_id) ORDER BY s.dataset", d1, true},
		{"SELECT s.dataset, url_count FROM datasets s LEFT OUTER JOIN domain_datasets($1) d ON d.dataset_id = s.dataset_id WHERE d.url_count IS NULL ORDER BY dataset", d1, true},
		{"SELECT count(*) AS n, sum(s.urls), max(d.url_count) FROM domain_datasets($1) d INNER JOIN public.datasets s USING (dataset_id) WHERE s.urls > 0", d1, true},
		{"SELECT count(*) FROM domain_datasets($1) JOIN datasets ON datasets.dataset_id = domain_datasets.dataset_id", d1, true},
		{"SELECT d.dataset, s.files FROM domain_datasets($1) AS d JOIN datasets AS s USING (dataset) WHERE d.url_count > 1 ORDER BY s.files, d.dataset LIMIT 2", d1, true},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s USING (dataset_id) ORDER BY 3 DESC, 2", d1, true},
		{"SELECT a.dataset, a.url_count, b.url_count AS other FROM domain_datasets($1) a JOIN domain_datasets('iana.org') b USING (dataset_id) ORDER BY a.dataset", d1, true},
		{"SELECT d.dataset, d.url_count FROM datasets s JOIN domain_datasets($1) d ON s.dataset_id = d.dataset_id WHERE s.dataset LIKE '%b%' ORDER BY d.url_count, d.dataset", d1, true},
	}
	// GROUP BY (nativegroup.go), over a lookup, the urls view and a join
	groupShapes := []shape{
		{"SELECT dataset, count(*) AS n, sum(url_count), max(url_count) FROM domain_datasets($1) GROUP BY dataset ORDER BY dataset", d1, true},
		{"SELECT url_count, count(*) FROM domain_datasets($1) GROUP BY url_count", d1, false},
		{"SELECT url_count AS c, count(*) FROM domain_datasets($1) WHERE dataset_id > 1 GROUP BY 1 ORDER BY count(*) DESC, c LIMIT 3", d1, true},
		{"SELECT dataset_id, count(*), min(url), max(url) FROM urls WHERE domain = $1 GROUP BY dataset_id ORDER BY 2 DESC, dataset_id", d1, true},
		{"SELECT dataset_id, mime, count(*) FROM urls WHERE domain = $1 GROUP BY dataset_id, mime ORDER BY dataset_id, mime NULLS FIRST", d1, true},
		{"SELECT count(*) FROM urls WHERE domain = $1 GROUP BY status", d1, false},
		{"SELECT s.dataset, count(*) n FROM domain_datasets($1) d JOIN datasets s USING (dataset_id) GROUP BY s.dataset ORDER BY n DESC, s.dataset", d1, true},
		{"SELECT status, count(url) FROM urls WHERE domain = $1 AND dataset_id = 4 GROUP BY status ORDER BY status", d1, true},
		// HAVING over the select list's aggregates
		{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY dataset HAVING count(*) > 0 ORDER BY dataset", d1, true},
		{"SELECT dataset_id, count(*) FROM urls WHERE domain = $1 GROUP BY dataset_id HAVING count(*) >= $2 ORDER BY dataset_id", func(d string) []any { return []any{d, "2"} }, true},
		{"SELECT mime, count(*), max(url) FROM urls WHERE domain = $1 GROUP BY mime HAVING NOT (count(*) < 2 OR max(url) LIKE '%.html') ORDER BY mime NULLS FIRST", d1, true},
	}
	// joins the native path leaves to DuckDB, compared all the same
	duckOnly = append(duckOnly,
		shape{"SELECT dataset_id FROM domain_datasets($1) d JOIN datasets s ON s.dataset_id = d.dataset_id", d1, false}, // ambiguous
		shape{"SELECT * FROM domain_datasets($1) d JOIN datasets s ON s.dataset_id = d.dataset_id AND s.urls > 60", d1, false},
		shape{"SELECT d.dataset FROM domain_datasets($1) d RIGHT JOIN datasets s USING (dataset_id) ORDER BY 1", d1, true},
		shape{"SELECT * FROM domain_datasets($1) d JOIN datasets d USING (dataset_id)", d1, false},
		// GROUP BY shapes DuckDB answers: HAVING, a column not grouped by,
		// an aggregate's ordinal, a sort by a sum, DISTINCT, an expression
		shape{"SELECT dataset FROM domain_datasets($1) GROUP BY dataset HAVING count(*) > 0 ORDER BY dataset", d1, true},
		shape{"SELECT dataset, count(*) AS n FROM domain_datasets($1) GROUP BY dataset HAVING n > 0 ORDER BY dataset", d1, true},
		shape{"SELECT dataset, sum(url_count) FROM domain_datasets($1) GROUP BY dataset HAVING sum(url_count) > 1 ORDER BY dataset", d1, true},
		shape{"SELECT dataset, url_count FROM domain_datasets($1) GROUP BY dataset", d1, false},
		shape{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY 2", d1, false},
		shape{"SELECT dataset_id, sum(url_count) s FROM domain_datasets($1) GROUP BY dataset_id ORDER BY s DESC, dataset_id", d1, true},
		shape{"SELECT DISTINCT dataset FROM domain_datasets($1) GROUP BY dataset ORDER BY dataset", d1, true},
		shape{"SELECT url_count > 1, count(*) FROM domain_datasets($1) GROUP BY url_count > 1 ORDER BY 1", d1, true},
		shape{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY ROLLUP (dataset) ORDER BY dataset NULLS FIRST", d1, true},
		shape{"SELECT * FROM domain_datasets($1) d JOIN datasets s ON s.dataset_id = d.url_count", d1, false},
		shape{"SELECT u.url, s.dataset FROM urls u JOIN datasets s USING (dataset_id) WHERE u.domain = $1 ORDER BY u.url, s.dataset", d1, true},
		// no unique key on either side: as many rows as pairs (natively, a
		// reader's such join once ended the server; NativeColumn.Unique)
		shape{"SELECT count(*), sum(a.url_count) FROM domain_datasets($1) a JOIN domain_datasets('iana.org') b ON a.url_count = b.url_count", d1, false},
		shape{"SELECT count(*) FROM dataset_domains(1) a JOIN dataset_domains(2) b ON a.url_count = b.url_count", func(string) []any { return nil }, false},
	)
	compared := 0
	// the datasets view alone
	for _, q := range []string{"SELECT * FROM datasets", "SELECT dataset_id, dataset FROM datasets WHERE urls > 100 ORDER BY dataset",
		"SELECT count(*) FROM datasets", "SELECT max(urls), min(dataset) FROM public.datasets", "SELECT d.dataset FROM datasets AS d ORDER BY d.created DESC"} {
		if got, want := answer(native, q, nil, false), answer(duck, q, nil, false); got != want {
			t.Fatalf("%s:\nnative %q\nDuckDB %q", q, got, want)
		}
		compared++
	}
	// what pools and BI tools send to check a connection
	for _, q := range []string{"SELECT 1", "select 42", "SELECT 7 AS ok", "SELECT 1 AS Up", "SELECT 1 year", "SELECT current_user AS Me", "SELECT version() V", `SELECT 1 "Up"`, "SELECT 1 x", "SELECT 3000000000", "SELECT 1.5", "SELECT 01",
		// and what drivers ask the session about itself
		"select pg_catalog.version()", "SELECT version()", "SELECT version() AS v", "SELECT current_setting('server_version_num')",
		"SELECT current_setting('application_name') app, current_setting('TimeZone')", "SELECT current_setting('no_such_setting')",
		"SELECT current_setting('memory_limit')", "SELECT pg_backend_pid() IS NOT NULL", "SELECT current_database(), session_user",
		"SELECT current_user", "SELECT 'test plain returns'", "SELECT 'a' AS x, 'b' y", "SELECT E'a\\nb'", "SELECT current_schema()",
		"SELECT version() FROM domain_datasets('x')", "SELECT current_user, 1", "SELECT NULL", "select null AS nothing, 'x'", "SELECT NULL::int", "SELECT NULL IS NULL"} {
		if got, want := answer(native, q, nil, true), answer(duck, q, nil, true); got != want {
			t.Fatalf("%s:\nnative %q\nDuckDB %q", q, got, want)
		}
		compared++
	}
	for _, set := range []string{"SET search_path TO information_schema, public", `SET search_path TO "$user", public`, "SET search_path TO pg_catalog", "RESET search_path"} {
		for _, c := range []*pgx.Conn{native, duck} {
			if _, err := c.Exec(ctx, set); err != nil {
				t.Fatalf("%s: %v", set, err)
			}
		}
		// the statements pgx keeps prepared too: DuckDB folded the session's
		// variables into their plans (sqlserver prepared.vars)
		for _, q := range []string{"SELECT current_schema()", "SELECT current_setting('search_path')", "SELECT current_setting('search_path') || ''",
			"SELECT setting FROM pg_settings WHERE name = 'search_path'"} {
			if got, want := answer(native, q, nil, true), answer(duck, q, nil, true); got != want {
				t.Fatalf("after %s, %s:\nnative %q\nDuckDB %q", set, q, got, want)
			}
		}
		var shown, kept string
		if err := duck.QueryRow(ctx, "SHOW search_path").Scan(&shown); err != nil {
			t.Fatal(err)
		}
		if err := duck.QueryRow(ctx, "SELECT current_setting('search_path') || ''").Scan(&kept); err != nil || kept != shown {
			t.Fatalf("after %s a kept DuckDB statement answers search_path %q (%v), SHOW %q", set, kept, err, shown)
		}
	}
	// pg_backend_pid differs between the servers: compare the native answer
	// with DuckDB's macro on one session
	if got, want := answer(native, "SELECT pg_backend_pid()", nil, true), answer(native, "SELECT pg_backend_pid() + 0", nil, true); got[strings.Index(got, "\n"):] != want[strings.Index(want, "\n"):] {
		t.Fatalf("pg_backend_pid: native %q, DuckDB %q", got, want)
	}
	for _, d := range append(domains, "absent.example") {
		for _, s := range append(append(shapes[:len(shapes):len(shapes)], joinShapes...), duckOnly...) {
			if got, want := answer(native, s.q, s.args(d), s.ordered), answer(duck, s.q, s.args(d), s.ordered); got != want {
				t.Fatalf("%s with %s:\nnative %q\nDuckDB %q", s.q, d, got, want)
			}
			compared++
		}
	}
	for i := 0; i < 41; i++ {
		d := fmt.Sprintf("sel%d.example", i)
		for _, s := range recordShapes {
			if got, want := answer(native, s.q, s.args(d), s.ordered), answer(duck, s.q, s.args(d), s.ordered); got != want {
				t.Fatalf("%s with %s:\nnative %q\nDuckDB %q", s.q, d, got, want)
			}
			compared++
		}
	}
	// and the urls shapes were the native path's (metrics count them)
	for fn, narrow := range map[string]bool{"urls_by_domain": false, "urls_by_domain_dataset": true} {
		want := 0
		for _, s := range shapes {
			// (a negative literal is no lookup's: DuckDB answers "= -1")
			if strings.Contains(s.q, "FROM urls") && !strings.Contains(s.q, "= -1") && strings.Contains(s.q, "dataset_id =") == narrow {
				want += len(domains) + 1
			}
		}
		if got := nativeStatements(t, metricsAt, fn); got != want {
			t.Fatalf("%s answered natively %d times, want %d", fn, got, want)
		}
	}
	// and every shape of the table functions, count(*) among them, was
	// the native path's
	for _, fn := range []string{"domain_datasets", "domain_urls"} {
		want := 0
		for _, s := range shapes {
			if strings.Contains(strings.ToLower(s.q), fn+"(") {
				want += len(domains) + 1
			}
		}
		if got := nativeStatements(t, metricsAt, fn); got != want {
			t.Fatalf("%s answered natively %d times, want %d", fn, got, want)
		}
	}
	joins := nativeStatements(t, metricsAt, "domain_datasets JOIN datasets") + nativeStatements(t, metricsAt, "datasets JOIN domain_datasets") +
		nativeStatements(t, metricsAt, "datasets LEFT JOIN domain_datasets") + nativeStatements(t, metricsAt, "domain_datasets JOIN domain_datasets")
	if want := len(joinShapes) * (len(domains) + 1); joins != want {
		t.Fatalf("joins answered natively %d times, want %d", joins, want)
	}
	if got := nativeStatements(t, metricsAt, "datasets"); got != 5 {
		t.Fatalf("the datasets view answered natively %d times, want 5", got)
	}
	// allNative compares shapes for each of ds, and checks that every one
	// was native (every native statement counted)
	allNative := func(what string, shapes []shape, ds []string) {
		t.Helper()
		before := nativeStatements(t, metricsAt, "")
		for _, d := range ds {
			for _, s := range shapes {
				if got, want := answer(native, s.q, s.args(d), s.ordered), answer(duck, s.q, s.args(d), s.ordered); got != want {
					t.Fatalf("%s with %s:\nnative %q\nDuckDB %q", s.q, d, got, want)
				}
				compared++
			}
		}
		if got, want := nativeStatements(t, metricsAt, "")-before, len(shapes)*len(ds); got != want {
			t.Fatalf("%s answered natively %d times, want %d", what, got, want)
		}
	}
	// and the GROUP BY shapes, each native
	allNative("GROUP BY", groupShapes, append(domains, "absent.example"))
	// several domains, an IN list or an OR (pgsql.PointLookups' union of
	// lookups, sqlserver/nativeunion.go), each native, NULLs and repeats
	// among the values
	two := func(d string) []any { return []any{d, domains[0]} }
	unionShapes := []shape{
		{"SELECT url, dataset_id FROM urls WHERE domain IN ($1, $2) ORDER BY url, dataset_id", two, true},
		{"SELECT dataset_id, count(*), max(url) FROM urls WHERE domain IN ($1, $2, 'absent.example') GROUP BY dataset_id ORDER BY dataset_id", two, true},
		{"SELECT count(*) FROM urls WHERE domain = $1 OR domain = $2 OR domain = $1", two, true},
		{"SELECT url FROM urls WHERE domain IN ($1, $2) AND dataset_id = 1 ORDER BY url LIMIT 3", two, true},
		{"SELECT url FROM urls u WHERE (u.domain = $1 OR u.domain = $2) AND u.url LIKE 'https://%' ORDER BY url, dataset_id", two, true},
		{"SELECT count(*), min(url) FROM urls WHERE domain IN ($1, $2)", func(d string) []any { return []any{d, nil} }, true},
		{"SELECT count(*), min(url) FROM urls WHERE domain IN ($2, $1, $2)", func(d string) []any { return []any{d, nil} }, true},
		{"SELECT url, ts FROM urls WHERE domain IN ('iana.org', $1, 'iana.org') ORDER BY url, dataset_id", d1, true},
		{"SELECT domain, company_name FROM domains WHERE domain IN ($1, 'sel3.example', $2) ORDER BY domain", func(d string) []any { return []any{d, "sel7.example"} }, true},
	}
	allNative("unions of lookups", unionShapes, append(domains, "absent.example", "sel5.example"))
	t.Logf("%d statements answered alike by the native path and DuckDB (%d domains)", compared, len(domains))
}

// nativeStatements is how many statements the server whose --metrics
// listens at metricsAt answered natively by function fn ("": by any),
// without error.
func nativeStatements(t *testing.T, metricsAt, fn string) int {
	t.Helper()
	resp, err := http.Get("http://" + metricsAt + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	kind := regexp.QuoteMeta(fn)
	if fn == "" {
		kind = `[^"]*` // every function's
	}
	n := 0
	for _, m := range regexp.MustCompile(`dhsi_statements_total\{kind="native:`+kind+`",outcome="ok"\} (\d+)`).FindAllSubmatch(body, -1) {
		k, _ := strconv.Atoi(string(m[1]))
		n += k
	}
	return n
}

// nativeAndDuckDB serves the store dir twice, with the native path (its
// metrics at metricsAt: nativeStatements) and with --no-native, to compare
// the two paths' answers.
func nativeAndDuckDB(t *testing.T, dir string) (native, duck *pgx.Conn, metricsAt string) {
	t.Helper()
	port, err := netwait.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	metricsAt = "127.0.0.1:" + strconv.Itoa(port)
	native = connect(t, startServe(t, "--store", dir, "--cache-dir", t.TempDir(), "--refresh-interval", "100ms", "--metrics", metricsAt))
	duck = connect(t, startServe(t, "--store", dir, "--cache-dir", t.TempDir(), "--refresh-interval", "100ms", "--no-native"))
	return native, duck, metricsAt
}

// TestNativeViewsCarryColumnOrigins: a native statement over a view
// describes its columns' table and attribute numbers as DuckDB's path
// does (JDBC's getTableName, BI tools that edit results): the datasets
// view, and domains and urls by their lookups.
func TestNativeViewsCarryColumnOrigins(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ingestSampleDatasets(t, dir)
	native, duck, _ := nativeAndDuckDB(t, dir)
	for _, q := range []string{
		"SELECT dataset, urls FROM datasets",
		"SELECT * FROM datasets WHERE urls > 1 ORDER BY dataset",
		"SELECT url, dataset_id FROM urls WHERE domain = $1 AND dataset_id = 1",
		"SELECT count(*), dataset_id FROM urls WHERE domain = $1 GROUP BY dataset_id",
		"SELECT d.dataset, s.urls FROM domain_datasets($1) d JOIN datasets s USING (dataset_id)",
	} {
		var attnums [2][]uint16
		for k, c := range []*pgx.Conn{native, duck} {
			sd, err := c.Prepare(ctx, "", q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for _, f := range sd.Fields {
				attnums[k] = append(attnums[k], f.TableAttributeNumber)
				if (f.TableOID == 0) != (f.TableAttributeNumber == 0) {
					t.Errorf("%s: column %s has table %d, attribute %d", q, f.Name, f.TableOID, f.TableAttributeNumber)
				}
			}
		}
		if fmt.Sprint(attnums[0]) != fmt.Sprint(attnums[1]) {
			t.Errorf("%s: native attributes %v, DuckDB's %v", q, attnums[0], attnums[1])
		}
	}
}

// TestNativeRowLimitAnswersAlike: a server whose --native-row-limit is
// passed by every statement below (N1) answers each through DuckDB —
// dataset_domains' ids refused before they are gathered, the urls view's
// rows sorted, grouped and joined — with the rows the native path gives.
func TestNativeRowLimitAnswersAlike(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ingestSampleDatasets(t, dir)
	ingestOK(t, "--store", dir, "--dataset", "ada", filepath.Join("..", "..", "testdata", "shared", "urls", "ada_userbait.txt"))
	port, err := netwait.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	metricsAt := "127.0.0.1:" + strconv.Itoa(port)
	limited := connect(t, startServe(t, "--store", dir, "--cache-dir", t.TempDir(), "--native-row-limit", "1", "--metrics", metricsAt))
	native := connect(t, startServe(t, "--store", dir, "--cache-dir", t.TempDir()))
	// the dataset of most domains, and its domain of most URLs
	var ds int32
	var domains int64
	if err := native.QueryRow(ctx, "SELECT dataset_id, domains FROM datasets ORDER BY domains DESC, dataset_id LIMIT 1").Scan(&ds, &domains); err != nil {
		t.Fatal(err)
	}
	if domains <= 8 {
		t.Fatalf("dataset %d has %d domains: too few to pass the limit", ds, domains)
	}
	domain := queryStrings(t, native, fmt.Sprintf("SELECT domain FROM dataset_domains(%d) ORDER BY url_count DESC, domain LIMIT 1", ds))[0]
	for _, q := range []string{
		"SELECT domain, url_count FROM dataset_domains(%d) ORDER BY url_count DESC, domain",
		"SELECT count(*) FROM dataset_domains(%d)",
		"SELECT domain FROM dataset_domains(%d) WHERE url_count > 1 ORDER BY domain LIMIT 5",
		"SELECT url, dataset_id FROM urls WHERE domain = $1 ORDER BY url DESC, dataset_id",
		"SELECT url, count(*) FROM urls WHERE domain = $1 GROUP BY url ORDER BY url",
		"SELECT a.url FROM urls a JOIN domain_urls($1, %[1]d, 0, 1000) b USING (url) WHERE a.domain = $1 AND a.dataset_id = %[1]d ORDER BY 1",
	} {
		if strings.Contains(q, "%") {
			q = fmt.Sprintf(q, ds)
		}
		var args []any
		if strings.Contains(q, "$1") {
			args = []any{domain}
		}
		before := nativeStatements(t, metricsAt, "")
		got, want := answerOf(ctx, limited, q, args, true), answerOf(ctx, native, q, args, true)
		if nativeStatements(t, metricsAt, "") != before {
			t.Errorf("%s: answered natively over the limit: %s", q, want)
		}
		if got != want || strings.HasSuffix(want, "\n") || strings.HasPrefix(want, "error") {
			t.Errorf("%s: over the limit %q, native %q", q, got, want)
		}
	}
}

// answerOf is what c answers to q: its columns' names and type OIDs on a
// line, then a line per row (sorted unless ordered), or "error: …".
func answerOf(ctx context.Context, c *pgx.Conn, q string, args []any, ordered bool) string {
	rows, err := c.Query(ctx, q, args...)
	if err != nil {
		return "error: " + err.Error()
	}
	var out []string
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			rows.Close()
			return "error: " + err.Error()
		}
		out = append(out, fmt.Sprint(v...))
	}
	if rows.Err() != nil {
		return "error: " + rows.Err().Error()
	}
	if !ordered {
		sort.Strings(out)
	}
	var names []string
	for _, fd := range rows.FieldDescriptions() {
		names = append(names, fmt.Sprintf("%s:%d", fd.Name, fd.DataTypeOID))
	}
	return strings.Join(names, ",") + "\n" + strings.Join(out, "\n")
}
