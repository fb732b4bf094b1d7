package udf

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/internal/duckproj"
)

// urls_scan() returns every row of the urls view: the view's columns for
// every row of every lake file of the current version whose dataset the
// caller may see (A3: a hidden dataset's files are never opened, and
// yield no row and no error). On a store DuckDB cannot read (S3: no
// httpfs, and duckdb-go has no file-system hook) the urls view is this
// function (cmd/dhsi's updateURLsView); on a local store the view reads
// the files with read_parquet, which is faster, and this function answers
// the same rows (TestURLsViewOnS3).
//
// The files are read by byte range through the URL index's bounded block
// cache, a batch of at most urlsScanBatch consecutive rows of one row
// group at a time, decoding only the columns the query uses (DuckDB
// pushes the projection down: SELECT count(*) FROM urls decodes no column,
// and reads only footers). Memory per thread is one batch, whatever the
// size of the lake. Threads take whole files from one queue.

// URLsScanFunction is the function's name.
const URLsScanFunction = "urls_scan"

// urlsScanBatch is how many rows a thread decodes at once: the lake's row
// group (ingest.DefaultRowGroupRows), so a page is decompressed once.
const urlsScanBatch = 16384

func (f URLIndexFuncs) urlsScanFunction(t func(duckdb.Type) duckdb.TypeInfo) duckdb.ParallelChunkTableFunction {
	lakeCols := make([]duckdb.ColumnInfo, len(urlsViewColumns))
	for i, c := range urlsViewColumns {
		lakeCols[i] = duckdb.ColumnInfo{Name: c.name, T: t(c.typ)}
	}
	return duckdb.ParallelChunkTableFunction{
		BindArgumentsContext: func(ctx context.Context, named map[string]any, args ...any) (src duckdb.ParallelChunkTableSource, err error) {
			defer func() {
				if r := recover(); r != nil {
					src, err = nil, fmt.Errorf("urls_scan: internal error: %v\n%s", r, debug.Stack())
				}
			}()
			cols, extra := f.viewColumnInfos(lakeCols, t)
			// an estimate for DuckDB's planner (join sides): the visible
			// files' rows now; Init pins the snapshot the scan reads
			var rows int64
			snap := f.Snapshot()
			for _, lf := range snap.LakeFiles(f.VisibleDatasetIDs(ctx, snap)) {
				rows += lf.Rows()
			}
			return &urlsScanSource{f: f, cols: cols, extra: extra, principal: access.FromContext(ctx), rows: rows}, nil
		},
	}
}

// urlsScanSource is one bound urls_scan(); each execution (Init) pins the
// snapshot current then (M4) and queues its visible files.
type urlsScanSource struct {
	f         URLIndexFuncs
	cols      []duckdb.ColumnInfo
	extra     []ViewColumn
	principal access.Principal
	rows      int64 // Cardinality

	mu    sync.Mutex
	err   error // from Init, reported by FillChunk
	snap  *catalog.Snapshot
	files []scanFile // left to read
}

// scanFile is a lake file to read and how its dataset's kept columns map
// to the view's.
type scanFile struct {
	file      catalog.LakeFile
	datasetID int32
	prefix    string
	cols      []catalog.Column // the dataset's kept columns
}

func (s *urlsScanSource) ColumnInfos() []duckdb.ColumnInfo { return s.cols }
func (s *urlsScanSource) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: uint(max(s.rows, 0))}
}

func (s *urlsScanSource) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(access.WithPrincipal(context.Background(), s.principal), time.Minute)
}

func (s *urlsScanSource) Init() (info duckdb.ParallelTableSourceInfo) {
	// a panic here would end the process: Init has no error to return
	defer func() {
		if r := recover(); r != nil {
			s.err = fmt.Errorf("urls_scan: internal error: %v\n%s", r, debug.Stack())
			info = duckdb.ParallelTableSourceInfo{MaxThreads: 1}
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.files = nil, nil
	ctx, cancel := s.ctx()
	defer cancel()
	s.snap = s.f.Snapshot()
	for _, lf := range s.snap.LakeFiles(s.f.VisibleDatasetIDs(ctx, s.snap)) { // A3
		meta, _ := s.snap.Datasets.ByID(lf.DatasetID())
		s.files = append(s.files, scanFile{file: lf, datasetID: int32(lf.DatasetID()), prefix: lf.DomainPrefix(), cols: meta.Columns})
	}
	return duckdb.ParallelTableSourceInfo{MaxThreads: max(1, min(len(s.files), runtime.GOMAXPROCS(0)))}
}

func (s *urlsScanSource) NewLocalState() any { return &urlsScanLocal{} }

// next takes the next file off the queue (false: none left).
func (s *urlsScanSource) next() (scanFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.files) == 0 {
		return scanFile{}, false
	}
	f := s.files[0]
	s.files = s.files[1:]
	return f, true
}

// urlsScanLocal is one thread's place: a file, its row group, the next row
// to decode, and the decoded batch being emitted.
type urlsScanLocal struct {
	proj   []bool // proj[c]: the query uses column c (nil: not probed yet)
	want   catalog.LakeColumns
	file   scanFile
	fields []int // fields[x]: the position in want.Fields of extra column x, or -1
	open   bool  // file is being read
	groups []int64
	rg     int
	row    int64 // next row of group rg to decode
	batch  *catalog.LakeBatch
	pos    int // next row of batch to emit
}

func (s *urlsScanSource) FillChunk(local any, chunk duckdb.DataChunk) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("urls_scan: internal error: %v\n%s", r, debug.Stack())
		}
	}()
	s.mu.Lock()
	err = s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	l := local.(*urlsScanLocal)
	if l.proj == nil {
		if l.proj, err = s.projection(chunk); err != nil {
			return err
		}
		l.want = catalog.LakeColumns{Domain: l.proj[2], URL: l.proj[4], Raw: l.proj[5], URLID: l.proj[3], TS: l.proj[6]}
	}
	for l.batch == nil || l.pos >= l.batch.Rows {
		if err := s.nextBatch(l); err != nil {
			return err
		}
		if l.batch == nil {
			return chunk.SetSize(0)
		}
	}
	n := min(l.batch.Rows-l.pos, chunkRows)
	if err := s.emit(l, chunk, n); err != nil {
		return err
	}
	l.pos += n
	return chunk.SetSize(n)
}

