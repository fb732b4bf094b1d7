package pgsql

import (
	"strconv"
	"strings"
	"testing"
)

func TestPointLookups(t *testing.T) {
	lookups := map[string]Lookup{"domains": {Column: "domain", Function: "domain_record"}}
	cases := []lookupCase{
		// the shapes people and tools write
		{"SELECT * FROM domains WHERE domain = $1", "SELECT * FROM domain_record($1) AS domains"},
		{"select company_name from domains where domain = 'example.com'", "select company_name from domain_record('example.com') AS domains"},
		{"SELECT * FROM public.domains WHERE domain = $1::text", "SELECT * FROM domain_record($1::text) AS domains"},
		{"SELECT d.company_name FROM domains d WHERE d.domain = $1 AND d.scraper_version > 2 ORDER BY 1 LIMIT 5",
			"SELECT d.company_name FROM domain_record($1) d WHERE d.domain = $1 AND d.scraper_version > 2 ORDER BY 1 LIMIT 5"},
		{"SELECT * FROM domains AS x WHERE x.updated_at > now() - INTERVAL 1 DAY AND 'a.org' = x.domain",
			"SELECT * FROM domain_record('a.org') AS x WHERE x.updated_at > now() - INTERVAL 1 DAY AND 'a.org' = x.domain"},
		{"SELECT domains.domain FROM domains WHERE (company_name <> 'x' OR company_name IS NULL) AND domain = $2",
			"SELECT domains.domain FROM domain_record($2) AS domains WHERE (company_name <> 'x' OR company_name IS NULL) AND domain = $2"},
		{"WITH r AS (SELECT * FROM domains WHERE domain = $1) SELECT count(*) FROM r",
			"WITH r AS (SELECT * FROM domain_record($1) AS domains) SELECT count(*) FROM r"},
		{"SELECT * FROM t WHERE x IN (SELECT company_name FROM domains WHERE domain = 'b.org')",
			"SELECT * FROM t WHERE x IN (SELECT company_name FROM domain_record('b.org') AS domains)"},
		{"EXPLAIN ANALYZE SELECT * FROM domains WHERE domain = $1", "EXPLAIN ANALYZE SELECT * FROM domain_record($1) AS domains"},
		{"SELECT * FROM domains d WHERE d.domain = $1 ORDER BY 1", "SELECT * FROM domain_record($1) d ORDER BY 1"},
		{"SELECT * FROM domains WHERE domain = 'a.org';", "SELECT * FROM domain_record('a.org') AS domains;"},
		// a BETWEEN's AND is its own, not the clause's
		{"SELECT * FROM domains WHERE domain = $1 AND n BETWEEN 1 AND 2", "SELECT * FROM domain_record($1) AS domains WHERE domain = $1 AND n BETWEEN 1 AND 2"},
		{"SELECT * FROM domains WHERE n NOT BETWEEN SYMMETRIC 1 AND 2 AND domain = $1", "SELECT * FROM domain_record($1) AS domains WHERE n NOT BETWEEN SYMMETRIC 1 AND 2 AND domain = $1"},
		// left alone: the answer would change, or nothing is known
		{"SELECT * FROM domains WHERE n BETWEEN 1 AND 2 = domain", ""},
		{"SELECT * FROM domains WHERE n BETWEEN 1 AND domain = 'a'", ""},
		{"SELECT * FROM domains WHERE domain = lower($1)", ""},
		{"SELECT * FROM domains WHERE domain = 'a' || 'b'", ""},
		{"SELECT * FROM domains WHERE NOT domain = 'a.org'", ""},
		{"SELECT * FROM domains WHERE domain <> 'a.org'", ""},
		{"SELECT * FROM domains WHERE company_name = 'a.org'", ""},
		{"SELECT * FROM domains d WHERE other.domain = 'a.org'", ""},
		{"SELECT * FROM domains, t WHERE domain = 'a.org'", ""},
		{"SELECT * FROM domains JOIN t USING (domain) WHERE domain = 'a.org'", ""},
		{"SELECT * FROM domains d JOIN t ON true WHERE d.domain = 'a.org'", ""},
		{"SELECT * FROM domains", ""},
		{"SELECT * FROM other.domains WHERE domain = 'a.org'", ""},
		{"DELETE FROM domains WHERE domain = 'a.org'", ""},
		{"SELECT * FROM domains WHERE domain = E'a\\x'", ""},
		{"SELECT 'FROM domains WHERE domain = 1'", ""},
	}
	checkLookups(t, lookups, cases)
}

