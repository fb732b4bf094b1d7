package pgsql

import (
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"two statements split at the semicolon", "select 1; select 2", []string{"select 1", "select 2"}},
		{"a semicolon inside a string does not split", "select ';'; select 2;", []string{"select ';'", "select 2"}},
		{"a semicolon inside a comment does not split", "select 1 -- ; no\n; select /* ; */ 2", []string{"select 1 -- ; no", "select /* ; */ 2"}},
		{"dollar quoting hides semicolons", "select $$a;b$$; select $x$;$x$", []string{"select $$a;b$$", "select $x$;$x$"}},
		{"quoted identifiers hide semicolons", `select 1 as "a;b"; select 2`, []string{`select 1 as "a;b"`, "select 2"}},
		{"E strings with backslash-escaped quotes", `select E'it\'s;'; select 2`, []string{`select E'it\'s;'`, "select 2"}},
		{"empty statements are dropped", " ; ;select 1;;", []string{"select 1"}},
		{"a positional parameter is not a dollar quote", "select $1; select $2", []string{"select $1", "select $2"}},
		{"nested block comments", "select /* a /* b; */ c; */ 1; select 2", []string{"select /* a /* b; */ c; */ 1", "select 2"}},
		{"semicolons inside parentheses do not split", "create macro m() as (select 1); select 2", []string{"create macro m() as (select 1)", "select 2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Split(c.in)
			if len(got) != len(c.want) {
				t.Fatalf("Split(%q) = %d statements %v, want %v", c.in, len(got), got, c.want)
			}
			for i := range got {
				if got[i].SQL != c.want[i] {
					t.Errorf("statement %d = %q, want %q", i, got[i].SQL, c.want[i])
				}
			}
		})
	}
}

