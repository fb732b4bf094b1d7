package httpapi

// The CDX server API (issue 17 §8): the query interface of pywb's CDXJ
// server and of the Internet Archive's Wayback CDX server, answered from
// the URL index on the fields DHSI keeps: urlkey, timestamp, original and
// dataset for every line, and where a dataset keeps them (CDX and CDXJ
// inputs, issue 17 §1) statuscode, mimetype, digest, length, offset and
// filename, and the other columns --keep-columns kept (under their own
// names, as pywb prints a CDXJ line's other keys).
//
//	GET /cdx?url=…             pywb's flavour (CDXJ by default)
//	GET /{dataset}/cdx?url=…   the same, one dataset (pywb's /{coll}/cdx)
//	GET /cdx/search/cdx?url=…  the Wayback CDX server's flavour (its path;
//	                           space-separated lines by default)
//
// The two servers give output=json, filter and the field names different
// meanings, so the path picks the flavour; README.md ("The CDX server API")
// has the table of parameters, what each flavour answers and where DHSI
// differs.
//
// A line is one URL row of the lake: urlkey is the SURT of its normalized
// URL (surt.go), timestamp its ts to the second (14 digits, "-" when the
// row has none), original the URL as ingested, and dataset the datasets
// holding that capture. The lake keeps a domain's rows in URL order, not
// urlkey order, so every query reads the rows of the one registered domain
// its url names (every dataset the principal may see, or those named by
// dataset=), keeps those after the resume key that pass the match type,
// from/to and filters, sorts them by urlkey, timestamp and original, merges
// identical lines of several datasets into one, and then collapses and
// limits. Memory is bounded by the page (limit+1 lines), not by the
// domain: when collapsing leaves a page short, the next round reads on
// from the last line kept. A resume key carries the last line's position
// and the collapse state, so paging is offset-free and all pages together
// equal the unpaged answer.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/urlnorm"
)

// MaxCDXLimit caps a CDX answer's lines, and is the limit when none is
// given: the Wayback CDX server's own maximum (150,000). A larger answer
// is paged with showResumeKey.
const MaxCDXLimit = 150000

// DefaultCDXMaxLines bounds the lines a negative limit (the last N) may
// sort in memory (Config.CDXMaxLines): the last lines after collapsing
// need every line of the answer. At ~150 bytes a line, 2^18 lines (held at
// most 1.5 times over while they are merged) are ~60 MB.
const DefaultCDXMaxLines = 1 << 18

// collapseRound is the least number of lines a round reads when collapse
// may drop some: fewer rounds, each a read of the domain's rows. (A
// variable for the tests, which make rounds small.)
var collapseRound = 10000

type cdxFlavour int

const (
	flavourPywb cdxFlavour = iota // GET /cdx, /{dataset}/cdx
	flavourIA                     // GET /cdx/search/cdx
)

// cdxField is a field of a CDX line DHSI has.
type cdxField int

const (
	fieldURLKey cdxField = iota
	fieldTimestamp
	fieldOriginal
	fieldDataset
	// the CDX fields a dataset keeps (catalog.CDXColumns, in that order:
	// a kept field's index is f - fieldStatus)
	fieldStatus
	fieldMime
	fieldDigest
	fieldLength
	fieldOffset
	fieldFilename
	// fieldExtra + i is the query's i-th other kept column (cdxQuery.extra):
	// a column --keep-columns kept, named as the dataset names it
	fieldExtra cdxField = 1 << 16
)

// kept reports whether f is one of the CDX fields a dataset may keep.
func (f cdxField) kept() bool { return f >= fieldStatus && f < fieldExtra }

// extra reports whether f is another kept column (--keep-columns).
func (f cdxField) extra() bool { return f >= fieldExtra }

// name is the field's name in the flavour's output (JSON keys, the JSON
// header row): another kept column's is its own.
func (cq *cdxQuery) name(f cdxField, fl cdxFlavour) string {
	if f.extra() {
		return cq.extra[f-fieldExtra]
	}
	switch f {
	case fieldURLKey:
		return "urlkey"
	case fieldTimestamp:
		return "timestamp"
	case fieldOriginal:
		if fl == flavourIA {
			return "original"
		}
		return "url"
	case fieldStatus:
		if fl == flavourIA {
			return "statuscode"
		}
		return "status"
	case fieldMime:
		if fl == flavourIA {
			return "mimetype"
		}
		return "mime"
	case fieldDataset:
		return "dataset"
	}
	return catalog.CDXColumns[f-fieldStatus].Name // digest, length, offset, filename
}

// cdxFieldNames maps every name either server (and pywb's one-letter CDX
// legend) gives a field DHSI has.
var cdxFieldNames = map[string]cdxField{
	"urlkey": fieldURLKey, "k": fieldURLKey, "N": fieldURLKey,
	"timestamp": fieldTimestamp, "t": fieldTimestamp, "b": fieldTimestamp,
	"original": fieldOriginal, "url": fieldOriginal, "u": fieldOriginal, "a": fieldOriginal,
	"dataset":    fieldDataset,
	"statuscode": fieldStatus, "status": fieldStatus, "s": fieldStatus,
	"mimetype": fieldMime, "mime": fieldMime, "m": fieldMime,
	"digest": fieldDigest, "d": fieldDigest,
	"length": fieldLength, "l": fieldLength, "S": fieldLength,
	"offset": fieldOffset, "o": fieldOffset, "V": fieldOffset,
	"filename": fieldFilename, "f": fieldFilename, "g": fieldFilename,
}

// cdxUnkept are the fields of CDX and CDXJ lines DHSI does not keep.
var cdxUnkept = map[string]bool{
	"redirect": true, "r": true, "robotflags": true, "M": true,
	"mime-detected": true, "charset": true, "languages": true, "source": true, "source-coll": true,
	"orig.length": true, "orig.offset": true, "orig.filename": true,
}

