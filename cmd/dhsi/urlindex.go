package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/sqlserver"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/udf"
	"github.com/dhsi/dhsi/urlnorm"
)

// urlService ties the URL index to the server: the snapshot, the domain
// normalizer matching the snapshot's PSL mode, and the urls view.
type urlService struct {
	x     *catalog.URLIndex
	st    store.Store
	db    *sql.DB
	log   *slog.Logger
	mu    sync.Mutex
	norms map[bool]*urlnorm.Normalizer // by ICANN-only
	// emptyDir holds a Parquet file with the columns of every lake layout
	// and no row (lakePaths); the server's DuckDB may read it
	emptyDir string
	empty    atomic.Pointer[string] // its path, once written
	// viewExtra: the kept-field columns of the urls view last made; the
	// pointer changes only when they do (nativeURLsByDomain's staleness)
	viewExtra atomic.Pointer[[]udf.ViewColumn]
	// onViewColumns, when set, is called after viewExtra changed
	onViewColumns atomic.Pointer[func()]
	// grants are the dataset grants in force (nil: none), for the urls
	// view's kept columns
	grants func() *access.Grants
	// readEpoch moves each time the urls view is made again, for a grants
	// change or a new version: the SQL server's Config.ReadEpoch (a plan
	// bound before holds dhsi_lake_files()'s old list)
	readEpoch atomic.Uint64
}

func newURLService(ctx context.Context, st store.Store, db *sql.DB, emptyDir string, o catalog.URLIndexOptions) (*urlService, error) {
	log := o.Log
	x, err := catalog.OpenURLIndexWith(ctx, st, o)
	if err != nil {
		return nil, fmt.Errorf("url index: %w", err)
	}
	// the urls view comes once dhsi_lake_files is registered (serve)
	return &urlService{x: x, st: st, db: db, log: log, norms: map[bool]*urlnorm.Normalizer{}, emptyDir: emptyDir}, nil
}

// domain normalizes a user's domain argument the way the current version's
// domains were computed.
func (s *urlService) domain(arg string) (string, error) {
	d, _, err := s.domainNote(arg)
	return d, err
}

// domainNote is domain with the note that explains a normalization.
func (s *urlService) domainNote(arg string) (string, string, error) {
	n, err := s.normalizer()
	if err != nil {
		return "", "", err
	}
	return n.QueryDomain(arg)
}

// parseURL parses the url of a CDX query as ingest parsed the current
// version's URLs (its PSL mode), for the CDX API (httpapi/cdx.go).
func (s *urlService) parseURL(raw string) (urlnorm.URL, error) {
	n, err := s.normalizer()
	if err != nil {
		return urlnorm.URL{}, err
	}
	return n.Parse(raw)
}

// normalizer is the normalizer of the current version's PSL mode, made
// once per mode.
func (s *urlService) normalizer() (*urlnorm.Normalizer, error) {
	icann := s.x.Current().Version.PSLMode == "icann"
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.norms[icann]
	if n == nil {
		var err error
		if n, err = urlnorm.NewNormalizer(urlnorm.Config{ICANNOnly: icann}); err != nil {
			return nil, err
		}
		s.norms[icann] = n
	}
	return n, nil
}

// refresh follows the manifest; a new version also rebuilds the urls view.
func (s *urlService) refresh(ctx context.Context) error {
	changed, err := s.x.Refresh(ctx)
	if err != nil || !changed {
		return err
	}
	return s.updateURLsView(ctx)
}

