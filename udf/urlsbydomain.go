package udf

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
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

// urlsViewColumns are the urls view's columns and DuckDB types
// (cmd/dhsi's updateURLsView).
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
	cols := make([]duckdb.ColumnInfo, len(urlsViewColumns))
	for i, c := range urlsViewColumns {
		cols[i] = duckdb.ColumnInfo{Name: c.name, T: t(c.typ)}
	}
	args := []duckdb.TypeInfo{t(duckdb.TYPE_VARCHAR)}
	if narrow {
		args = append(args, t(duckdb.TYPE_INTEGER))
	}
	return duckdb.ChunkTableFunction{
		Config: duckdb.TableFunctionConfig{Arguments: args},
		BindArgumentsContext: func(ctx context.Context, named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
			s := &urlsByDomainSource{f: f, cols: cols, principal: access.FromContext(ctx), dataset: -1}
			if d, ok := args[0].(string); ok {
				s.domain, s.hasDomain = d, true
			}
			if narrow {
				s.dataset = -2 // no dataset: a NULL
				if id, ok := args[1].(int32); ok && id >= 0 {
					s.dataset = int64(id)
				}
			}
			return s, nil
		},
	}
}

// urlsByDomainSource streams the rows one run at a time. Each execution
// (Init) pins the snapshot current then (M4).
type urlsByDomainSource struct {
	f         URLIndexFuncs
	cols      []duckdb.ColumnInfo
	principal access.Principal // who bound the call (access A1)
	domain    string
	hasDomain bool  // false: a NULL argument, which no row's domain equals
	dataset   int64 // the one dataset (urls_by_domain_dataset); -1: every one; -2: none

	started bool
	snap    *catalog.Snapshot
	runs    []lakeRunOf // left to read
	rows    []catalog.URLRow
	run     lakeRunOf // the run rows are from
}

type lakeRunOf struct {
	datasetID int32
	run       catalog.LakeRun
}

func (s *urlsByDomainSource) ColumnInfos() []duckdb.ColumnInfo     { return s.cols }
func (s *urlsByDomainSource) Cardinality() *duckdb.CardinalityInfo { return nil }

func (s *urlsByDomainSource) Init() { s.started, s.snap, s.runs, s.rows = false, nil, nil, nil }

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
		for _, r := range runs {
			s.runs = append(s.runs, lakeRunOf{datasetID: int32(d.DatasetID), run: r})
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
	for len(s.rows) == 0 {
		if len(s.runs) == 0 {
			return chunk.SetSize(0)
		}
		s.run, s.runs = s.runs[0], s.runs[1:]
		ctx, cancel := s.ctx()
		s.rows, err = s.snap.ReadLakeRun(ctx, s.domain, s.run.run)
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
			if err := chunk.SetValue(c, i, v); err != nil {
				return err
			}
		}
	}
	s.rows = s.rows[n:]
	return chunk.SetSize(n)
}