const cdxFieldList = "urlkey, timestamp, original (also named url), dataset, and where a dataset keeps them statuscode (status), mimetype (mime), digest, length, offset and filename"

// lookupField is the field a parameter names: one of the names above, or
// else another column a dataset may keep (--keep-columns, such as Common
// Crawl's mime-detected), which checkKept looks for once the query's
// datasets are known.
func (cq *cdxQuery) lookupField(name, param string) (cdxField, error) {
	if f, ok := cdxFieldNames[name]; ok {
		return f, nil
	}
	if name == "" {
		return 0, fmt.Errorf("%s: a field name is missing; DHSI's CDX lines have %s", param, cdxFieldList)
	}
	i := slices.Index(cq.extra, name)
	if i < 0 {
		i = len(cq.extra)
		cq.extra = append(cq.extra, name)
		cq.extraParam = append(cq.extraParam, param)
	}
	return fieldExtra + cdxField(i), nil
}

// checkKept refuses a query naming a kept field (fl, filter, collapse)
// that none of the datasets it reads keeps: every line would say "-". A
// name that is no CDX field and no column of those datasets is no field
// at all. Only the datasets the principal may see are asked (ids), so a
// column of a hidden dataset answers as one nobody keeps.
func (cq *cdxQuery) checkKept(snap *catalog.Snapshot, ids []uint32) error {
	for i, name := range cq.extra {
		found := false
		for _, id := range ids {
			if d, ok := snap.Datasets.ByID(id); ok && catalog.ColumnIndex(d.Columns, name) >= 0 {
				found = true
				break
			}
		}
		switch {
		case found || len(ids) == 0: // no dataset: no line to name it
		case cdxUnkept[name]:
			return fmt.Errorf("%s: no dataset this query reads keeps the field %q of CDX lines (dhsi ingest --keep-columns %s would); DHSI's CDX lines have %s, and the other columns the query's datasets keep", cq.extraParam[i], name, name, cdxFieldList)
		default:
			return fmt.Errorf("%s: no field %q; DHSI's CDX lines have %s, and the other columns the query's datasets keep (dhsi ingest --keep-columns)", cq.extraParam[i], name, cdxFieldList)
		}
	}
	var named []cdxField
	named = append(named, cq.fields...)
	for _, f := range cq.filters {
		if !f.whole {
			named = append(named, f.field)
		}
	}
	for _, c := range cq.collapse {
		named = append(named, c.field)
	}
	for _, f := range named {
		if !f.kept() {
			continue
		}
		name := catalog.CDXColumns[f-fieldStatus].Name
		found := false
		for _, id := range ids {
			if d, ok := snap.Datasets.ByID(id); ok && catalog.ColumnIndex(d.Columns, name) >= 0 {
				found = true
				break
			}
		}
		if !found && len(ids) > 0 {
			return fmt.Errorf("field %q: no dataset this query reads keeps it (CDX and CDXJ inputs do; plain lists do not)", cq.name(f, cq.flavour))
		}
	}
	return nil
}

// iaDefault are the Wayback CDX server's default columns. A line whose
// dataset keeps no CDX field answers "-" for the last four, CDX's mark of
// a field a line lacks, so clients that read columns by position keep
// working.
var iaDefault = []string{"urlkey", "timestamp", "original", "mimetype", "statuscode", "digest", "length"}

var iaDefaultFields = []cdxField{fieldURLKey, fieldTimestamp, fieldOriginal, fieldMime, fieldStatus, fieldDigest, fieldLength}

var pywbDefault = []cdxField{fieldURLKey, fieldTimestamp, fieldOriginal, fieldDataset}

// cdxLine is one line: a URL row of the lake, or identical rows of several
// datasets merged.
type cdxLine struct {
	key  string   // urlkey
	ts   string   // 14 digits, or "-"
	orig string   // the raw URL, or the URL where ingest kept no raw one
	ds   []uint32 // datasets holding it, ascending
	// kept are the CDX fields of the row (catalog.CDXColumns' order), ""
	// where its dataset keeps none; a merged line has those of its first
	// dataset
	kept *[6]string
	// other are the row's other kept columns that have a value, in its
	// dataset's order (read when the query names one, or prints them all)
	other []keptPair
}

// keptPair is one of a line's other kept columns and its value as text.
type keptPair struct{ name, value string }

// otherValue is the line's value of another kept column, or "-".
func (l *cdxLine) otherValue(name string) string {
	for _, p := range l.other {
		if p.name == name {
			return p.value
		}
	}
	return "-"
}

// keptValue is kept field f of the line, or "-".
func (l *cdxLine) keptValue(f cdxField) string {
	if l.kept == nil || l.kept[f-fieldStatus] == "" {
		return "-"
	}
	return l.kept[f-fieldStatus]
}

func compareLines(a, b *cdxLine) int {
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c
	}
	if c := strings.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	return strings.Compare(a.orig, b.orig)
}

// cdxFilter is one filter= parameter.
type cdxFilter struct {
	whole  bool // the whole line, not one field
	field  cdxField
	invert bool
	kind   byte // 'c' contains, '=' equals, 'r' regex
	s      string
	re     *regexp.Regexp
}

func (f *cdxFilter) match(v string) bool {
	var m bool
	switch f.kind {
	case 'c':
		m = strings.Contains(v, f.s)
	case '=':
		m = v == f.s
	default:
		m = f.re.MatchString(v)
	}
	return m != f.invert
}

