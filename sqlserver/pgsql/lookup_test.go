package pgsql

import "testing"

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
		{"SELECT * FROM domains WHERE domain = 'a.org' OR domain = 'b.org'", ""},
		{"SELECT * FROM domains WHERE n BETWEEN 1 AND domain = 'a'", ""},
		{"SELECT * FROM domains WHERE domain IN ('a.org')", ""},
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
	}
	checkLookups(t, lookups, cases)
}

// lookupCase is a statement and what PointLookups makes of it ("": the
// statement unchanged).
type lookupCase struct{ in, want string }

func checkLookups(t *testing.T, lookups map[string]Lookup, cases []lookupCase) {
	t.Helper()
	for _, c := range cases {
		got := Join(PointLookups(Lex(c.in), lookups))
		want := c.want
		if want == "" {
			want = c.in
		}
		if got != want {
			t.Errorf("%s\n got  %s\n want %s", c.in, got, want)
		}
	}
}