// TestPointLookupsNarrow: a second equality (urls by domain and dataset)
// picks the narrower function and keeps the WHERE clause whole.
func TestPointLookupsNarrow(t *testing.T) {
	lookups := map[string]Lookup{"urls": {Column: "domain", Function: "urls_by_domain",
		Narrow: &Lookup{Column: "dataset_id", Function: "urls_by_domain_dataset"}}}
	cases := []lookupCase{
		{"SELECT url FROM urls WHERE domain = $1", "SELECT url FROM urls_by_domain($1) AS urls"},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2 ORDER BY url LIMIT 10",
			"SELECT url FROM urls_by_domain_dataset($1, $2) AS urls WHERE domain = $1 AND dataset_id = $2 ORDER BY url LIMIT 10"},
		{"SELECT url FROM urls u WHERE u.dataset_id = 17 AND u.url > $2 AND 'a.org' = u.domain",
			"SELECT url FROM urls_by_domain_dataset('a.org', 17) u WHERE u.dataset_id = 17 AND u.url > $2 AND 'a.org' = u.domain"},
		// not an integer: the wider function, the filter left to DuckDB
		{"SELECT url FROM urls WHERE domain = 'a.org' AND dataset_id = 1.5",
			"SELECT url FROM urls_by_domain('a.org') AS urls WHERE domain = 'a.org' AND dataset_id = 1.5"},
		{"SELECT url FROM urls WHERE domain = 'a.org' AND dataset_id = id2",
			"SELECT url FROM urls_by_domain('a.org') AS urls WHERE domain = 'a.org' AND dataset_id = id2"},
		{"SELECT url FROM urls WHERE dataset_id = 3", ""},
		// a cast to a type the argument takes is kept (the narrow
		// function's dataset_id is a BIGINT); to another, or a number
		// past BIGINT, the wider function or a scan answers
		{"SELECT url FROM urls WHERE domain = $1::VARCHAR AND dataset_id = $2::int4",
			"SELECT url FROM urls_by_domain_dataset($1::VARCHAR, $2::int4) AS urls WHERE domain = $1::VARCHAR AND dataset_id = $2::int4"},
		{"SELECT url FROM urls WHERE domain = 'a.org' AND dataset_id = 2::bigint",
			"SELECT url FROM urls_by_domain_dataset('a.org', 2::bigint) AS urls WHERE domain = 'a.org' AND dataset_id = 2::bigint"},
		{"SELECT url FROM urls WHERE domain = 'a.org' AND dataset_id = 99999999999",
			"SELECT url FROM urls_by_domain_dataset('a.org', 99999999999) AS urls WHERE domain = 'a.org' AND dataset_id = 99999999999"},
		{"SELECT url FROM urls WHERE domain = 'a.org' AND dataset_id = 99999999999999999999",
			"SELECT url FROM urls_by_domain('a.org') AS urls WHERE domain = 'a.org' AND dataset_id = 99999999999999999999"},
		// a $n cast wider than INTEGER would be described as int4: scan
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2::bigint",
			"SELECT url FROM urls_by_domain($1) AS urls WHERE domain = $1 AND dataset_id = $2::bigint"},
		{"SELECT url FROM urls WHERE domain = 'a.org' AND dataset_id = 2::double",
			"SELECT url FROM urls_by_domain('a.org') AS urls WHERE domain = 'a.org' AND dataset_id = 2::double"},
		{"SELECT url FROM urls WHERE domain = 'a.org' AND dataset_id = 2_147_483_647",
			"SELECT url FROM urls_by_domain_dataset('a.org', 2_147_483_647) AS urls WHERE domain = 'a.org' AND dataset_id = 2_147_483_647"},
		{"SELECT url FROM urls WHERE domain = 'a.org'::blob", ""},
		{"SELECT url FROM urls WHERE domain IN ('a.org', '1'::int)", ""},
	}
	checkLookups(t, lookups, cases)
}

