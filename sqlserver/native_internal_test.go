package sqlserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

func TestMatchNative(t *testing.T) {
	fns := map[string]NativeFunction{"domain_urls": {
		Args:    []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT, duckdb.TYPE_BIGINT},
		Columns: []NativeColumn{{Name: "url_id", Type: duckdb.TYPE_UBIGINT}, {Name: "url", Type: duckdb.TYPE_VARCHAR}, {Name: "ts", Type: duckdb.TYPE_TIMESTAMP}},
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
		// what nativeSelect answers (TestNativeSelectAgreesWithDuckDB)
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) LIMIT 3", "[url]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) u WHERE u.url > 'b' AND url_id <> 7 ORDER BY ts DESC NULLS FIRST, url OFFSET 2", "[url]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url IS NOT NULL AND ts IS NULL", "[url]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url_id IN (1, $3) AND url NOT IN ('a') AND url_id BETWEEN 2 AND $4", "[url]"},
		// and what it leaves to DuckDB
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url IN (SELECT 'a')", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url IN ()", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url IN ('a', NULL)", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url NOT BETWEEN 'a' AND 'b'", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url BETWEEN SYMMETRIC 'b' AND 'a'", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE ts BETWEEN $3 AND $4", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url > 'b' OR url_id = 1", "[url]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE NOT (url > 'b' AND (ts IS NULL OR url_id IN (1, 2)))", "[url]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE (url > 'b'", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url > 'b' OR", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE (url) > 'b'", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE ts > '2024-01-01'", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url_id = 'x'", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url = 1", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE url_id = -1", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) WHERE other.url = 'a'", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) ORDER BY 1", "[url]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) ORDER BY 2", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) ORDER BY 0", ""},
		{"SELECT * FROM domain_urls($1, $2, 0, 1000) ORDER BY 3 DESC, 2", "[url_id url ts]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) ORDER BY lower(url)", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) LIMIT $3", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) LIMIT 1 LIMIT 2", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) GROUP BY url", "grouped [url]"},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) JOIN t USING (url)", ""},
		{"SELECT url FROM domain_urls($1, $2, 0, 1000) UNION SELECT 'x'", ""},
		{"SELECT upper(url) FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT DISTINCT url FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT url, FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT nope FROM domain_urls($1, $2, 0, 1000)", ""},
		{`SELECT "URL" FROM domain_urls($1, $2, 0, 1000)`, ""},
		{"SELECT url u v FROM domain_urls($1, $2, 0, 1000)", ""},
		// count(*) alone, counted natively: the one column's name
		{"SELECT count(*) FROM domain_urls($1, $2, 0, 1000)", "aggregates [count_star()]"},
		{"SELECT COUNT(*) AS n FROM domain_urls($1, $2, 0, 1000) u WHERE u.url > 'b'", "aggregates [n]"},
		{`SELECT count(*) "N" FROM domain_urls($1, $2, 0, 1000)`, "aggregates [N]"},
		{"SELECT count(url), MIN(url) first, max(u.url_id), sum(url_id) AS s FROM domain_urls($1, $2, 0, 1000) u", "aggregates [count(url) first max(u.url_id) s]"},
		{"SELECT max(URL) FROM domain_urls($1, $2, 0, 1000)", "aggregates [max(URL)]"},
		{"SELECT sum(url) FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT min(ts) FROM domain_urls($1, $2, 0, 1000)", ""},
		{`SELECT max("url") FROM domain_urls($1, $2, 0, 1000)`, ""},
		{"SELECT max(v.url) FROM domain_urls($1, $2, 0, 1000) u", ""},
		{"SELECT avg(url_id) FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT count(DISTINCT url) FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT count(*), url FROM domain_urls($1, $2, 0, 1000) GROUP BY url", "grouped [count_star() url]"},
		{"SELECT count(*) FROM domain_urls($1, $2, 0, 1000) LIMIT 1", ""},
		{"SELECT count(*) FROM domain_urls($1, $2, 0, 1000) ORDER BY url", ""},
		{"SELECT count(*) FROM domain_urls($1, $2, 0, 1000) GROUP BY url", "grouped [count_star()]"},
		{"SELECT count(*), url FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT count(*) + 1 FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT count(url) FROM domain_urls($1, $2, 0, 1000)", "aggregates [count(url)]"},
		{"SELECT count(*) FILTER (WHERE ts IS NULL) FROM domain_urls($1, $2, 0, 1000)", ""},
		{`SELECT "count"(*) FROM domain_urls($1, $2, 0, 1000)`, ""},
		{"SELECT count(*) FROM domain_urls($1, $2, 0, 1000) JOIN t USING (url)", ""},
		// aliases as DuckDB names them: case kept; a bare keyword is no alias
		{"SELECT url AS Total, ts Stamp FROM domain_urls($1, $2, 0, 1000) U WHERE u.url > 'a' ORDER BY total", "[Total Stamp]"},
		{"SELECT count(*) AS Total, MAX(url_id) MaxN FROM domain_urls($1, $2, 0, 1000)", "aggregates [Total MaxN]"},
		{"SELECT url AS select FROM domain_urls($1, $2, 0, 1000)", "[select]"},
		{"SELECT count(*) year FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT url year FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT count(*) AS FROM domain_urls($1, $2, 0, 1000)", ""},
		{"SELECT * FROM domain_urls($1, $2, 0, 1000) group", ""},
		{`SELECT count(*) "" FROM domain_urls($1, $2, 0, 1000)`, ""},
		{`SELECT url U&"\0061" FROM domain_urls($1, $2, 0, 1000)`, ""},
		{"SELECT * FROM other($1)", ""},
		{"SELECT * FROM domain_urls($1, $2, 0)", ""},
	}
	for _, c := range cases {
		nc, err := matchNative(pgsql.Significant(pgsql.Lex(c.sql)), fns, nil, map[string]bool{"select": true, "from": true, "as": true, "year": true, "group": true, "where": true})
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		got := ""
		if nc != nil && nc.group != nil {
			var names []string
			for _, c := range nc.group.cols {
				names = append(names, c.Name)
			}
			got = fmt.Sprint("grouped ", names)
		} else if nc != nil && nc.aggs != nil {
			var names []string
			for _, a := range nc.aggs {
				names = append(names, a.name)
			}
			got = fmt.Sprint("aggregates ", names)
		} else if nc != nil {
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

// TestMatchNativeNullArgument: a NULL literal argument is refused (22004)
// only when the statement is the native shape; a function whose NULL means
// no row, and any other shape, go to DuckDB, whose guard answers alike.
// (SELECT count(*) FROM domain_record(NULL) UNION ALL … once failed with
// 22004 where DuckDB answers 0.)
func TestMatchNativeNullArgument(t *testing.T) {
	fns := map[string]NativeFunction{
		"domain_urls":   {Args: []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER}, Columns: []NativeColumn{{Name: "url", Type: duckdb.TYPE_VARCHAR}}},
		"domain_record": {Args: []duckdb.Type{duckdb.TYPE_VARCHAR}, Columns: []NativeColumn{{Name: "domain", Type: duckdb.TYPE_VARCHAR}}, NullMeansNoRows: true},
	}
	for sql, wantErr := range map[string]bool{
		"SELECT * FROM domain_urls(NULL, 1)":                                                                  true,
		"SELECT count(*) FROM domain_urls(NULL, 1) WHERE url > 'a'":                                           true,
		"SELECT * FROM domain_urls(NULL, 1) UNION ALL SELECT * FROM domain_urls('a', 1)":                      false,
		"SELECT count(*) FROM domain_urls(NULL, 1) UNION ALL SELECT 1":                                        false,
		"SELECT * FROM domain_record(NULL)":                                                                   false,
		"SELECT count(*) FROM domain_record(NULL) UNION ALL SELECT count(*) FROM domain_record(NULL) LIMIT 1": false,
	} {
		nc, err := matchNative(pgsql.Significant(pgsql.Lex(sql)), fns, nil, nil)
		if nc != nil || (err != nil) != wantErr {
			t.Errorf("%s: native %v, error %v; want an error: %v", sql, nc != nil, err, wantErr)
		}
	}
}

// TestMatchNativeLeavesDeepNestingToDuckDB: NOTs and parentheses nested
// past maxBoolDepth are DuckDB's (whose parser has its own limit); a
// reader's 1.7 million NOTs once overflowed the matcher's stack, which
// ends the process. A few levels stay native.
func TestMatchNativeLeavesDeepNestingToDuckDB(t *testing.T) {
	fns := map[string]NativeFunction{"domain_datasets": {Args: []duckdb.Type{duckdb.TYPE_VARCHAR},
		Columns: []NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER}, {Name: "url_count", Type: duckdb.TYPE_BIGINT}}}}
	for _, c := range []struct {
		depth  int
		native bool
	}{{3, true}, {maxBoolDepth - 1, true}, {maxBoolDepth + 1, false}, {200_000, false}} {
		for _, open := range []string{"NOT ", "("} {
			closing := ""
			if open == "(" {
				closing = strings.Repeat(")", c.depth)
			}
			sql := "SELECT count(*) FROM domain_datasets($1) WHERE " + strings.Repeat(open, c.depth) + "url_count > 1" + closing
			nc, err := matchNative(pgsql.Significant(pgsql.Lex(sql)), fns, nil, nil)
			if err != nil || (nc != nil) != c.native {
				t.Errorf("%d × %q: native %v (%v), want %v", c.depth, open, nc != nil, err, c.native)
			}
		}
	}
}