// parseFilter reads filter=…: for the Wayback server [~][!]field:regex,
// the regex matching the whole value (Java's Matcher.matches) and ~ asking
// for a substring instead; for pywb [!][=|~]field:expr, a substring by
// default, = the whole value, ~ a regex matching from the start (Python's
// re.match). Without "field:" the filter applies to the whole line.
func parseFilter(s string, fl cdxFlavour, lookupField func(name, param string) (cdxField, error)) (cdxFilter, error) {
	var f cdxFilter
	orig := s
	if fl == flavourIA {
		f.kind = 'r'
		for len(s) > 0 && (s[0] == '~' || s[0] == '!') {
			if s[0] == '~' {
				f.kind = 'c'
			} else {
				f.invert = true
			}
			s = s[1:]
		}
	} else {
		f.kind = 'c'
		if strings.HasPrefix(s, "!") {
			f.invert, s = true, s[1:]
		}
		if strings.HasPrefix(s, "=") {
			f.kind, s = '=', s[1:]
		} else if strings.HasPrefix(s, "~") {
			f.kind, s = 'r', s[1:]
		}
	}
	name, expr, ok := strings.Cut(s, ":")
	if !ok {
		f.whole, expr = true, s
	} else {
		field, err := lookupField(name, fmt.Sprintf("filter %q", orig))
		if err != nil {
			return f, err
		}
		f.field = field
	}
	f.s = expr
	if f.kind == 'r' {
		anchored := "^(?:" + expr + ")"
		if fl == flavourIA {
			anchored += "$"
		}
		re, err := regexp.Compile(anchored)
		if err != nil {
			return f, fmt.Errorf("filter %q: %v (regular expressions are RE2's: no look-around, no back-references)", orig, err)
		}
		f.re = re
	}
	return f, nil
}

// collapseSpec is one collapse=field[:N]: of adjacent lines whose field
// (its first N characters) is the same, only the first is kept.
type collapseSpec struct {
	field cdxField
	n     int // 0: the whole value
}

// collapseState is each collapser's last value, as the Wayback server
// keeps it: a collapser remembers a line's value only when the line passes
// it, and the collapsers are tried in order, the first duplicate ending the
// test.
type collapseState []*string

func (s collapseState) clone() collapseState {
	out := make(collapseState, len(s))
	for i, p := range s {
		if p != nil {
			v := *p
			out[i] = &v
		}
	}
	return out
}

// cdxQuery is a parsed request.
type cdxQuery struct {
	flavour       cdxFlavour
	output        string // text, json, cdxj
	matchType     string
	domain        string // the registered domain whose rows are read
	key           string // exact: the urlkey; prefix: the urlkey prefix
	host          string // the urlkey's host part, ")" included
	from, to      string // padded to 14 digits; "" when absent
	filters       []cdxFilter
	collapse      []collapseSpec
	limit         int // < 0: the last -limit lines
	fields        []cdxField
	extra         []string // the other kept columns fl, filter and collapse name
	extraParam    []string // the parameter that first named each, for errors
	showResumeKey bool
	resume        *resumeKey
	datasets      []string // dataset= (names or ids), and the path's
	numPages      bool     // showNumPages=true
}

// resumeKey is where a page ended: the position of its last line and the
// collapse state after it. It is opaque to clients (base64url of JSON).
type resumeKey struct {
	Key      string    `json:"k"`
	TS       string    `json:"t"`
	Orig     string    `json:"o"`
	Collapse []*string `json:"c,omitempty"`
}