// updateURLsView points the urls view at the current version's Parquet
// files (never at files an ingest has written but not published). The view
// names no file: on a local store it reads
// read_parquet(dhsi_lake_files()), which DuckDB folds for each query in the
// querying session, so each principal reads only the files of the datasets
// it may see (access A3), and the view's text, which any session can read,
// reveals no dataset. On S3 it is urls_scan(), which the server answers
// with the same rule.
func (s *urlService) updateURLsView(ctx context.Context) error {
	// first: the grants or the version already changed, and a statement
	// bound from now on sees them
	s.readEpoch.Add(1)
	snap := s.x.Current()
	_, local := s.st.(catalog.LocalPather)
	extra := s.viewColumns(snap)
	empty := "SELECT NULL::INTEGER AS dataset_id, NULL::VARCHAR AS domain_prefix, NULL::VARCHAR AS domain, NULL::UBIGINT AS url_id, NULL::VARCHAR AS url, NULL::VARCHAR AS raw, NULL::TIMESTAMP AS ts"
	for _, c := range extra {
		empty += ", NULL::" + c.sqlType + " AS " + quoteIdent(c.name)
	}
	switch {
	case len(snap.FilePaths()) == 0:
		s.storeViewExtra(extra)
		return s.createURLsView(ctx, empty+" WHERE false")
	case !local:
		// DuckDB cannot read the store (no httpfs): the server reads the
		// files by byte range through its block cache, in the querying
		// session, so the same grants apply (udf.URLsScanFunction). Its
		// columns are the view's: the lake's, then extra, stored first
		s.storeViewExtra(extra)
		return s.createURLsView(ctx, "SELECT * FROM "+udf.URLsScanFunction+"()")
	}
	// dhsi_lake_files() always ends with the empty lake file, which has
	// the columns of every layout, so the view binds whichever layouts the
	// store holds (docs/format/lake.md): a row's domain, raw URL and
	// timestamp come from ingest.LakeDomainSQL, LakeRawSQL and LakeTSSQL,
	// url_id from the raw URL (url_id()). (Asking DuckDB for the files' schemas instead read
	// every footer once more: 0.2 s at 1,000 files.)
	src := "read_parquet(dhsi_lake_files(), hive_partitioning = true, union_by_name = true)"
	if err := s.makeEmptyLakeFile(ctx, extra); err != nil {
		return err
	}
	s.storeViewExtra(extra)
	raw := ingest.LakeRawSQL
	cols := ""
	for _, c := range extra {
		cols += ", CAST(" + quoteIdent(c.name) + " AS " + c.sqlType + ") AS " + quoteIdent(c.name)
	}
	return s.createURLsView(ctx, "SELECT CAST(dataset_id AS INTEGER) AS dataset_id, domain_prefix, "+ingest.LakeDomainSQL+" AS domain, url_id(coalesce("+raw+", url)) AS url_id, url, "+raw+" AS raw, "+ingest.LakeTSSQL+" AS ts"+cols+" FROM "+src)
}

// viewColumn is a kept column of the urls view.
type viewColumn struct{ name, sqlType string }

// storeViewExtra keeps the kept-field columns the urls view is being made
// with, for urls_by_domain, which answers urls WHERE domain = … with the
// view's columns (udf.URLIndexFuncs.URLsViewExtra).
func (s *urlService) storeViewExtra(extra []viewColumn) {
	out := make([]udf.ViewColumn, len(extra))
	for i, c := range extra {
		out[i] = udf.ViewColumn{Name: c.name, SQLType: c.sqlType}
	}
	if old := s.viewExtra.Load(); old != nil && slices.Equal(*old, out) {
		return
	}
	s.viewExtra.Store(&out)
	if f := s.onViewColumns.Load(); f != nil {
		(*f)()
	}
}

// nativeURLsByDomain is urls_by_domain and urls_by_domain_dataset for the
// server's native path, with the urls view's columns as they are now; each
// turns stale (sqlserver.NativeFunction.Stale) once the view's columns
// change, and onViewColumns puts fresh ones in their place. ok is false
// when the view has a column the native path does not carry.
func (s *urlService) nativeURLsByDomain(funcs udf.URLIndexFuncs) (map[string]sqlserver.NativeFunction, bool) {
	p := s.viewExtra.Load()
	var extra []udf.ViewColumn
	if p != nil {
		extra = *p
	}
	return funcs.URLsByDomainNative(extra, func() bool { return s.viewExtra.Load() != p })
}

// urlsViewExtra is udf.URLIndexFuncs.URLsViewExtra.
func (s *urlService) urlsViewExtra() []udf.ViewColumn {
	if p := s.viewExtra.Load(); p != nil {
		return *p
	}
	return nil
}

