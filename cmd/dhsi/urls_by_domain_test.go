package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dhsi/dhsi/internal/s3test"
)

// TestURLsByDomainAgreesWithTheView is issue 17 §4: `FROM urls WHERE
// domain = …`, which the server answers from the postings
// (urls_by_domain), returns exactly the rows a scan of the view returns,
// for every domain, whatever else the statement asks; and it works on an
// S3 store, where the view is a scan by the server (urls_scan).
func TestURLsByDomainAgreesWithTheView(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ingestSampleDatasets(t, dir)
	// and kept fields: CDX, CDXJ, and CSV columns of which one ("score")
	// two datasets keep with different types, so the view has it as VARCHAR
	cdx := filepath.Join("..", "..", "testdata", "shared", "cdx")
	ingestOK(t, "--store", dir, "--dataset", "iana", filepath.Join(cdx, "pywb-iana.cdx"))
	ingestOK(t, "--store", dir, "--dataset", "ccj", filepath.Join(cdx, "cc-main-2024-30-cdx-00187.cdxj"))
	for i, body := range []string{
		"url,lang,score,seen,price\nhttps://www.iana.org/shop/a,en,3,2024-01-02T03:04:05Z,1.5\nhttps://iana.org/shop/b,fr,,,2\nhttps://www.iana.org/shop/c,,7,2024-02-03T00:00:00.25Z,\n",
		"url,score\nhttps://www.iana.org/shop/d,high\nhttps://www.iana.org/shop/e,\n",
	} {
		csv := filepath.Join(t.TempDir(), "shop.csv")
		if err := os.WriteFile(csv, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cols := "lang,score,seen:timestamp,price"
		if i == 1 {
			cols = "score"
		}
		ingestOK(t, "--store", dir, "--dataset", fmt.Sprintf("shop%d", i), "--keep-columns", cols, csv)
	}
	cn := connect(t, startServe(t, "--store", dir, "--cache-dir", t.TempDir(), "--refresh-interval", "100ms"))
	domains := distinctDomains(t, cn)
	answer := func(q string, args ...any) string { t.Helper(); return rowsText(t, cn, q, args...) }
	// the plan names the function: the filter is answered from the postings
	plan := answer("EXPLAIN SELECT url FROM urls WHERE domain = $1", domains[0])
	if !strings.Contains(strings.ToUpper(plan), "URLS_BY_DOMAIN") || strings.Contains(plan, "READ_PARQUET") {
		t.Fatalf("the plan of a lookup by domain does not read urls_by_domain:\n%s", plan)
	}
	// "domain || ''" is no equality on the column: the server leaves it to
	// DuckDB's scan of every file, the reference
	shapes := [][2]string{
		{"SELECT * FROM urls WHERE domain = $1 ORDER BY ALL", "SELECT * FROM urls WHERE domain || '' = $1 ORDER BY ALL"},
		{"SELECT url, ts FROM urls u WHERE u.domain = $1 AND dataset_id = 2 ORDER BY url DESC LIMIT 7", "SELECT url, ts FROM urls u WHERE u.domain || '' = $1 AND dataset_id = 2 ORDER BY url DESC LIMIT 7"},
		{"SELECT dataset_id, count(*), count(raw), min(url), max(url_id) FROM urls WHERE domain = $1 GROUP BY ALL ORDER BY 1", "SELECT dataset_id, count(*), count(raw), min(url), max(url_id) FROM urls WHERE domain || '' = $1 GROUP BY ALL ORDER BY 1"},
		{"SELECT count(*) FROM urls WHERE domain = $1 AND url LIKE '%.css%'", "SELECT count(*) FROM urls WHERE domain || '' = $1 AND url LIKE '%.css%'"},
		// the CDX match types host and domain-with-subdomains, in SQL
		{"SELECT url FROM urls WHERE domain = $1 AND (url_host(url) = 'www.' || $1 OR url_host(url) LIKE '%.www.' || $1) ORDER BY url, dataset_id", "SELECT url FROM urls WHERE domain || '' = $1 AND (url_host(url) = 'www.' || $1 OR url_host(url) LIKE '%.www.' || $1) ORDER BY url, dataset_id"},
		{"SELECT d.dataset, count(*) FROM urls JOIN datasets d USING (dataset_id) WHERE domain = $1 GROUP BY 1 ORDER BY 1", "SELECT d.dataset, count(*) FROM urls JOIN datasets d USING (dataset_id) WHERE domain || '' = $1 GROUP BY 1 ORDER BY 1"},
	}
	var viewCols string
	if err := cn.QueryRow(ctx, "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'urls'").Scan(&viewCols); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"status integer", "mime text", "lang text", "score text", "seen timestamp", "price double"} {
		if !strings.Contains(viewCols, c) {
			t.Fatalf("the urls view's columns %s lack %s", viewCols, c)
		}
	}
	nonEmpty := 0
	for _, d := range append(domains, "absent.example", "IANA.ORG") {
		for _, s := range shapes {
			got, want := answer(s[0], d), answer(s[1], d)
			if got != want {
				t.Fatalf("%s with %q:\npostings %q\nscan     %q", s[0], d, got, want)
			}
			if got != "" && got != "0" {
				nonEmpty++
			}
		}
	}
	if nonEmpty < len(domains) {
		t.Fatalf("only %d answers had rows", nonEmpty)
	}
	// with dataset_id = n beside it, only that dataset's postings are read
	plan = answer("EXPLAIN SELECT url FROM urls WHERE dataset_id = $2 AND domain = $1", domains[0], 1)
	if !strings.Contains(strings.ToUpper(plan), "URLS_BY_DOMAIN_DATASET") {
		t.Fatalf("the plan of a lookup by domain and dataset does not read urls_by_domain_dataset:\n%s", plan)
	}
	for _, d := range domains {
		for _, ds := range []any{1, 2, 3, 999, -1, nil} {
			got := answer("SELECT url, url_id, raw, ts, domain_prefix FROM urls WHERE domain = $1 AND dataset_id = $2 ORDER BY ALL", d, ds)
			want := answer("SELECT url, url_id, raw, ts, domain_prefix FROM urls WHERE domain || '' = $1 AND dataset_id = $2 ORDER BY ALL", d, ds)
			if got != want {
				t.Fatalf("%s in dataset %v:\npostings %q\nscan     %q", d, ds, got, want)
			}
		}
	}
	// several domains at once, an IN list or an OR of equalities, is the
	// union of their lookups (pgsql.PointLookups): each domain's rows
	// once, however often it is named, NULLs naming nothing
	plan = answer("EXPLAIN SELECT url FROM urls WHERE domain IN ($1, $2)", domains[0], domains[1])
	if !strings.Contains(strings.ToUpper(plan), "URLS_BY_DOMAIN") || strings.Contains(plan, "READ_PARQUET") {
		t.Fatalf("the plan of a lookup of two domains does not read urls_by_domain:\n%s", plan)
	}
	quote := func(d string) string { return "'" + strings.ReplaceAll(d, "'", "''") + "'" }
	several := append(append([]string(nil), domains...), "absent.example", "IANA.ORG")
	for i := range several {
		a, b, c := several[i], several[(i+1)%len(several)], several[(i+3)%len(several)]
		lit := quote(a) + ", " + quote(b) + ", " + quote(a) + ", " + quote(c)
		for _, s := range [][3]string{
			{"SELECT * FROM urls WHERE domain IN (" + lit + ") ORDER BY ALL", "", ""},
			{"SELECT url, dataset_id FROM urls u WHERE u.dataset_id = 1 AND u.domain IN (" + lit + ") ORDER BY ALL", "", ""},
			{"SELECT dataset_id, count(*), min(url) FROM urls WHERE domain = " + quote(a) + " OR domain = " + quote(b) + " OR " + quote(a) + " = domain GROUP BY 1 ORDER BY 1", "", ""},
			{"SELECT url FROM urls WHERE (domain = " + quote(c) + " OR domain = " + quote(b) + ") AND url LIKE '%.css%' ORDER BY ALL", "", ""},
			{"SELECT count(*), count(raw) FROM urls WHERE domain IN ($1, $2, $1::varchar, $3)", b, c},
			// casts to another type than the argument's, and a dataset
			// past INTEGER, answer as the scan does (they were 42883)
			{"SELECT count(*) FROM urls WHERE domain = " + quote(a) + "::blob", "", ""},
			{"SELECT count(*) FROM urls WHERE domain IN (" + quote(b) + ", " + quote(a) + "::blob)", "", ""},
			{"SELECT count(*) FROM urls WHERE domain = " + quote(a) + " AND dataset_id = 1::bigint", "", ""},
			{"SELECT count(*) FROM urls WHERE domain IN (" + lit + ") AND dataset_id = 99999999999", "", ""},
		} {
			args := []any{a, s[1], s[2]}
			if s[1] == "" {
				args = nil
			}
			scan := strings.NewReplacer("domain IN", "domain || '' IN", "domain =", "domain || '' =", "= domain", "= domain || ''").Replace(s[0])
			if got, want := answer(s[0], args...), answer(scan, args...); got != want {
				t.Fatalf("%s %v:\npostings %q\nscan     %q", s[0], args, got, want)
			}
		}
		for _, args := range [][]any{{a, a, nil}, {nil, nil, nil}, {a, nil, b}} {
			const q = "SELECT url, dataset_id FROM urls WHERE domain IN ($1, $2, $3) ORDER BY ALL"
			if got, want := answer(q, args...), answer(strings.Replace(q, "domain IN", "domain || '' IN", 1), args...); got != want {
				t.Fatalf("%s %v:\npostings %q\nscan     %q", q, args, got, want)
			}
		}
	}
	// a $n beside a lookup's is typed by its use, so pgx sends a Go int
	// for it (it was described as text, and pgx refused: "cannot find
	// encode plan")
	for _, q := range []string{
		"SELECT url FROM urls WHERE domain = $1 ORDER BY url LIMIT $2",
		"SELECT url FROM urls WHERE domain IN ($1, 'absent.example') AND length(url) > $2 ORDER BY url LIMIT $2",
		"SELECT url FROM domain_urls($1, 1, 0, 1000) ORDER BY url DESC LIMIT $2",
	} {
		rows, err := cn.Query(ctx, q, domains[0], 2)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		got := 0
		for rows.Next() {
			got++
		}
		if err := rows.Err(); err != nil || got == 0 || got > 2 {
			t.Fatalf("%s with %s, 2: %d rows, %v", q, domains[0], got, err)
		}
	}
	// dataset_id = $2 declared int8 (JDBC's setLong) finds what the scan
	// finds, natively and through DuckDB, and none past INTEGER's range:
	// the DuckDB path failed to bind urls_by_domain_dataset(VARCHAR,
	// BIGINT) with 42883, and the native one answered 22003. Undeclared,
	// the $2 is described as the column's int4, as the scan's is.
	int8 := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	for _, q := range []string{
		"SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2 ORDER BY url",
		"SELECT url, length(url) FROM urls WHERE domain = $1 AND dataset_id = $2 ORDER BY url",
	} {
		scan := strings.Replace(q, "domain =", "domain || '' =", 1)
		sd, err := cn.PgConn().Prepare(ctx, "", q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(sd.ParamOIDs) != 2 || sd.ParamOIDs[1] != 23 {
			t.Fatalf("%s: parameters described as %v, want dataset_id int4 (23)", q, sd.ParamOIDs)
		}
		found := false
		for _, ds := range []int64{1, 2, 3, 1<<32 + 1} {
			var got [2]string
			for k, sql := range []string{q, scan} {
				if _, err := cn.PgConn().Prepare(ctx, "", sql, []uint32{25, 20}); err != nil {
					t.Fatal(err)
				}
				r := cn.PgConn().ExecPrepared(ctx, "", [][]byte{[]byte(domains[0]), int8(ds)}, []int16{0, 1}, nil).Read()
				if r.Err != nil {
					t.Fatalf("%s with an int8 %d: %v", sql, ds, r.Err)
				}
				for _, row := range r.Rows {
					got[k] += string(row[0]) + "\n"
				}
			}
			if got[0] != got[1] {
				t.Fatalf("%s with an int8 %d:\npostings %q\nscan     %q", q, ds, got[0], got[1])
			}
			found = found || got[0] != ""
		}
		if !found {
			t.Fatalf("%s: no rows for %s in datasets 1-3", q, domains[0])
		}
	}
	// dataset_id = $2 declared varchar, text or numeric (JDBC's setString,
	// setBigDecimal): DuckDB casts the text to the column's INTEGER by its
	// own rules ('1.5' is 2, '0x10' 16, '4294967297' refused with 22P02),
	// so the lookup and the native path answer as the scan, value for
	// value, error for error. The lookup answered no row for 4294967297,
	// the native path 22P02 for '1.5'.
	outcome := func(sql string, oid uint32, v string) string {
		if _, err := cn.PgConn().Prepare(ctx, "", sql, []uint32{25, oid}); err != nil {
			return "prepare: " + err.Error()
		}
		r := cn.PgConn().ExecPrepared(ctx, "", [][]byte{[]byte(domains[0]), []byte(v)}, nil, nil).Read()
		if r.Err != nil {
			var pe *pgconn.PgError
			if errors.As(r.Err, &pe) {
				return "error " + pe.Code
			}
			return r.Err.Error()
		}
		var b strings.Builder
		for _, row := range r.Rows {
			b.Write(row[0])
			b.WriteByte('\n')
		}
		return b.String()
	}
	for _, oid := range []uint32{1043, 25, 1700} {
		for _, v := range []string{"1", "2", "1.5", "0x2", "4294967297", " 3 "} {
			for _, pair := range [][2]string{
				{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2 ORDER BY url", "SELECT url FROM urls WHERE domain || '' = $1 AND dataset_id = $2 ORDER BY url"},
				{"SELECT dataset_id, url_count FROM domain_datasets($1) WHERE dataset_id = $2", "SELECT dataset_id, url_count FROM domain_datasets($1) WHERE dataset_id + 0 = $2"},
			} {
				if got, want := outcome(pair[0], oid, v), outcome(pair[1], oid, v); got != want {
					t.Errorf("%s with $2 declared as OID %d, %q:\ngot  %q\nscan %q", pair[0], oid, v, got, want)
				}
			}
		}
	}
	// and a function's INTEGER argument declared int8, varchar or numeric
	// answers through DuckDB (an expression in the select list) as it does
	// natively: DuckDB found no domain_urls(VARCHAR, BIGINT, …) (42883)
	for _, decl := range []struct {
		oid    uint32
		val    []byte
		format int16
	}{{20, int8(1), 1}, {1043, []byte("1"), 0}, {1700, []byte("1"), 0}} {
		var got [2]string
		for k, q := range []string{"SELECT url FROM domain_urls($1, $2, 0, 10)", "SELECT url, length(url) FROM domain_urls($1, $2, 0, 10)"} {
			if _, err := cn.PgConn().Prepare(ctx, "", q, []uint32{25, decl.oid}); err != nil {
				t.Fatal(err)
			}
			r := cn.PgConn().ExecPrepared(ctx, "", [][]byte{[]byte(domains[0]), decl.val}, []int16{0, decl.format}, nil).Read()
			if r.Err != nil {
				t.Fatalf("%s with $2 declared as OID %d: %v", q, decl.oid, r.Err)
			}
			for _, row := range r.Rows {
				got[k] += string(row[0]) + "\n"
			}
		}
		if got[0] != got[1] {
			t.Fatalf("domain_urls with $2 declared as OID %d:\nnatively %q\nDuckDB   %q", decl.oid, got[0], got[1])
		}
	}
	// a $n used beside the argument is not converted: its other use keeps
	// the value bound (the conversion once selected 1 for a varchar '01')
	if _, err := cn.PgConn().Prepare(ctx, "", "SELECT $2 AS a, url FROM domain_urls($1, $2, 0, 2)", []uint32{25, 1043}); err != nil {
		t.Fatal(err)
	}
	if r := cn.PgConn().ExecPrepared(ctx, "", [][]byte{[]byte(domains[0]), []byte("01")}, nil, nil).Read(); r.Err == nil {
		for _, row := range r.Rows {
			if string(row[0]) != "01" {
				t.Fatalf("$2 bound as varchar '01' selected as %q", row[0])
			}
		}
	}
	// dataset_id = $2::bigint is left to the scan, which describes $2 as
	// int8: rewritten, it was described as int4 and pgx refused a value
	// past it
	var none int64
	if err := cn.QueryRow(ctx, "SELECT count(*) FROM urls WHERE domain = $1 AND dataset_id = $2::bigint", domains[0], int64(1<<32+1)).Scan(&none); err != nil || none != 0 {
		t.Fatalf("dataset_id = $2::bigint past int4: %d rows, %v", none, err)
	}
	// a literal, through the simple protocol, and a NULL parameter
	var n, m int64
	if err := cn.QueryRow(ctx, "SELECT count(*) FROM urls WHERE domain = 'iana.org'", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n == 0 {
		t.Fatalf("iana.org: %d rows, %v", n, err)
	}
	if err := cn.QueryRow(ctx, "SELECT count(*) FROM urls WHERE domain || '' = 'iana.org'").Scan(&m); err != nil || m != n {
		t.Fatalf("iana.org: %d rows by the postings, %d by a scan (%v)", n, m, err)
	}
	// domain = NULL keeps no row, on the DuckDB path too (a NULL reaching
	// a table function's bind aborts the process: sqlserver's guardNullArgs)
	for _, q := range []string{"SELECT count(*) FROM urls WHERE domain = $1", "SELECT count(*) FROM urls WHERE domain = $1 AND url LIKE '%'",
		"SELECT count(*) FROM domains WHERE domain = $1 AND domain LIKE '%'"} {
		if err := cn.QueryRow(ctx, q, nil).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s with NULL: %d rows, %v", q, n, err)
		}
	}

	// on S3 the view cannot be scanned, but a lookup by domain works
	srv := s3test.Start(t)
	_, bucket := srv.NewStore(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	// the same file as the local store's dataset "pywb" (ingestSampleDatasets)
	list := filepath.Join("..", "..", "testdata", "shared", "urls", "pywb_sample_archive.txt")
	if code := run(ctx, []string{"ingest", "--store", "s3://" + bucket, "--dataset", "pywb", list}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("ingest into s3://%s: exit %d", bucket, code)
	}
	s3 := connect(t, startServe(t, "--store", "s3://"+bucket, "--cache-dir", t.TempDir(), "--refresh-interval", "100ms"))
	const iana = "SELECT url, raw, url_id FROM urls WHERE domain = 'iana.org' AND dataset_id = (SELECT dataset_id FROM datasets WHERE dataset = 'pywb') ORDER BY url"
	s3Rows, localRows := rowsText(t, s3, iana), rowsText(t, cn, iana)
	if s3Rows == "" || s3Rows != localRows {
		t.Fatalf("iana.org on S3:\n%s\nlocally:\n%s", s3Rows, localRows)
	}
	// and a scan of the view works there too (urls_scan: TestURLsViewOnS3)
	const pywb = "SELECT count(*), count(raw), max(url_id) FROM urls WHERE dataset_id = (SELECT dataset_id FROM datasets WHERE dataset = 'pywb')"
	if s3Rows, localRows := rowsText(t, s3, pywb), rowsText(t, cn, pywb); s3Rows != localRows {
		t.Fatalf("a scan of the view on S3: %s; locally %s", s3Rows, localRows)
	}
}

// distinctDomains are the registered domains of every URL the server
// holds (at least 3, or the test fails).
func distinctDomains(t *testing.T, cn *pgx.Conn) []string {
	t.Helper()
	domains := queryStrings(t, cn, "SELECT DISTINCT domain FROM urls ORDER BY 1")
	if len(domains) < 3 {
		t.Fatalf("%d domains", len(domains))
	}
	return domains
}

// queryStrings runs q and returns its first column as strings; the test
// fails on an error.
func queryStrings(t *testing.T, c *pgx.Conn, q string, args ...any) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// rowsText runs q and returns its rows, one line each, the values of a row
// printed by fmt.Sprint; the test fails on an error.
func rowsText(t *testing.T, c *pgx.Conn, q string, args ...any) string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(v...))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(out, "\n")
}

// TestURLsByDomainNativeOnABigDomain: a domain of more rows than the
// native path keeps decoded at once (udf's viewRowsBudget, 2^18), in one
// dataset from two ingests (two files: runs not sorted across them) and in
// a second dataset, answers on the native path what DuckDB answers: the
// first page by url, a keyset page from the middle, a sort of every row
// the other way, a LIKE over every row sorted by another column.
func TestURLsByDomainNativeOnABigDomain(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 330,000 URLs")
	}
	dir := t.TempDir()
	write := func(name string, from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "https://big.example/p/%07d\n", (i*7919)%1000003)
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ingestOK(t, "--store", dir, "--dataset", "a", write("a1.txt", 0, 280000))
	ingestOK(t, "--store", dir, "--dataset", "a", write("a2.txt", 280000, 300000))
	ingestOK(t, "--store", dir, "--dataset", "b", write("b.txt", 0, 30000))
	native, duck, metricsAt := nativeAndDuckDB(t, dir)
	shapes := []struct {
		sql  string
		args []any
	}{
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = 1 ORDER BY url LIMIT 5", []any{"big.example"}},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = 1 AND url > $2 ORDER BY url LIMIT 5", []any{"big.example", "https://big.example/p/0500000"}},
		{"SELECT url, dataset_id FROM urls WHERE domain = $1 ORDER BY url DESC, dataset_id LIMIT 5 OFFSET 1000", []any{"big.example"}},
		{"SELECT url, ts, dataset_id FROM urls WHERE domain = $1 AND url LIKE '%/09%99' ORDER BY ts, url, dataset_id", []any{"big.example"}},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = 2 AND url LIKE 'https://big.example/p/00%' ORDER BY url LIMIT 3", []any{"big.example"}},
	}
	for _, q := range shapes {
		got, want := rowsText(t, native, q.sql, q.args...), rowsText(t, duck, q.sql, q.args...)
		if got != want {
			t.Fatalf("%s:\nnative %q\nDuckDB %q", q.sql, got, want)
		}
		if strings.Count(got, "\n") < 2 {
			t.Fatalf("%s: %q, want rows", q.sql, got)
		}
	}
	if n := nativeStatements(t, metricsAt, "urls_by_domain") + nativeStatements(t, metricsAt, "urls_by_domain_dataset"); n != len(shapes) {
		t.Fatalf("%d of the %d statements answered natively", n, len(shapes))
	}
}
