package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet"
	pqfile "github.com/apache/arrow-go/v18/parquet/file"
	"github.com/zeebo/xxh3"

	"github.com/dhsi/dhsi/index/domaindict"
	"github.com/dhsi/dhsi/index/files"
	"github.com/dhsi/dhsi/index/postings"
	"github.com/dhsi/dhsi/internal/lru"
	"github.com/dhsi/dhsi/store"
)

// MaxPageSize caps domain_urls' limit: a page is read from at most a few
// row groups, and a larger cap would let one query pin a lot of memory.
const MaxPageSize = 10000

// URLIndex serves the domain → datasets → URLs index (issue 4) from the
// store. It holds the current version as one atomic pointer to an immutable
// Snapshot; each query pins a Snapshot for its whole life (M4), so a
// manifest flip mid-query is seen by the next query only.
type URLIndex struct {
	st  store.Store
	log *slog.Logger
	// local reports the store's local file for a key (the local-directory
	// store), so Parquet is read in place; nil for S3, where byte ranges
	// are fetched through a bounded block cache.
	local   func(key string) (string, error)
	cache   *blockCache
	readers *readerCache
	rows    *rowCache
	answers *datasetsCache // domain_datasets answers (answercache.go)

	mu  sync.Mutex // serialises Refresh
	cur atomic.Pointer[Snapshot]
}

// LocalPather is implemented by stores whose objects are local files.
type LocalPather interface {
	LocalPath(key string) (string, error)
}

// maxOpenReaders bounds the cache of open lake files (a parsed footer and,
// for local files, a memory map each: no file descriptor is held). A first
// page reads one or two files; at 10M URLs in 64 datasets the lake has 16k
// files, and with 256 readers random traffic reopened a file on most
// queries (openat, fstat, mmap and a footer parse: a third of a page); at
// 4096, 7% of the server's CPU still went to reopening. A reader of a lake
// file (4 columns, one row group) holds a few KB of parsed footer.
const maxOpenReaders = 16384

// DefaultRowCacheBytes is the memory for decoded URL rows of hot domains
// (URLIndexOptions.RowCacheBytes). A first page that misses decompresses
// and decodes a page of each column (~0.8 ms); a hit is a lookup. On the
// benchmark's Zipf queries (10M URLs), 16 clients did 2,257 first pages/s
// with 128 MiB, 5,830 with 512 and 8,394 with 1 GiB; PostgreSQL, for
// comparison, keeps its 2.3 GB table in the OS page cache.
const DefaultRowCacheBytes = 512 << 20

// URLIndexOptions configure OpenURLIndexWith.
type URLIndexOptions struct {
	// BlockCacheBytes bounds the byte ranges of remote Parquet files kept
	// in memory (S3 stores; 0: none, DefaultBlockCacheBytes is the
	// server's default).
	BlockCacheBytes int64
	// RowCacheBytes bounds what is kept of hot domains (0: nothing): their
	// decoded rows, and in a sixteenth of it their domain_datasets answers
	// (datasetsCacheShare).
	RowCacheBytes int64
	Log           *slog.Logger
}

// OpenURLIndex loads the current version (an empty index is fine), with a
// block cache of cacheBytes and the default row cache.
func OpenURLIndex(ctx context.Context, st store.Store, cacheBytes int64, log *slog.Logger) (*URLIndex, error) {
	return OpenURLIndexWith(ctx, st, URLIndexOptions{BlockCacheBytes: cacheBytes, RowCacheBytes: DefaultRowCacheBytes, Log: log})
}

// OpenURLIndexWith loads the current version (an empty index is fine).
func OpenURLIndexWith(ctx context.Context, st store.Store, o URLIndexOptions) (*URLIndex, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	answerBytes := o.RowCacheBytes / datasetsCacheShare
	x := &URLIndex{st: st, log: log, cache: newBlockCache(o.BlockCacheBytes), readers: newReaderCache(maxOpenReaders),
		rows: newRowCache(o.RowCacheBytes - answerBytes), answers: newDatasetsCache(answerBytes)}
	if lp, ok := st.(LocalPather); ok {
		x.local = lp.LocalPath
	}
	if _, err := x.Refresh(ctx); err != nil {
		return nil, err
	}
	return x, nil
}

// Snapshot is one immutable index version, opened.
type Snapshot struct {
	Version  Version
	Datasets *Datasets
	empty    bool
	dict     *domaindict.Dict
	shards   []*postings.Reader
	files    map[uint32]files.File
	reverse  reverseIndex // each dataset's domains (reverse.go)
	x        *URLIndex
}