// viewColumns are the urls view's kept columns (docs/format/lake.md,
// "Kept fields"): the CDX fields always, then every other column a dataset
// visible to everyone keeps, in the order of dataset ids and columns, as
// the SQL type of its column type, or VARCHAR where datasets disagree. A
// column only datasets with grants keep is left out: the view's columns
// are the same for every session, and its name would tell every session
// about a dataset it may not see (domain_url_fields' fields has it).
func (s *urlService) viewColumns(snap *catalog.Snapshot) []viewColumn {
	var out []viewColumn
	at := map[string]int{}
	for _, c := range catalog.CDXColumns {
		at[c.Name] = len(out)
		out = append(out, viewColumn{c.Name, sqlTypeOf(c.Type)})
	}
	var g *access.Grants
	if s.grants != nil {
		g = s.grants()
	}
	for _, ds := range snap.Datasets.Datasets {
		if g != nil && g.Restricted(ds.Name) {
			continue
		}
		for _, c := range ds.Columns {
			t := sqlTypeOf(c.Type)
			if i, ok := at[c.Name]; ok {
				if out[i].sqlType != t {
					out[i].sqlType = "VARCHAR"
				}
				continue
			}
			at[c.Name] = len(out)
			out = append(out, viewColumn{c.Name, t})
		}
	}
	return out
}

// sqlTypeOf is DuckDB's type of a kept column's Parquet column.
func sqlTypeOf(t string) string {
	switch t {
	case catalog.TypeInt32:
		return "INTEGER"
	case catalog.TypeInt64:
		return "BIGINT"
	case catalog.TypeDouble:
		return "DOUBLE"
	case catalog.TypeBool:
		return "BOOLEAN"
	case catalog.TypeTimestamp:
		return "TIMESTAMP"
	}
	return "VARCHAR"
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// emptyLakeColumns are the columns of every lake layout the view reads
// (docs/format/lake.md; layout 1's url_id is derived instead).
const emptyLakeColumns = "NULL::VARCHAR AS url, NULL::VARCHAR AS raw, NULL::BLOB AS raw_edit, NULL::TIMESTAMP AS ts, " +
	"NULL::INTEGER AS domain_offset, NULL::INTEGER AS domain_length, NULL::VARCHAR AS domain, NULL::BIGINT AS ts_seconds"

// makeEmptyLakeFile writes the empty lake file once: the columns of every
// layout, no row, under partitions no dataset has (dataset_id=0;
// domain_prefix=zz, which no hex prefix is, so it stays a VARCHAR). Its
// directory is named by the newest layout, the only thing it depends on.
func (s *urlService) makeEmptyLakeFile(ctx context.Context, extra []viewColumn) error {
	sel := emptyLakeColumns
	for _, c := range extra {
		sel += ", NULL::" + c.sqlType + " AS " + quoteIdent(c.name)
	}
	// one file per set of kept columns
	sum := sha256.Sum256([]byte(sel))
	dir := filepath.Join(s.emptyDir, fmt.Sprintf("layout-%d", catalog.LakeLayout), fmt.Sprintf("columns-%x", sum[:8]), "dataset_id=0", "domain_prefix=zz")
	if p := s.empty.Load(); p != nil && filepath.Dir(*p) == dir {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("empty lake file: %w", err)
	}
	path := filepath.Join(dir, "empty.parquet")
	q := "COPY (SELECT " + sel + " WHERE false) TO " + quoteSQL(path) + " (FORMAT parquet)"
	if _, err := s.db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("empty lake file: %w", err)
	}
	s.empty.Store(&path)
	return nil
}

func (s *urlService) emptyLakeFile() (string, error) {
	if p := s.empty.Load(); p != nil {
		return *p, nil
	}
	return "", fmt.Errorf("the urls view is not ready yet; try again")
}

func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// lakePaths is dhsi_lake_files()'s source: the local paths of the
// snapshot's files of the datasets keep accepts, then the empty lake file,
// which has the columns of every layout and no row, so the view binds
// whatever layouts (or no file at all) the rest hold.
func (s *urlService) lakePaths(snap *catalog.Snapshot, keep func(uint32) bool) ([]string, error) {
	lp, ok := s.st.(catalog.LocalPather)
	if !ok {
		return []string{}, nil
	}
	keys := snap.DatasetFilePaths(keep)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		p, err := lp.LocalPath(k)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	p, err := s.emptyLakeFile()
	if err != nil {
		return nil, err
	}
	return append(out, p), nil
}

func (s *urlService) createURLsView(ctx context.Context, body string) error {
	for _, q := range []string{
		"CREATE OR REPLACE VIEW public.urls AS " + body,
		"COMMENT ON VIEW public.urls IS 'dhsi: every URL of the current index version (the Parquet lake)'",
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create view urls: %w", err)
		}
	}
	return nil
}
