package ingest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	pqfile "github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/index/files"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/urlnorm"
)

// DefaultRowGroupRows is the Parquet row-group size of the lake. A first
// page of domain_urls reads the row groups its domain spans; smaller groups
// mean less decoded per page, larger ones better compression. See
// docs/format/lake.md for the measurement behind the choice.
const DefaultRowGroupRows = 16384

// lakeWriter turns normalized rows into the lake's Parquet files
// (docs/format/lake.md).
//
// Rows are staged, as they arrive, in one buffer per domain_prefix; when
// the buffers together pass memBudget they are appended to one spill file
// per prefix in the work directory. finish then sorts and deduplicates one
// prefix at a time (one per core) and writes its Parquet into memory for
// the caller to upload. Memory is bounded by memBudget plus the largest
// prefix (1/256 of a batch on average) per worker, not by the batch; a
// batch under the budget creates no local file at all (file creation is
// the dearest syscall on some disks: 0.7 ms here).
//
// Invariants of every file written:
//
//	L1. Rows are sorted by (domain, url) in byte order; one domain's rows
//	    are contiguous.
//	L2. (domain, url) is unique: duplicates are merged, keeping the raw URL
//	    that sorts first (coalesce(raw, url)) and the latest timestamp,
//	    with the kept fields of the row that has it.
//	L3. Spans (per domain, the row groups holding its rows, with counts
//	    and the row where the run starts) are recorded while writing, so
//	    postings need no second read.
//	L4. A row's domain is stored as where it sits in url (domain_offset,
//	    domain_length), read back by LakeDomainSQL; only a row whose
//	    domain is not its host's last labels in ASCII stores it in the
//	    domain column. Exactly one of the two is set.
//	L5. A row whose raw URL differs from url stores it as raw_edit, the
//	    edit that rebuilds it from url (catalog.AppendRaw); a row whose
//	    raw URL is url stores none. The footer's LakeLayoutKey says
//	    LakeLayout.
//	L6. A row's timestamp, if any, is stored in whole seconds as
//	    ts_seconds when it is a whole second (crawl indexes' are), else in
//	    microseconds as ts; never both (LakeTSSQL reads either).
type lakeWriter struct {
	dir       string
	buckets   map[string]*spillFile
	mem       int64 // bytes staged in the buckets' buffers
	rows      int64 // rows staged (before deduplication)
	memBudget int64
	// bucketCap is the capacity a bucket's buffer starts with (sizeHint)
	bucketCap int
	domains   *interner
	// cols are the dataset's kept columns (fields.go): every row stages a
	// value or NULL for each, and every file has them after lakeSchema's
	cols []catalog.Column
}

// sizeHint tells the writer about how many bytes its inputs hold, so that
// each bucket's buffer starts near its final size instead of doubling up
// to it: the copies of that growth showed in ingest profiles. A staged
// row is about as long as its input line.
func (w *lakeWriter) sizeHint(inputBytes int64) {
	// a quarter more than the input, never more than the budget in all
	// (staging buckets: two hex digits)
	per := min(max(inputBytes, 0)/4*5, w.memBudget) / 256
	w.bucketCap = int(min(per, 16<<20))
}

// spillFile is one prefix's staged rows: a buffer, and a file once the
// buffers have been spilled.
type spillFile struct {
	buf []byte
	f   *os.File // nil until the first spill
}

// defaultStageBudget bounds the rows staged in memory before spilling.
const defaultStageBudget = 256 << 20

func newLakeWriter(workDir string, domains *interner, stageBytes int64) *lakeWriter {
	if domains == nil {
		domains = &interner{}
	}
	if stageBytes <= 0 {
		stageBytes = defaultStageBudget
	}
	return &lakeWriter{dir: filepath.Join(workDir, "spill"), buckets: map[string]*spillFile{}, memBudget: stageBytes, domains: domains}
}

// interner numbers the domains of a whole batch of datasets: a file's
// spans name their domain by its number, so the spans of a batch (one
// per domain, dataset and row group: millions) hold no pointer for the
// garbage collector to scan, and the index build groups them by sorting
// instead of through maps. Span keys outlive the staged rows they were
// read from, so the interner keeps its own copy of each name. It is
// sharded by the first hex digit of the domain's prefix, which is also how
// files are cut, so the files written in parallel rarely share a lock.
// (unique.Make did this job at a tenth of the build's CPU, most of it in
// the runtime's weak-pointer bookkeeping.)
type interner struct {
	shards [16]struct {
		mu sync.Mutex
		m  map[string]domainID
	}
	mu    sync.Mutex // guards names
	names []string   // by domainID
}

// domainID numbers a domain within one interner, densely from 0.
type domainID uint32