// Current returns the pinned current snapshot. It stays valid however the
// manifest moves; Go's garbage collector frees it after its last user.
func (x *URLIndex) Current() *Snapshot { return x.cur.Load() }

// Refresh loads the manifest's current version if it changed. It reports
// whether the snapshot changed.
func (x *URLIndex) Refresh(ctx context.Context) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m, err := ReadManifest(ctx, x.st)
	if err != nil {
		return false, err
	}
	v, ok := m.Current()
	if cur := x.cur.Load(); cur != nil && (cur.Version.Version == v.Version) {
		return false, nil
	}
	if !ok {
		x.cur.Store(&Snapshot{empty: true, Datasets: NewDatasets(), x: x})
		return true, nil
	}
	s, err := x.open(ctx, v)
	if err != nil {
		return false, fmt.Errorf("open index version %s: %w", v.Version, err)
	}
	x.cur.Store(s)
	x.log.Info("serving index version", "version", v.Version, "domains", v.Domains, "urls", v.URLs)
	return true, nil
}

func (x *URLIndex) open(ctx context.Context, v Version) (*Snapshot, error) {
	s := &Snapshot{Version: v, files: map[uint32]files.File{}, x: x}
	body, _, err := store.ReadAll(ctx, x.st, v.DatasetsJSON)
	if err != nil {
		return nil, err
	}
	if s.Datasets, err = ParseDatasets(body); err != nil {
		return nil, err
	}
	body, _, err = store.ReadAll(ctx, x.st, v.FilesTSV)
	if err != nil {
		return nil, err
	}
	reg, err := files.Read(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, f := range reg.All() {
		s.files[f.ID] = f
	}
	body, _, err = store.ReadAll(ctx, x.st, v.DomainsDict)
	if err != nil {
		return nil, err
	}
	if s.dict, err = domaindict.OpenWith(bytes.NewReader(body), int64(len(body)), domaindict.Options{LoadStrings: true, ExpectListHash: v.DomainListHash}); err != nil {
		return nil, err
	}
	for _, p := range v.Postings {
		idx, _, err := store.ReadAll(ctx, x.st, p.Idx)
		if err != nil {
			return nil, err
		}
		dat, _, err := store.ReadAll(ctx, x.st, p.Dat)
		if err != nil {
			return nil, err
		}
		r, err := postings.OpenWith(bytes.NewReader(idx), int64(len(idx)), bytes.NewReader(dat), int64(len(dat)), postings.Options{LoadIndex: true})
		if err != nil {
			return nil, fmt.Errorf("postings shard %d: %w", p.Shard, err)
		}
		s.shards = append(s.shards, r)
	}
	if err := s.openReverse(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// DomainKey is the stable 64-bit key of a domain in the postings (its
// xxh3). Unlike the dense domain_id it does not change when domains are
// added, so unchanged postings shards are reused by reference across
// versions. Ingest writes and the server reads with this one function.
func DomainKey(domain string) uint64 { return xxh3.HashString(domain) }

// DatasetCount is one row of domain_datasets.
type DatasetCount struct {
	DatasetID uint32
	Dataset   string
	URLCount  uint64
}

// DomainID returns the version's dense id of a domain.
func (s *Snapshot) DomainID(domain string) (uint64, bool, error) {
	if s.empty {
		return 0, false, nil
	}
	return s.dict.Lookup(domain)
}

// holds reports whether the version's dictionary holds domain. The
// postings key a domain by its 64-bit hash, which two domains can be made
// to share: a domain the index lacks must not be answered with the rows
// of one it holds under the same key (ingest refuses to publish two that
// share one, buildShard). The dictionary compares the string (D4).
func (s *Snapshot) holds(domain string) (bool, error) {
	_, ok, err := s.dict.Lookup(domain)
	return ok, err
}

// DomainDatasets answers Q1: the datasets that contain domain, with exact
// URL counts, by dataset id.
func (s *Snapshot) DomainDatasets(domain string) ([]DatasetCount, error) {
	if s.empty || len(s.shards) == 0 {
		return nil, nil
	}
	k := DomainKey(domain)
	r := s.shards[postings.ShardOf(k, uint32(len(s.shards)))]
	es, err := r.DatasetCountsOf(k)
	if err != nil {
		return nil, err
	}
	if len(es) > 0 {
		if held, err := s.holds(domain); err != nil || !held {
			return nil, err
		}
	}
	out := make([]DatasetCount, 0, len(es))
	for _, e := range es {
		name, _ := s.Datasets.NameOf(e.DatasetID)
		out = append(out, DatasetCount{DatasetID: e.DatasetID, Dataset: name, URLCount: e.URLCount})
	}
	return out, nil
}

// DomainDatasetsCached is DomainDatasets through the answer cache
// (answercache.go), shared only within scope: the principal who asks
// (C2). The slice may be shared with that scope's other callers (C1):
// read it, never modify it.
func (s *Snapshot) DomainDatasetsCached(domain, scope string) ([]DatasetCount, error) {
	if s.empty || len(s.shards) == 0 {
		return nil, nil
	}
	var answers *datasetsCache
	if s.x != nil {
		answers = s.x.answers
	}
	key := datasetsKey{version: s.Version.Version, scope: scope, domain: domain}
	if got, ok := answers.Get(key); ok {
		return got, nil
	}
	out, err := s.DomainDatasets(domain)
	if err != nil {
		return nil, err
	}
	// the key's strings cloned: a domain cut from a normalized URL
	// argument would keep that whole URL alive, unpriced (answerCost)
	key.scope, key.domain = strings.Clone(scope), strings.Clone(domain)
	out, _ = answers.Put(key, out)
	return out, nil
}

// URLRow is one row of domain_urls.
type URLRow struct {
	URLID uint64
	URL   string
	Raw   string // the URL as ingested, when it differs from URL
	TS    time.Time
	HasTS bool
}

// FieldRow is one row of domain_url_fields: a URL row and its kept
// fields. (Not a field of URLRow: the row cache holds URLRows, and a
// slice more per row would cost every cached row 24 bytes.)
type FieldRow struct {
	URLRow
	// Fields are the dataset's kept columns (Dataset.Columns), by
	// position: int32, int64, float64, bool, time.Time, string or nil for
	// NULL.
	Fields []any
}

// DomainURLs answers Q2: the URLs of domain in dataset, in a stable order
// (by URL within each ingest's files, ingests in publishing order: P3), from
// offset, at most limit; total is the exact count.
func (s *Snapshot) DomainURLs(ctx context.Context, domain string, datasetID uint32, offset, limit int64) (rows []URLRow, total uint64, err error) {
	rows, _, total, err = s.domainURLs(ctx, domain, datasetID, offset, limit, nil)
	return rows, total, err
}

// DomainURLFields is DomainURLs with each row's kept fields (URLRow.Fields,
// by the position of cols, the dataset's Columns). It reads their columns
// only here: domain_urls never decodes them, and its row cache holds
// none (a page with fields is decoded from the file each time).
func (s *Snapshot) DomainURLFields(ctx context.Context, domain string, datasetID uint32, offset, limit int64) (out []FieldRow, total uint64, cols []Column, err error) {
	ds, _ := s.Datasets.ByID(datasetID)
	cols = ds.Columns
	if cols == nil {
		cols = []Column{} // not nil: read the fields (there are none)
	}
	rows, fields, total, err := s.domainURLs(ctx, domain, datasetID, offset, limit, cols)
	if err != nil {
		return nil, 0, nil, err
	}
	out = make([]FieldRow, len(rows))
	for i := range rows {
		out[i].URLRow = rows[i]
		if i < len(fields) {
			out[i].Fields = fields[i]
		}
	}
	return out, total, ds.Columns, nil
}

// domainURLs is DomainURLs, and with cols (not nil) each row's fields.
func (s *Snapshot) domainURLs(ctx context.Context, domain string, datasetID uint32, offset, limit int64, cols []Column) (rows []URLRow, fields [][]any, total uint64, err error) {
	if limit < 0 || offset < 0 {
		return nil, nil, 0, fmt.Errorf("offset and limit must not be negative")
	}
	if limit > MaxPageSize {
		return nil, nil, 0, fmt.Errorf("limit %d is above the page-size cap of %d", limit, MaxPageSize)
	}
	e, spans, ok, err := s.entry(domain, datasetID, true)
	if err != nil || !ok {
		return nil, nil, 0, err
	}
	window, skip := spans.Window(uint64(offset), uint64(limit))
	for _, sp := range window {
		room := limit - int64(len(rows))
		if room <= 0 {
			break
		}
		f, ok := s.files[sp.FileID]
		if !ok {
			return nil, nil, 0, fmt.Errorf("postings name file %d, which files.tsv lacks", sp.FileID)
		}
		var got []URLRow
		var gotFields [][]any
		var n int64
		if cols != nil {
			got, gotFields, n, err = s.x.readRowGroupDirect(ctx, f.Path, sp, domain, int64(skip), room, cols)
			fields = append(fields, gotFields...)
		} else {
			got, n, err = s.x.readRowGroup(ctx, f.Path, sp, domain, int64(skip), room)
		}
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%s row group %d: %w", f.Path, sp.RowGroup, err)
		}
		if uint64(n) != uint64(sp.Rows) {
			return nil, nil, 0, fmt.Errorf("%s row group %d holds %d rows of %s, the postings say %d", f.Path, sp.RowGroup, n, domain, sp.Rows)
		}
		skip = 0
		if rows == nil {
			rows = got // most pages come from one span: no copy
		} else {
			rows = append(rows[:len(rows):len(rows)], got...) // never into a cached run
		}
	}
	return rows, fields, e.URLCount, nil
}

// entry looks up the postings entry of (domain, dataset) and, with
// payload, its spans; ok is false where there is none.
func (s *Snapshot) entry(domain string, datasetID uint32, payload bool) (e postings.Entry, spans postings.Spans, ok bool, err error) {
	if s.empty || len(s.shards) == 0 {
		return e, nil, false, nil
	}
	k := DomainKey(domain)
	r := s.shards[postings.ShardOf(k, uint32(len(s.shards)))]
	if e, ok, err = r.Lookup(k, datasetID); err != nil || !ok {
		return e, nil, ok, err
	}
	if ok, err = s.holds(domain); err != nil || !ok {
		return postings.Entry{}, nil, false, err
	}
	if !payload {
		return e, nil, true, nil
	}
	spans, err = r.Payload(e)
	return e, spans, err == nil, err
}

// LakeRun is one run of a domain's rows in the lake: the rows of one row
// group of one file that hold the domain (one postings span).
type LakeRun struct {
	file files.File
	span postings.Span
}

// DomainPrefix is the domain_prefix partition of the run's file, as the
// urls view reports it.
func (r LakeRun) DomainPrefix() string { return r.file.DomainPrefix }

// Rows is the number of rows in the run.
func (r LakeRun) Rows() int { return int(r.span.Rows) }

// Precedes reports whether every row of r sorts before every row of next
// by url, which holds for two runs of one domain in one file, r's row
// group first: a file's rows are sorted by (domain, url) (L1).
func (r LakeRun) Precedes(next LakeRun) bool {
	return r.file.Path == next.file.Path && r.span.RowGroup < next.span.RowGroup
}

// LakeRuns lists the runs that hold domain's rows of dataset, in
// DomainURLs' order: together, the rows of the urls view whose domain is
// domain and whose dataset_id is datasetID, found through the postings
// instead of by scanning the lake (issue 17 §4). ReadLakeRun reads one.
func (s *Snapshot) LakeRuns(domain string, datasetID uint32) ([]LakeRun, error) {
	_, spans, ok, err := s.entry(domain, datasetID, true)
	if err != nil || !ok {
		return nil, err
	}
	out := make([]LakeRun, 0, len(spans))
	for _, sp := range spans {
		f, ok := s.files[sp.FileID]
		if !ok {
			return nil, fmt.Errorf("postings name file %d, which files.tsv lacks", sp.FileID)
		}
		out = append(out, LakeRun{file: f, span: sp})
	}
	return out, nil
}

// ReadLakeRun reads the rows of one run of domain (from LakeRuns of this
// snapshot), and with cols (not nil) each row's values of those kept
// columns of the run's dataset (FieldRow.Fields), read outside the row
// cache. The caller must not modify the rows: they may be the row cache's.
func (s *Snapshot) ReadLakeRun(ctx context.Context, domain string, run LakeRun, cols []Column) ([]URLRow, [][]any, error) {
	var rows []URLRow
	var fields [][]any
	var n int64
	var err error
	if cols != nil {
		rows, fields, n, err = s.x.readRowGroupDirect(ctx, run.file.Path, run.span, domain, 0, -1, cols)
	} else {
		rows, n, err = s.x.readRowGroup(ctx, run.file.Path, run.span, domain, 0, -1)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s row group %d: %w", run.file.Path, run.span.RowGroup, err)
	}
	if uint64(n) != uint64(run.span.Rows) || int64(len(rows)) != n || cols != nil && len(fields) != len(rows) {
		return nil, nil, fmt.Errorf("%s row group %d holds %d rows of %s, the postings say %d", run.file.Path, run.span.RowGroup, n, domain, run.span.Rows)
	}
	return rows, fields, nil
}

// readRowGroup reads up to want rows, after skip, of one domain's rows in
// the row group of a lake file that span sp names (sp.Rows of them, from
// sp.First when the postings record it): a local file read in place, or
// byte ranges from the store. Open readers (a parsed
// footer each) are kept in a bounded cache: parsing the footer again on
// every page was most of a first page's cost. Runs of up to maxCachedRun
// rows are decoded whole and kept in the row cache; longer ones are decoded
// a page at a time.
func (x *URLIndex) readRowGroup(ctx context.Context, key string, sp postings.Span, domain string, skip, want int64) ([]URLRow, int64, error) {
	runRows := int64(sp.Rows)
	cacheable := x.rows.Limit() > 0 && runRows <= maxCachedRun
	if cacheable {
		k := runKey{key, int(sp.RowGroup), domain}
		run, ok := x.rows.Get(k)
		if !ok {
			var n int64
			var err error
			if run, _, n, err = x.readRowGroupDirect(ctx, key, sp, domain, 0, -1, nil); err != nil {
				return nil, 0, err
			}
			if n != int64(len(run)) {
				return nil, 0, fmt.Errorf("decoded %d of the domain's %d rows", len(run), n)
			}
			if n == runRows {
				x.rows.Put(k, run) // only a run that agrees with the postings
			}
		}
		n := int64(len(run))
		if skip >= n {
			return nil, n, nil
		}
		end := n
		if want >= 0 && skip+want < n {
			end = skip + want
		}
		return run[skip:end:end], n, nil
	}
	rows, _, n, err := x.readRowGroupDirect(ctx, key, sp, domain, skip, want, nil)
	return rows, n, err
}

func (x *URLIndex) readRowGroupDirect(ctx context.Context, key string, sp postings.Span, domain string, skip, want int64, cols []Column) ([]URLRow, [][]any, int64, error) {
	fr, err := x.reader(ctx, key)
	if err != nil {
		return nil, nil, 0, err
	}
	fr.mu.RLock()
	defer fr.mu.RUnlock()
	return readDomainRows(fr, sp, domain, skip, want, cols)
}

// reader is the open reader of lake file key, from the reader cache or
// opened now (checking its layout): the local file mapped, or byte ranges
// of the store's object through the block cache. The caller read-holds its
// mu while it reads.
func (x *URLIndex) reader(ctx context.Context, key string) (*cachedReader, error) {
	return x.readers.get(key, func() (r *pqfile.Reader, err error) {
		defer func() {
			if err == nil {
				if err = CheckLakeLayout(r); err != nil {
					r.Close()
				}
			}
		}()
		if x.local != nil {
			p, err := x.local(key)
			if err != nil {
				return nil, err
			}
			return pqfile.OpenParquetFile(p, true, pqfile.WithReadProps(lakeReadProps())) // mapped: the fd is closed at once
		}
		a, err := x.st.Head(ctx, key)
		if err != nil {
			return nil, err
		}
		// the reader outlives this query: its ranged reads must not inherit
		// the query's context
		src := &rangeReader{ctx: context.Background(), st: x.st, key: key, size: a.Size, etag: a.ETag, cache: x.cache}
		return pqfile.NewParquetReader(src, pqfile.WithReadProps(lakeReadProps()))
	})
}

// readerCache is a bounded LRU of open Parquet readers (its limit counts
// readers). Lake files are immutable (M1), so a reader never goes stale.
type readerCache struct {
	c *lru.Cache[string, *cachedReader]
}

type cachedReader struct {
	// mu is read-held by every query using r, write-held to close it after
	// eviction. Queries share r: a reader's sources (a mapped file, the
	// block cache's ReadAt) and arrow-go's row-group readers keep no
	// per-read state; only opening one seeks.
	mu sync.RWMutex
	r  *pqfile.Reader

	pagesMu sync.Mutex
	pages   map[int][]pageStart // row group → its domain column's pages
}

// pageStart is one data page of a row group's domain column, from the page
// index: its first row and the smallest domain on it (possibly truncated to
// a prefix, which only ever makes it smaller).
type pageStart struct {
	firstRow int64
	min      string
}

// domainPages returns the pages of the domain column (column c) of row
// group rg, read from the page index once per reader; nil when the file
// has no page index for it.
func (cr *cachedReader) domainPages(rg, c int) []pageStart {
	cr.pagesMu.Lock()
	defer cr.pagesMu.Unlock()
	if p, ok := cr.pages[rg]; ok {
		return p
	}
	if cr.pages == nil {
		cr.pages = map[int][]pageStart{}
	}
	var out []pageStart
	if rgi, err := cr.r.GetPageIndexReader().RowGroup(rg); err == nil && rgi != nil {
		ci, err1 := rgi.GetColumnIndex(c)
		oi, err2 := rgi.GetOffsetIndex(c)
		if err1 == nil && err2 == nil && ci != nil && oi != nil {
			mins, locs := ci.GetMinValues(), oi.GetPageLocations()
			if len(mins) == len(locs) {
				out = make([]pageStart, len(locs))
				for i, l := range locs {
					out[i] = pageStart{firstRow: l.FirstRowIndex, min: string(mins[i])}
				}
			}
		}
	}
	cr.pages[rg] = out
	return out
}

// runSearchStart is the first row of the page where domain's run can
// begin: the last page whose minimum is below domain (L1: pages are in
// domain order). Rows before it cannot hold domain, so the scan skips them.
func runSearchStart(pages []pageStart, domain string) int64 {
	i := sort.Search(len(pages), func(i int) bool { return pages[i].min >= domain })
	if i == 0 {
		return 0
	}
	return pages[i-1].firstRow
}

func newReaderCache(limit int) *readerCache {
	one := func(string, *cachedReader) int64 { return 1 }
	return &readerCache{lru.New(int64(limit), one, func(old *cachedReader) {
		go func() { // close once no query holds it
			old.mu.Lock()
			old.r.Close()
			old.mu.Unlock()
		}()
	})}
}

func (rc *readerCache) get(key string, open func() (*pqfile.Reader, error)) (*cachedReader, error) {
	if cr, ok := rc.c.Get(key); ok {
		return cr, nil
	}
	r, err := open()
	if err != nil {
		return nil, err
	}
	cr, loaded := rc.c.Put(key, &cachedReader{r: r})
	if loaded { // opened concurrently: keep the first
		r.Close()
	}
	return cr, nil
}

// readDomainRows returns up to want rows (want < 0: all) of domain's rows in
// span sp's row group, after skipping the first skip of them, and how many
// rows the domain has in the group (the caller checks it against the
// postings).
//
// Files are sorted by domain (L1), so the domain's rows are one run. Where
// the postings say where it starts (sp.HasFirst, version 3), its sp.Rows
// rows are taken from there; otherwise (lake files written before version
// 3, which store the domain per row) the domain column is scanned in
// chunks, comparing bytes without allocating, until the run ends. The other
// columns skip to the first wanted row and decode only the rows returned.
func readDomainRows(cr *cachedReader, sp postings.Span, domain string, skip, want int64, cols []Column) ([]URLRow, [][]any, int64, error) {
	r := cr.r
	rg := int(sp.RowGroup)
	if rg >= r.NumRowGroups() {
		return nil, nil, 0, fmt.Errorf("row group %d out of range (file has %d)", rg, r.NumRowGroups())
	}
	schema := r.MetaData().Schema
	col := func(name string) int { return schema.ColumnIndexByName(name) }
	g := r.RowGroup(rg)
	lo, n := int64(sp.First), int64(sp.Rows)
	if !sp.HasFirst { // version 2 postings
		domainCol := col("domain")
		var from int64
		if domainCol >= 0 {
			from = runSearchStart(cr.domainPages(rg, domainCol), domain)
		}
		var err error
		if lo, n, err = findDomainRun(g, domainCol, domain, from); err != nil {
			return nil, nil, 0, fmt.Errorf("domain column: %w", err)
		}
	} else if lo+n > g.NumRows() {
		return nil, nil, 0, fmt.Errorf("the postings place %d rows of %s from row %d, past the group's %d rows", n, domain, lo, g.NumRows())
	}
	if n == 0 || skip >= n || want == 0 {
		return nil, nil, n, nil
	}
	first, count := lo+skip, n-skip
	if want >= 0 && want < count {
		count = want
	}
	urls, _, err := readStrings(g, col("url"), first, count)
	if err != nil {
		return nil, nil, n, fmt.Errorf("url column: %w", err)
	}
	// raw URLs: edits of url (layout 4, L5), or stored whole (older files)
	rawCol, edited := col("raw_edit"), true
	if rawCol < 0 {
		rawCol, edited = col("raw"), false
	}
	raws, rawValid, err := readStrings(g, withValues(g, rawCol), first, count)
	if err != nil {
		return nil, nil, n, fmt.Errorf("raw column: %w", err)
	}
	if edited {
		if err := applyRawEdits(urls, raws, rawValid); err != nil {
			return nil, nil, n, fmt.Errorf("raw_edit column: %w", err)
		}
	}
	// url_id is derived (docs/format/lake.md); files that stored it are read
	// as written
	var ids []int64
	if c := col("url_id"); c >= 0 {
		if ids, _, err = readInt64s(g, c, first, count); err != nil {
			return nil, nil, n, fmt.Errorf("url_id column: %w", err)
		}
	}
	tss, tsValid, err := readInt64s(g, withValues(g, col("ts")), first, count)
	if err != nil {
		return nil, nil, n, fmt.Errorf("ts column: %w", err)
	}
	// whole seconds are in ts_seconds (layout 4, L6); older files have
	// no such column, and row groups without such timestamps are skipped
	// (secValid stays nil)
	var secs []int64
	var secValid []bool
	if c := withValues(g, col("ts_seconds")); c >= 0 {
		if secs, secValid, err = readInt64s(g, c, first, count); err != nil {
			return nil, nil, n, fmt.Errorf("ts_seconds column: %w", err)
		}
	}
	var fields [][]any
	if cols != nil {
		if fields, err = readFields(g, col, cols, first, count); err != nil {
			return nil, nil, n, err
		}
	}
	out := make([]URLRow, count)
	for i := range out {
		row := &out[i]
		row.URL = urls[i]
		if rawValid[i] {
			row.Raw = raws[i]
		}
		switch {
		case ids != nil:
			row.URLID = uint64(ids[i])
		case row.Raw != "":
			row.URLID = xxh3.HashString(row.Raw)
		default:
			row.URLID = xxh3.HashString(row.URL)
		}
		switch {
		case tsValid[i]:
			row.TS, row.HasTS = time.UnixMicro(tss[i]).UTC(), true
		case secValid != nil && secValid[i]:
			row.TS, row.HasTS = time.Unix(secs[i], 0).UTC(), true
		}
	}
	return out, fields, n, nil
}

// applyRawEdits replaces each valid edit in raws by the raw URL it
// rebuilds from its row's url. The raw URLs share one allocation, as
// readStrings' strings do.
func applyRawEdits(urls, raws []string, valid []bool) error {
	var buf []byte
	for i, ok := range valid {
		if !ok {
			continue
		}
		if buf == nil {
			size := 0
			for j := i; j < len(valid); j++ {
				if valid[j] {
					size += len(urls[j]) + len(raws[j])
				}
			}
			buf = make([]byte, 0, size)
		}
		// a copy may repeat url's bytes, so buf can still grow: earlier
		// strings then keep the old array, which nothing writes again
		at := len(buf)
		var err error
		if buf, err = AppendRaw(buf, urls[i], unsafe.Slice(unsafe.StringData(raws[i]), len(raws[i]))); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		raws[i] = unsafe.String(&buf[at], len(buf)-at) // an edit rebuilds at least one byte
	}
	return nil
}

// withValues is column c, or -1 (read as all null) where the column
// chunk's statistics say it holds no value in row group g: lake files
// record null counts for raw and ts, which most row groups lack, and
// opening a column costs a page read and a decompression.
func withValues(g *pqfile.RowGroupReader, c int) int {
	if c < 0 {
		return c
	}
	md, err := g.MetaData().ColumnChunk(c)
	if err != nil {
		return c
	}
	st, err := md.Statistics()
	if err != nil || st == nil || !st.HasNullCount() {
		return c // files without statistics: read it
	}
	if st.NullCount() == g.NumRows() {
		return -1
	}
	return c
}

// scanChunk is how many domain values are decoded at a time while looking
// for a domain's run.
const scanChunk = 1024

var byteArrayPool = sync.Pool{New: func() any { b := make([]parquet.ByteArray, scanChunk); return &b }}

// findDomainRun returns the first row of domain in the row group and the
// length of its run (0 if absent), scanning from row `from` (which must not
// be past the run's start) and reading no further than the run's end.
func findDomainRun(g *pqfile.RowGroupReader, c int, domain string, from int64) (first, n int64, err error) {
	if c < 0 {
		return 0, 0, fmt.Errorf("no domain column")
	}
	cr, err := g.Column(c)
	if err != nil {
		return 0, 0, err
	}
	defer cr.Close() // its pages go back to lakePageAllocator; buf points into them
	br, ok := cr.(*pqfile.ByteArrayColumnChunkReader)
	if !ok {
		return 0, 0, fmt.Errorf("column %d is %T, want byte arrays", c, cr)
	}
	if br.Descriptor().MaxDefinitionLevel() != 0 {
		// since postings version 3 the domain is stored only where the
		// URL cannot give it (docs/format/lake.md): not a column to scan
		return 0, 0, fmt.Errorf("this file does not store the domain of every row; its postings must say where the run starts")
	}
	bufp := byteArrayPool.Get().(*[]parquet.ByteArray)
	defer byteArrayPool.Put(bufp)
	buf := *bufp
	row := from
	if from > 0 {
		if err := br.SeekToRow(from); err != nil {
			return 0, 0, err
		}
	}
	first = -1
	for {
		// the domain is required: one value per row, no levels to read
		got, _, err := br.ReadBatch(scanChunk, buf, nil, nil)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
		for i := 0; i < int(got); i++ {
			if string(buf[i]) == domain {
				if first < 0 {
					first = row + int64(i)
				}
				n++
			} else if first >= 0 {
				return first, n, nil // the run ended (L1)
			}
		}
		row += got
		if got < scanChunk || errors.Is(err, io.EOF) {
			return max(first, 0), n, nil
		}
	}
}

// readStrings decodes rows [first, first+count) of a byte-array column.
//
// The strings share one allocation: a string per row made the garbage
// collector a fifth of a first page's cost. They are immutable like any
// string, so a cached run may hold them.
func readStrings(g *pqfile.RowGroupReader, c int, first, count int64) ([]string, []bool, error) {
	vals, valid, release, err := readColumn[parquet.ByteArray, *pqfile.ByteArrayColumnChunkReader](g, c, first, count)
	if err != nil {
		return nil, nil, err
	}
	defer release() // after the copy below: vals may point into the page
	size := 0
	for _, v := range vals {
		size += len(v)
	}
	buf := make([]byte, 0, size) // never grows: the strings below stay put
	out := make([]string, len(vals))
	for i, v := range vals {
		if len(v) > 0 {
			at := len(buf)
			buf = append(buf, v...)
			out[i] = unsafe.String(&buf[at], len(v))
		}
	}
	return out, valid, nil
}

// readInt64s decodes rows [first, first+count) of an INT64 column.
func readInt64s(g *pqfile.RowGroupReader, c int, first, count int64) ([]int64, []bool, error) {
	vals, valid, release, err := readColumn[int64, *pqfile.Int64ColumnChunkReader](g, c, first, count)
	if err == nil {
		release() // the values are copies
	}
	return vals, valid, err
}

// batchReader is a typed column chunk reader of arrow-go (values of T).
type batchReader[T any] interface {
	pqfile.ColumnChunkReader
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
}

// readColumn decodes rows [first, first+count) of column c, a column of
// reader type R: it seeks to first, reads count levels and values, and
// spreads the (dense) values over the rows whose definition
// level says they are present. An absent column (c < 0) reads as nulls; a
// column with fewer rows than asked for is an error.
//
// Unless it fails, the caller must call release once it no longer uses
// the values: it closes the column reader, whose page buffers go back to
// lakePageAllocator, and byte-array values may point into them.
func readColumn[T any, R batchReader[T]](g *pqfile.RowGroupReader, c int, first, count int64) (out []T, valid []bool, release func(), err error) {
	out, valid = make([]T, count), make([]bool, count)
	if c < 0 {
		return out, valid, func() {}, nil
	}
	cr, err := g.Column(c)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			cr.Close()
		}
	}()
	r, ok := cr.(R)
	if !ok {
		var want R
		return nil, nil, nil, fmt.Errorf("column %d is %T, want %T", c, cr, want)
	}
	if first > 0 {
		// jumps to the page holding the row through the offset index
		// (the page index every lake file carries), then skips within it
		if err := r.SeekToRow(first); err != nil {
			return nil, nil, nil, err
		}
	}
	vals := make([]T, count)
	defs := make([]int16, count)
	total, nv, err := r.ReadBatch(count, vals, defs, nil)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, nil, err
	}
	if total != count {
		return nil, nil, nil, fmt.Errorf("column %d ended after %d of %d rows", c, total, count)
	}
	maxDef := r.Descriptor().MaxDefinitionLevel()
	vi := 0
	for i := int64(0); i < total; i++ {
		if maxDef == 0 || defs[i] == maxDef {
			if vi < nv {
				out[i] = vals[vi]
				valid[i] = true
				vi++
			}
		}
	}
	return out, valid, func() { cr.Close() }, nil
}

// FilePaths lists the store keys of every Parquet file of the version.
func (s *Snapshot) FilePaths() []string {
	out := make([]string, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, f.Path)
	}
	sort.Strings(out)
	return out
}

// DatasetFilePaths is FilePaths restricted to the datasets keep accepts
// (nil keeps every file).
func (s *Snapshot) DatasetFilePaths(keep func(datasetID uint32) bool) []string {
	out := make([]string, 0, len(s.files))
	for _, f := range s.files {
		if keep == nil || keep(f.DatasetID) {
			out = append(out, f.Path)
		}
	}
	sort.Strings(out)
	return out
}

// CacheStats reports the URL index's caches: remote blocks (bytes), open
// lake readers (entries), decoded rows and domain_datasets answers
// (bytes).
func (x *URLIndex) CacheStats() []CacheStats {
	out := []CacheStats{x.cache.Stats("block"), x.rows.Stats("row"), x.answers.Stats("datasets")}
	if x.readers != nil {
		out = append(out, x.readers.c.Stats("reader"))
	} else {
		out = append(out, CacheStats{Name: "reader"})
	}
	return out
}

// CacheStats is what one cache did since the process started.
type CacheStats = lru.Stats