func TestRewrite(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"OPERATOR(pg_catalog.~) becomes a plain operator with a partial-match pattern",
			"WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$'",
			"WHERE c.relname ~ '(?s).*(?:^(t)$).*'"},
		{"COLLATE pg_catalog.default is dropped",
			"'^(t)$' COLLATE pg_catalog.default AND x",
			"'^(t)$'  AND x"},
		{"pg_catalog qualifiers on relations and functions are dropped",
			"select pg_catalog.pg_get_userbyid(c.relowner) from pg_catalog.pg_class c",
			"select pg_get_userbyid(c.relowner) from pg_class c"},
		{"a column named pg_catalog in a chain is kept",
			"select x.pg_catalog.y",
			"select x.pg_catalog.y"},
		{"an oid cast to regclass shows the name",
			"SELECT c.oid::pg_catalog.regclass FROM t",
			"SELECT dhsi_regclass_name(c.oid) FROM t"},
		{"a string cast to regclass looks up the oid",
			"WHERE attrelid = 'public.t'::regclass",
			"WHERE attrelid = dhsi_regclass_oid('public.t')"},
		{"chained casts keep the whole operand",
			"select c.reloftype::pg_catalog.regtype::pg_catalog.text",
			"select dhsi_regtype_name(c.reloftype)::text"},
		{"a function call operand is kept whole",
			"select f(a, b)::regclass",
			"select dhsi_regclass_name(f(a, b))"},
		{"::name becomes ::varchar", "select 'a'::name", "select 'a'::varchar"},
		{"negated case-insensitive regex", "where n !~* '^pg_'", "where n !~ '(?is).*(?:^pg_).*'"},
		{"a set-returning function's alias also names its column",
			"FROM pg_catalog.generate_series(0, 3) s, t WHERE x = a[s]",
			"FROM generate_series(0, 3) s(s), t WHERE x = a[s]"},
		{"a set-returning function with column aliases is kept",
			"FROM unnest(a) AS u(x) JOIN t ON true",
			"FROM unnest(a) AS u(x) JOIN t ON true"},
		{"a set-returning function followed by WHERE has no alias",
			"FROM generate_series(1, 2) WHERE true",
			"FROM generate_series(1, 2) WHERE true"},
		{"a set-returning function in a select list keeps its column alias",
			"SELECT unnest(ix.indkey) attnum, generate_subscripts(ix.indkey, 1) ord FROM pg_index ix",
			"SELECT unnest(ix.indkey) attnum, generate_subscripts(ix.indkey, 1) ord FROM pg_index ix"},
		{"a set-returning function after a join in FROM is aliased",
			"FROM t JOIN unnest(t.a) u ON true",
			"FROM t JOIN unnest(t.a) u(u) ON true"},
		{"information_schema names DHSI's information schema",
			`select * from information_schema.tables t join "information_schema".columns c using (table_name)`,
			"select * from dhsi_sys.infoschema.tables t join dhsi_sys.infoschema.columns c using (table_name)"},
		{"a column or literal called information_schema is kept",
			"select x.information_schema.y, 'information_schema.tables' where s <> 'information_schema'",
			"select x.information_schema.y, 'information_schema.tables' where s <> 'information_schema'"},
		{"PostgreSQL's JSON constructors become DuckDB's",
			"select json_build_object('a', 1), jsonb_build_array(1, 2), json_agg(x)",
			"select json_object('a', 1), json_array(1, 2), json_group_array(x)"},
		{"a column named like a JSON constructor is kept",
			"select t.json_agg from t",
			"select t.json_agg from t"},
		{"= ANY over a list becomes list_contains",
			"on t.oid = a.attrelid and a.attnum = ANY(ix.indkey) left join",
			"on t.oid = a.attrelid and list_contains(ix.indkey, a.attnum) left join"},
		{"= ANY over a subquery or a parameter is kept",
			"where x = any (select 1) or y = ANY($1)",
			"where x = any (select 1) or y = ANY($1)"},
		{"a quoted pg_catalog qualifier is dropped too",
			`SELECT "c"."oid" FROM "pg_catalog"."pg_class" AS "c"`,
			`SELECT "c"."oid" FROM "pg_class" AS "c"`},
		{"a scalar function in FROM becomes a one-row subquery",
			"FROM generate_series(1, 2) as i, string_to_array(current_setting('search_path'),',') s",
			"FROM generate_series(1, 2) as i(i), (SELECT string_to_array(current_setting('search_path'),',') AS s) s"},
		{"format with %s, %I and %L becomes printf",
			"select format('%I.%I', s::text, t), format('\"%s\" = %L, 100%%', a, b)",
			"select printf('%s.%s', quote_ident(s::text), quote_ident(t)), printf('\"%s\" = %s, 100%%', a, quote_literal(b))"},
		{"an expression cast to regclass and then to oid is looked up",
			"col_description(format('%I.%I', s, t)::regclass::oid, 1)",
			"col_description(dhsi_regclass_oid(printf('%s.%s', quote_ident(s), quote_ident(t)))::oid, 1)"},
		{"CAST of an expression to regclass looks the oid up",
			`CAST(CAST(FORMAT('%I.%I', a, b) AS REGCLASS) AS OID)`,
			`CAST(dhsi_regclass_oid(printf('%s.%s', quote_ident(a), quote_ident(b))) AS OID)`},
		{"CAST of a column to regclass shows the name",
			`select CAST(c.oid AS pg_catalog.regclass), CAST(x AS text)`,
			`select dhsi_regclass_name(c.oid), CAST(x AS text)`},
		{"literals are never rewritten", "select 'pg_catalog.pg_class::regclass'", "select 'pg_catalog.pg_class::regclass'"},
		{"pg_catalog is dropped in any case, quoted or not, as DuckDB folds it",
			`select * from "PG_CATALOG".pg_settings, PG_Catalog."pg_type", "Pg_Catalog" . x`,
			`select * from pg_settings, "pg_type", x`},
		{"pg_catalog qualified by a catalog stays", `select * from system.pg_catalog.pg_settings`, `select * from system.pg_catalog.pg_settings`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Join(Rewrite(Lex(c.in)))
			if got != c.want {
				t.Errorf("Rewrite(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

func FuzzSplitRewrite(f *testing.F) {
	for _, s := range []string{"select 1; select 2", "select $$a$$::regclass", "E'\\'", "/* /* */", "x::", "OPERATOR(", "'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, st := range Split(s) {
			_ = Join(Rewrite(st.Tokens))
		}
		if Join(Lex(s)) != s {
			t.Fatalf("Lex does not round-trip %q", s)
		}
	})
}

func TestNestingDepth(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want int
	}{
		{"SELECT 1", 0},
		{"SELECT f(g(1), h(2))", 2},
		{"SELECT ARRAY[[1], [2]][1]", 2},
		{"SELECT '((((', \"((\" FROM t -- ((((\n/* (((( */", 0},
		{"SELECT ))))) ((1))", 2}, // a stray closer opens no credit
	} {
		if got := NestingDepth(Lex(c.sql)); got != c.want {
			t.Errorf("NestingDepth(%q) = %d, want %d", c.sql, got, c.want)
		}
	}
}
