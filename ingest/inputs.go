package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/klauspost/compress/zstd"
)

// Record is one URL read from an input, before normalization.
type Record struct {
	URL    string
	TS     time.Time // zero when the input has no timestamp
	Source string    // "file:line", for reports
	// Fields are the kept columns' values (nil: NULL), by the position of
	// the dataset's columns; nil when it keeps none (fields.go).
	Fields []any
}

// Reject is an input line or URL that was not ingested, with its reason.
// Rejects are never dropped silently: ingest writes them to a file and
// counts them by reason.
type Reject struct {
	Source string
	Raw    string
	Reason string
	Detail string
}

// Format names an input format.
type Format string

// Input formats.
const (
	FormatList    Format = "list"    // one URL per line; # comments and blank lines skipped
	FormatCSV     Format = "csv"     // header with a url column, optional timestamp column
	FormatTSV     Format = "tsv"     // the same, tab-separated
	FormatJSONL   Format = "jsonl"   // one JSON object per line with "url", optional "timestamp"/"ts"
	FormatCDX     Format = "cdx"     // classic space-separated CDX with a " CDX ..." header
	FormatCDXJ    Format = "cdxj"    // "SURT TIMESTAMP {json}" lines (Common Crawl, pywb)
	FormatParquet Format = "parquet" // a url column, optional timestamp column
)

// DetectFormat picks a format from the file name (compression suffixes .gz
// and .zst are looked through), defaulting to a plain list.
func DetectFormat(path string) Format {
	name := strings.ToLower(filepath.Base(path))
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".gz"), ".zst")
	switch {
	case strings.HasSuffix(name, ".cdxj"):
		return FormatCDXJ
	case strings.HasSuffix(name, ".cdx"):
		return FormatCDX
	case strings.HasSuffix(name, ".csv"):
		return FormatCSV
	case strings.HasSuffix(name, ".tsv"):
		return FormatTSV
	case strings.HasSuffix(name, ".jsonl"), strings.HasSuffix(name, ".ndjson"), strings.HasSuffix(name, ".json"):
		return FormatJSONL
	case strings.HasSuffix(name, ".parquet"):
		return FormatParquet
	}
	return FormatList
}

// urlColumns and tsColumns are the column names recognised in CSV, TSV,
// JSON lines and Parquet, in order of preference.
var (
	urlColumns = []string{"url", "uri", "original", "target_uri", "warc_target_uri", "link", "href"}
	tsColumns  = []string{"timestamp", "ts", "fetch_time", "date", "time", "crawled_at"}
)

// Scan reads every record of one input file, calling emit for each URL and
// reject for each line that cannot be read. A file that cannot be opened at
// all is an error.
func Scan(ctx context.Context, path string, format Format, emit func(Record) error, reject func(Reject)) error {
	return scan(ctx, path, format, "", nil, emit, reject)
}