func (in *interner) intern(prefix, s string) domainID {
	sh := &in.shards[hexDigit(prefix[0])&15]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if id, ok := sh.m[s]; ok {
		return id
	}
	if sh.m == nil {
		sh.m = map[string]domainID{}
	}
	v := strings.Clone(s)
	in.mu.Lock()
	id := domainID(len(in.names))
	in.names = append(in.names, v)
	in.mu.Unlock()
	sh.m[v] = id
	return id
}

// domains returns every domain interned so far, indexed by domainID.
func (in *interner) domains() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.names[:len(in.names):len(in.names)]
}

func hexDigit(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}

// spill appends every bucket's buffer to its file.
func (w *lakeWriter) spill() error {
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return err
	}
	for p, b := range w.buckets {
		if len(b.buf) == 0 {
			continue
		}
		if b.f == nil {
			f, err := os.Create(filepath.Join(w.dir, p+".rows"))
			if err != nil {
				return err
			}
			b.f = f
		}
		if _, err := b.f.Write(b.buf); err != nil {
			return fmt.Errorf("spill rows: %w", err)
		}
		b.buf = nil
	}
	w.mem = 0
	return nil
}

// size is the bytes of the bucket's staged rows, spilled and buffered.
func (b *spillFile) size() (int, error) {
	if b.f == nil {
		return len(b.buf), nil
	}
	fi, err := b.f.Stat()
	if err != nil {
		return 0, err
	}
	return int(fi.Size()) + len(b.buf), nil
}

// appendTo appends the bucket's staged rows, spilled and buffered, to dst.
func (b *spillFile) appendTo(dst []byte) ([]byte, error) {
	if b.f != nil {
		fi, err := b.f.Stat()
		if err != nil {
			return nil, err
		}
		n := int(fi.Size())
		at := len(dst)
		dst = slices.Grow(dst, n)[:at+n]
		if _, err := b.f.ReadAt(dst[at:], 0); err != nil {
			return nil, fmt.Errorf("read spilled rows: %w", err)
		}
	}
	return append(dst, b.buf...), nil
}

// add stages one URL. raw is stored only when it differs from the
// normalized url (provenance at almost no cost: most raw URLs are already
// canonical).
func (w *lakeWriter) add(domain, prefix string, url, raw string, ts time.Time, fields ...any) error {
	b := w.buckets[prefix]
	if b == nil {
		// staging is always by the two-digit shard; finish merges buckets
		// for narrower files
		if len(prefix) != 2 || !files.ValidPrefix(prefix) {
			return fmt.Errorf("domain prefix %q is not two lower-case hex digits", prefix)
		}
		b = &spillFile{}
		w.buckets[prefix] = b
	}
	// record: uvarint len(domain) domain, uvarint len(url) url,
	// uvarint 0 | len(raw)+1 raw, uvarint 0 | 1 then varint ts (µs),
	// appended straight to the bucket's buffer
	if b.buf == nil && w.bucketCap > 0 {
		b.buf = make([]byte, 0, w.bucketCap)
	}
	start := len(b.buf)
	s := b.buf
	s = binary.AppendUvarint(s, uint64(len(domain)))
	s = append(s, domain...)
	s = binary.AppendUvarint(s, uint64(len(url)))
	s = append(s, url...)
	if raw == url {
		s = append(s, 0)
	} else {
		s = binary.AppendUvarint(s, uint64(len(raw))+1)
		s = append(s, raw...)
	}
	if ts.IsZero() {
		s = append(s, 0)
	} else {
		s = append(s, 1)
		s = binary.AppendVarint(s, ts.UnixMicro())
	}
	if len(w.cols) > 0 { // then the kept fields (appendFields)
		s = appendFields(s, w.cols, fields)
	}
	b.buf = s
	w.rows++
	w.mem += int64(len(s) - start)
	if w.mem > w.memBudget {
		return w.spill()
	}
	return nil
}

// lakeFile is one Parquet file written for the batch.
type lakeFile struct {
	Data      []byte // the Parquet file, until emitted
	Prefix    string // domain_prefix partition
	Name      string // part-....parquet
	Key       string // store key once uploaded
	Rows      int64
	RowGroups int
	Bytes     int64
	// Spans: per domain, the row groups holding its URLs with row counts,
	// in row order (L1: a domain's spans are consecutive).
	Spans []fileSpan
	// FieldBytes: per kept column, its column chunks' compressed bytes
	FieldBytes map[string]int64
}

// fileSpan is a run of one domain's rows in one row group of a file.
type fileSpan struct {
	Domain domainID // of the lake writer's interner
	groupRows
}

type groupRows struct {
	RowGroup uint32
	Rows     uint32
	First    uint32 // row of the row group where the run starts
}

// collision is two different URLs of one batch with the same url_id.
type collision struct {
	URLID uint64
	A, B  string
}

// urlIDOf is url_id (docs/format/lake.md); a variable so a test can force
// collisions with a weak hash.
var urlIDOf = urlnorm.URLID

