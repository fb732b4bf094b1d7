package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/internal/testclients"
)

// TestPsqlDescribesDHSI is issue 18 §1's first hour in psql: \dv lists
// DHSI's views, \df its functions with named arguments and result
// columns, \sf shows what one is, \d domains describes a view.
func TestPsqlDescribesDHSI(t *testing.T) {
	_, err := exec.LookPath("psql")
	testclients.Need(t, "psql", "apt-get install postgresql-client", err)
	url := startServe(t, "--store", t.TempDir())
	psql := func(meta string) string {
		t.Helper()
		out, err := exec.Command("psql", "-X", "-A", url, "-c", meta).CombinedOutput()
		if err != nil {
			t.Fatalf("psql -c %s: %v\n%s", meta, err, out)
		}
		return string(out)
	}
	for _, c := range []struct {
		meta string
		want []string
	}{
		{`\dv`, []string{"public|domains|view|", "public|urls|view|", "public|datasets|view|", "public|domain_errors|view|"}},
		{`\df`, []string{
			`public|domain_urls|TABLE(url_id numeric, url text, ts timestamp without time zone)|domain text, dataset_id integer, "offset" bigint, "limit" bigint|func`,
			"public|domain_datasets|TABLE(dataset_id integer, dataset text, url_count bigint)|domain text|func",
			"public|shard_id|text|domain text|func",
			"public|reshard|TABLE(from_width bigint, to_width bigint, status text,",
			`|dataset text, files text, keep_columns text DEFAULT ''::text|func`,
		}},
		{`\sf shard_id`, []string{"CREATE OR REPLACE FUNCTION public.shard_id(domain text)", " RETURNS text", "the domain-record shard a domain's record lives in"}},
		{`\sf domain_urls`, []string{` RETURNS TABLE(url_id numeric, url text, ts timestamp without time zone)`}},
		{`\d domains`, []string{`View "public.domains"`, "domain|text", "updated_at|timestamp with time zone"}},
	} {
		out := psql(c.meta)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("psql %s lacks %q:\n%s", c.meta, w, out)
			}
		}
	}
}