// nextBatch decodes the next rows of l's file, or moves to the next file;
// l.batch is nil once every file is read.
func (s *urlsScanSource) nextBatch(l *urlsScanLocal) error {
	l.batch, l.pos = nil, 0
	ctx, cancel := s.ctx()
	defer cancel()
	for {
		if !l.open {
			f, ok := s.next()
			if !ok {
				return nil
			}
			groups, err := s.snap.LakeRowGroups(ctx, f.file)
			if err != nil {
				return err
			}
			l.file, l.groups, l.rg, l.row, l.open = f, groups, 0, 0, true
			// the kept columns this query reads, as this dataset types them
			l.want.Fields, l.fields = l.want.Fields[:0], l.fields[:0]
			for x, c := range s.extra {
				k := -1
				if l.proj[len(urlsViewColumns)+x] {
					if i := catalog.ColumnIndex(f.cols, c.Name); i >= 0 {
						k = len(l.want.Fields)
						l.want.Fields = append(l.want.Fields, f.cols[i])
					}
				}
				l.fields = append(l.fields, k)
			}
		}
		if l.rg >= len(l.groups) {
			l.open = false
			continue
		}
		if l.row >= l.groups[l.rg] {
			l.rg, l.row = l.rg+1, 0
			continue
		}
		count := min(l.groups[l.rg]-l.row, urlsScanBatch)
		b, err := s.snap.ReadLakeRows(ctx, l.file.file, l.rg, l.row, count, l.want)
		if err != nil {
			return err
		}
		l.row += count
		l.batch = b
		return nil
	}
}

// emit writes n rows of l's batch from l.pos into chunk, only the columns
// the query uses.
func (s *urlsScanSource) emit(l *urlsScanLocal, chunk duckdb.DataChunk, n int) error {
	b, at := l.batch, l.pos
	set := func(c, i int, v any) error {
		if err := chunk.SetValue(c, i, v); err != nil {
			return fmt.Errorf("urls_scan: column %s: %w", s.cols[c].Name, err)
		}
		return nil
	}
	for i := range n {
		r := at + i
		if l.proj[0] {
			if err := duckdb.SetChunkValue(chunk, 0, i, l.file.datasetID); err != nil {
				return err
			}
		}
		if l.proj[1] {
			if err := duckdb.SetChunkValue(chunk, 1, i, stringBytes(l.file.prefix)); err != nil {
				return err
			}
		}
		if l.proj[2] {
			if err := duckdb.SetChunkValue(chunk, 2, i, stringBytes(b.Domain[r])); err != nil {
				return err
			}
		}
		if l.proj[3] {
			if err := duckdb.SetChunkValue(chunk, 3, i, b.URLID[r]); err != nil {
				return err
			}
		}
		if l.proj[4] {
			if err := duckdb.SetChunkValue(chunk, 4, i, stringBytes(b.URL[r])); err != nil {
				return err
			}
		}
		if l.proj[5] {
			var err error
			if b.RawValid[r] {
				err = duckdb.SetChunkValue(chunk, 5, i, stringBytes(b.Raw[r]))
			} else {
				err = set(5, i, nil)
			}
			if err != nil {
				return err
			}
		}
		if l.proj[6] {
			var err error
			if b.TSValid[r] {
				err = duckdb.SetChunkValue(chunk, 6, i, b.TS[r])
			} else {
				err = set(6, i, nil)
			}
			if err != nil {
				return err
			}
		}
		for x, c := range s.extra {
			col := len(urlsViewColumns) + x
			if !l.proj[col] {
				continue
			}
			var v any
			if k := l.fields[x]; k >= 0 {
				v = viewValue(b.Fields[r][k], c.SQLType)
			}
			if err := set(col, i, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// projection finds which of the source's columns the query uses
// (duckproj.Probe): every column is written again before the chunk is sent.
func (s *urlsScanSource) projection(chunk duckdb.DataChunk) ([]bool, error) {
	proj := make([]bool, len(s.cols))
	for c := range s.cols {
		read, err := duckproj.Probe(chunk, c, s.cols[c].T.InternalType())
		if err != nil {
			return nil, fmt.Errorf("urls_scan: column %s: %w", s.cols[c].Name, err)
		}
		proj[c] = read
	}
	return proj, nil
}

// stringBytes is s's bytes, not copied: duckdb-go converts a string value
// to []byte (a copy, and garbage, per cell: 7% of a scan's CPU profile)
// before DuckDB copies it into the vector; DuckDB keeps no pointer to it.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