// PrefixWidth returns how many hex digits of the domain hash name the lake
// files of a batch of rows (docs/format/lake.md, "Prefix width"): two, one
// file per shard, once a batch fills a row group per shard on average;
// otherwise one, 16 files. A dataset of 156k URLs in 256 files of ~610
// rows costs 19.4 bytes per URL (per-file footers, a zstd context per
// file); the same rows in 16 files cost 17.3.
func PrefixWidth(rows int64, rowGroupRows int) int {
	if rowGroupRows <= 0 {
		rowGroupRows = DefaultRowGroupRows
	}
	if rows >= 256*int64(rowGroupRows) {
		return 2
	}
	return 1
}

// layout is the shape of a batch's files; zero fields take the defaults.
type layout struct {
	RowGroupRows int // rows per row group (DefaultRowGroupRows)
	PageRows     int // rows per data page (DefaultPageRows)
	PrefixWidth  int // hex digits of domain_prefix (PrefixWidth of the batch)
	ZstdLevel    int // zstd level of the pages (DefaultZstdLevel)
}

func (l layout) withDefaults(rows int64) layout {
	if l.RowGroupRows <= 0 {
		l.RowGroupRows = DefaultRowGroupRows
	}
	if l.PageRows <= 0 {
		l.PageRows = DefaultPageRows
	}
	if l.PrefixWidth == 0 {
		l.PrefixWidth = PrefixWidth(rows, l.RowGroupRows)
	}
	if l.ZstdLevel == 0 {
		l.ZstdLevel = DefaultZstdLevel
	}
	return l
}

// finish deduplicates (L2), writes one sorted Parquet file per domain
// prefix of lay.PrefixWidth hex digits (L1) and
// maps every domain to its row groups (L3). Each file is handed to emit
// as soon as it is written (emit may block: that bounds the files held in
// memory); its Data is dropped when emit returns. finish returns the files
// in prefix order, the url_id collisions, and the rows written.
func (w *lakeWriter) finish(ctx context.Context, name string, lay layout, emit func(*lakeFile) error) ([]lakeFile, []collision, int64, error) {
	lay = lay.withDefaults(w.rows)
	width := lay.PrefixWidth
	if width < 1 || width > 2 {
		return nil, nil, 0, fmt.Errorf("domain prefix width %d: want 1 or 2", width)
	}
	// each file's buckets: the two-digit staging buckets sharing its prefix
	groups := map[string][]*spillFile{}
	all := make([]string, 0, len(w.buckets))
	for p := range w.buckets {
		all = append(all, p)
	}
	sort.Strings(all)
	for _, p := range all {
		groups[p[:width]] = append(groups[p[:width]], w.buckets[p])
	}
	prefixes := make([]string, 0, len(groups))
	for p := range groups {
		prefixes = append(prefixes, p)
	}
	sort.Strings(prefixes)
	out := make([]lakeFile, len(prefixes))
	ids := make([][]uint64, len(prefixes)) // url_ids per file, sorted
	errs := make([]error, len(prefixes))
	parallel.ForEach(len(prefixes), runtime.GOMAXPROCS(0), func(i int) {
		if errs[i] = ctx.Err(); errs[i] != nil {
			return
		}
		p := prefixes[i]
		if out[i], ids[i], errs[i] = w.writePrefix(groups[p], name, p, lay); errs[i] != nil {
			return
		}
		errs[i] = emit(&out[i])
		out[i].Data = nil
	})
	var written int64
	for i, err := range errs {
		if err != nil {
			return nil, nil, 0, fmt.Errorf("write parquet for prefix %s: %w", prefixes[i], err)
		}
		written += out[i].Rows
	}
	cols, err := w.collisions(ids, all)
	if err != nil {
		return nil, nil, 0, err
	}
	return out, cols, written, nil
}

// stagedRows is one file's staged rows: their bytes, and per row where its
// strings sit in them. A row holds offsets, not strings, so sorting rows
// moves no pointers and the garbage collector never scans them: with
// strings, the write barriers of sorting and the scanning of row slices
// were a fifth of a build's CPU.
type stagedRows struct {
	buf  []byte
	rows []lakeRow
}

// lakeRow is one staged row.
type lakeRow struct {
	domain, url, raw strRef // raw is empty when it equals url
	fields           strRef // the kept fields, encoded (appendFields)
	ts               int64
	hasTS            bool
}

// strRef is a string of a stagedRows buffer: offset << 24 | length.
type strRef uint64

const maxStagedString = 1<<24 - 1

func (s *stagedRows) str(r strRef) string {
	n := int(r & maxStagedString)
	if n == 0 {
		return ""
	}
	return unsafe.String(&s.buf[r>>24], n)
}