// TestPointLookupsNarrowOnlyByNumberParams: a $n the caller refuses as a
// number (the client declared it text) is no Narrow value; a cast of it
// still is, since DuckDB casts the text to the type named.
func TestPointLookupsNarrowOnlyByNumberParams(t *testing.T) {
	lookups := map[string]Lookup{"urls": {Column: "domain", Function: "urls_by_domain",
		Narrow: &Lookup{Column: "dataset_id", Function: "urls_by_domain_dataset"}}}
	notTwo := func(n int) bool { return n != 2 }
	for _, c := range []lookupCase{
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2",
			"SELECT url FROM urls_by_domain($1) AS urls WHERE domain = $1 AND dataset_id = $2"},
		{"SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2::int",
			"SELECT url FROM urls_by_domain_dataset($1, $2::int) AS urls WHERE domain = $1 AND dataset_id = $2::int"},
		{"SELECT url FROM urls WHERE domain = $2 AND dataset_id = $1",
			"SELECT url FROM urls_by_domain_dataset($2, $1) AS urls WHERE domain = $2 AND dataset_id = $1"},
	} {
		if got := Join(PointLookups(Lex(c.in), lookups, notTwo)); got != c.want {
			t.Errorf("%s\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

// TestPointLookupsOfSeveralValues: an IN list or an OR of equalities is
// the union of each value's lookup, each value's rows once.
func TestPointLookupsOfSeveralValues(t *testing.T) {
	lookups := map[string]Lookup{"urls": {Column: "domain", Function: "f",
		Narrow: &Lookup{Column: "dataset_id", Function: "g"}}}
	cases := []lookupCase{
		{"SELECT url FROM urls WHERE domain IN ('a.org', 'b.org')",
			"SELECT url FROM (SELECT * FROM f('a.org') UNION ALL SELECT * FROM f('b.org')) AS urls"},
		{"SELECT url FROM urls WHERE domain IN ('a.org')", "SELECT url FROM f('a.org') AS urls"},
		// equal literals are one value, however they are written
		{"SELECT url FROM urls WHERE domain IN ('a.org', 'a.org', 'a''b', 'a''b')",
			"SELECT url FROM (SELECT * FROM f('a.org') UNION ALL SELECT * FROM f('a''b')) AS urls"},
		// a $n may equal any value before it: its branch says so
		{"SELECT url FROM urls u WHERE u.domain IN ($1, 'b.org', $2::text) AND u.url LIKE 'https:%'",
			"SELECT url FROM (SELECT * FROM f($1) UNION ALL SELECT * FROM f('b.org') WHERE ('b.org' <> $1 OR $1 IS NULL) UNION ALL SELECT * FROM f($2::text) WHERE ($2::text <> $1 OR $1 IS NULL) AND ($2::text <> 'b.org' OR 'b.org' IS NULL)) u WHERE u.domain IN ($1, 'b.org', $2::text) AND u.url LIKE 'https:%'"},
		{"SELECT url FROM urls WHERE domain IN ('a.org', 'a.org'::text)",
			"SELECT url FROM (SELECT * FROM f('a.org') UNION ALL SELECT * FROM f('a.org'::text) WHERE ('a.org'::text <> 'a.org' OR 'a.org' IS NULL)) AS urls"},
		{"SELECT url FROM urls WHERE domain IN ($1, $1)", "SELECT url FROM f($1) AS urls"},
		{"SELECT url FROM urls WHERE dataset_id = 3 AND domain IN ('a.org', 'b.org')",
			"SELECT url FROM (SELECT * FROM g('a.org', 3) UNION ALL SELECT * FROM g('b.org', 3)) AS urls WHERE dataset_id = 3 AND domain IN ('a.org', 'b.org')"},
		{"SELECT url FROM urls WHERE domain = 'a.org' OR domain = 'b.org'",
			"SELECT url FROM (SELECT * FROM f('a.org') UNION ALL SELECT * FROM f('b.org')) AS urls"},
		{"SELECT url FROM urls WHERE (domain = 'a.org' OR (domain = 'b.org' OR 'c.org' = domain)) AND dataset_id = 2",
			"SELECT url FROM (SELECT * FROM g('a.org', 2) UNION ALL SELECT * FROM g('b.org', 2) UNION ALL SELECT * FROM g('c.org', 2)) AS urls WHERE (domain = 'a.org' OR (domain = 'b.org' OR 'c.org' = domain)) AND dataset_id = 2"},
		// an equality is still the narrowest
		{"SELECT url FROM urls WHERE domain IN ('a.org', 'b.org') AND domain = 'a.org'",
			"SELECT url FROM f('a.org') AS urls WHERE domain IN ('a.org', 'b.org') AND domain = 'a.org'"},
		// left alone: the rows of the values are not all the clause keeps
		{"SELECT url FROM urls WHERE domain NOT IN ('a.org', 'b.org')", ""},
		{"SELECT url FROM urls WHERE domain IN (SELECT d FROM t)", ""},
		{"SELECT url FROM urls WHERE domain IN ('a.org', NULL)", ""},
		{"SELECT url FROM urls WHERE domain IN ('a.org', lower($1))", ""},
		{"SELECT url FROM urls WHERE domain IN ('a.org') OR url = 'x'", ""},
		{"SELECT url FROM urls WHERE domain = 'a.org' OR domain = 'b.org' AND dataset_id = 1", ""},
		{"SELECT url FROM urls WHERE domain = 'a.org' OR url = 'b.org'", ""},
		{"SELECT url FROM urls WHERE (domain = 'a.org') OR (domain = 'b.org') OR dataset_id = 1", ""},
		{"SELECT url FROM urls WHERE (domain = 'a.org' OR dataset_id = 1) AND domain IS NOT NULL", ""},
		{"SELECT url FROM urls WHERE NOT (domain = 'a.org' OR domain = 'b.org')", ""},
		{"SELECT url FROM urls WHERE domain = ANY(ARRAY['a.org', 'b.org'])", ""},
		// a CTE of the view's name is no view
		{"WITH urls AS (SELECT 'a.org' AS domain, 'x' AS url) SELECT url FROM urls WHERE domain IN ('a.org', 'b.org')", ""},
		{"WITH x AS (SELECT 1), \"urls\"(domain, url) AS MATERIALIZED (SELECT 'a.org', 'x') SELECT url FROM urls WHERE domain = 'a.org'", ""},
	}
	checkLookups(t, lookups, cases)
	// more values than a union is worth: a scan
	var list []string
	for i := 0; i <= maxLookupValues; i++ {
		list = append(list, "'d"+strconv.Itoa(i)+".org'")
	}
	long := "SELECT url FROM urls WHERE domain IN (" + strings.Join(list, ", ") + ")"
	checkLookups(t, lookups, []lookupCase{{long, ""}})
}

// lookupCase is a statement and what PointLookups makes of it ("": the
// statement unchanged).
type lookupCase struct{ in, want string }

func checkLookups(t *testing.T, lookups map[string]Lookup, cases []lookupCase) {
	t.Helper()
	for _, c := range cases {
		got := Join(PointLookups(Lex(c.in), lookups, nil))
		want := c.want
		if want == "" {
			want = c.in
		}
		if got != want {
			t.Errorf("%s\n got  %s\n want %s", c.in, got, want)
		}
	}
}
