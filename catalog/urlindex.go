package catalog

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	pqfile "github.com/apache/arrow-go/v18/parquet/file"
	"github.com/zeebo/xxh3"

	"github.com/dhsi/dhsi/index/domaindict"
	"github.com/dhsi/dhsi/index/files"
	"github.com/dhsi/dhsi/index/postings"
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
// queries (openat, fstat, mmap and a footer parse: a third of a page).
const maxOpenReaders = 4096

// OpenURLIndex loads the current version (an empty index is fine).
func OpenURLIndex(ctx context.Context, st store.Store, cacheBytes int64, log *slog.Logger) (*URLIndex, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	x := &URLIndex{st: st, log: log, cache: newBlockCache(cacheBytes), readers: newReaderCache(maxOpenReaders)}
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

// DomainDatasets answers Q1: the datasets that contain domain, with exact
// URL counts, by dataset id.
func (s *Snapshot) DomainDatasets(domain string) ([]DatasetCount, error) {
	if s.empty || len(s.shards) == 0 {
		return nil, nil
	}
	k := DomainKey(domain)
	r := s.shards[postings.ShardOf(k, uint32(len(s.shards)))]
	es, err := r.DatasetsOf(k)
	if err != nil {
		return nil, err
	}
	out := make([]DatasetCount, 0, len(es))
	for _, e := range es {
		name := ""
		if ds, ok := s.Datasets.ByID(e.DatasetID); ok {
			name = ds.Name
		}
		out = append(out, DatasetCount{DatasetID: e.DatasetID, Dataset: name, URLCount: e.URLCount})
	}
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

// DomainURLs answers Q2: the URLs of domain in dataset, in (url) order, from
// offset, at most limit; total is the exact count.
func (s *Snapshot) DomainURLs(ctx context.Context, domain string, datasetID uint32, offset, limit int64) (rows []URLRow, total uint64, err error) {
	if limit < 0 || offset < 0 {
		return nil, 0, fmt.Errorf("offset and limit must not be negative")
	}
	if limit > MaxPageSize {
		return nil, 0, fmt.Errorf("limit %d is above the page-size cap of %d", limit, MaxPageSize)
	}
	if s.empty || len(s.shards) == 0 {
		return nil, 0, nil
	}
	k := DomainKey(domain)
	r := s.shards[postings.ShardOf(k, uint32(len(s.shards)))]
	e, ok, err := r.Lookup(k, datasetID)
	if err != nil || !ok {
		return nil, 0, err
	}
	spans, err := r.Payload(e)
	if err != nil {
		return nil, 0, err
	}
	window, skip := spans.Window(uint64(offset), uint64(limit))
	for _, sp := range window {
		if int64(len(rows)) >= limit {
			break
		}
		f, ok := s.files[sp.FileID]
		if !ok {
			return nil, 0, fmt.Errorf("postings name file %d, which files.tsv lacks", sp.FileID)
		}
		got, err := s.x.readRowGroup(ctx, f.Path, int(sp.RowGroup), domain)
		if err != nil {
			return nil, 0, fmt.Errorf("%s row group %d: %w", f.Path, sp.RowGroup, err)
		}
		if uint64(len(got)) != uint64(sp.Rows) {
			return nil, 0, fmt.Errorf("%s row group %d holds %d rows of %s, the postings say %d", f.Path, sp.RowGroup, len(got), domain, sp.Rows)
		}
		if skip > 0 {
			got = got[skip:]
			skip = 0
		}
		if room := limit - int64(len(rows)); int64(len(got)) > room {
			got = got[:room]
		}
		rows = append(rows, got...)
	}
	return rows, e.URLCount, nil
}

// readRowGroup reads the rows of one domain from one row group of a lake
// file: a local file read in place, or byte ranges from the store. Open
// readers (a parsed footer each) are kept in a bounded cache: parsing the
// footer again on every page was most of a first page's cost.
func (x *URLIndex) readRowGroup(ctx context.Context, key string, rg int, domain string) ([]URLRow, error) {
	fr, err := x.readers.get(key, func() (*pqfile.Reader, error) {
		if x.local != nil {
			p, err := x.local(key)
			if err != nil {
				return nil, err
			}
			return pqfile.OpenParquetFile(p, true) // mapped: the fd is closed at once
		}
		a, err := x.st.Head(ctx, key)
		if err != nil {
			return nil, err
		}
		// the reader outlives this query: its ranged reads must not inherit
		// the query's context
		src := &rangeReader{ctx: context.Background(), st: x.st, key: key, size: a.Size, etag: a.ETag, cache: x.cache}
		return pqfile.NewParquetReader(src)
	})
	if err != nil {
		return nil, err
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return readDomainRows(fr.r, rg, domain)
}

// readerCache is a bounded LRU of open Parquet readers. Lake files are
// immutable (M1), so a reader never goes stale.
type readerCache struct {
	mu    sync.Mutex
	limit int // INVARIANT: len(items) <= limit after every insert
	lru   *list.List
	items map[string]*list.Element
}

type cachedReader struct {
	key string
	mu  sync.Mutex // one query at a time per reader: its source may seek
	r   *pqfile.Reader
}

func newReaderCache(limit int) *readerCache {
	return &readerCache{limit: limit, lru: list.New(), items: map[string]*list.Element{}}
}

func (c *readerCache) get(key string, open func() (*pqfile.Reader, error)) (*cachedReader, error) {
	c.mu.Lock()
	if e, ok := c.items[key]; ok {
		c.lru.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*cachedReader), nil
	}
	c.mu.Unlock()
	r, err := open()
	if err != nil {
		return nil, err
	}
	cr := &cachedReader{key: key, r: r}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok { // opened concurrently: keep the first
		r.Close()
		return e.Value.(*cachedReader), nil
	}
	c.items[key] = c.lru.PushFront(cr)
	for c.lru.Len() > c.limit {
		e := c.lru.Back()
		old := e.Value.(*cachedReader)
		c.lru.Remove(e)
		delete(c.items, old.key)
		go func() { // close once no query holds it
			old.mu.Lock()
			old.r.Close()
			old.mu.Unlock()
		}()
	}
	return cr, nil
}

// readDomainRows decodes columns domain, url_id, url, raw, ts of one row
// group and keeps the rows of domain (contiguous: files are sorted by domain).
func readDomainRows(r *pqfile.Reader, rg int, domain string) ([]URLRow, error) {
	if rg < 0 || rg >= r.NumRowGroups() {
		return nil, fmt.Errorf("row group %d out of range (file has %d)", rg, r.NumRowGroups())
	}
	schema := r.MetaData().Schema
	col := func(name string) int { return schema.ColumnIndexByName(name) }
	g := r.RowGroup(rg)
	n := g.NumRows()
	domains, _, err := readStrings(g, col("domain"), n)
	if err != nil {
		return nil, fmt.Errorf("domain column: %w", err)
	}
	var match []int
	for i, d := range domains {
		if d == domain {
			match = append(match, i)
		}
	}
	if len(match) == 0 {
		return nil, nil
	}
	urls, _, err := readStrings(g, col("url"), n)
	if err != nil {
		return nil, fmt.Errorf("url column: %w", err)
	}
	raws, rawValid, err := readStrings(g, col("raw"), n)
	if err != nil {
		return nil, fmt.Errorf("raw column: %w", err)
	}
	// url_id is derived (docs/format/lake.md); files that stored it are read
	// as written
	var ids []int64
	if c := col("url_id"); c >= 0 {
		if ids, _, err = readInt64s(g, c, n); err != nil {
			return nil, fmt.Errorf("url_id column: %w", err)
		}
	}
	tss, tsValid, err := readInt64s(g, col("ts"), n)
	if err != nil {
		return nil, fmt.Errorf("ts column: %w", err)
	}
	out := make([]URLRow, 0, len(match))
	for _, i := range match {
		row := URLRow{URL: urls[i]}
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
		if tsValid[i] {
			row.TS, row.HasTS = time.UnixMicro(tss[i]).UTC(), true
		}
		out = append(out, row)
	}
	return out, nil
}

func readStrings(g *pqfile.RowGroupReader, c int, n int64) ([]string, []bool, error) {
	if c < 0 {
		return make([]string, n), make([]bool, n), nil
	}
	cr, err := g.Column(c)
	if err != nil {
		return nil, nil, err
	}
	br, ok := cr.(*pqfile.ByteArrayColumnChunkReader)
	if !ok {
		return nil, nil, fmt.Errorf("column %d is %T, want byte arrays", c, cr)
	}
	vals := make([]parquet.ByteArray, n)
	defs := make([]int16, n)
	total, nv, err := br.ReadBatch(n, vals, defs, nil)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	out := make([]string, total)
	valid := make([]bool, total)
	maxDef := br.Descriptor().MaxDefinitionLevel()
	vi := 0
	for i := int64(0); i < total; i++ {
		if maxDef == 0 || defs[i] == maxDef {
			if vi < nv {
				out[i] = string(vals[vi])
				valid[i] = true
				vi++
			}
		}
	}
	return out, valid, nil
}

func readInt64s(g *pqfile.RowGroupReader, c int, n int64) ([]int64, []bool, error) {
	if c < 0 {
		return make([]int64, n), make([]bool, n), nil
	}
	cr, err := g.Column(c)
	if err != nil {
		return nil, nil, err
	}
	ir, ok := cr.(*pqfile.Int64ColumnChunkReader)
	if !ok {
		return nil, nil, fmt.Errorf("column %d is %T, want int64", c, cr)
	}
	vals := make([]int64, n)
	defs := make([]int16, n)
	total, nv, err := ir.ReadBatch(n, vals, defs, nil)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	out := make([]int64, total)
	valid := make([]bool, total)
	maxDef := ir.Descriptor().MaxDefinitionLevel()
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
	return out, valid, nil
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
