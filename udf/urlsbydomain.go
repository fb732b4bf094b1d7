package udf

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/internal/duckproj"
)

// urls_by_domain(domain) returns exactly the rows of the urls view whose
// domain column equals domain (byte for byte: no normalization), with the
// view's columns, read through the postings instead of a scan of every
// lake file (issue 17 §4). The server rewrites
//
//	SELECT … FROM urls WHERE domain = $1 [AND …]
//
// into SELECT … FROM urls_by_domain($1) AS urls [WHERE …]
// (sqlserver.Config.PointLookups), so what a person writes against the
// view costs the domain's rows, not the lake's, and works on an S3 store,
// where DuckDB cannot scan the lake at all (no httpfs).
//
// The rows are the view's because both come from the same files: the view
// reads every file of the visible datasets; the postings name, for each
// (domain, dataset), every row group holding the domain's rows and how many
// (L3), and the catalog's reader decodes those rows with the view's own
// rules for domain, raw URL, url_id and ts (docs/format/lake.md). Datasets
// the caller may not see are skipped, as the view skips their files (A3).
// TestURLsByDomainAgreesWithTheView compares the two over every domain.

// URLsByDomainFunction is the function's name.
const URLsByDomainFunction = "urls_by_domain"

// URLsByDomainDatasetFunction, urls_by_domain_dataset(domain, dataset_id),
// is urls_by_domain narrowed to one dataset: the rows of urls WHERE domain
// = $1 AND dataset_id = $2, reading that dataset's postings only (a domain
// may be in every dataset). A dataset that does not exist or that the
// caller may not see has no row, as in the view.
const URLsByDomainDatasetFunction = "urls_by_domain_dataset"

// urlsViewColumns are the urls view's columns from the lake and their
// DuckDB types (cmd/dhsi's updateURLsView); its kept-field columns follow
// (URLIndexFuncs.URLsViewExtra).
var urlsViewColumns = []struct {
	name string
	typ  duckdb.Type
}{
	{"dataset_id", duckdb.TYPE_INTEGER},
	{"domain_prefix", duckdb.TYPE_VARCHAR},
	{"domain", duckdb.TYPE_VARCHAR},
	{"url_id", duckdb.TYPE_UBIGINT},
	{"url", duckdb.TYPE_VARCHAR},
	{"raw", duckdb.TYPE_VARCHAR},
	{"ts", duckdb.TYPE_TIMESTAMP},
}

// urlsByDomainFunction is urls_by_domain, or with narrow
// urls_by_domain_dataset.
func (f URLIndexFuncs) urlsByDomainFunction(t func(duckdb.Type) duckdb.TypeInfo, narrow bool) duckdb.ChunkTableFunction {
	args := []duckdb.TypeInfo{t(duckdb.TYPE_VARCHAR)}
	if narrow {
		// BIGINT, not the column's INTEGER: DuckDB widens an INTEGER
		// argument but never narrows, and a BIGINT $n (JDBC's setLong)
		// failed to bind (42883) where the scan compares it; past
		// INTEGER's range it finds no row, as the scan does
		args = append(args, t(duckdb.TYPE_BIGINT))
	}
	lakeCols := make([]duckdb.ColumnInfo, len(urlsViewColumns))
	for i, c := range urlsViewColumns {
		lakeCols[i] = duckdb.ColumnInfo{Name: c.name, T: t(c.typ)}
	}
	return duckdb.ChunkTableFunction{
		Config: duckdb.TableFunctionConfig{Arguments: args},
		BindArgumentsContext: func(ctx context.Context, named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
			cols, extra := f.viewColumnInfos(lakeCols, t)
			s := &urlsByDomainSource{f: f, cols: cols, extra: extra, principal: access.FromContext(ctx), dataset: -1}
			if d, ok := args[0].(string); ok {
				s.domain, s.hasDomain = d, true
			}
			if narrow {
				s.dataset = -2 // no dataset: a NULL
				if id, ok := narrowDataset(args[1]); ok {
					s.dataset = int64(id)
				}
			}
			return s, nil
		},
	}
}