// TestMatchNativeJoin: the joins nativefrom.go answers, with the columns
// they send, and those it leaves to DuckDB.
func TestMatchNativeJoin(t *testing.T) {
	fns := map[string]NativeFunction{
		"domain_datasets": {Args: []duckdb.Type{duckdb.TYPE_VARCHAR},
			Columns: []NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER}, {Name: "dataset", Type: duckdb.TYPE_VARCHAR}, {Name: "url_count", Type: duckdb.TYPE_BIGINT}}},
		"dhsi_datasets": {Columns: []NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER}, {Name: "dataset", Type: duckdb.TYPE_VARCHAR}, {Name: "urls", Type: duckdb.TYPE_BIGINT}, {Name: "created", Type: duckdb.TYPE_TIMESTAMP_TZ}}},
		"looked_up":     {Args: []duckdb.Type{duckdb.TYPE_VARCHAR}, Columns: []NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER}}, NullMeansNoRows: true},
	}
	for _, name := range []string{"domain_datasets", "dhsi_datasets"} {
		for i, c := range fns[name].Columns {
			fns[name].Columns[i].Unique = c.Name == "dataset_id" || c.Name == "dataset"
		}
	}
	views := map[string]string{"datasets": "dhsi_datasets"}
	keywords := map[string]bool{"select": true, "from": true, "as": true, "join": true, "left": true, "on": true, "using": true, "where": true, "order": true, "natural": true, "inner": true, "outer": true, "right": true, "cross": true}
	cases := []struct{ sql, want string }{
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s ON s.dataset_id = d.dataset_id", "domain_datasets JOIN datasets [dataset_id dataset url_count dataset_id dataset urls created]"},
		{"SELECT * FROM domain_datasets($1) JOIN datasets USING (dataset_id)", "domain_datasets JOIN datasets [dataset_id dataset url_count dataset urls created]"},
		{"SELECT * FROM domain_datasets($1) NATURAL JOIN datasets", "domain_datasets JOIN datasets [dataset_id dataset url_count urls created]"},
		{"SELECT dataset, s.urls n FROM datasets s LEFT OUTER JOIN domain_datasets($1) d USING (dataset) WHERE url_count > 0", "datasets LEFT JOIN domain_datasets [dataset n]"},
		{"SELECT datasets.urls FROM public.datasets INNER JOIN domain_datasets('a.com') ON domain_datasets.dataset_id = datasets.dataset_id", "datasets JOIN domain_datasets [urls]"},
		{"SELECT count(*) FROM domain_datasets($1) a JOIN domain_datasets($2) b USING (dataset_id)", "domain_datasets JOIN domain_datasets [count_star()]"},
		{"SELECT * FROM datasets", "datasets [dataset_id dataset urls created]"},
		{`SELECT "datasets"."dataset" AS "Name" FROM "public"."datasets"`, "datasets [Name]"},
		{"SELECT * FROM looked_up($1) JOIN datasets USING (dataset_id)", "looked_up JOIN datasets [dataset_id dataset urls created]"},
		// DuckDB's: an ambiguous or unknown name, a filter in ON, other
		// joins, other types, one name twice, a NULL a LEFT JOIN keeps
		{"SELECT dataset_id FROM domain_datasets($1) d JOIN datasets s ON s.dataset_id = d.dataset_id", ""},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s ON s.dataset_id = d.dataset_id AND s.urls > 1", ""},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s ON d.dataset_id = d.dataset_id", ""},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s ON s.urls = d.dataset_id", ""},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s ON s.created = d.dataset", ""},
		{"SELECT * FROM domain_datasets($1) d RIGHT JOIN datasets s USING (dataset_id)", ""},
		{"SELECT * FROM domain_datasets($1) d CROSS JOIN datasets s", ""},
		{"SELECT * FROM domain_datasets($1) d, datasets s WHERE s.dataset_id = d.dataset_id", ""},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets d USING (dataset_id)", ""},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s USING (urls)", ""},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s USING (dataset_id, dataset_id)", ""},
		{"SELECT * FROM domain_datasets($1) d JOIN datasets s", ""},
		{"SELECT d.* FROM domain_datasets($1) d JOIN datasets s USING (dataset_id)", ""},
		{"SELECT * FROM datasets s LEFT JOIN looked_up($1) l USING (dataset_id)", ""},
		{"SELECT * FROM other.datasets", ""},
		{"SELECT * FROM datasets()", ""},
		// neither key unique: as many rows as pairs, so DuckDB's (a join
		// of two 39k-row sides on a count of 246 values once ended the
		// server natively)
		{"SELECT count(*) FROM domain_datasets($1) a JOIN domain_datasets($2) b ON a.url_count = b.url_count", ""},
		{"SELECT * FROM domain_datasets($1) a JOIN datasets b ON a.url_count = b.urls", ""},
		{"SELECT * FROM looked_up($1) a JOIN looked_up($2) b USING (dataset_id)", ""},
		// one unique key among several is enough
		{"SELECT count(*) FROM domain_datasets($1) a JOIN domain_datasets($2) b ON a.url_count = b.url_count AND a.dataset = b.dataset", "domain_datasets JOIN domain_datasets [count_star()]"},
	}
	for _, c := range cases {
		nc, err := matchNative(pgsql.Significant(pgsql.Lex(c.sql)), fns, views, keywords)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		got := ""
		if nc != nil {
			var names []string
			if nc.aggs != nil {
				for _, a := range nc.aggs {
					names = append(names, a.name)
				}
			}
			for _, p := range nc.columns() {
				if nc.aggs == nil {
					names = append(names, p.name)
				}
			}
			got = fmt.Sprint(nc.name, " ", names)
		}
		if got != c.want {
			t.Errorf("%s: native %q, want %q", c.sql, got, c.want)
		}
	}
}

