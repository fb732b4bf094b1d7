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
		{"literals are never rewritten", "select 'pg_catalog.pg_class::regclass'", "select 'pg_catalog.pg_class::regclass'"},
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
