package tableschema

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/usv"
)

// canonicalShard is a shard as DHSI writes it, byte by byte: the USV
// specification's terminated form, every unit ended by ␟ (U+241F), every
// record by ␞ (U+241E) and LF. The values are chosen to trip CSV readers:
// a unit that looks quoted, commas, a backslash, spaces, a leading '#',
// empty units.
const canonicalShard = "domain␟company_name␟scraper_version␟updated_at␟␞\n" +
	"example.com␟\"Acme\"␟3␟2024-05-01T10:00:00Z␟␞\n" +
	"#b.org␟  spaced, with comma  ␟␟␟␞\n" +
	"c.net␟C\\x␟12␟2024-05-02T10:00:00.5+02:00␟␞\n" +
	"d.io␟D␟oops␟2024-05-03T10:00:00Z␟␞\n"

// separatedShard is the same shard in the separated form releases before
// issue 15 wrote (␟ between units): stores keep such shards until their
// next compaction, so every recipe must read both.
const separatedShard = "domain␟company_name␟scraper_version␟updated_at␞\n" +
	"example.com␟\"Acme\"␟3␟2024-05-01T10:00:00Z␞\n" +
	"#b.org␟  spaced, with comma  ␟␟␞\n" +
	"c.net␟C\\x␟12␟2024-05-02T10:00:00.5+02:00␞\n" +
	"d.io␟D␟oops␟2024-05-03T10:00:00Z␞\n"

func openDuckDB(t *testing.T) *sql.Conn {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatalf("open duckdb: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("duckdb conn: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	// A zone far from UTC: a query that leaned on the session's zone
	// would show it.
	if _, err := conn.ExecContext(context.Background(), "SET TimeZone = 'America/New_York'"); err != nil {
		t.Fatalf("set time zone: %v", err)
	}
	return conn
}

func queryAll(t *testing.T, conn *sql.Conn, q string, args ...any) ([]string, [][]any, error) {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		out = append(out, vals)
	}
	return cols, out, rows.Err()
}

func writeShard(t *testing.T) string {
	t.Helper()
	return writeShardForm(t, canonicalShard)
}

// shardForms are the two USV forms a store's shards may be in.
var shardForms = map[string]string{"terminated": canonicalShard, "separated": separatedShard}

func writeShardForm(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "a1.usv")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shardRecords reads canonicalShard with DHSI's own reader: the truth the
// DuckDB recipes must reproduce.
func shardRecords(t *testing.T) [][]string {
	t.Helper()
	recs, err := usv.NewReader(strings.NewReader(canonicalShard)).ReadAll()
	if err != nil {
		t.Fatalf("read canonical shard: %v", err)
	}
	for i, r := range recs {
		recs[i] = r[:len(r)-1] // the terminated form's last, empty unit
	}
	return recs
}

