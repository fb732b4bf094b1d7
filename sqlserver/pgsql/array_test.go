package pgsql

import "testing"

func TestArrayToList(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
		ok   bool
	}{
		{"integers are quoted for DuckDB's cast", "{1,-2,3}", `["1", "-2", "3"]`, true},
		{"an empty array is an empty list", "{}", "[]", true},
		{"an unquoted NULL stays NULL", "{1,NULL,null}", `["1", NULL, NULL]`, true},
		{"a quoted NULL is the text NULL", `{"NULL"}`, `["NULL"]`, true},
		{"quoted elements keep commas, braces and spaces", `{"a,b","{x}"," sp "}`, `["a,b", "{x}", " sp "]`, true},
		{"backslash escapes are resolved and re-escaped", `{"q\"q","back\\slash"}`, `["q\"q", "back\\slash"]`, true},
		{"an empty quoted element is an empty string", `{""}`, `[""]`, true},
		{"unquoted elements lose surrounding spaces", "{ a , b c }", `["a", "b c"]`, true},
		{"quotes and brackets in unquoted elements are quoted", "{it's,[x]}", `["it's", "[x]"]`, true},
		{"nested arrays become nested lists", "{{1,2},{3,4}}", `[["1", "2"], ["3", "4"]]`, true},
		{"explicit bounds are not supported", "[0:1]={1,2}", "", false},
		{"an unterminated array is refused", "{1,2", "", false},
		{"trailing text is refused", "{1} x", "", false},
		{"an empty unquoted element is refused", "{1,,2}", "", false},
		{"DuckDB's own list syntax is not an array literal", "[1,2]", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ArrayToList(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ArrayToList(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRewriteCastLiterals(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"an array literal cast to int[] uses list syntax", "select '{1,2}'::int[]", `select '["1", "2"]'::int[]`},
		{"a text array with quotes", `select '{"a b",it''s}'::text []`, `select '["a b", "it''s"]'::text []`},
		{"a multi-word element type", "select '{1.5}'::double precision[]", `select '["1.5"]'::double precision[]`},
		{"a modifier before the brackets", "select '{1.5}'::numeric(10,2)[]", `select '["1.5"]'::numeric(10,2)[]`},
		{"pg_catalog on the type", "select '{1}'::pg_catalog.int4[]", `select '["1"]'::int4[]`},
		{"a brace literal cast to text is kept", "select '{1,2}'::text", "select '{1,2}'::text"},
		{"an uncast brace literal is kept", "select '{1,2}'", "select '{1,2}'"},
		{"bytea hex becomes DuckDB escapes", `select '\xDEad00'::bytea`, `select '\xDE\xad\x00'::bytea`},
		{"an empty bytea", `select '\x'::bytea`, `select ''::bytea`},
		{"bytea escape format is kept", `select 'abc\000'::bytea`, `select 'abc\000'::bytea`},
		{"an uncast hex literal is kept", `select '\xdead'`, `select '\xdead'`},
		{"DuckDB's blob escapes are kept", `select '\xDE\xAD'::blob`, `select '\xDE\xAD'::blob`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Join(Rewrite(Lex(tc.in))); got != tc.want {
				t.Errorf("Rewrite(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzArrayToList(f *testing.F) {
	for _, s := range []string{"{}", "{1,2}", `{"a\"b",NULL}`, "{{1},{2}}", "{a\\", `{"`, "{ }"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, ok := ArrayToList(s)
		if !ok {
			return
		}
		if len(l) < 2 || l[0] != '[' || l[len(l)-1] != ']' {
			t.Fatalf("ArrayToList(%q) = %q", s, l)
		}
	})
}