// scan is Scan with DuckDB's memory_limit for a Parquet input ("": DuckDB's
// default, 80% of RAM).
func scan(ctx context.Context, path string, format Format, parquetMemory string, plan *fieldPlan, emit func(Record) error, reject func(Reject)) error {
	if format == "" {
		format = DetectFormat(path)
	}
	if format == FormatParquet {
		return scanParquet(ctx, path, parquetMemory, plan, emit, reject)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := decompress(path, f)
	if err != nil {
		return err
	}
	name := filepath.Base(path)
	if r, err = sniffText(name, r); err != nil {
		return err
	}
	switch format {
	case FormatCSV, FormatTSV:
		return scanCSV(name, r, format == FormatTSV, plan, emit, reject)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var cdxFields []string
	for n := 1; sc.Scan(); n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line := strings.TrimRight(sc.Text(), "\r")
		src := name + ":" + strconv.Itoa(n)
		if strings.TrimSpace(line) == "" {
			continue
		}
		var rec Record
		var rerr *Reject
		switch format {
		case FormatList:
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			rec = Record{URL: strings.TrimSpace(line)}
		case FormatJSONL:
			rec, rerr = jsonRecord(line, plan)
		case FormatCDXJ:
			rec, rerr = cdxjRecord(line, plan)
		case FormatCDX:
			if strings.HasPrefix(line, " CDX ") || strings.HasPrefix(line, "CDX ") {
				cdxFields = strings.Fields(strings.TrimSpace(line))[1:]
				continue
			}
			rec, rerr = cdxRecord(line, cdxFields, plan)
		default:
			return fmt.Errorf("unknown input format %q", format)
		}
		if rerr != nil {
			rerr.Source, rerr.Raw = src, truncate(line, 2000)
			reject(*rerr)
			continue
		}
		rec.Source = src
		if err := emit(rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func decompress(path string, r io.Reader) (io.Reader, error) {
	switch {
	case strings.HasSuffix(strings.ToLower(path), ".gz"):
		return gzip.NewReader(r)
	case strings.HasSuffix(strings.ToLower(path), ".zst"):
		d, err := zstd.NewReader(r)
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}
	return r, nil
}

// ParseTimestamp reads the timestamps inputs carry: 14-digit CDX
// (20240716153155, UTC), RFC 3339, a date, or Unix seconds.
func ParseTimestamp(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	if len(s) >= 4 && len(s) <= 14 && allDigits(s) && (len(s) == 14 || len(s) == 12 || len(s) == 8) {
		layout := "20060102150405"[:len(s)]
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	if allDigits(s) && len(s) >= 9 && len(s) <= 11 {
		n, _ := strconv.ParseInt(s, 10, 64)
		return time.Unix(n, 0).UTC(), true
	}
	return time.Time{}, false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func jsonRecord(line string, plan *fieldPlan) (Record, *Reject) {
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return Record{}, &Reject{Reason: "bad-line", Detail: "not a JSON object: " + err.Error()}
	}
	rec, rj := fromMap(m)
	if rj != nil {
		return rec, rj
	}
	rec.Fields = plan.newFields()
	if err := plan.fromJSON(rec.Fields, m, false); err != nil {
		return Record{}, &Reject{Reason: "bad-field", Detail: err.Error()}
	}
	return rec, nil
}

func fromMap(m map[string]any) (Record, *Reject) {
	var rec Record
	for _, k := range urlColumns {
		if s, ok := m[k].(string); ok && s != "" {
			rec.URL = s
			break
		}
	}
	if rec.URL == "" {
		return Record{}, &Reject{Reason: "no-url", Detail: "no url field (" + strings.Join(urlColumns, ", ") + ")"}
	}
	for _, k := range tsColumns {
		switch v := m[k].(type) {
		case string:
			if t, ok := ParseTimestamp(v); ok {
				rec.TS = t
			}
		case float64:
			rec.TS = time.Unix(int64(v), 0).UTC()
		}
		if !rec.TS.IsZero() {
			break
		}
	}
	return rec, nil
}

func cdxjRecord(line string, plan *fieldPlan) (Record, *Reject) {
	// SURT SP TIMESTAMP SP JSON; the SURT never contains a space
	sp1 := strings.IndexByte(line, ' ')
	if sp1 < 0 {
		return Record{}, &Reject{Reason: "bad-line", Detail: "CDXJ line without fields"}
	}
	rest := line[sp1+1:]
	sp2 := strings.IndexByte(rest, ' ')
	if sp2 < 0 {
		return Record{}, &Reject{Reason: "bad-line", Detail: "CDXJ line without a JSON block"}
	}
	ts, js := rest[:sp2], rest[sp2+1:]
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		return Record{}, &Reject{Reason: "bad-line", Detail: "CDXJ JSON block: " + err.Error()}
	}
	rec, rj := fromMap(m)
	if rj != nil {
		return rec, rj
	}
	if t, ok := ParseTimestamp(ts); ok {
		rec.TS = t
	}
	rec.Fields = plan.newFields()
	if err := plan.fromJSON(rec.Fields, m, true); err != nil {
		return Record{}, &Reject{Reason: "bad-field", Detail: err.Error()}
	}
	return rec, nil
}

// cdxRecord reads a classic CDX line. fields are the header's letters; the
// default is the common 11-field " CDX N b a m s k r M S V g".
func cdxRecord(line string, fields []string, plan *fieldPlan) (Record, *Reject) {
	if fields == nil {
		fields = strings.Fields("N b a m s k r M S V g")
	}
	parts := strings.Fields(line)
	var rec Record
	rec.Fields = plan.newFields()
	for i, f := range fields {
		if i >= len(parts) {
			break
		}
		switch f {
		case "a":
			rec.URL = parts[i]
		case "b":
			if t, ok := ParseTimestamp(parts[i]); ok {
				rec.TS = t
			}
		default:
			if name, ok := cdxLetters[f]; ok && plan != nil {
				plan.set(rec.Fields, plan.index(name), parts[i], true) // lenient: never an error
			}
		}
	}
	if rec.URL == "" || rec.URL == "-" {
		return Record{}, &Reject{Reason: "no-url", Detail: "CDX line without an original-URL (a) field"}
	}
	return rec, nil
}

func scanCSV(name string, r io.Reader, tab bool, plan *fieldPlan, emit func(Record) error, reject func(Reject)) error {
	cr := csv.NewReader(r)
	if tab {
		cr.Comma = '\t'
		cr.LazyQuotes = true
	}
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s: read header: %w", name, err)
	}
	ui, ti := -1, -1
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		for _, c := range urlColumns {
			if h == c && ui < 0 {
				ui = i
			}
		}
		for _, c := range tsColumns {
			if h == c && ti < 0 {
				ti = i
			}
		}
	}
	if ui < 0 {
		return fmt.Errorf("%s: no url column in header %q (want one of %s)", name, header, strings.Join(urlColumns, ", "))
	}
	// the kept columns: header index → column index
	var keepAt [][2]int
	if plan != nil {
		for _, k := range plan.keep {
			at := -1
			for i, h := range header {
				if strings.TrimSpace(h) == k {
					at = i
				}
			}
			if at < 0 {
				return fmt.Errorf("%s: %s: no column %q in header %q", name, plan.flagName(), k, header)
			}
			keepAt = append(keepAt, [2]int{at, plan.index(k)})
			plan.markSeen(k) // the header has it, whatever its values
		}
	}
	for n := 2; ; n++ {
		row, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		src := name + ":" + strconv.Itoa(n)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				reject(Reject{Source: src, Reason: "bad-line", Detail: err.Error()})
				continue
			}
			return err
		}
		if ui >= len(row) || strings.TrimSpace(row[ui]) == "" {
			reject(Reject{Source: src, Raw: strings.Join(row, ","), Reason: "no-url", Detail: "empty url column"})
			continue
		}
		rec := Record{URL: strings.TrimSpace(row[ui]), Source: src, Fields: plan.newFields()}
		if ti >= 0 && ti < len(row) {
			rec.TS, _ = ParseTimestamp(row[ti])
		}
		var ferr error
		for _, k := range keepAt {
			if k[0] < len(row) && ferr == nil {
				ferr = plan.set(rec.Fields, k[1], row[k[0]], false)
			}
		}
		if ferr != nil {
			reject(Reject{Source: src, Raw: strings.Join(row, ","), Reason: "bad-field", Detail: ferr.Error()})
			continue
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
}

// scanParquet reads a Parquet file with DuckDB (an in-memory instance of
// this process: ingest never opens the server's database file).
func scanParquet(ctx context.Context, path, memoryLimit string, plan *fieldPlan, emit func(Record) error, reject func(Reject)) error {
	dsn := ""
	if memoryLimit != "" {
		dsn = "?memory_limit=" + url.QueryEscape(memoryLimit)
	}
	db, err := sql.Open("duckdb", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	var cols []string
	rows, err := db.QueryContext(ctx, "SELECT name FROM parquet_schema(?) WHERE name IS NOT NULL", path)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	for rows.Next() {
		var c string
		rows.Scan(&c)
		cols = append(cols, c)
	}
	rows.Close()
	pick := func(cands []string) string {
		for _, want := range cands {
			for _, c := range cols {
				if strings.EqualFold(c, want) {
					return c
				}
			}
		}
		return ""
	}
	uc, tc := pick(urlColumns), pick(tsColumns)
	if uc == "" {
		return fmt.Errorf("%s: no url column among %q", filepath.Base(path), cols)
	}
	tsExpr := "NULL::VARCHAR"
	if tc != "" {
		tsExpr = "CAST(" + quoteIdent(tc) + " AS VARCHAR)"
	}
	// the kept columns, as text that castField reads (DuckDB's VARCHAR of
	// a TIMESTAMP is "2024-07-16 15:31:55", of a BOOLEAN "true")
	var keepSQL string
	var keepIdx []int
	if plan != nil {
		for _, k := range plan.keep {
			found := ""
			for _, c := range cols {
				if c == k {
					found = c
				}
			}
			if found == "" {
				return fmt.Errorf("%s: %s: no column %q among %q", filepath.Base(path), plan.flagName(), k, cols)
			}
			keepSQL += ", CAST(" + quoteIdent(found) + " AS VARCHAR)"
			keepIdx = append(keepIdx, plan.index(k))
			plan.markSeen(k) // the schema has it, whatever its values
		}
	}
	rows, err = db.QueryContext(ctx, "SELECT CAST("+quoteIdent(uc)+" AS VARCHAR), "+tsExpr+keepSQL+" FROM read_parquet(?)", path)
	if err != nil {
		return err
	}
	defer rows.Close()
	name := filepath.Base(path)
	vals := make([]sql.NullString, len(keepIdx))
	dest := make([]any, 2+len(keepIdx))
	for n := 1; rows.Next(); n++ {
		var u, ts sql.NullString
		dest[0], dest[1] = &u, &ts
		for i := range vals {
			dest[2+i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		rec := Record{URL: u.String, Source: name + ":" + strconv.Itoa(n), Fields: plan.newFields()}
		if ts.Valid {
			rec.TS, _ = ParseTimestamp(ts.String)
		}
		var ferr error
		for i, v := range vals {
			if v.Valid && ferr == nil {
				ferr = plan.set(rec.Fields, keepIdx[i], v.String, false)
			}
		}
		if ferr != nil {
			reject(Reject{Source: rec.Source, Raw: u.String, Reason: "bad-field", Detail: ferr.Error()})
			continue
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return rows.Err()
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sniffText looks at the start of a text input (after decompression): a
// UTF-8 byte-order mark is dropped; UTF-16 with a byte-order mark is
// decoded to UTF-8; input that looks binary (NUL bytes, or mostly control
// bytes, in its first 4 KiB) is refused with a sentence naming the file,
// rather than ingested as a few "URLs" with NUL bytes or rejected line by
// line with no hint.
func sniffText(name string, r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4096)
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}):
		_, _ = br.Discard(3)
		return br, nil
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
		return transform.NewReader(br, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder()), nil
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		return transform.NewReader(br, unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder()), nil
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return nil, fmt.Errorf("%s is not text: it has a NUL byte at offset %d (binary data, or UTF-16 without a byte-order mark; convert it to UTF-8)", name, i)
	}
	control := 0
	for _, c := range head {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			control++
		}
	}
	if len(head) > 0 && control*10 > len(head) {
		return nil, fmt.Errorf("%s is not text: %d of its first %d bytes are control characters", name, control, len(head))
	}
	return br, nil
}