// narrowDataset is urls_by_domain_dataset's dataset_id argument as a
// dataset id, on both paths (DuckDB's table function and the native one);
// false for NULL, or a value no dataset has (negative, or past INTEGER's
// range: the function takes a BIGINT), which match no row, as in the view.
func narrowDataset(arg any) (uint32, bool) {
	id, ok := arg.(int64)
	if !ok || id < 0 || id > math.MaxInt32 {
		return 0, false
	}
	return uint32(id), true
}

// urlsByDomainSource streams the rows one run at a time. Each execution
// (Init) pins the snapshot current then (M4).
type urlsByDomainSource struct {
	f         URLIndexFuncs
	cols      []duckdb.ColumnInfo
	extra     []ViewColumn     // the view's kept-field columns, after urlsViewColumns
	principal access.Principal // who bound the call (access A1)
	domain    string
	hasDomain bool  // false: a NULL argument, which no row's domain equals
	dataset   int64 // the one dataset (urls_by_domain_dataset); -1: every one; -2: none

	started bool
	snap    *catalog.Snapshot
	runs    []lakeRunOf // left to read
	rows    []catalog.URLRow
	fields  [][]any   // rows' kept fields, by the run's dataset's columns
	run     lakeRunOf // the run rows are from
	// read holds, per column, whether DuckDB reads it (duckproj.Probe), once
	// the first chunk with rows is asked for: writing a column DuckDB
	// does not read cost more than the rest of the function (duckdb-go
	// builds an error for each such value, and drops it), 55% of the CPU
	// of a count over one domain's 66,595 URLs
	read []bool
}

type lakeRunOf struct {
	datasetID int32
	run       catalog.LakeRun
	cols      []catalog.Column // the dataset's kept columns
	// at[i] is the index in cols of the view's extra column i, or -1
	at []int
}

func (s *urlsByDomainSource) ColumnInfos() []duckdb.ColumnInfo     { return s.cols }
func (s *urlsByDomainSource) Cardinality() *duckdb.CardinalityInfo { return nil }

func (s *urlsByDomainSource) Init() {
	s.started, s.snap, s.runs, s.rows, s.read = false, nil, nil, nil, nil
}

// readColumns fills s.read from chunk, and drops the kept fields from the
// runs left to read when DuckDB reads none of them.
func (s *urlsByDomainSource) readColumns(chunk duckdb.DataChunk) error {
	s.read = make([]bool, len(urlsViewColumns)+len(s.extra))
	anyExtra := false
	for c := range s.read {
		t := duckdb.TYPE_VARCHAR
		if c < len(urlsViewColumns) {
			t = urlsViewColumns[c].typ
		} else {
			t = duckTypeOfSQL(s.extra[c-len(urlsViewColumns)].SQLType)
		}
		read, err := duckproj.Probe(chunk, c, t)
		if err != nil {
			return err
		}
		s.read[c] = read
		anyExtra = anyExtra || read && c >= len(urlsViewColumns)
	}
	if !anyExtra {
		s.run.cols = nil
		for i := range s.runs {
			s.runs[i].cols = nil
		}
	}
	return nil
}

func (s *urlsByDomainSource) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(access.WithPrincipal(context.Background(), s.principal), time.Minute)
}

// start lists the runs of every dataset of the domain the caller may see.
func (s *urlsByDomainSource) start() error {
	s.started = true
	if !s.hasDomain || s.dataset == -2 {
		return nil
	}
	ctx, cancel := s.ctx()
	defer cancel()
	s.snap = s.f.Snapshot()
	datasets, err := s.snap.DomainDatasets(s.domain)
	if err != nil {
		return err
	}
	visible := s.f.visibility(ctx)
	for _, d := range datasets {
		if s.dataset >= 0 && int64(d.DatasetID) != s.dataset {
			continue
		}
		if !visible.Sees(d.Dataset) {
			continue // A3
		}
		runs, err := s.snap.LakeRuns(s.domain, d.DatasetID)
		if err != nil {
			return err
		}
		meta, _ := s.snap.Datasets.ByID(d.DatasetID)
		of := lakeRunOf{datasetID: int32(d.DatasetID), at: make([]int, len(s.extra))}
		for i, c := range s.extra {
			of.at[i] = catalog.ColumnIndex(meta.Columns, c.Name)
		}
		if len(s.extra) > 0 {
			of.cols = meta.Columns
			if of.cols == nil {
				of.cols = []catalog.Column{}
			}
		}
		for _, r := range runs {
			of.run = r
			s.runs = append(s.runs, of)
		}
	}
	return nil
}