// stagedBytes is a staged string as the Parquet writer takes it, without
// the copy a conversion would make (one per URL showed in ingest
// profiles). The writer only reads it, and writePrefix closes its file
// while the staged rows are still alive.
func stagedBytes(s string) parquet.ByteArray {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

func (s *stagedRows) url(i int) string { return s.str(s.rows[i].url) }

// rawKey is the raw URL as ingested: raw, or url where they are equal.
func (s *stagedRows) rawKey(i int) string { return s.str(s.rows[i].rawRef()) }

func (r *lakeRow) hasRaw() bool { return r.raw&maxStagedString != 0 }

// rawRef is where the raw URL as ingested is: raw, or url where they are
// equal.
func (r *lakeRow) rawRef() strRef {
	if r.hasRaw() {
		return r.raw
	}
	return r.url
}

// readBuckets loads the staged rows of one file's buckets into one buffer.
func readBuckets(cols []catalog.Column, buckets ...*spillFile) (*stagedRows, error) {
	size := 0
	for _, b := range buckets {
		n, err := b.size()
		if err != nil {
			return nil, err
		}
		size += n
	}
	s := &stagedRows{buf: make([]byte, 0, size)}
	for _, b := range buckets {
		var err error
		if s.buf, err = b.appendTo(s.buf); err != nil {
			return nil, err
		}
	}
	buf := s.buf
	ref := func(n uint64, at int) (strRef, int, error) {
		if n > uint64(len(buf)-at) {
			return 0, 0, errors.New("staged rows are truncated")
		}
		if n > maxStagedString {
			return 0, 0, fmt.Errorf("a staged string of %d bytes is over the limit of %d", n, maxStagedString)
		}
		return strRef(uint64(at)<<24 | n), at + int(n), nil
	}
	var err error
	for at := 0; at < len(buf); {
		var r lakeRow
		n, k := binary.Uvarint(buf[at:])
		if k <= 0 {
			return nil, errors.New("staged rows are corrupt")
		}
		if r.domain, at, err = ref(n, at+k); err != nil {
			return nil, err
		}
		n, k = binary.Uvarint(buf[at:])
		if k <= 0 {
			return nil, errors.New("staged rows are corrupt")
		}
		if r.url, at, err = ref(n, at+k); err != nil {
			return nil, err
		}
		n, k = binary.Uvarint(buf[at:])
		if k <= 0 {
			return nil, errors.New("staged rows are corrupt")
		}
		at += k
		if n > 0 {
			if r.raw, at, err = ref(n-1, at); err != nil {
				return nil, err
			}
		}
		if at >= len(buf) {
			return nil, errors.New("staged rows are truncated")
		}
		if buf[at] == 1 {
			v, k := binary.Varint(buf[at+1:])
			if k <= 0 {
				return nil, errors.New("staged rows are corrupt")
			}
			r.ts, r.hasTS = v, true
			at += 1 + k
		} else {
			at++
		}
		if len(cols) > 0 {
			n, err := fieldLen(buf[at:], cols)
			if err != nil {
				return nil, err
			}
			if r.fields, at, err = ref(uint64(n), at); err != nil {
				return nil, err
			}
		}
		s.rows = append(s.rows, r)
	}
	return s, nil
}

// dedupe sorts rows by (domain, url) and merges equal keys (L1, L2).
//
// The sort is by domain first through a counting sort: a file's ~10k rows
// fall into a few hundred domains, so ranking the distinct domains and
// then sorting each domain's rows by url compares far fewer (and shorter)
// strings than one sort of all rows by (domain, url) did — that sort was
// a tenth of an ingest's CPU.
func (s *stagedRows) dedupe() {
	str := s.str
	var ends []int
	s.rows, ends = s.sortedByDomain()
	byURL := func(a, b lakeRow) int {
		if c := strings.Compare(str(a.url), str(b.url)); c != 0 {
			return c
		}
		return strings.Compare(str(a.rawRef()), str(b.rawRef())) // first raw wins
	}
	from := 0
	for _, end := range ends {
		slices.SortFunc(s.rows[from:end], byURL)
		from = end
	}
	rows := s.rows
	out := rows[:0]
	for i := 0; i < len(rows); {
		j := i + 1
		keep := rows[i]
		dom, url := str(keep.domain), str(keep.url)
		for ; j < len(rows) && str(rows[j].domain) == dom && str(rows[j].url) == url; j++ {
			if rows[j].hasTS && (!keep.hasTS || rows[j].ts > keep.ts) {
				// the kept fields are the latest capture's
				keep.ts, keep.hasTS, keep.fields = rows[j].ts, true, rows[j].fields
			}
		}
		out = append(out, keep)
		i = j
	}
	s.rows = out
}

// sortedByDomain returns the rows in domain order, keeping the order of
// a domain's rows, and where each domain's rows end: the distinct domains
// are sorted, then each row is placed by its domain's rank.
func (s *stagedRows) sortedByDomain() (rows []lakeRow, ends []int) {
	rank := make(map[string]int32)
	rowRank := make([]int32, len(s.rows))
	var names []string
	for i := range s.rows {
		d := s.str(s.rows[i].domain)
		r, ok := rank[d]
		if !ok {
			r = int32(len(names))
			rank[d] = r
			names = append(names, d)
		}
		rowRank[i] = r
	}
	order := make([]int32, len(names)) // first-seen number → rank
	byName := make([]int32, len(names))
	for i := range byName {
		byName[i] = int32(i)
	}
	slices.SortFunc(byName, func(a, b int32) int { return strings.Compare(names[a], names[b]) })
	start := make([]int, len(names)+1) // rank → first row
	for r, n := range byName {
		order[n] = int32(r)
	}
	for _, n := range rowRank {
		start[order[n]+1]++
	}
	for r := 1; r < len(start); r++ {
		start[r] += start[r-1]
	}
	out := make([]lakeRow, len(s.rows))
	for i, n := range rowRank {
		r := order[n]
		out[start[r]] = s.rows[i]
		start[r]++
	}
	return out, start[:len(names)] // each rank's next row is now the end of its rows
}

// lakeSchema is the file schema of docs/format/lake.md.
var lakeSchema = lakeSchemaWith(nil)

// lakeSchemaWith is lakeSchema followed by a dataset's kept columns.
func lakeSchemaWith(cols []catalog.Column) *schema.Schema {
	str := func(name string, rep parquet.Repetition) schema.Node {
		return schema.MustPrimitive(schema.NewPrimitiveNodeLogical(name, rep, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1))
	}
	ts := schema.MustPrimitive(schema.NewPrimitiveNodeLogical("ts", parquet.Repetitions.Optional,
		schema.NewTimestampLogicalType(false, schema.TimeUnitMicros), parquet.Types.Int64, -1, -1))
	// L6: Parquet's timestamps have no unit of seconds; seconds since the
	// epoch as a plain INT64 compress to half of whole seconds in µs
	tsSeconds := schema.MustPrimitive(schema.NewPrimitiveNodeLogical("ts_seconds", parquet.Repetitions.Optional,
		schema.NewIntLogicalType(64, true), parquet.Types.Int64, -1, -1))
	i32 := func(name string) schema.Node {
		return schema.MustPrimitive(schema.NewPrimitiveNodeLogical(name, parquet.Repetitions.Optional,
			schema.NewIntLogicalType(32, true), parquet.Types.Int32, -1, -1))
	}
	root := schema.MustGroup(schema.NewGroupNode("duckdb_schema", parquet.Repetitions.Required, append(schema.FieldList{
		str("url", parquet.Repetitions.Required),
		// L5: BYTE_ARRAY without a logical type (DuckDB: BLOB)
		schema.MustPrimitive(schema.NewPrimitiveNode("raw_edit", parquet.Repetitions.Optional, parquet.Types.ByteArray, -1, -1)),
		ts,
		i32("domain_offset"),
		i32("domain_length"),
		str("domain", parquet.Repetitions.Optional),
		tsSeconds,
	}, fieldNodes(cols)...), -1))
	return schema.NewSchema(root)
}

// DefaultZstdLevel is the zstd level of every page. arrow-go compresses
// with klauspost/compress, whose levels are four speeds: 1-2 fastest, 3-5
// default, 6-9 better, 10 and up best. Measured (63 datasets, 9.84M URLs,
// one dhsi ingest on 2 cores):
//   - the realistic corpus (stop 34, levels interleaved 5 9 5 9): level 3-5
//     28.2-28.6 s and a 249.2 MB lake, 9 31.6-33.4 s and 244.0 MB. zstd of
//     the url column's pages was a fifth of the ingest's CPU at 9, and the
//     "better" speed buys 2% of the lake (0.5 of 28.6 bytes a URL).
//   - the simple corpus (earlier): level 3 24.7 s and 19.8 B/URL (lake and
//     index), 9 24.2 s and 19.4, 11 35.8 s and 18.8.
//
// Level 9 was the default until stop 34; --zstd-level 9 keeps it, and 11
// writes ~3% less than 9 in half again the time.
const DefaultZstdLevel = 3

// DefaultPageRows is the rows per data page. A page is the unit of zstd
// and of decoding: a first page of domain_urls finds its domain's page
// through the page index and decodes from that page's start, so smaller
// pages mean less work per query and worse compression (measured on the
// benchmark corpus at zstd 9: 512 rows 17.8 B/URL, 1024 17.2, 2048 16.9,
// one page per 16k-row group 16.2).
const DefaultPageRows = 2048

func lakeProps(lay layout, cols ...catalog.Column) *parquet.WriterProperties {
	return parquet.NewWriterProperties(append([]parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(lay.ZstdLevel),
		parquet.WithDictionaryDefault(false),
		// a handful of offsets, constant along a domain's run
		parquet.WithDictionaryFor("domain_offset", true),
		parquet.WithDictionaryFor("domain_length", true),
		// the domain is stored only where domain_offset cannot say it:
		// PLAIN, for the reason given for raw below
		parquet.WithEncodingFor("domain", parquet.Encodings.Plain),
		// sorted URLs share long prefixes: front coding before zstd
		parquet.WithEncodingFor("url", parquet.Encodings.DeltaByteArray),
		// raw_edit is mostly null: PLAIN, because arrow-go v18.8.0 writes a
		// DELTA_BYTE_ARRAY page without values that it then refuses to read
		// ("cannot have zero values per block")
		parquet.WithEncodingFor("raw_edit", parquet.Encodings.Plain),
		// a crawl's seconds: delta-coded, 2.9 bytes per URL on Common
		// Crawl's CDXJ where PLAIN took 3.3 (and µs in ts 5.3)
		parquet.WithEncodingFor("ts_seconds", parquet.Encodings.DeltaBinaryPacked),
		parquet.WithMaxRowGroupLength(int64(lay.RowGroupRows)),
		// a page per write batch: the byte threshold is always passed, so
		// every page holds pageRows rows (the last one fewer)
		parquet.WithDataPageSize(1),
		parquet.WithBatchSize(int64(lay.PageRows)),
		// URL statistics cost 0.5 B/URL and prune nothing; files are
		// sorted by (domain, url), which no column states alone, so no
		// sorting columns are declared
		parquet.WithStats(false),
		// raw_edit and ts do carry statistics: their null counts tell a
		// reader that a row group has no raw URL or no timestamp, so a
		// first page skips the column (most rows have neither). Only
		// values up to 16 bytes are kept as min/max.
		parquet.WithStatsFor("raw_edit", true),
		parquet.WithStatsFor("ts", true),
		parquet.WithStatsFor("ts_seconds", true),
		parquet.WithMaxStatsSize(16),
		parquet.WithPageIndexEnabled(true),
		parquet.WithCreatedBy("dhsi"),
	}, fieldProps(cols)...)...,
	)
}