func TestCanonicalShardIsWhatUSVWriterWrites(t *testing.T) {
	// The recipes below are documented for DHSI's canonical USV; if the
	// writer's bytes change, the documentation must change with them.
	var buf bytes.Buffer
	w := usv.NewWriter(&buf)
	for _, r := range shardRecords(t) {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if buf.String() != canonicalShard {
		t.Fatalf("usv.Writer output differs from the canonical form:\n%q\nwant\n%q", buf.String(), canonicalShard)
	}
}

// TestReadCSVOnCanonicalUSV measures read_csv on the separated form (what
// earlier releases wrote; the terminated form only adds a last column
// holding ␞, which DuckDBQuery declares).
func TestReadCSVOnCanonicalUSV(t *testing.T) {
	conn := openDuckDB(t)
	path := writeShardForm(t, separatedShard)
	recs := shardRecords(t)
	lit := sqlString(path)

	tests := []struct {
		name string
		sql  string
		// check inspects the result; err is the query's error.
		check func(t *testing.T, cols []string, rows [][]any, err error)
	}{
		{
			name: "read_csv refuses the record separator as new_line, so ␞ cannot end records",
			sql:  "SELECT * FROM read_csv(" + lit + ", delim = '␟', new_line = '␞\n')",
			check: func(t *testing.T, _ []string, _ [][]any, err error) {
				if err == nil || !strings.Contains(err.Error(), "not accepted as a newline") {
					t.Fatalf("want DuckDB to refuse new_line = '␞\\n', got %v", err)
				}
			},
		},
		{
			name: "a multi-byte delimiter splits units but the last unit and its header name keep the ␞",
			sql:  "SELECT * FROM read_csv(" + lit + ", delim = '␟', header = true, all_varchar = true, quote = '', escape = '')",
			check: func(t *testing.T, cols []string, rows [][]any, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if want := []string{"domain", "company_name", "scraper_version", "updated_at␞"}; !reflect.DeepEqual(cols, want) {
					t.Fatalf("columns %q, want %q", cols, want)
				}
				if got := rows[0][3]; got != "2024-05-01T10:00:00Z␞" {
					t.Fatalf("last unit %q, want the ␞ kept", got)
				}
				if got := rows[0][1]; got != `"Acme"` {
					t.Fatalf("quoted-looking unit %q, want it verbatim", got)
				}
				if got := rows[1][3]; got != "␞" {
					t.Fatalf("empty last unit reads as %q, want a lone ␞", got)
				}
			},
		},
		{
			name: "the default quote character eats the quotes of a unit that looks quoted",
			sql:  "SELECT company_name FROM read_csv(" + lit + ", delim = '␟', header = true, all_varchar = true, auto_detect = false, columns = {'domain': 'VARCHAR', 'company_name': 'VARCHAR', 'scraper_version': 'VARCHAR', 'updated_at': 'VARCHAR'})",
			check: func(t *testing.T, _ []string, rows [][]any, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if rows[0][0] != "Acme" {
					t.Fatalf("got %q; if DuckDB now keeps the quotes, quote='' is no longer needed", rows[0][0])
				}
			},
		},
		{
			name: "stripping ␞ from every column gives DHSI's values, with empty units as NULL",
			sql: "SELECT regexp_replace(COLUMNS(*), '␞$', '') FROM read_csv(" + lit + ", delim = '␟', header = true, quote = '', escape = '', auto_detect = false, null_padding = true, " +
				"columns = {'domain': 'VARCHAR', 'company_name': 'VARCHAR', 'scraper_version': 'VARCHAR', 'updated_at': 'VARCHAR'})",
			check: func(t *testing.T, cols []string, rows [][]any, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if want := []string{"domain", "company_name", "scraper_version", "updated_at"}; !reflect.DeepEqual(cols, want) {
					t.Fatalf("columns %q, want %q", cols, want)
				}
				for i, rec := range recs[1:] {
					for j, want := range rec {
						got := rows[i][j]
						if want == "" {
							// DuckDB's empty unit is NULL, except the last
							// one, which held "␞" and is now "".
							if got != nil && got != "" {
								t.Errorf("row %d col %d = %q, want NULL or empty", i, j, got)
							}
							continue
						}
						if got != want {
							t.Errorf("row %d col %d = %q, want %q", i, j, got, want)
						}
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cols, rows, err := queryAll(t, conn, tt.sql)
			tt.check(t, cols, rows, err)
		})
	}
}

func TestDuckDBQueryTypesAShardAsRowCheckerDoes(t *testing.T) {
	for form, body := range shardForms {
		t.Run(form, func(t *testing.T) { duckDBQueryTypesAShard(t, body) })
	}
}

func duckDBQueryTypesAShard(t *testing.T, body string) {
	conn := openDuckDB(t)
	path := writeShardForm(t, body)
	s := DefaultDomainPackage().Resources[0].Schema
	q, err := DuckDBQuery(s, path)
	if err != nil {
		t.Fatal(err)
	}
	cols, rows, err := queryAll(t, conn, q)
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	if !reflect.DeepEqual(cols, s.FieldNames()) {
		t.Fatalf("columns %q, want %q", cols, s.FieldNames())
	}
	recs := shardRecords(t)
	rc, err := s.NewRowChecker()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.SetHeader(recs[0]); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(recs)-1 {
		t.Fatalf("%d rows, want %d", len(rows), len(recs)-1)
	}
	for i, rec := range recs[1:] {
		want, _ := rc.Check(rec) // "oops" fails to cast: nil, as DuckDB's NULL
		for j, f := range s.Fields {
			if !sameValue(f, want[j], rows[i][j]) {
				t.Errorf("row %d %s: duckdb %#v, Cast %#v", i, f.Name, rows[i][j], want[j])
			}
		}
	}
}

// shortShardSQL is the hand-written query docs/format/datapackage.md
// shows for the default schema. TRY_CAST is more lenient than Cast (it
// accepts " 5", rounds "5.5", reads a zone-less datetime in the session's
// zone), which the document says; on canonical data it agrees.
const shortShardSQL = `SELECT domain, company_name,
       TRY_CAST(scraper_version AS BIGINT) AS scraper_version,
       TRY_CAST(updated_at AS TIMESTAMPTZ) AS updated_at
FROM (
  SELECT NULLIF(regexp_replace(COLUMNS(*), '␞$', ''), '')
  FROM read_csv('indexes/domains/shards/*.usv', delim = '␟', header = true,
                quote = '', escape = '', auto_detect = false, null_padding = true,
                columns = {'domain': 'VARCHAR', 'company_name': 'VARCHAR',
                           'scraper_version': 'VARCHAR', 'updated_at': 'VARCHAR',
                           'dhsi_record_end': 'VARCHAR'})
)`

func TestShortShardSQLReadsTheCanonicalShard(t *testing.T) {
	for form, body := range shardForms {
		t.Run(form, func(t *testing.T) { shortShardSQLReads(t, body) })
	}
}

func shortShardSQLReads(t *testing.T, body string) {
	conn := openDuckDB(t)
	path := writeShardForm(t, body)
	q := strings.Replace(shortShardSQL, "indexes/domains/shards/*.usv", path, 1)
	cols, rows, err := queryAll(t, conn, q)
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultDomainPackage().Resources[0].Schema
	if !reflect.DeepEqual(cols, s.FieldNames()) {
		t.Fatalf("columns %q", cols)
	}
	rc, _ := s.NewRowChecker()
	recs := shardRecords(t)
	for i, rec := range recs[1:] {
		want, _ := rc.Check(rec)
		for j, f := range s.Fields {
			if !sameValue(f, want[j], rows[i][j]) {
				t.Errorf("row %d %s: duckdb %#v, Cast %#v", i, f.Name, rows[i][j], want[j])
			}
		}
	}
}

func TestFormatDocShowsWhatTheCodeProduces(t *testing.T) {
	// Code, document and golden text change together (STYLE.md §4).
	doc, err := os.ReadFile(filepath.Join("..", "docs", "format", "datapackage.md"))
	if err != nil {
		t.Fatal(err)
	}
	def, _ := json.MarshalIndent(DefaultDomainPackage(), "", "  ")
	s := DefaultDomainPackage().Resources[0].Schema
	byOrder, _ := DuckDBQuery(s, "indexes/domains/shards/*.usv")
	byHeader, _ := DuckDBHeaderQuery(s, "indexes/domains/*.usv")
	for name, want := range map[string]string{
		"the default package": string(def), "DuckDBQuery's output": byOrder,
		"DuckDBHeaderQuery's output": byHeader, "the short query": shortShardSQL,
	} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/format/datapackage.md lacks %s:\n%s", name, want)
		}
	}
}

func TestDuckDBQueryReadsShortRecordsAsMissing(t *testing.T) {
	// A file written when the schema had three fields: the ␞ ends the
	// third column, the fourth is padded with NULL.
	conn := openDuckDB(t)
	p := filepath.Join(t.TempDir(), "old.usv")
	old := "domain␟company_name␟scraper_version␞\nx.io␟X␟5␞\ny.io␟Y␟␞\nz.io␟Z␟7"
	if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := DuckDBQuery(DefaultDomainPackage().Resources[0].Schema, p)
	if err != nil {
		t.Fatal(err)
	}
	_, rows, err := queryAll(t, conn, q)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{"x.io", "X", int64(5), nil}, {"y.io", "Y", nil, nil}, {"z.io", "Z", int64(7), nil}}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("got %#v, want %#v", rows, want)
	}
}