// TestMatchNativeGroupBy: the GROUP BY shapes nativegroup.go answers, with
// the columns they send, and those it leaves to DuckDB.
func TestMatchNativeGroupBy(t *testing.T) {
	fns := map[string]NativeFunction{
		"domain_datasets": {Args: []duckdb.Type{duckdb.TYPE_VARCHAR},
			Columns: []NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER}, {Name: "dataset", Type: duckdb.TYPE_VARCHAR}, {Name: "url_count", Type: duckdb.TYPE_BIGINT}}},
	}
	keywords := map[string]bool{"select": true, "from": true, "as": true, "group": true, "by": true, "order": true, "having": true, "desc": true}
	cases := []struct{ sql, want string }{
		{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY dataset", "[dataset count_star()]"},
		{"SELECT d.dataset AS name, sum(url_count) total, max(d.url_count) FROM domain_datasets($1) d WHERE url_count > 0 GROUP BY 1", "[name total max(d.url_count)]"},
		{"SELECT count(*) FROM domain_datasets($1) GROUP BY dataset_id, dataset ORDER BY count(*) DESC LIMIT 2", "[count_star()]"},
		{"SELECT dataset_id, count(*) n FROM domain_datasets($1) GROUP BY dataset_id ORDER BY n, 1 DESC", "[dataset_id n]"},
		// DuckDB's: HAVING, a column not grouped, GROUP BY an aggregate,
		// ORDER BY a sum, an expression, a WHERE after GROUP BY
		{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY dataset HAVING count(*) > 1", "[dataset count_star()]"},
		{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY dataset HAVING count(*) > $2 AND (max(url_count) < 3 OR count(*) IN (1, 2)) ORDER BY 2 LIMIT 1", ""},
		{"SELECT dataset, count(*), max(url_count) FROM domain_datasets($1) GROUP BY dataset HAVING count(*) > $2 AND (max(url_count) < 3 OR count(*) IN (1, 2)) ORDER BY 2 LIMIT 1", "[dataset count_star() max(url_count)]"},
		{"SELECT dataset FROM domain_datasets($1) GROUP BY dataset HAVING count(*) > 1", ""},
		{"SELECT dataset, count(*) n FROM domain_datasets($1) GROUP BY dataset HAVING n > 1", ""},
		{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY dataset HAVING dataset > 'a'", ""},
		{"SELECT dataset, sum(url_count) FROM domain_datasets($1) GROUP BY dataset HAVING sum(url_count) > 1", ""},
		{"SELECT dataset, url_count FROM domain_datasets($1) GROUP BY dataset", ""},
		{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY 2", ""},
		{"SELECT dataset, sum(url_count) FROM domain_datasets($1) GROUP BY dataset ORDER BY 2", ""},
		{"SELECT dataset, sum(url_count) FROM domain_datasets($1) GROUP BY dataset ORDER BY sum(url_count)", ""},
		{"SELECT lower(dataset), count(*) FROM domain_datasets($1) GROUP BY 1", ""},
		{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY dataset WHERE url_count > 1", ""},
		{"SELECT dataset, count(*) FROM domain_datasets($1) GROUP BY dataset ORDER BY url_count", ""},
		{"SELECT dataset, count(*) FROM domain_datasets($1) ORDER BY dataset GROUP BY dataset", ""},
	}
	for _, c := range cases {
		nc, err := matchNative(pgsql.Significant(pgsql.Lex(c.sql)), fns, nil, keywords)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		got := ""
		if nc != nil {
			if nc.group == nil {
				t.Fatalf("%s: native without its GROUP BY", c.sql)
			}
			var names []string
			for _, col := range nc.group.cols {
				names = append(names, col.Name)
			}
			got = fmt.Sprint(names)
		}
		if got != c.want {
			t.Errorf("%s: native %q, want %q", c.sql, got, c.want)
		}
	}
}

// TestJoinRowsAsNestedLoops: joinRows pairs the rows a nested loop over
// both sides pairs, in its order (l's rows, each with its matches in r's
// order), on random rows with NULLs, duplicate keys and a second key, for
// inner and LEFT joins.
func TestJoinRowsAsNestedLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 37))
	var trial int
	cell := func() any {
		switch {
		case rng.IntN(5) == 0:
			return nil
		case trial%8 >= 4: // UBIGINT keys, some past int64's range
			return uint64(rng.IntN(3)) << (62 + rng.IntN(2))
		}
		return int32(rng.IntN(6))
	}
	for trial = range 500 {
		var l, r boxedRows
		for range rng.IntN(12) {
			l = append(l, []any{cell(), fmt.Sprint(rng.IntN(3))})
		}
		for range rng.IntN(12) {
			r = append(r, []any{fmt.Sprint(rng.IntN(3)), cell()})
		}
		keys := [][2]int{{0, 1}}
		if trial%2 == 1 {
			keys = append(keys, [2]int{1, 0})
		}
		left := trial%4 >= 2
		var want []string
		for i := range l.Len() {
			matched := false
			for k := range r.Len() {
				ok := true
				for _, key := range keys {
					a, b := l.Cell(i, key[0]), r.Cell(k, key[1])
					ok = ok && a.kind != nvNull && b.kind != nvNull && compareCells(a, b) == 0
				}
				if ok {
					want, matched = append(want, fmt.Sprint(i, k)), true
				}
			}
			if left && !matched {
				want = append(want, fmt.Sprint(i, -1))
			}
		}
		rows, err := joinRows(newStopCheck(context.Background()), l, r, 2, keys, left)
		if err != nil {
			t.Fatal(err)
		}
		j := rows.(*joinedRows)
		var got []string
		for n := range j.Len() {
			got = append(got, fmt.Sprint(j.li[n], j.ri[n]))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (keys %v, left %v): %v, want %v\nl %v\nr %v", trial, keys, left, got, want, l, r)
		}
	}
}

// TestDescribeArgsAcrossJoinsAndUnions: a function whose $n is described
// otherwise than its argument's type (NativeFunction.DescribeArgs:
// urls_by_domain_dataset's BIGINT dataset_id, described as int4) keeps
// that description in a native join and a union, so a condition on the
// INTEGER column with the same $n agrees with it and the statement stays
// native.
func TestDescribeArgsAcrossJoinsAndUnions(t *testing.T) {
	fns := map[string]NativeFunction{
		"lookup": {
			Args:         []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_BIGINT},
			DescribeArgs: []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER},
			Columns:      []NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER}, {Name: "url", Type: duckdb.TYPE_VARCHAR, Unique: true}},
		},
		"registry": {Columns: []NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER, Unique: true}, {Name: "dataset", Type: duckdb.TYPE_VARCHAR}}},
	}
	keywords := map[string]bool{"select": true, "from": true, "as": true, "join": true, "using": true, "where": true}
	for _, sql := range []string{
		"SELECT url FROM lookup($1, $2) WHERE dataset_id = $2",
		"SELECT u.url, s.dataset FROM lookup($1, $2) u JOIN registry() s USING (dataset_id) WHERE u.dataset_id = $2",
	} {
		nc, err := matchNative(pgsql.Significant(pgsql.Lex(sql)), fns, nil, keywords)
		if err != nil || nc == nil {
			t.Fatalf("%s: not native (%v)", sql, err)
		}
		oids, agree := nc.paramOIDs()
		if !agree || oids[1] != oidText || oids[2] != oidInt4 {
			t.Fatalf("%s: $n described as %v (agree %v), want $1 text, $2 int4", sql, oids, agree)
		}
	}
	u := unionFunctions(fns["lookup"], make([]unionBranch, 2))
	if got := u.describedArgs(); !slices.Equal(got, []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER, duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER}) {
		t.Fatalf("a union of two lookups describes its arguments as %v", got)
	}
}