// writePrefix sorts, deduplicates and writes the rows of one file's
// buckets, returning the file and its url_ids, sorted.
func (w *lakeWriter) writePrefix(buckets []*spillFile, name, prefix string, lay layout) (lakeFile, []uint64, error) {
	f := lakeFile{Prefix: prefix, Name: name}
	staged, err := readBuckets(w.cols, buckets...)
	if err != nil {
		return f, nil, err
	}
	staged.dedupe()
	rows := staged.rows
	ids := make([]uint64, len(rows))
	for i := range rows {
		ids[i] = urlIDOf(staged.rawKey(i))
	}
	slices.Sort(ids)
	out := bytes.NewBuffer(make([]byte, 0, 20*len(rows)+4096))
	kv := metadata.NewKeyValueMetadata()
	kv.Append(catalog.LakeLayoutKey, strconv.Itoa(catalog.LakeLayout)) // ASCII: cannot fail
	sch, props := lakeSchema, lakeProps(lay)
	if len(w.cols) > 0 {
		sch, props = lakeSchemaWith(w.cols), lakeProps(lay, w.cols...)
	}
	pw := pqfile.NewParquetWriter(out, sch.Root(), pqfile.WithWriterProps(props), pqfile.WithWriteMetadata(kv))
	fw := newFieldWriter(w.cols)
	var edits catalog.RawEncoder
	var editBuf []byte
	var (
		spanKey  string // the domain of the last span, and its number
		spanID   domainID
		haveSpan bool
	)
	var (
		domains, urls, raws         []parquet.ByteArray // raws: raw edits
		rawDefs, tsDefs, domainDefs []int16
		offsetDefs                  []int16
		tss, secs                   []int64
		secDefs                     []int16
		offsets, lengths            []int32
	)
	for start := 0; start < len(rows); start += lay.RowGroupRows {
		group := rows[start:min(start+lay.RowGroupRows, len(rows))]
		domains, urls, raws = domains[:0], urls[:0], raws[:0]
		editBuf = editBuf[:0]
		rawDefs, tsDefs, tss = rawDefs[:0], tsDefs[:0], tss[:0]
		secDefs, secs = secDefs[:0], secs[:0]
		domainDefs, offsetDefs, offsets, lengths = domainDefs[:0], offsetDefs[:0], offsets[:0], lengths[:0]
		fw.reset()
		for i := range group {
			r := &group[i]
			domain, url := staged.str(r.domain), staged.str(r.url)
			if fw != nil {
				if err := fw.add(staged.str(r.fields)); err != nil {
					return f, nil, err
				}
			}
			urls = append(urls, stagedBytes(url))
			// L4
			if off, ok := domainOffset(url, domain); ok {
				offsets = append(offsets, off)
				lengths = append(lengths, int32(len(domain)))
				offsetDefs = append(offsetDefs, 1)
				domainDefs = append(domainDefs, 0)
			} else {
				domains = append(domains, stagedBytes(domain))
				domainDefs = append(domainDefs, 1)
				offsetDefs = append(offsetDefs, 0)
			}
			if r.hasRaw() { // L5
				at := len(editBuf)
				editBuf = edits.Append(editBuf, url, staged.str(r.raw))
				raws = append(raws, parquet.ByteArray(editBuf[at:len(editBuf):len(editBuf)]))
				rawDefs = append(rawDefs, 1)
			} else {
				rawDefs = append(rawDefs, 0)
			}
			switch { // L6
			case r.hasTS && r.ts%1e6 == 0:
				secs = append(secs, r.ts/1e6)
				secDefs = append(secDefs, 1)
				tsDefs = append(tsDefs, 0)
			case r.hasTS:
				tss = append(tss, r.ts)
				tsDefs = append(tsDefs, 1)
				secDefs = append(secDefs, 0)
			default:
				tsDefs = append(tsDefs, 0)
				secDefs = append(secDefs, 0)
			}
			// L3: spans as written, naming the domain by its interner
			// number; L1 makes a domain's spans consecutive.
			if !haveSpan || domain != spanKey {
				spanKey, spanID, haveSpan = domain, w.domains.intern(prefix, domain), true
			}
			rg := uint32(f.RowGroups)
			if n := len(f.Spans); n > 0 && f.Spans[n-1].Domain == spanID && f.Spans[n-1].RowGroup == rg {
				f.Spans[n-1].Rows++
			} else {
				f.Spans = append(f.Spans, fileSpan{spanID, groupRows{RowGroup: rg, Rows: 1, First: uint32(i)}})
			}
		}
		// in lakeSchema's column order
		rgw := pw.AppendRowGroup()
		if err := writeColumn[parquet.ByteArray, *pqfile.ByteArrayColumnChunkWriter](rgw, urls, nil); err != nil {
			return f, nil, err
		}
		if err := writeColumn[parquet.ByteArray, *pqfile.ByteArrayColumnChunkWriter](rgw, raws, rawDefs); err != nil {
			return f, nil, err
		}
		if err := writeColumn[int64, *pqfile.Int64ColumnChunkWriter](rgw, tss, tsDefs); err != nil {
			return f, nil, err
		}
		if err := writeColumn[int32, *pqfile.Int32ColumnChunkWriter](rgw, offsets, offsetDefs); err != nil {
			return f, nil, err
		}
		if err := writeColumn[int32, *pqfile.Int32ColumnChunkWriter](rgw, lengths, offsetDefs); err != nil {
			return f, nil, err
		}
		if err := writeColumn[parquet.ByteArray, *pqfile.ByteArrayColumnChunkWriter](rgw, domains, domainDefs); err != nil {
			return f, nil, err
		}
		if err := writeColumn[int64, *pqfile.Int64ColumnChunkWriter](rgw, secs, secDefs); err != nil {
			return f, nil, err
		}
		if err := fw.write(rgw); err != nil {
			return f, nil, err
		}
		if err := rgw.Close(); err != nil {
			return f, nil, err
		}
		f.RowGroups++
	}
	if err := pw.Close(); err != nil {
		return f, nil, err
	}
	if len(w.cols) > 0 {
		md, err := pw.FileMetadata()
		if err != nil {
			return f, nil, err
		}
		f.FieldBytes = map[string]int64{}
		for g := range md.NumRowGroups() {
			rg := md.RowGroup(g)
			for c := range rg.NumColumns() {
				cc, err := rg.ColumnChunk(c)
				if err != nil {
					return f, nil, err
				}
				if name := cc.PathInSchema().String(); catalog.ColumnIndex(w.cols, name) >= 0 {
					f.FieldBytes[name] += cc.TotalCompressedSize()
				}
			}
		}
	}
	f.Data = out.Bytes()
	f.Rows, f.Bytes = int64(len(rows)), int64(out.Len())
	return f, ids, nil
}