func (s *urlsByDomainSource) FillChunk(chunk duckdb.DataChunk) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v\n%s", r, debug.Stack())
		}
	}()
	if !s.started {
		if err := s.start(); err != nil {
			return err
		}
	}
	if s.read == nil {
		if err := s.readColumns(chunk); err != nil {
			return err
		}
	}
	for len(s.rows) == 0 {
		if len(s.runs) == 0 {
			return chunk.SetSize(0)
		}
		s.run, s.runs = s.runs[0], s.runs[1:]
		ctx, cancel := s.ctx()
		s.rows, s.fields, err = s.snap.ReadLakeRun(ctx, s.domain, s.run.run, s.run.cols)
		cancel()
		if err != nil {
			return err
		}
	}
	n := min(len(s.rows), chunkRows)
	prefix := s.run.run.DomainPrefix()
	for i, r := range s.rows[:n] {
		var raw, ts any
		if r.Raw != "" {
			raw = r.Raw
		}
		if r.HasTS {
			ts = r.TS
		}
		for c, v := range [...]any{s.run.datasetID, prefix, s.domain, r.URLID, r.URL, raw, ts} {
			if !s.read[c] {
				continue
			}
			if err := chunk.SetValue(c, i, v); err != nil {
				return err
			}
		}
		for x, c := range s.extra {
			if !s.read[len(urlsViewColumns)+x] {
				continue
			}
			var v any
			if k := s.run.at[x]; k >= 0 && i < len(s.fields) && k < len(s.fields[i]) {
				v = viewValue(s.fields[i][k], c.SQLType)
			}
			if err := chunk.SetValue(len(urlsViewColumns)+x, i, v); err != nil {
				return err
			}
		}
	}
	s.rows = s.rows[n:]
	if len(s.fields) >= n {
		s.fields = s.fields[n:]
	}
	return chunk.SetSize(n)
}

// viewColumnInfos are the urls view's columns as the server last made it:
// lakeCols, then its kept fields (extra), read at each bind, so a new
// view's columns reach the next statement.
func (f URLIndexFuncs) viewColumnInfos(lakeCols []duckdb.ColumnInfo, t func(duckdb.Type) duckdb.TypeInfo) (cols []duckdb.ColumnInfo, extra []ViewColumn) {
	cols = slices.Clip(lakeCols)
	if f.URLsViewExtra != nil {
		extra = f.URLsViewExtra()
	}
	for _, c := range extra {
		cols = append(cols, duckdb.ColumnInfo{Name: c.Name, T: t(duckTypeOfSQL(c.SQLType))})
	}
	return cols, extra
}

// ViewColumn is a kept-field column of the urls view: its name and the SQL
// type the view casts it to (cmd/dhsi's viewColumns).
type ViewColumn struct{ Name, SQLType string }

func duckTypeOfSQL(t string) duckdb.Type {
	switch t {
	case "INTEGER":
		return duckdb.TYPE_INTEGER
	case "BIGINT":
		return duckdb.TYPE_BIGINT
	case "DOUBLE":
		return duckdb.TYPE_DOUBLE
	case "BOOLEAN":
		return duckdb.TYPE_BOOLEAN
	case "TIMESTAMP":
		return duckdb.TYPE_TIMESTAMP
	}
	return duckdb.TYPE_VARCHAR
}

// viewValue is a kept field's value as the view's CAST(column AS sqlType)
// gives it: itself, or, in a VARCHAR column that datasets of different
// types share, its text as DuckDB's CAST to VARCHAR writes it.
func viewValue(v any, sqlType string) any {
	if v == nil || sqlType != "VARCHAR" {
		return v
	}
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		if x.Nanosecond() == 0 {
			return x.UTC().Format("2006-01-02 15:04:05")
		}
		return strings.TrimRight(x.UTC().Format("2006-01-02 15:04:05.000000"), "0")
	}
	return fmt.Sprint(v)
}