func TestDuckDBHeaderQueryMapsColumnsByEachFilesHeader(t *testing.T) {
	conn := openDuckDB(t)
	path := writeShard(t)
	// An older file: reordered, one field missing, one extra column, a raw
	// line break inside a unit, and a last record without its ␞ LF.
	older := "updated_at␟source␟domain␟company_name␞\n" +
		"2024-01-01T00:00:00Z␟crawler␟z.io␟Two\nLines␞\n" +
		"2024-01-02T00:00:00Z␟crawler␟y.io␟Last"
	olderPath := filepath.Join(filepath.Dir(path), "b2.usv")
	if err := os.WriteFile(olderPath, []byte(older), 0o644); err != nil {
		t.Fatal(err)
	}
	s := DefaultDomainPackage().Resources[0].Schema
	q, err := DuckDBHeaderQuery(s, filepath.Join(filepath.Dir(path), "*.usv"))
	if err != nil {
		t.Fatal(err)
	}
	_, rows, err := queryAll(t, conn, "SELECT * FROM ("+q+") ORDER BY domain")
	if err != nil {
		t.Fatalf("%v\n%s", err, q)
	}
	// The truth: DHSI's reader and RowChecker, file by file.
	want := map[string][]any{}
	for _, file := range []string{canonicalShard, older} {
		recs, err := usv.NewReader(strings.NewReader(file)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		rc, _ := s.NewRowChecker()
		if _, err := rc.SetHeader(recs[0]); err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs[1:] {
			vals, _ := rc.Check(rec)
			want[vals[0].(string)] = vals
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, row := range rows {
		w, ok := want[row[0].(string)]
		if !ok {
			t.Fatalf("unexpected row %q", row)
		}
		for j, f := range s.Fields {
			if !sameValue(f, w[j], row[j]) {
				t.Errorf("%s %s: duckdb %#v, Cast %#v", row[0], f.Name, row[j], w[j])
			}
		}
	}
}

// sameValue compares Cast's value with what duckdb-go scanned, up to
// DuckDB's microsecond precision.
func sameValue(f Field, goVal, db any) bool {
	if goVal == nil || db == nil {
		return goVal == nil && db == nil
	}
	switch g := goVal.(type) {
	case string:
		if f.EffectiveType() == TypeGeoJSON {
			return sameJSON(g, db)
		}
		return db == g
	case int64:
		switch d := db.(type) {
		case int64:
			return d == g
		case int32:
			return int64(d) == g
		}
	case float64:
		d, ok := db.(float64)
		return ok && (d == g || math.IsNaN(d) && math.IsNaN(g))
	case bool:
		return db == g
	case time.Time:
		d, ok := db.(time.Time)
		if !ok {
			return false
		}
		g = g.Add(-time.Duration(g.Nanosecond() % 1000)) // DuckDB keeps microseconds
		switch f.EffectiveType() {
		case TypeDate:
			return d.Year() == g.Year() && d.YearDay() == g.YearDay()
		case TypeTime:
			return d.Hour() == g.Hour() && d.Minute() == g.Minute() && d.Second() == g.Second() && d.Nanosecond() == g.Nanosecond()
		}
		return d.Equal(g)
	case YearMonth:
		return db == g.String()
	case Duration:
		d, ok := db.(duckdb.Interval)
		return ok && d.Months == g.Months && d.Days == g.Days && d.Micros == g.Nanoseconds/1000
	case map[string]any, []any:
		b, err := json.Marshal(g)
		return err == nil && sameJSON(string(b), db)
	}
	return false
}

// sameJSON compares JSON by content, numbers by their text.
func sameJSON(goJSON string, db any) bool {
	decode := func(s string) (any, bool) {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		return v, d.Decode(&v) == nil
	}
	dbText, ok := db.(string)
	if !ok {
		raw, err := json.Marshal(db)
		if err != nil {
			return false
		}
		dbText = string(raw)
	}
	a, ok1 := decode(goJSON)
	b, ok2 := decode(dbText)
	return ok1 && ok2 && reflect.DeepEqual(a, b)
}

func boolPtr(b bool) *bool { return &b }

// parityCases are fields and raw values on which DuckDBCast must agree
// with Cast: valid values, near misses, and the edges of every range.
var parityCases = []struct {
	name   string
	field  Field
	inputs []string
}{
	{"string", Field{Type: "string"}, []string{"", "x", "NA", " padded "}},
	{"string email", Field{Type: "string", Format: "email"}, []string{"a@b.c", "a b@c", "@b", "a@", "a@b@c", "ü@ü.de"}},
	{"string uri", Field{Type: "string", Format: "uri"}, []string{"https://x.org/a?b", "mailto:a@b", "1http://x", "http://a b", "x:", "/relative"}},
	{"string uuid", Field{Type: "string", Format: "uuid"}, []string{"123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}"}},
	{"string binary", Field{Type: "string", Format: "binary"}, []string{"aGk=", "aGk", "aGVsbG8=", "a===", "++//", "aG k="}},
	{"integer", Field{Type: "integer"}, []string{"0", "-5", "+7", "007", "5.0", " 5", "1_000", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "1e3", "٣", "0x10"}},
	{"integer not bare", Field{Type: "integer", BareNumber: boolPtr(false)}, []string{"$5", "5%", "-5 EUR", "abc", "1,000", "12a34", "€ -7"}},
	{"integer grouped", Field{Type: "integer", GroupChar: ","}, []string{"1,000", "1,,0", ",5", "1.000", "-1,234,567"}},
	{"number", Field{Type: "number"}, []string{"1.5", ".5", "5.", "-0", "1e10", "1E-3", "1e400", "-1e400", "1e-400", "NaN", "INF", "-INF", "inf", "Infinity", "nan", "0x10", "1_0", " 1", "+.5e+2", ".", "e5", "1e", "4.9e-324"}},
	{"number with decimal comma and group dot", Field{Type: "number", DecimalChar: ",", GroupChar: "."}, []string{"1.234,5", "1,5", "1.5", ",5", "1.234.567,89"}},
	{"number with decimal comma", Field{Type: "number", DecimalChar: ","}, []string{"1,5", "1.5"}},
	{"number not bare", Field{Type: "number", BareNumber: boolPtr(false)}, []string{"€1,000.50", "95%", "-1.5e3 m", "abc", "$.5"}},
	{"number not bare grouped", Field{Type: "number", BareNumber: boolPtr(false), GroupChar: ","}, []string{"€1,000.50", "1,000,000 USD"}},
	{"boolean", Field{Type: "boolean"}, []string{"true", "True", "TRUE", "1", "false", "False", "FALSE", "0", "yes", "tRue", ""}},
	{"boolean custom", Field{Type: "boolean", TrueValues: []string{"yes", "y"}, FalseValues: []string{"no", "n"}}, []string{"yes", "n", "true", "0"}},
	{"date", Field{Type: "date"}, []string{"2024-02-29", "2023-02-29", "2024-13-01", "2024-1-5", "0000-01-01", "9999-12-31", "2024-01-01T00:00:00", " 2024-01-01", "2024-04-31"}},
	{"date any", Field{Type: "date", Format: "any"}, []string{"2024/02/29", "20240229", "2024-02-29", "2024/02-29", "240229", "20230229"}},
	{"date pattern day first", Field{Type: "date", Format: "%d/%m/%Y"}, []string{"05/01/2024", "5/1/2024", "31/02/2024", "05/01/24", "05/01/2024 "}},
	{"date pattern legacy fmt prefix", Field{Type: "date", Format: "fmt:%d/%m/%Y"}, []string{"05/01/2024"}},
	{"date pattern month names", Field{Type: "date", Format: "%d %b %Y"}, []string{"5 Jan 2024", "5 JAN 2024", "5 january 2024", "5  Jan 2024", "5\tJan 2024", "5Jan 2024"}},
	{"date pattern full month names and weekday", Field{Type: "date", Format: "%A %d %B %Y"}, []string{"Monday 05 February 2024", "monday 5 february 2024", "Mon 05 February 2024"}},
	{"date pattern packed", Field{Type: "date", Format: "%Y%m%d"}, []string{"20240105", "2024115", "202415", "20241231", "2024131", "20240230"}},
	{"datetime pattern packed", Field{Type: "datetime", Format: "%Y%m%d%H%M%S%z"}, []string{"20240105103000+0100", "2024151030+0000", "20240105103000"}},
	{"time pattern packed with names", Field{Type: "time", Format: "%I%M%p"}, []string{"0304PM", "304pm", "1200AM"}},
	{"date pattern day of year", Field{Type: "date", Format: "%Y %j"}, []string{"2024 032", "2024 366", "2023 365", "2024 1", "2024 060"}},
	{"date pattern two-digit year", Field{Type: "date", Format: "%y-%m-%d"}, []string{"69-01-01", "68-12-31", "00-01-01", "99-12-31"}},
	{"date pattern percent", Field{Type: "date", Format: "%Y-%m-%d %%"}, []string{"2024-05-01 %", "2024-05-01"}},
	{"time", Field{Type: "time"}, []string{"10:00:00", "23:59:59.999999", "24:00:00", "10:00", "10:00:00.1234567", "1:00:00", "00:00:00"}},
	{"time any", Field{Type: "time", Format: "any"}, []string{"10:00", "10:00:05", "10:00:05.5", "9:00", "23:60"}},
	{"time pattern twelve-hour", Field{Type: "time", Format: "%I:%M %p"}, []string{"03:04 PM", "12:00 AM", "12:00 PM", "3:04 pm", "13:00 PM", "11:59 am"}},
	{"time pattern fractions", Field{Type: "time", Format: "%H:%M:%S.%f"}, []string{"10:00:00.5", "10:00:00.123456", "10:00:00.1234567", "7:5:3.01"}},
	{"datetime", Field{Type: "datetime"}, []string{"2024-01-01T10:00:00Z", "2024-01-01T10:00:00.5+02:00", "2024-01-01T10:00:00.123456789-05:30",
		"2024-01-01 10:00:00Z", "2024-01-01T10:00:00", "2024-01-01T24:00:00Z", "2024-02-30T10:00:00Z", "2024-01-01T10:00:00+24:00",
		"2024-01-01T10:00:00+0200", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "2024-01-01t10:00:00z", "2024-01-01T10:00:60Z",
		"2024-01-01T00:30:00+01:00", "1969-12-31T23:59:59.9999995Z"}},
	{"datetime any", Field{Type: "datetime", Format: "any"}, []string{"2024-01-01", "2024-01-01 10:00", "2024-01-01T10:00Z", "2024-01-01 10:00:00+05",
		"2024-01-01 10:00:00+0530", "2024-01-01 10:00:00.25-03:00", "2024-01-01 10:00:00 UTC", "2024-01-01T", "2024-02-30", "2024-01-01T10:00:00Z"}},
	{"datetime pattern without zone is UTC", Field{Type: "datetime", Format: "%Y-%m-%d %H:%M:%S"}, []string{"2024-05-01 10:00:00", "2024-05-01  10:00:00", "2024-05-0110:00:00", "2024-05-01 10:00"}},
	{"datetime pattern with offset", Field{Type: "datetime", Format: "%Y-%m-%d %H:%M:%S %z"}, []string{"2024-05-01 10:00:00 +0200", "2024-05-01 10:00:00 +02:00", "2024-05-01 10:00:00 -0530", "2024-05-01 10:00:00 Z", "2024-05-01 10:00:00 +2400"}},
	{"datetime pattern with literal Z", Field{Type: "datetime", Format: "%Y-%m-%dT%H:%M:%SZ"}, []string{"2024-05-01T10:00:00Z", "2024-05-01T10:00:00+00:00"}},
	{"datetime pattern with zone name", Field{Type: "datetime", Format: "%d/%m/%Y %H:%M %Z"}, []string{"05/01/2024 10:00 UTC", "05/01/2024 10:00 GMT", "05/01/2024 10:00 EST"}},
	{"datetime pattern with fraction", Field{Type: "datetime", Format: "%Y-%m-%dT%H:%M:%S.%f"}, []string{"2024-05-01T10:00:00.5", "2024-05-01T10:00:00.000001"}},
	{"year", Field{Type: "year"}, []string{"2024", "0000", "24", "20240", "-2024", "+2024"}},
	{"yearmonth", Field{Type: "yearmonth"}, []string{"2024-01", "2024-13", "2024-1", "2024-00", "2024-12"}},
	{"duration", Field{Type: "duration"}, []string{"P1Y2M3DT4H5M6.5S", "P1W", "-P1D", "PT0S", "P", "PT", "P1DT", "-P", "PT1.123456789S",
		"P178956970Y7M", "P178956970Y8M", "P2147483647D", "P2147483648D", "P306783378W1D", "PT2562047H", "PT2562048H",
		"PT9223372036.854775807S", "PT9223372036.854775808S", "P1M1W", "p1d", "P1.5D", "P0000000000000000001D", "P000000000000000001D",
		"-P1Y2M3DT4H5M6.999999999S", "PT1M", "P1Y", "PT36H"}},
	{"object", Field{Type: "object"}, []string{`{"a":1}`, ` {"a":[1,{"b":null}]}`, `[1]`, `{"a":}`, `{"a":1} x`, `{}`, `{"a":1e999}`, `"str"`, `{"a":1,"a":2}`, "{\"a\":1}\n"}},
	{"array", Field{Type: "array"}, []string{`[1,"a"]`, `[]`, `{}`, `[1,,2]`, ` [true]`, `[01]`, `[.5]`}},
	{"geojson", Field{Type: "geojson"}, []string{`{"type":"Point","coordinates":[1,2]}`, `[1]`, `nope`}},
	{"geopoint", Field{Type: "geopoint"}, []string{"1.5, 2", "anything"}},
	{"any", Field{Type: "any"}, []string{"anything", "1"}},
}

func TestDuckDBCastAgreesWithCast(t *testing.T) {
	conn := openDuckDB(t)
	withMissing := &Schema{Fields: []Field{{Name: "n", Type: "integer"}}, MissingValues: []string{"", "NA", "-"}}
	nm, _ := withMissing.Field("n")
	cases := append(parityCases[:len(parityCases):len(parityCases)], struct {
		name   string
		field  Field
		inputs []string
	}{"integer with custom missing values", nm, []string{"NA", "-", "", "5", "na"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.field
			if f.Name == "" {
				f.Name = "v"
			}
			expr, err := DuckDBCast(f, "t")
			if err != nil {
				t.Fatal(err)
			}
			if DuckDBType(f) == "JSON" {
				// duckdb-go decodes JSON numbers into float64, which loses
				// 1e999; compare the text instead.
				expr = "CAST(" + expr + " AS VARCHAR)"
			}
			q := "SELECT " + expr + " FROM (SELECT CAST(? AS VARCHAR) AS t)"
			for _, in := range tc.inputs {
				want, castErr := f.Cast(in)
				_, rows, err := queryAll(t, conn, q, in)
				if err != nil {
					t.Fatalf("%q: %v\n%s", in, err, q)
				}
				got := rows[0][0]
				if castErr != nil && got != nil {
					t.Errorf("%q: Cast fails (%v) but DuckDB gives %#v", in, castErr, got)
				} else if castErr == nil && !sameValue(f, want, got) {
					t.Errorf("%q: Cast gives %#v, DuckDB %#v", in, want, got)
				}
			}
		})
	}
}

func TestDuckDBCastKnownDifferences(t *testing.T) {
	// Documented in DuckDBCast and docs/format/datapackage.md. If DuckDB
	// changes, this test says the documentation is stale.
	conn := openDuckDB(t)
	tests := []struct {
		name  string
		field Field
		input string
	}{
		{"DuckDB's JSON accepts a trailing comma in an array that Cast refuses", Field{Name: "a", Type: "array"}, `[1,]`},
		{"DuckDB's JSON accepts a trailing comma in an object that Cast refuses", Field{Name: "o", Type: "object"}, `{"a":1,}`},
		{"DuckDB's JSON accepts NaN and Infinity that Cast refuses", Field{Name: "a", Type: "array"}, `[NaN, Infinity]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tt.field.Cast(tt.input); err == nil {
				t.Fatalf("Cast accepts %q", tt.input)
			}
			expr, err := DuckDBCast(tt.field, "t")
			if err != nil {
				t.Fatal(err)
			}
			_, rows, err := queryAll(t, conn, "SELECT CAST("+expr+" AS VARCHAR) FROM (SELECT CAST(? AS VARCHAR) AS t)", tt.input)
			if err != nil {
				t.Fatal(err)
			}
			if rows[0][0] == nil {
				t.Fatalf("DuckDB now refuses %q too: drop this difference from the docs", tt.input)
			}
		})
	}
}

func TestDuckDBCastRefusesWhatItCannotExpress(t *testing.T) {
	tests := []struct {
		name  string
		field Field
		want  string
	}{
		{"a date pattern with an offset has no DuckDB equivalent", Field{Name: "d", Type: "date", Format: "%Y-%m-%d %z"}, "no DuckDB equivalent"},
		{"a time pattern with a zone name has no DuckDB equivalent", Field{Name: "t", Type: "time", Format: "%H:%M %Z"}, "no DuckDB equivalent"},
		{"an unknown type is refused", Field{Name: "x", Type: "integr"}, `unknown type "integr"`},
		{"a bad format is refused", Field{Name: "x", Type: "integer", Format: "hex"}, `format "hex" not valid`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DuckDBCast(tt.field, "t")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestDuckDBTypeCoversEveryType(t *testing.T) {
	want := map[string]string{
		"string": "VARCHAR", "number": "DOUBLE", "integer": "BIGINT", "boolean": "BOOLEAN", "object": "JSON",
		"array": "JSON", "date": "DATE", "time": "TIME", "datetime": "TIMESTAMPTZ", "year": "INTEGER",
		"yearmonth": "VARCHAR", "duration": "INTERVAL", "geopoint": "VARCHAR", "geojson": "JSON", "any": "VARCHAR",
	}
	for _, typ := range Types() {
		if got := DuckDBType(Field{Type: typ}); got != want[typ] {
			t.Errorf("DuckDBType(%s) = %q, want %q", typ, got, want[typ])
		}
	}
	if got := DuckDBType(Field{}); got != "VARCHAR" {
		t.Errorf("a field without a type is a string: got %q", got)
	}
	if got := DuckDBType(Field{Type: "integr"}); got != "" {
		t.Errorf("unknown type: got %q, want empty", got)
	}
}