// LakeDomainSQL is the registered domain of a lake row in DuckDB SQL, over
// the file's columns (L4): the stored domain where there is one (every row
// of files written before domain_offset), else the domain_length bytes of
// url from domain_offset. (substring counts characters: domainOffset
// records only offsets after ASCII, and ASCII domains.)
const LakeDomainSQL = "coalesce(domain, substring(url, domain_offset + 1, domain_length))"

// LakeRawSQL is the raw URL of a lake row as ingested, where it differs
// from url, in DuckDB SQL over the file's columns: raw_edit applied to url
// by the lake_raw() function (L5, layout 4), or raw as older files store
// it; NULL where the raw URL is url. It names both columns, so it binds
// over files read with union_by_name beside one that has both (the urls
// view's empty lake file); over layout-4 files alone, read
// lake_raw(url, raw_edit). The CASE keeps rows without an edit (most)
// from lake_raw, which costs a call into Go per row it sees: a scan of
// 10M URLs (1.8M edits) took 3.0 s with them, 1.85 s without.
const LakeRawSQL = "coalesce(raw, CASE WHEN raw_edit IS NOT NULL THEN lake_raw(url, raw_edit) END)"

// LakeTSSQL is the timestamp of a lake row in DuckDB SQL (L6): ts, or
// ts_seconds as a TIMESTAMP. Like LakeRawSQL it names a column older
// layouts lack, for the urls view's union with its empty lake file.
const LakeTSSQL = "coalesce(ts, make_timestamp(ts_seconds * 1000000))"