func (k *resumeKey) encode() string {
	b, _ := json.Marshal(k)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeResumeKey(s string) (*resumeKey, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	var k resumeKey
	if err == nil {
		err = json.Unmarshal(b, &k)
	}
	if err != nil {
		return nil, fmt.Errorf("resumeKey %q: not a key this server gave (copy it from a page's last line)", s)
	}
	return &k, nil
}

// unsupportedCDX are parameters of pywb or the Wayback server DHSI does not
// implement; a request setting one is refused rather than answered as if
// it were absent.
var unsupportedCDX = map[string]string{
	"offset":            "page with showResumeKey=true and resumeKey (an offset re-reads what it skips)",
	"closest":           "sort by closeness to a timestamp is not implemented; use from/to",
	"reverse":           "reverse order is not implemented; limit=-N gives the last N lines",
	"resolveRevisits":   "resolving revisits is not implemented (the digest and mime fields are there to do it yourself)",
	"showDupeCount":     "duplicate counts are not implemented",
	"showSkipCount":     "skip counters are not implemented",
	"lastSkipTimestamp": "skip counters are not implemented",
	"showGroupCount":    "group counters are not implemented",
	"showUniqCount":     "counters are not implemented",
	"showPagedIndex":    "DHSI has no ZipNum secondary index",
	"pageSize":          "every answer is one page; use limit and showResumeKey",
}

func parseBool(q map[string][]string, name string) (bool, error) {
	v := ""
	if vs := q[name]; len(vs) > 0 {
		v = vs[len(vs)-1]
	}
	switch strings.ToLower(v) {
	case "", "false", "0", "no", "off":
		return false, nil
	case "true", "1", "yes", "on":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: want true or false", name, v)
}

// parseCDXQuery reads the request's parameters; an error is a 400.
func (a *api) parseCDXQuery(r *http.Request, fl cdxFlavour) (*cdxQuery, error) {
	q := r.URL.Query()
	get := func(name string) string { return q.Get(name) }
	cq := &cdxQuery{flavour: fl}

	names := make([]string, 0, len(unsupportedCDX))
	for name := range unsupportedCDX {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if on, err := parseBool(q, name); err == nil && !on {
			continue // absent, empty, 0 or false: nothing asked
		}
		return nil, fmt.Errorf("%s is not supported: %s", name, unsupportedCDX[name])
	}
	switch s := get("sort"); s {
	case "", "regular", "default":
	case "reverse":
		return nil, fmt.Errorf("sort=reverse is not supported: %s", unsupportedCDX["reverse"])
	case "closest":
		return nil, fmt.Errorf("sort=closest is not supported: %s", unsupportedCDX["closest"])
	default:
		return nil, fmt.Errorf("sort=%q: want reverse or closest (neither is supported)", s)
	}
	if p := get("page"); p != "" {
		n, err := strconv.Atoi(p)
		switch {
		case err != nil:
			return nil, fmt.Errorf("page=%q: want a page number", p)
		case n > 0:
			return nil, fmt.Errorf("page=%d: DHSI answers every query as one page (page 0); page with showResumeKey=true", n)
		}
	}
	var err error
	if cq.numPages, err = parseBool(q, "showNumPages"); err != nil {
		return nil, err
	}

	switch out := get("output"); {
	case out == "" && fl == flavourIA, out == "text":
		cq.output = "text"
	case out == "" && fl == flavourPywb, out == "cdxj" && fl == flavourPywb:
		cq.output = "cdxj"
	case out == "json":
		cq.output = "json"
	default:
		want := "json or text"
		if fl == flavourPywb {
			want = "cdxj, json or text"
		}
		return nil, fmt.Errorf("output=%s not supported: want %s", out, want)
	}

	raw := strings.TrimSpace(get("url"))
	if raw == "" {
		return nil, errors.New(`the "url" parameter is required, e.g. url=example.com/*`)
	}
	implied := ""
	switch {
	case strings.HasPrefix(raw, "*."):
		implied, raw = "domain", strings.TrimSuffix(raw[2:], "*")
	case strings.HasSuffix(raw, "*"):
		implied, raw = "prefix", strings.TrimSuffix(raw, "*")
	}
	cq.matchType = get("matchType")
	switch cq.matchType {
	case "":
		cq.matchType = implied
		if implied == "" {
			cq.matchType = "exact"
		}
	case "exact", "prefix", "host", "domain":
		if implied != "" && implied != cq.matchType {
			return nil, fmt.Errorf("url=%q asks for matchType=%s by its wildcard, but matchType=%s is given", get("url"), implied, cq.matchType)
		}
	default:
		return nil, fmt.Errorf("invalid matchType %q: want exact, prefix, host or domain", cq.matchType)
	}
	if a.cfg.URL == nil {
		return nil, errors.New("this server cannot parse URLs")
	}
	u, err := a.cfg.URL(raw)
	if err != nil {
		if urlnorm.ReasonOf(err) == urlnorm.ReasonHostIsPublicSuffix {
			return nil, fmt.Errorf("url=%q: its host is a public suffix, and DHSI reads one registered domain (such as example.com) per query", raw)
		}
		return nil, fmt.Errorf("url=%q: want a URL with a host, such as example.com/path: %v", raw, err)
	}
	if u.PublicSuffixHost && cq.matchType == "domain" {
		// co.uk's URLs are indexed under co.uk (docs/urlnorm.md), but its
		// subdomains are registered domains of their own: one query cannot
		// answer them all, and answering co.uk alone would look complete
		return nil, fmt.Errorf("url=%q: its host is a public suffix, and DHSI reads one registered domain (such as example.com) per query", raw)
	}
	cq.domain = u.Domain
	host, rest := surtHostPart(u.Normalized)
	cq.host, cq.key = host, host+rest
	if cq.matchType == "prefix" {
		if strings.HasSuffix(raw, "/") && !strings.HasSuffix(cq.key, "/") {
			cq.key += "/"
		}
		if strings.HasSuffix(raw, "?") && !strings.HasSuffix(cq.key, "?") {
			cq.key += "?"
		}
	}

	from := get("from")
	if from == "" {
		from = get("from_ts") // pywb's older name
	}
	if cq.from, err = padTimestamp("from", from, '0'); err != nil {
		return nil, err
	}
	if cq.to, err = padTimestamp("to", get("to"), '9'); err != nil {
		return nil, err
	}

	for _, s := range q["filter"] {
		if s == "" {
			continue
		}
		f, err := parseFilter(s, fl, cq.lookupField)
		if err != nil {
			return nil, err
		}
		cq.filters = append(cq.filters, f)
	}
	specs := q["collapse"]
	if ct := get("collapseTime"); ct != "" {
		specs = append(specs, "timestamp:"+ct)
	}
	for _, s := range specs {
		if s == "" {
			continue
		}
		name, n, hasN := strings.Cut(s, ":")
		field, err := cq.lookupField(name, fmt.Sprintf("collapse %q", s))
		if err != nil {
			return nil, err
		}
		c := collapseSpec{field: field}
		if hasN {
			if c.n, err = strconv.Atoi(n); err != nil || c.n < 0 {
				return nil, fmt.Errorf("collapse %q: want field or field:N, N the number of leading characters compared", s)
			}
		}
		cq.collapse = append(cq.collapse, c)
	}

	cq.limit = MaxCDXLimit
	if l := get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			return nil, fmt.Errorf("limit=%q: want an integer (negative: the last lines)", l)
		}
		switch {
		case n > MaxCDXLimit:
			n = MaxCDXLimit // as the Wayback server caps it
		case n < -MaxCDXLimit:
			n = -MaxCDXLimit
		case n == 0:
			n = MaxCDXLimit
		}
		cq.limit = n
	}

	flv := get("fl")
	if flv == "" {
		flv = get("fields") // pywb's other name
	}
	if flv != "" {
		for _, name := range strings.Split(flv, ",") {
			f, err := cq.lookupField(strings.TrimSpace(name), "fl")
			if err != nil {
				return nil, err
			}
			cq.fields = append(cq.fields, f)
		}
	}

	if cq.showResumeKey, err = parseBool(q, "showResumeKey"); err != nil {
		return nil, err
	}
	if k := get("resumeKey"); k != "" {
		if cq.resume, err = decodeResumeKey(k); err != nil {
			return nil, err
		}
		if len(cq.resume.Collapse) != len(cq.collapse) {
			cq.resume.Collapse = nil // another query's key: its position still holds
		}
	}
	cq.datasets = q["dataset"]
	return cq, nil
}

