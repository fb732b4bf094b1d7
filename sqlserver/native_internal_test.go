package sqlserver

import (
	"fmt"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

func TestMatchNative(t *testing.T) {
	fns := map[string]NativeFunction{"domain_urls": {
		Args:    []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT, duckdb.TYPE_BIGINT},
		Columns: []NativeColumn{{"url_id", duckdb.TYPE_UBIGINT}, {"url", duckdb.TYPE_VARCHAR}, {"ts", duckdb.TYPE_TIMESTAMP}},
	}}
	cases := []struct {
		sql  string
		want string // the projection sent, "" when DuckDB must answer
	}{
		{"SELECT * FROM domain_urls($1, $2, 0, 1000)", "[url_id url ts]"},
		{"select url from DOMAIN_URLS($1, 17, 0, 1000)", "[url]"},
		{"SELECT url, url_id FROM domain_urls('a.com', 1, 0, 10)", "[url url_id]"},
		{`SELECT url AS u, "ts" t FROM domain_urls($1, $2, $3, $4)`, "[u t]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE true", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) LIMIT 3", ""},
		{"SELECT upper(url) FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT DISTINCT url FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT url, FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT nope FROM domain_urls($1, $2, 0, 1000)", ""},
		{`SELECT "URL" FROM domain_urls($1, $2, 0, 1000)`, ""},
		{"SELECT url u v FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT count(*) FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT * FROM other($1)", ""},
		{"SELECT * FROM domain_urls($1, $2, 0)", ""},
	}
	for _, c := range cases {
		nc, err := matchNative(pgsql.Significant(pgsql.Lex(c.sql)), fns)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		got := ""
		if nc != nil {
			var names []string
			for _, p := range nc.columns() {
				names = append(names, p.name)
			}
			got = fmt.Sprint(names)
		}
		if got != c.want {
			t.Errorf("%s: native %q, want %q", c.sql, got, c.want)
		}
	}
}