// domainOffset is where domain (the registered domain of url's host) ends
// the host in url: the host follows "//" and any userinfo, and ends at the
// first '/', '?' or '#', or at the ':' of a port. Anything else — a URL
// without an authority, a domain that is not the host's last labels,
// non-ASCII — is not an offset, and the row stores its domain.
func domainOffset(url, domain string) (int32, bool) {
	at := strings.Index(url, "//")
	if at < 0 || domain == "" {
		return 0, false
	}
	at += 2
	end := len(url)
	for i := at; i < len(url); i++ { // strings.IndexAny(url[at:], "/?#"), without building its set per row
		if c := url[i]; c == '/' || c == '?' || c == '#' {
			end = i
			break
		}
	}
	if i := strings.LastIndexByte(url[at:end], '@'); i >= 0 {
		at += i + 1
	}
	// a port's ':' comes after any IPv6 literal's ']'
	if i := strings.LastIndexByte(url[at:end], ':'); i >= 0 && i > strings.LastIndexByte(url[at:end], ']') {
		end = at + i
	}
	off := end - len(domain)
	if off < at || end > 1<<31-1 || url[off:end] != domain || (off > at && url[off-1] != '.') {
		return 0, false
	}
	for i := 0; i < end; i++ {
		if url[i] >= 0x80 {
			return 0, false
		}
	}
	return int32(off), true
}

