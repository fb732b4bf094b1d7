package tableschema

import (
	"fmt"
	"regexp"
	"strings"
)

// DuckDBType is the DuckDB column type of the field's values, or "" for a
// type Validate rejects. yearmonth has no DuckDB type and stays VARCHAR
// (YYYY-MM sorts correctly as text); geopoint stays VARCHAR; geojson,
// object and array are JSON.
func DuckDBType(f Field) string {
	switch f.EffectiveType() {
	case TypeString, TypeAny, TypeYearMonth, TypeGeoPoint:
		return "VARCHAR"
	case TypeInteger:
		return "BIGINT"
	case TypeNumber:
		return "DOUBLE"
	case TypeBoolean:
		return "BOOLEAN"
	case TypeDate:
		return "DATE"
	case TypeTime:
		return "TIME"
	case TypeDatetime:
		return "TIMESTAMPTZ"
	case TypeYear:
		return "INTEGER"
	case TypeDuration:
		return "INTERVAL"
	case TypeObject, TypeArray, TypeGeoJSON:
		return "JSON"
	}
	return ""
}

// simpleSQL matches column references that need no parentheses.
var simpleSQL = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*|"[^"]*")(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|"[^"]*"))*$`)

// sqlString quotes s as a DuckDB string literal. DuckDB's standard strings
// give backslashes no meaning, so only the quote needs doubling.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlIdent quotes an identifier.
func sqlIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func sqlList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = sqlString(s)
	}
	return strings.Join(q, ", ")
}

// DuckDBCast returns a DuckDB SQL expression that types col, an expression
// of type VARCHAR holding the field's raw text, the way Cast does: NULL for
// a missing value (col NULL or one of the missing values), the typed value
// of DuckDBType otherwise. Where Cast returns an error the expression gives
// NULL, as TRY_CAST does, so a query over a dirty shard still runs; find
// the bad rows with "raw IS NOT NULL AND typed IS NULL".
//
// Every lexical form is checked with the same RE2 expression Cast uses, so
// both accept the same strings. The remaining differences: TIME,
// TIMESTAMPTZ and INTERVAL keep microseconds (digits beyond are dropped;
// Cast keeps nanoseconds), and DuckDB's JSON reader also accepts trailing
// commas and NaN/Infinity in object and array values, which Cast refuses.
//
// Supported: every type in its default format; string formats email, uri,
// uuid, binary; date, time and datetime formats "any" and strptime
// patterns (through DuckDB's strptime, guarded by the pattern's
// expression). Unsupported, with an error: a date or time pattern with %z
// or %Z (DuckDB converts to the session's time zone before taking the
// date, Python's strptime does not).
func DuckDBCast(f Field, col string) (string, error) {
	c, err := newCaster(f)
	if err != nil {
		return "", fmt.Errorf("duckdb cast of field %q: %w", f.Name, err)
	}
	x := col
	if !simpleSQL.MatchString(col) {
		x = "(" + col + ")" // col is repeated inside larger expressions
	}
	expr, err := duckDBTyped(c, x)
	if err != nil {
		return "", fmt.Errorf("duckdb cast of field %q: %w", f.Name, err)
	}
	cond := x + " IS NULL"
	if len(c.missing) > 0 {
		cond += " OR " + x + " IN (" + sqlList(c.missing) + ")"
	}
	return "CASE WHEN " + cond + " THEN NULL ELSE " + expr + " END", nil
}

// matches is the SQL twin of full(re).MatchString(x).
func matches(x, re string) string { return "regexp_full_match(" + x + ", " + sqlString(re) + ")" }

// group is the SQL twin of full(re).FindStringSubmatch(x)[i] (” if none).
func group(x, re string, i int) string {
	return fmt.Sprintf("regexp_extract(%s, %s, %d)", x, sqlString(`^(?:`+re+`)$`), i)
}

func duckDBTyped(c *caster, x string) (string, error) {
	f := c.f
	switch c.typ {
	case TypeString:
		if re, _, ok := stringFormat(c.format); ok {
			return "CASE WHEN " + matches(x, re) + " THEN " + x + " END", nil
		}
		return x, nil
	case TypeAny, TypeGeoPoint:
		return x, nil
	case TypeGeoJSON, TypeObject:
		return "CASE WHEN json_valid(" + x + ") AND json_type(" + x + ") = 'OBJECT' THEN CAST(" + x + " AS JSON) END", nil
	case TypeArray:
		return "CASE WHEN json_valid(" + x + ") AND json_type(" + x + ") = 'ARRAY' THEN CAST(" + x + " AS JSON) END", nil
	case TypeInteger:
		s := x
		if f.GroupChar != "" {
			s = "replace(" + x + ", " + sqlString(f.GroupChar) + ", '')"
		}
		if !f.bare() {
			return "TRY_CAST(" + group(s, reIntegerLoose, 1) + " AS BIGINT)", nil
		}
		return "CASE WHEN " + matches(s, reInteger) + " THEN TRY_CAST(" + s + " AS BIGINT) END", nil
	case TypeNumber:
		dec := f.decimalChar()
		s := x
		if f.GroupChar != "" {
			s = "replace(" + x + ", " + sqlString(f.GroupChar) + ", '')"
		}
		num, guard := s, matches(s, reNumber(dec))
		if !f.bare() {
			num, guard = group(s, reNumberLoose(dec), 1), "true"
		}
		if dec != "." {
			num = "replace(" + num + ", " + sqlString(dec) + ", '.')"
		}
		d := "TRY_CAST(" + num + " AS DOUBLE)"
		return "CASE WHEN " + x + " = 'NaN' THEN CAST('NaN' AS DOUBLE)" +
			" WHEN " + x + " = 'INF' THEN CAST('Infinity' AS DOUBLE)" +
			" WHEN " + x + " = '-INF' THEN CAST('-Infinity' AS DOUBLE)" +
			" WHEN " + guard + " AND NOT isinf(" + d + ") THEN " + d + " END", nil
	case TypeBoolean:
		var b strings.Builder
		b.WriteString("CASE")
		if t := f.trueValues(); len(t) > 0 {
			b.WriteString(" WHEN " + x + " IN (" + sqlList(t) + ") THEN true")
		}
		if fa := f.falseValues(); len(fa) > 0 {
			b.WriteString(" WHEN " + x + " IN (" + sqlList(fa) + ") THEN false")
		}
		b.WriteString(" ELSE NULL END")
		return b.String(), nil
	case TypeYear:
		return "CASE WHEN " + matches(x, reYear) + " THEN CAST(" + x + " AS INTEGER) END", nil
	case TypeYearMonth:
		return "CASE WHEN " + matches(x, reYearMonth) + " THEN " + x + " END", nil
	case TypeDuration:
		return duckDBDuration(x), nil
	case TypeDate, TypeTime, TypeDatetime:
		return duckDBTemporal(c, x)
	}
	return "", fmt.Errorf("unknown type %q", c.typ)
}

func duckDBTemporal(c *caster, x string) (string, error) {
	switch {
	case c.typ == TypeDate && c.format == "default":
		return "CASE WHEN " + matches(x, reDate) + " THEN TRY_CAST(" + x + " AS DATE) END", nil
	case c.typ == TypeDate && c.format == "any":
		norm := "CASE WHEN length(" + x + ") = 8 THEN " + x + "[1:4] || '-' || " + x + "[5:6] || '-' || " + x + "[7:8]" +
			" ELSE replace(" + x + ", '/', '-') END"
		return "CASE WHEN " + matches(x, reDateAny) + " THEN TRY_CAST(" + norm + " AS DATE) END", nil
	case c.typ == TypeTime && c.format == "default":
		return "CASE WHEN " + matches(x, reTime) + " THEN TRY_CAST(" + x + " AS TIME) END", nil
	case c.typ == TypeTime && c.format == "any":
		norm := "CASE WHEN length(" + x + ") = 5 THEN " + x + " || ':00' ELSE " + x + " END"
		return "CASE WHEN " + matches(x, reTimeAny) + " THEN TRY_CAST(" + norm + " AS TIME) END", nil
	case c.typ == TypeDatetime && c.format == "default":
		// Every accepted value carries its offset, so the session's
		// TimeZone setting cannot change the instant.
		return "CASE WHEN " + matches(x, reDatetime) + " THEN TRY_CAST(" + x + " AS TIMESTAMPTZ) END", nil
	case c.typ == TypeDatetime && c.format == "any":
		// Rebuild the value as "date time+hh:mm" with an explicit offset
		// (UTC when none was written) for the same reason.
		g := func(i int) string { return group(x, reDatetimeAny, i) }
		ts := g(1) + " || ' ' || CASE WHEN " + g(2) + " = '' THEN '00:00' ELSE " + g(2) + " END" +
			" || CASE WHEN " + g(3) + " = '' THEN ':00' ELSE " + g(3) + " END"
		zone := "CASE WHEN " + g(4) + " IN ('', 'Z') THEN '+00:00'" +
			" WHEN length(" + g(4) + ") = 3 THEN " + g(4) + " || ':00'" +
			" WHEN length(" + g(4) + ") = 5 THEN " + g(4) + "[1:3] || ':' || " + g(4) + "[4:5]" +
			" ELSE " + g(4) + " END"
		return "CASE WHEN " + matches(x, reDatetimeAny) + " THEN TRY_CAST(" + ts + " || " + zone + " AS TIMESTAMPTZ) END", nil
	}
	p, err := compilePattern(c.format)
	if err != nil {
		return "", err
	}
	parsed := "try_strptime(" + x + ", " + sqlString(c.format) + ")"
	if p.packed {
		parsed = duckDBSplitStrptime(p, x)
	}
	var typed string
	switch {
	case c.typ != TypeDatetime && p.zone:
		return "", fmt.Errorf("format %q: a %s pattern with %%z or %%Z has no DuckDB equivalent", c.format, c.typ)
	case c.typ == TypeDate:
		typed = "CAST(" + parsed + " AS DATE)"
	case c.typ == TypeTime:
		typed = "CAST(" + parsed + " AS TIME)"
	case p.zone:
		typed = parsed // DuckDB's strptime returns TIMESTAMPTZ for %z and %Z
	default:
		// No zone in the pattern means UTC, whatever the session's zone.
		typed = "timezone('UTC', " + parsed + ")"
	}
	return "CASE WHEN " + matches(x, p.source) + " THEN " + typed + " END", nil
}

// duckDBSplitStrptime parses a packed pattern's value by first splitting
// it with the pattern's own expression (so the parts are those Cast sees),
// zero-padding the numeric parts, and handing DuckDB's strptime the parts
// joined by '|', which no part contains, with the directives joined alike.
func duckDBSplitStrptime(p *pattern, x string) string {
	width := map[byte]int{'d': 2, 'm': 2, 'H': 2, 'I': 2, 'M': 2, 'S': 2, 'j': 3}
	parts := make([]string, len(p.groups))
	dirs := make([]string, len(p.groups))
	for i, d := range p.groups {
		parts[i] = group(x, p.source, i+1)
		if w, ok := width[d]; ok {
			parts[i] = fmt.Sprintf("lpad(%s, %d, '0')", parts[i], w)
		}
		dirs[i] = "%" + string(d)
	}
	return "try_strptime(" + strings.Join(parts, " || '|' || ") + ", " + sqlString(strings.Join(dirs, "|")) + ")"
}

// duckDBDuration mirrors durationConv: the same grammar, the same limits
// (months and days within INTEGER, the time part within 2^63-1
// nanoseconds), computed in HUGEINT so nothing overflows on the way.
func duckDBDuration(x string) string {
	g := func(i int) string { return group(x, reDuration, i) }
	n := func(i int) string { return "COALESCE(TRY_CAST(NULLIF(" + g(i) + ", '') AS HUGEINT), 0)" }
	months := "(" + n(2) + " * 12 + " + n(3) + ")"
	days := "(" + n(4) + " * 7 + " + n(5) + ")"
	frac := "CAST(rpad(left(" + g(9) + ", 9), 9, '0') AS HUGEINT)"
	ns := "(" + n(6) + " * 3600000000000 + " + n(7) + " * 60000000000 + " + n(8) + " * 1000000000 + " + frac + ")"
	sign := "(CASE WHEN " + g(1) + " = '-' THEN -1 ELSE 1 END)"
	valid := matches(x, reDuration) + " AND NOT suffix(" + x + ", 'P') AND NOT suffix(" + x + ", 'T')" +
		" AND " + months + " <= 2147483647 AND " + days + " <= 2147483647 AND " + ns + " <= 9223372036854775807"
	value := "to_months(CAST(" + sign + " * " + months + " AS INTEGER))" +
		" + to_days(CAST(" + sign + " * " + days + " AS INTEGER))" +
		" + to_microseconds(CAST(" + sign + " * (" + ns + " // 1000) AS BIGINT))"
	return "CASE WHEN " + valid + " THEN " + value + " END"
}

// RecordEndColumn names the column DuckDBQuery declares past the schema's
// fields: in the terminated form (a␟b␟␞, what DHSI writes) read_csv sees
// one more unit after the last ␟, the ␞ itself.
const RecordEndColumn = "dhsi_record_end"

// DuckDBQuery returns a query that reads canonical USV files (files is a
// path or glob, as read_csv takes it) and types every column by the
// schema, using nothing but DuckDB. It relies on the files' columns being
// the schema's fields in schema order, as DHSI's compiler writes shards;
// a file with fewer trailing columns reads them as NULL.
//
// Files may be in either USV form. Why the options: read_csv takes a
// multi-byte delimiter (␟) but only a line break as the record separator,
// so in the separated form (a␟b␞) each record's last unit keeps the ␞
// that precedes the line break, and regexp_replace strips it from
// whichever column it ends; in the terminated form the ␞ is a unit of its
// own, read into RecordEndColumn. quote=” and escape=” because USV has no
// quoting: a unit that starts with '"' is data. auto_detect=false with
// explicit columns so DuckDB's sniffer cannot guess a different dialect
// from a few rows, and so the names come from the schema rather than the
// header, whose last name also ends in ␞.
//
// Units holding ␟, ␞, ␛ or a line break (which DHSI's writer escapes with
// ␛ or, for a line break inside a unit, writes raw) are not decoded; see
// docs/format/datapackage.md.
func DuckDBQuery(s *Schema, files string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", fmt.Errorf("duckdb query: %w", err)
	}
	sel, err := duckDBSelectList(s)
	if err != nil {
		return "", fmt.Errorf("duckdb query: %w", err)
	}
	var cols []string
	for _, f := range s.Fields {
		cols = append(cols, sqlString(f.Name)+": 'VARCHAR'")
	}
	// the terminated form's ␟ after the last unit opens one more column,
	// holding the ␞; the separated form leaves it NULL (null_padding)
	cols = append(cols, sqlString(RecordEndColumn)+": 'VARCHAR'")
	return "SELECT\n" + sel + "\nFROM (\n" +
		"  SELECT regexp_replace(COLUMNS(*), '\u241E$', '')\n" +
		"  FROM read_csv(" + sqlString(files) + ", delim = '\u241F', header = true, quote = '', escape = '',\n" +
		"    auto_detect = false, null_padding = true,\n" +
		"    columns = {" + strings.Join(cols, ", ") + "})\n" +
		") AS raw", nil
}

// DuckDBHeaderQuery returns a query that, like DuckDBQuery, types canonical
// USV files by the schema with nothing but DuckDB, but maps columns by each
// file's header, as Schema.Mapper does: columns may come in any order,
// a field the header lacks reads as NULL, and extra columns are ignored.
// It reads each file whole with read_text and splits records on "␞" LF
// and units on ␟, so a line break inside a unit is data, as in DHSI's
// reader. Suits inbox files written under older schemas; for large shards
// DuckDBQuery streams instead. Units holding ␛ escapes are not decoded.
func DuckDBHeaderQuery(s *Schema, files string) (string, error) {
	if err := s.Validate(); err != nil {
		return "", fmt.Errorf("duckdb header query: %w", err)
	}
	sel, err := duckDBSelectList(s)
	if err != nil {
		return "", fmt.Errorf("duckdb header query: %w", err)
	}
	var by []string
	for _, f := range s.Fields {
		by = append(by, "u[list_position(header, "+sqlString(f.Name)+")] AS "+sqlIdent(f.Name))
	}
	return "SELECT\n" + sel + "\nFROM (\n" +
		"  SELECT " + strings.Join(by, ",\n    ") + "\n" +
		"  FROM (\n" +
		"    SELECT string_split(recs[1], '\u241F') AS header, string_split(unnest(recs[2:]), '\u241F') AS u\n" +
		"    FROM (\n" +
		"      SELECT list_transform(list_filter(string_split(content, '\u241E' || chr(10)), r -> r <> ''),\n" +
		"                            r -> regexp_replace(r, '\u241E$', '')) AS recs\n" +
		"      FROM read_text(" + sqlString(files) + ")))\n" +
		") AS raw", nil
}

// duckDBSelectList is the typed select list over a subquery "raw" whose
// VARCHAR columns are named after the fields.
func duckDBSelectList(s *Schema) (string, error) {
	var sel []string
	for _, f := range s.Fields {
		expr, err := DuckDBCast(s.bind(f), "raw."+sqlIdent(f.Name))
		if err != nil {
			return "", err
		}
		sel = append(sel, "  "+expr+" AS "+sqlIdent(f.Name))
	}
	return strings.Join(sel, ",\n"), nil
}