// padTimestamp checks a 1–14 digit timestamp and pads it to 14 digits
// with pad ('0' for from, '9' for to: inclusive, as both servers compare).
func padTimestamp(name, s string, pad byte) (string, error) {
	if s == "" {
		return "", nil
	}
	if len(s) > 14 || strings.Trim(s, "0123456789") != "" {
		return "", fmt.Errorf("%s=%q: want 1 to 14 digits of yyyyMMddhhmmss", name, s)
	}
	return s + strings.Repeat(string(pad), 14-len(s)), nil
}

// cdxError answers as the flavour's server does: pywb with a JSON
// {"message": …}, the Wayback server with a plain-text line.
func cdxError(w http.ResponseWriter, fl cdxFlavour, status int, msg string) {
	if fl == flavourPywb {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		var b bytes.Buffer
		b.WriteByte('{')
		writeJSONPair(&b, "message", msg, true)
		b.WriteString("}\n")
		w.Write(b.Bytes())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

func (a *api) cdxHandler(fl cdxFlavour) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { a.serveCDX(w, r, fl, "") }
}

func (a *api) cdxDataset(w http.ResponseWriter, r *http.Request) {
	a.serveCDX(w, r, flavourPywb, r.PathValue("dataset"))
}

func (a *api) serveCDX(w http.ResponseWriter, r *http.Request, fl cdxFlavour, pathDataset string) {
	cq, err := a.parseCDXQuery(r, fl)
	if err != nil {
		cdxError(w, fl, http.StatusBadRequest, err.Error())
		return
	}
	if pathDataset != "" {
		cq.datasets = append(cq.datasets, pathDataset)
	}
	snap := a.cfg.Snapshot()
	visible := a.visible(r, snap)
	ids, status, err := cdxDatasets(snap, visible, cq)
	if err != nil {
		if status == http.StatusInternalServerError {
			a.cdxInternal(w, r, fl, cq.domain, err)
			return
		}
		cdxError(w, fl, status, err.Error())
		return
	}
	if err := cq.checkKept(snap, ids); err != nil {
		cdxError(w, fl, http.StatusBadRequest, err.Error())
		return
	}
	if cq.numPages {
		writeNumPages(w, fl)
		return
	}
	var out bytes.Buffer
	wr := newCDXWriter(&out, cq, snap)
	if err := a.answerCDX(r, snap, ids, cq, wr); err != nil {
		var tooMany errTooManyLines
		if errors.As(err, &tooMany) {
			cdxError(w, fl, http.StatusBadRequest, err.Error())
			return
		}
		a.cdxInternal(w, r, fl, cq.domain, err)
		return
	}
	wr.end()
	w.Header().Set("Content-Type", wr.contentType())
	w.WriteHeader(http.StatusOK)
	w.Write(out.Bytes())
}

// cdxInternal logs a failure of the server and answers it as internalCause
// says.
func (a *api) cdxInternal(w http.ResponseWriter, r *http.Request, fl cdxFlavour, domain string, err error) {
	a.cfg.Log.Error("cdx api", "domain", domain, "err", err.Error())
	cdxError(w, fl, http.StatusInternalServerError, internalCause(r, err))
}

// writeNumPages answers showNumPages=true: DHSI answers every query as one
// page (pywb's JSON, the Wayback server's number).
func writeNumPages(w http.ResponseWriter, fl cdxFlavour) {
	if fl == flavourPywb {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"blocks": 1, "pages": 1, "pageSize": 1}`)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-CDX-Num-Pages", "1")
	fmt.Fprintln(w, 1)
}

// cdxDatasets resolves the datasets a query reads: those named (by name,
// or by id when no dataset has that name), each visible to the principal,
// or else every visible dataset holding the domain. A dataset hidden by
// the grants answers as one that does not exist (access A3).
func cdxDatasets(snap *catalog.Snapshot, visible func(uint32) bool, cq *cdxQuery) ([]uint32, int, error) {
	if len(cq.datasets) == 0 {
		ds, err := snap.DomainDatasets(cq.domain)
		if err != nil {
			return nil, http.StatusInternalServerError, err
		}
		var ids []uint32
		for _, d := range ds {
			if visible == nil || visible(d.DatasetID) {
				ids = append(ids, d.DatasetID)
			}
		}
		return ids, 0, nil
	}
	var ids []uint32
	for _, name := range cq.datasets {
		d, ok := snap.Datasets.ByName(name)
		// a hidden dataset's name is no match (A3): else a hidden dataset
		// named "1" made the visible dataset of id 1 answer 404, telling
		// the caller the hidden one exists and its name
		if ok && visible != nil && !visible(d.ID) {
			ok = false
		}
		if !ok {
			if n, err := strconv.ParseUint(name, 10, 32); err == nil {
				d, ok = snap.Datasets.ByID(uint32(n))
			}
		}
		if !ok || (visible != nil && !visible(d.ID)) {
			return nil, http.StatusNotFound, fmt.Errorf("dataset %q is not in index version %q", name, snap.Version.Version)
		}
		if !slices.Contains(ids, d.ID) {
			ids = append(ids, d.ID)
		}
	}
	slices.Sort(ids)
	return ids, 0, nil
}

type errTooManyLines struct{ n, max int }

func (e errTooManyLines) Error() string {
	return fmt.Sprintf("a negative limit sorts every line of the answer, and this one has more than %d: narrow it (from, to, filter, matchType, dataset) or page forward with showResumeKey=true", e.max)
}

// answerCDX writes the query's lines (and resume key) to wr.
func (a *api) answerCDX(r *http.Request, snap *catalog.Snapshot, ids []uint32, cq *cdxQuery, wr *cdxWriter) error {
	state := make(collapseState, len(cq.collapse))
	var after *cdxLine
	if k := cq.resume; k != nil {
		after = &cdxLine{key: k.Key, ts: k.TS, orig: k.Orig}
		if k.Collapse != nil {
			state = collapseState(k.Collapse).clone()
		}
	}
	if cq.limit < 0 { // the last -limit lines: all of them, collapsed, then the tail
		maxLines := a.cfg.CDXMaxLines
		if maxLines <= 0 {
			maxLines = DefaultCDXMaxLines
		}
		lines, _, err := a.readCDXLines(r, snap, ids, cq, after, 0, maxLines)
		if err != nil {
			return err
		}
		kept := lines[:0]
		for i := range lines {
			if cq.passCollapse(state, &lines[i], snap) {
				kept = append(kept, lines[i])
			}
		}
		if n := -cq.limit; len(kept) > n {
			kept = kept[len(kept)-n:]
		}
		for i := range kept {
			wr.line(&kept[i])
		}
		return nil // no resume key for the last lines, as the Wayback server
	}
	round := cq.limit + 1
	if len(cq.collapse) > 0 && round < collapseRound {
		round = collapseRound
	}
	emitted := 0
	var keyLine cdxLine
	var keyState collapseState
	for {
		lines, more, err := a.readCDXLines(r, snap, ids, cq, after, round, 0)
		if err != nil {
			return err
		}
		for i := range lines {
			if !cq.passCollapse(state, &lines[i], snap) {
				continue
			}
			if emitted == cq.limit { // one line more than the page: there is a next page
				if cq.showResumeKey {
					wr.resumeKey((&resumeKey{Key: keyLine.key, TS: keyLine.ts, Orig: keyLine.orig, Collapse: keyState}).encode())
				}
				return nil
			}
			wr.line(&lines[i])
			emitted++
			if emitted == cq.limit {
				keyLine, keyState = lines[i], state.clone()
			}
		}
		if !more || len(lines) == 0 {
			return nil
		}
		after = &lines[len(lines)-1]
	}
}

// passCollapse reports whether line survives the collapsers, updating
// their state as the Wayback server's CollapseFieldFilter does.
func (cq *cdxQuery) passCollapse(state collapseState, l *cdxLine, snap *catalog.Snapshot) bool {
	for i, c := range cq.collapse {
		v := cq.fieldValue(l, c.field, snap)
		if c.n > 0 && c.n <= len(v) {
			v = v[:c.n]
		}
		if state[i] != nil && *state[i] == v {
			return false
		}
		state[i] = &v
	}
	return true
}

func (cq *cdxQuery) fieldValue(l *cdxLine, f cdxField, snap *catalog.Snapshot) string {
	if f.extra() {
		return l.otherValue(cq.extra[f-fieldExtra])
	}
	switch f {
	case fieldURLKey:
		return l.key
	case fieldTimestamp:
		return l.ts
	case fieldOriginal:
		return l.orig
	case fieldDataset:
		return datasetNames(l.ds, snap)
	}
	return l.keptValue(f)
}

func datasetNames(ids []uint32, snap *catalog.Snapshot) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		if d, ok := snap.Datasets.ByID(id); ok && d.Name != "" {
			b.WriteString(d.Name)
		} else {
			b.WriteString(strconv.FormatUint(uint64(id), 10))
		}
	}
	return b.String()
}

// readCDXLines reads the domain's rows in datasets ids and returns, sorted
// and merged, the first `want` lines after `after` that pass the match
// type, from/to and the filters (want 0: all of them, at most maxLines,
// else errTooManyLines), and whether more such lines exist. Memory holds
// at most about 2×want lines (1.5×maxLines): the candidates are sorted,
// merged and cut back to want whenever they reach twice that.
func (a *api) readCDXLines(r *http.Request, snap *catalog.Snapshot, ids []uint32, cq *cdxQuery, after *cdxLine, want, maxLines int) ([]cdxLine, bool, error) {
	var buf []cdxLine
	var bound *cdxLine // when set, lines above it cannot be among the first want
	more := false
	compact := func() error {
		slices.SortFunc(buf, func(x, y cdxLine) int {
			if c := compareLines(&x, &y); c != 0 {
				return c
			}
			return int(x.ds[0]) - int(y.ds[0])
		})
		out := buf[:0]
		for _, l := range buf {
			if n := len(out); n > 0 && compareLines(&out[n-1], &l) == 0 {
				for _, id := range l.ds {
					if !slices.Contains(out[n-1].ds, id) {
						out[n-1].ds = append(out[n-1].ds, id)
					}
				}
				slices.Sort(out[n-1].ds)
				continue
			}
			out = append(out, l)
		}
		buf = out
		if want > 0 && len(buf) > want {
			more = true
			clear(buf[want:])
			buf = buf[:want]
			b := buf[want-1]
			bound = &b
		}
		if maxLines > 0 && len(buf) > maxLines {
			return errTooManyLines{len(buf), maxLines}
		}
		return nil
	}
	limitBuf := 2 * want
	if want == 0 {
		limitBuf = maxLines + maxLines/2
	}
	for _, id := range ids {
		name := ""
		if d, ok := snap.Datasets.ByID(id); ok {
			name = d.Name
		}
		var cdxAt [6]int  // where each CDX field is among the dataset's columns
		var otherAt []int // where the other kept columns the query reads are
		var cols []catalog.Column
		withFields := false
		if d, ok := snap.Datasets.ByID(id); ok {
			cols = d.Columns
			for k, c := range catalog.CDXColumns {
				cdxAt[k] = catalog.ColumnIndex(d.Columns, c.Name)
				withFields = withFields || cdxAt[k] >= 0
			}
			otherAt = cq.otherColumns(d.Columns)
			withFields = withFields || len(otherAt) > 0
		}
		for offset := int64(0); ; {
			var rows []catalog.URLRow
			var fields []catalog.FieldRow
			var total uint64
			var err error
			if withFields {
				fields, total, _, err = snap.DomainURLFields(r.Context(), cq.domain, id, offset, catalog.MaxPageSize)
				rows = make([]catalog.URLRow, len(fields))
				for i := range fields {
					rows[i] = fields[i].URLRow
				}
			} else {
				rows, total, err = snap.DomainURLs(r.Context(), cq.domain, id, offset, catalog.MaxPageSize)
			}
			if err != nil {
				return nil, false, fmt.Errorf("dataset %d: %w", id, err)
			}
			for i := range rows {
				var kept *[6]string
				var other []keptPair
				if withFields {
					kept = keptStrings(fields[i].Fields, &cdxAt)
					other = otherPairs(fields[i].Fields, cols, otherAt)
				}
				l, ok := cq.lineOf(&rows[i], id, name, kept, other, snap)
				if !ok || (after != nil && compareLines(&l, after) <= 0) {
					continue
				}
				if bound != nil && compareLines(&l, bound) > 0 {
					more = true
					continue
				}
				buf = append(buf, l)
				if len(buf) >= limitBuf {
					if err := compact(); err != nil {
						return nil, false, err
					}
				}
			}
			offset += int64(len(rows))
			if len(rows) == 0 || uint64(offset) >= total {
				break
			}
		}
	}
	if err := compact(); err != nil {
		return nil, false, err
	}
	return buf, more, nil
}

// lineOf is the line of one row, if it passes the match type, from/to and
// the filters.
func (cq *cdxQuery) lineOf(row *catalog.URLRow, id uint32, dataset string, kept *[6]string, other []keptPair, snap *catalog.Snapshot) (cdxLine, bool) {
	authority, path, query, hasQuery := splitNormalized(row.URL)
	host := surtHost(authority)
	switch cq.matchType {
	case "host":
		if host != cq.host {
			return cdxLine{}, false
		}
	case "domain":
		bare := cq.host[:len(cq.host)-1]
		if host != cq.host && !(strings.HasPrefix(host, bare) && host[len(bare)] == ',') {
			return cdxLine{}, false
		}
	default: // exact, prefix: the key begins with the host part
		if host != cq.host {
			return cdxLine{}, false
		}
	}
	l := cdxLine{key: host + surtPath(path) + surtQuery(query, hasQuery), ts: "-", orig: row.URL, ds: []uint32{id}, kept: kept, other: other}
	switch cq.matchType {
	case "exact":
		if l.key != cq.key {
			return cdxLine{}, false
		}
	case "prefix":
		if !strings.HasPrefix(l.key, cq.key) {
			return cdxLine{}, false
		}
	}
	if row.Raw != "" {
		l.orig = row.Raw
	}
	if row.HasTS {
		l.ts = row.TS.UTC().Format("20060102150405")
	}
	if cq.from != "" && (l.ts == "-" || l.ts < cq.from) {
		return cdxLine{}, false
	}
	if cq.to != "" && (l.ts == "-" || l.ts > cq.to) {
		return cdxLine{}, false
	}
	for i := range cq.filters {
		f := &cq.filters[i]
		var v string
		switch {
		case f.whole:
			v = wholeLine(&l, dataset, cq.flavour)
		case f.field == fieldDataset:
			v = dataset // a row's own dataset: filters select rows before they merge
		default:
			v = cq.fieldValue(&l, f.field, snap)
		}
		if !f.match(v) {
			return cdxLine{}, false
		}
	}
	return l, true
}

// wholeLine is what a filter without a field matches: the line as the
// flavour writes it by default (the Wayback server's seven columns, pywb's
// CDXJ).
func wholeLine(l *cdxLine, dataset string, fl cdxFlavour) string {
	if fl == flavourIA {
		return l.key + " " + l.ts + " " + textValue(l.orig) + " " + textValue(l.keptValue(fieldMime)) + " " + l.keptValue(fieldStatus) + " " +
			textValue(l.keptValue(fieldDigest)) + " " + l.keptValue(fieldLength)
	}
	var b bytes.Buffer
	b.WriteString(l.key + " " + l.ts + " {")
	writeJSONPair(&b, "url", l.orig, true)
	writePywbKept(&b, l)
	writeJSONPair(&b, "dataset", dataset, false)
	b.WriteByte('}')
	return b.String()
}

// writePywbKept writes the line's kept fields that have a value, the CDX
// fields and then the other kept columns, as pywb's default output has
// every field its index line has.
func writePywbKept(b *bytes.Buffer, l *cdxLine) {
	for f := fieldMime; l.kept != nil && f <= fieldFilename; f++ { // pywb's order: mime, status, digest, ...
		if f == fieldMime {
			if v := l.kept[fieldMime-fieldStatus]; v != "" {
				writeJSONPair(b, "mime", v, false)
			}
			if v := l.kept[0]; v != "" {
				writeJSONPair(b, "status", v, false)
			}
			continue
		}
		if v := l.kept[f-fieldStatus]; v != "" {
			writeJSONPair(b, catalog.CDXColumns[f-fieldStatus].Name, v, false)
		}
	}
	for _, p := range l.other {
		writeJSONPair(b, p.name, p.value, false)
	}
}

// otherColumns are the positions among a dataset's columns of the other
// kept columns the query reads: those fl, filter and collapse name, and
// every one where pywb's default output prints a line's fields (or a
// filter matches the whole line). A column named as one of the CDX API's
// own fields (timestamp, original, ...) is shadowed by it: never read.
func (cq *cdxQuery) otherColumns(cols []catalog.Column) []int {
	all := cq.flavour == flavourPywb && cq.fields == nil && cq.output != "text"
	for _, f := range cq.filters {
		all = all || f.whole && cq.flavour == flavourPywb
	}
	var at []int
	for i, c := range cols {
		if _, cdx := catalog.IsCDXColumn(c.Name); cdx {
			continue
		}
		if _, shadowed := cdxFieldNames[c.Name]; shadowed {
			continue
		}
		if all || slices.Contains(cq.extra, c.Name) {
			at = append(at, i)
		}
	}
	return at
}

// otherPairs are a row's values of the columns at, as text, NULLs left
// out.
func otherPairs(vals []any, cols []catalog.Column, at []int) []keptPair {
	var out []keptPair
	for _, i := range at {
		if i >= len(vals) || vals[i] == nil {
			continue
		}
		if v, ok := fieldText(vals[i]); ok {
			out = append(out, keptPair{cols[i].Name, v})
		}
	}
	return out
}

// fieldText is a kept field's value as CDX text: integers and numbers in
// decimal (the shortest form that reads back), booleans as true/false, a
// timestamp in RFC 3339 (UTC), as the JSON API's fields give them.
func fieldText(v any) (string, bool) {
	switch x := v.(type) {
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), true
	case string:
		return x, true
	}
	return "", false
}

// keptStrings are a row's CDX fields as CDX text ("" for NULL).
func keptStrings(vals []any, at *[6]int) *[6]string {
	var out [6]string
	any := false
	for k, i := range at {
		if i < 0 || i >= len(vals) || vals[i] == nil {
			continue
		}
		v, ok := fieldText(vals[i])
		if !ok {
			continue
		}
		out[k], any = v, true
	}
	if !any {
		return nil
	}
	return &out
}

// cdxWriter renders lines in the query's output format.
type cdxWriter struct {
	b     *bytes.Buffer
	cq    *cdxQuery
	snap  *catalog.Snapshot
	lines int
}

func newCDXWriter(b *bytes.Buffer, cq *cdxQuery, snap *catalog.Snapshot) *cdxWriter {
	w := &cdxWriter{b: b, cq: cq, snap: snap}
	if cq.flavour == flavourIA && cq.output == "json" {
		b.WriteByte('[')
	}
	return w
}

func (w *cdxWriter) contentType() string {
	switch {
	case w.cq.flavour == flavourIA && w.cq.output == "json":
		return "application/json"
	case w.cq.output == "json":
		return "text/x-ndjson"
	case w.cq.output == "cdxj":
		return "text/x-cdxj"
	}
	return "text/plain; charset=utf-8"
}

// columns are the text and IA JSON columns: names and values.
func (w *cdxWriter) columns(l *cdxLine) (names, values []string) {
	if w.cq.fields == nil && w.cq.flavour == flavourIA {
		if l == nil {
			return iaDefault, nil
		}
		for _, f := range iaDefaultFields {
			values = append(values, w.cq.fieldValue(l, f, w.snap))
		}
		return iaDefault, values
	}
	fields := w.cq.fields
	if fields == nil {
		fields = pywbDefault
	}
	for _, f := range fields {
		names = append(names, w.cq.name(f, w.cq.flavour))
		if l != nil {
			values = append(values, w.cq.fieldValue(l, f, w.snap))
		}
	}
	return names, values
}

func (w *cdxWriter) line(l *cdxLine) {
	b := w.b
	switch {
	case w.cq.flavour == flavourIA && w.cq.output == "json":
		names, values := w.columns(l)
		if w.lines == 0 {
			b.WriteByte('[')
			for i, n := range names {
				if i > 0 {
					b.WriteByte(',')
				}
				writeJSONString(b, n)
			}
			b.WriteString("],\n")
		} else {
			b.WriteString(",\n")
		}
		b.WriteByte('[')
		for i, v := range values {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONString(b, v)
		}
		b.WriteByte(']')
	case w.cq.output == "text":
		_, values := w.columns(l)
		for i, v := range values {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(textValue(v))
		}
		b.WriteByte('\n')
	case w.cq.output == "cdxj":
		b.WriteString(l.key + " " + l.ts + " {")
		fields := w.cq.fields
		if fields == nil {
			fields = pywbDefault
		}
		first := true
		for _, f := range fields {
			if f == fieldURLKey || f == fieldTimestamp {
				continue // in the line's prefix, as pywb writes CDXJ
			}
			writeJSONPair(b, w.cq.name(f, flavourPywb), w.cq.fieldValue(l, f, w.snap), first)
			first = false
			if f == fieldOriginal && w.cq.fields == nil {
				writePywbKept(b, l)
			}
		}
		b.WriteString("}\n")
	default: // pywb's JSON lines
		b.WriteByte('{')
		fields := w.cq.fields
		if fields == nil {
			fields = pywbDefault
		}
		for i, f := range fields {
			writeJSONPair(b, w.cq.name(f, flavourPywb), w.cq.fieldValue(l, f, w.snap), i == 0)
			if f == fieldOriginal && w.cq.fields == nil {
				writePywbKept(b, l)
			}
		}
		b.WriteString("}\n")
	}
	w.lines++
}

// resumeKey ends a page that has a next one: the Wayback server's blank
// line (text, CDXJ) or empty row (JSON) then the key; pywb's JSON lines a
// last object {"resumeKey": …}.
func (w *cdxWriter) resumeKey(k string) {
	b := w.b
	switch {
	case w.cq.flavour == flavourIA && w.cq.output == "json":
		b.WriteString(",\n[],\n[")
		writeJSONString(b, k)
		b.WriteByte(']')
	case w.cq.output == "json":
		b.WriteByte('{')
		writeJSONPair(b, "resumeKey", k, true)
		b.WriteString("}\n")
	default:
		b.WriteString("\n" + k + "\n")
	}
}

func (w *cdxWriter) end() {
	if w.cq.flavour == flavourIA && w.cq.output == "json" {
		w.b.WriteString("]\n")
	}
}

func writeJSONPair(b *bytes.Buffer, k, v string, first bool) {
	if !first {
		b.WriteString(", ")
	}
	writeJSONString(b, k)
	b.WriteString(": ")
	writeJSONString(b, v)
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// textValue escapes what would break a space-separated line: bytes <= 0x20
// and 0x7f, as %XX.
func textValue(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c == 0x7f {
			var b strings.Builder
			for j := 0; j < len(s); j++ {
				if c := s[j]; c <= 0x20 || c == 0x7f {
					fmt.Fprintf(&b, "%%%02X", c)
				} else {
					b.WriteByte(c)
				}
			}
			return b.String()
		}
	}
	return s
}