// batchWriter is a typed column chunk writer of arrow-go (values of T).
type batchWriter[T any] interface {
	pqfile.ColumnChunkWriter
	WriteBatch(values []T, defLevels, repLevels []int16) (int64, error)
}

// writeColumn writes the row group's next column, a column of writer type
// W: the (dense) values and, for an optional column, a definition level
// per row.
func writeColumn[T any, W batchWriter[T]](rgw pqfile.SerialRowGroupWriter, vals []T, defs []int16) error {
	cw, err := rgw.NextColumn()
	if err != nil {
		return err
	}
	w, ok := cw.(W)
	if !ok {
		var want W
		return fmt.Errorf("column writer is %T, want %T", cw, want)
	}
	if _, err := w.WriteBatch(vals, defs, nil); err != nil {
		return err
	}
	return cw.Close()
}

// collisions finds url_ids shared by different URLs of the batch (design
// §1.2 collision guard): a merge of the per-file sorted ids, then, for the
// rare id seen twice, a second look at the staged rows (of the buckets
// named by prefixes) for its URLs.
func (w *lakeWriter) collisions(ids [][]uint64, prefixes []string) ([]collision, error) {
	var all []uint64
	for _, s := range ids {
		all = append(all, s...)
	}
	slices.Sort(all)
	dup := map[uint64]bool{}
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			dup[all[i]] = true
		}
	}
	if len(dup) == 0 {
		return nil, nil
	}
	urls := map[uint64][]string{}
	for _, p := range prefixes {
		staged, err := readBuckets(w.cols, w.buckets[p])
		if err != nil {
			return nil, err
		}
		staged.dedupe()
		for i := range staged.rows {
			if id := urlIDOf(staged.rawKey(i)); dup[id] {
				urls[id] = append(urls[id], strings.Clone(staged.url(i)))
			}
		}
	}
	var out []collision
	for id, us := range urls {
		slices.Sort(us)
		us = slices.Compact(us)
		if len(us) > 1 {
			out = append(out, collision{URLID: id, A: us[0], B: us[len(us)-1]})
		}
	}
	slices.SortFunc(out, func(a, b collision) int { return cmp.Compare(a.URLID, b.URLID) })
	return out, nil
}

func (w *lakeWriter) close() {
	for _, b := range w.buckets {
		if b.f != nil {
			b.f.Close()
			os.Remove(b.f.Name())
		}
	}
	w.buckets = nil
}
