package compiler

import (
	"bytes"
	"reflect"
	"testing"
)

func TestMerge(t *testing.T) {
	h := []string{"domain", "company_name", "updated_at"}
	cases := []struct {
		name   string
		header []string
		inputs []Table
		want   [][]string
	}{
		{"the latest updated_at wins",
			h, []Table{{Header: h, Rows: [][]string{{"a.com", "old", "2024-01-01T00:00:00Z"}}}, {Header: h, Rows: [][]string{{"a.com", "new", "2024-01-02T00:00:00Z"}}}},
			[][]string{{"a.com", "new", "2024-01-02T00:00:00Z"}}},
		{"time zones are compared as instants",
			h, []Table{{Header: h, Rows: [][]string{{"a.com", "utc", "2024-01-01T10:00:00Z"}}}, {Header: h, Rows: [][]string{{"a.com", "plus2", "2024-01-01T11:00:00+02:00"}}}},
			[][]string{{"a.com", "utc", "2024-01-01T10:00:00Z"}}},
		{"a tie is broken by the greater record, whatever the input order",
			h, []Table{{Header: h, Rows: [][]string{{"a.com", "Zeta", "2024-01-01T00:00:00Z"}}}, {Header: h, Rows: [][]string{{"a.com", "Alpha", "2024-01-01T00:00:00Z"}}}},
			[][]string{{"a.com", "Zeta", "2024-01-01T00:00:00Z"}}},
		{"a record with an unreadable updated_at loses",
			h, []Table{{Header: h, Rows: [][]string{{"a.com", "bad", "never"}}}, {Header: h, Rows: [][]string{{"a.com", "good", "1999-01-01T00:00:00Z"}}}},
			[][]string{{"a.com", "good", "1999-01-01T00:00:00Z"}}},
		{"files with older headers are mapped by name; missing fields are empty",
			h, []Table{{Header: []string{"updated_at", "domain"}, Rows: [][]string{{"2024-01-01T00:00:00Z", "b.com"}}}},
			[][]string{{"b.com", "", "2024-01-01T00:00:00Z"}}},
		{"records come out sorted by domain",
			h, []Table{{Header: h, Rows: [][]string{{"c.com", "", "2024-01-01T00:00:00Z"}, {"a.com", "", "2024-01-01T00:00:00Z"}}}},
			[][]string{{"a.com", "", "2024-01-01T00:00:00Z"}, {"c.com", "", "2024-01-01T00:00:00Z"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Merge(c.header, len(c.header), c.inputs...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Rows, c.want) {
				t.Fatalf("got %q, want %q", got.Rows, c.want)
			}
			// merging the result again changes nothing (idempotence, I3)
			again, _ := Merge(c.header, len(c.header), got, got)
			if !reflect.DeepEqual(again.Rows, got.Rows) {
				t.Fatalf("re-merge changed the result: %q", again.Rows)
			}
		})
	}
}

func TestOutputHeaderKeepsUnknownColumns(t *testing.T) {
	in := Table{Header: []string{"domain", "zeta", "updated_at", "alpha"}}
	got := OutputHeader([]string{"domain", "updated_at"}, in)
	if want := []string{"domain", "updated_at", "alpha", "zeta"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("header %q, want %q", got, want)
	}
}

func TestTableRoundTrip(t *testing.T) {
	tb := Table{Header: []string{"domain", "updated_at"}, Rows: [][]string{{"a.com", "2024-01-01T00:00:00Z"}}}
	var buf bytes.Buffer
	if err := tb.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ParseTable(buf.Bytes())
	if err != nil || !reflect.DeepEqual(back, tb) {
		t.Fatalf("round trip %v %v", back, err)
	}
	if _, err := ParseTable([]byte("domain␟domain␞\n")); err == nil {
		t.Fatal("a header naming a field twice must be refused")
	}
}

// TestParseTableReadsBothUSVForms: the USV specification's terminated form
// (every unit ends with ␟), DHSI's separated form, and files that mix them,
// with the specification's own examples; a record no reading fits is an
// error naming it (issue 15 §1).
func TestParseTableReadsBothUSVForms(t *testing.T) {
	for _, c := range []struct {
		name, in string
		header   []string
		rows     [][]string
		err      string
	}{
		{"the specification's terminated records", "a␟b␟␞c␟d␟␞", []string{"a", "b"}, [][]string{{"c", "d"}}, ""},
		{"the specification's hello world, one record", "hello␟world␟", []string{"hello", "world"}, [][]string{}, ""},
		{"the separated form DHSI wrote", "a␟b␞c␟d", []string{"a", "b"}, [][]string{{"c", "d"}}, ""},
		{"the specification's records ended by ␞", "hello␟world␞goodnight␟moon␞", []string{"hello", "world"}, [][]string{{"goodnight", "moon"}}, ""},
		{"a worker's header, terminated, with line layout", "domain␟company_name␟scraper_version␟updated_at␟␞\nexample.com␟Acme␟3␟2024-05-01T10:00:00Z␟␞\n",
			[]string{"domain", "company_name", "scraper_version", "updated_at"}, [][]string{{"example.com", "Acme", "3", "2024-05-01T10:00:00Z"}}, ""},
		{"a mixed file", "a␟b␟␞c␟d␞e␟f␟␞", []string{"a", "b"}, [][]string{{"c", "d"}, {"e", "f"}}, ""},
		{"an empty last unit in the separated form", "a␟b␞c␟␞", []string{"a", "b"}, [][]string{{"c", ""}}, ""},
		{"an empty last unit in the terminated form", "a␟b␟␞c␟␟␞", []string{"a", "b"}, [][]string{{"c", ""}}, ""},
		{"group and file markers end records", "a␟b␞c␟d␝e␟f␞g␟h␜i␟j", []string{"a", "b"}, [][]string{{"c", "d"}, {"e", "f"}, {"g", "h"}, {"i", "j"}}, ""},
		{"the escape makes a separator data", "a␟b␟␞c␛␟x␟d␟␞", []string{"a", "b"}, [][]string{{"c␟x", "d"}}, ""},
		{"a record no reading fits", "a␟b␟␞c␟d␟e␟␞", nil, nil, "record 2: has 4 units (3 if its last ␟ ends a unit), header has 2"},
		{"every bad record is named", "a␟b␞c␞d␟e␟f␞", nil, nil, "record 2: has 1 units, header has 2; record 3: has 3 units, header has 2"},
		{"an empty field name inside the header", "a␟␟b␞", nil, nil, "header has an empty field name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseTable([]byte(c.in))
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Header, c.header) || !reflect.DeepEqual(got.Rows, c.rows) {
				t.Fatalf("got %q %q, want %q %q", got.Header, got.Rows, c.header, c.rows)
			}
		})
	}
}

// TestWriterWritesTheSpecificationsForm: what DHSI lands in the inbox and
// in shards is the USV specification's terminated form (issue 15 §1), and
// reads back unchanged.
func TestWriterWritesTheSpecificationsForm(t *testing.T) {
	tb := Table{Header: []string{"domain", "company_name", "updated_at"}, Rows: [][]string{{"example.com", "", "2024-01-01T00:00:00Z"}}}
	var buf bytes.Buffer
	if err := tb.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	const want = "domain␟company_name␟updated_at␟␞\nexample.com␟␟2024-01-01T00:00:00Z␟␞\n"
	if buf.String() != want {
		t.Fatalf("Encode wrote %q, want %q", buf.String(), want)
	}
	back, err := ParseTable(buf.Bytes())
	if err != nil || !reflect.DeepEqual(back, tb) {
		t.Fatalf("read back %+v, %v", back, err)
	}
}
