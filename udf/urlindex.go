package udf

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/sqlserver"
)

// URLIndexFuncs are the table functions over the URL index:
//
//	domain_datasets(domain)                          → dataset_id, dataset, url_count
//	domain_urls(domain, dataset_id, offset, limit)   → url_id, url, ts
//	domain_url_fields(domain, dataset_id, offset, limit)
//	    → url_id, url, ts, status, mime, digest, length, offset, filename, fields
//	dataset_domains(dataset_id)                      → domain, url_count (reverse.go)
//	dataset_domains_set(a, op, b)                    → domain, url_count_a, url_count_b
//	urls_by_domain(domain)                           → the urls view's rows of domain (urlsbydomain.go)
//	urls_by_domain_dataset(domain, dataset_id)       → those of one dataset
//	urls_scan()                                      → every row of the urls view (urlsscan.go)
//	dhsi_datasets()                                  → the dataset registry (view "datasets")
//
// Each call pins the current snapshot once (M4), so a manifest flip during a
// query never mixes versions; the calls of one native statement pin one
// snapshot (snapshot, sqlserver.OncePerStatement), so neither do the two
// sides of a native join. (Under DuckDB each function pins its own when it
// runs: lazyRows and the scans run outside the statement's context.)
type URLIndexFuncs struct {
	Snapshot func() *catalog.Snapshot
	// Grants returns the dataset grants in force (nil: no grants, every
	// dataset visible). Every function here answers for the principal its
	// context carries (access A1–A3).
	Grants func() *access.Grants
	// LakePaths returns the local paths of the snapshot's Parquet files of
	// the datasets keep accepts (keep nil: all), for the urls view; nil when
	// DuckDB cannot read the store's files (S3).
	LakePaths func(snap *catalog.Snapshot, keep func(datasetID uint32) bool) ([]string, error)
	// URLsViewExtra returns the kept-field columns of the urls view as the
	// server last made it (nil: none), which urls_by_domain returns too.
	URLsViewExtra func() []ViewColumn
	// Domain turns the user's argument into a registered domain ("https://
	// www.Example.com/x" → "example.com"), or explains what was expected.
	Domain func(s string) (string, error)
}

// RegisterURLIndex installs the functions on db.
func RegisterURLIndex(ctx context.Context, db *sql.DB, f URLIndexFuncs) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	t := func(typ duckdb.Type) duckdb.TypeInfo {
		ti, err := duckdb.NewTypeInfo(typ)
		if err != nil {
			panic(err) // only for the fixed primitive types below
		}
		return ti
	}
	varchar, bigint := t(duckdb.TYPE_VARCHAR), t(duckdb.TYPE_BIGINT)

	// the lookups: DuckDB's table functions answer any SQL around them,
	// and run the same Run as the server's native path (f.Native); the
	// reverse lookups stream instead, as their results can be millions of
	// rows (reverse.go)
	fns := map[string]duckdb.ChunkTableFunction{}
	streamed := f.reverseNative()
	for name, nf := range f.Native() {
		if _, ok := streamed[name]; ok {
			fns[name] = f.reverseTableFunction(nf, t)
			continue
		}
		argTypes, cols := duckSignature(nf, t)
		fns[name] = duckdb.ChunkTableFunction{
			Config: duckdb.TableFunctionConfig{Arguments: argTypes},
			BindArgumentsContext: func(ctx context.Context, named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
				return &lazyRows{cols: cols, timeout: time.Minute, principal: access.FromContext(ctx), run: func(ctx context.Context) ([][]any, error) {
					return nf.Run(ctx, args)
				}}, nil
			},
		}
	}
	fns[URLsByDomainFunction] = f.urlsByDomainFunction(t, false)
	fns[URLsByDomainDatasetFunction] = f.urlsByDomainFunction(t, true)
	fns["dhsi_dataset_grants"] = duckdb.ChunkTableFunction{
		BindArgumentsContext: func(ctx context.Context, named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
			cols := []duckdb.ColumnInfo{{Name: "dataset", T: varchar}, {Name: "grantee", T: varchar}, {Name: "granted_by", T: varchar},
				{Name: "granted_at", T: t(duckdb.TYPE_TIMESTAMP_TZ)}, {Name: "grants_version", T: bigint}}
			return &lazyRows{cols: cols, timeout: time.Minute, principal: access.FromContext(ctx), run: func(ctx context.Context) ([][]any, error) {
				g := f.grants()
				visible := f.visibility(ctx)
				var out [][]any
				for _, gr := range g.List() {
					if !visible.Sees(gr.Dataset) {
						continue // A3: a grant names a dataset the caller may not know of
					}
					out = append(out, []any{gr.Dataset, gr.Grantee, gr.By, gr.At, g.Version()})
				}
				return out, nil
			}}, nil
		},
	}
	for name, fn := range fns {
		if err := duckdb.RegisterTableUDF(conn, name, fn); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	if err := duckdb.RegisterTableUDF(conn, URLsScanFunction, f.urlsScanFunction(t)); err != nil {
		return fmt.Errorf("register %s: %w", URLsScanFunction, err)
	}
	lakeFiles := &lakeFiles{f: f}
	if err := duckdb.RegisterScalarUDF(conn, "dhsi_lake_files", lakeFiles); err != nil {
		return fmt.Errorf("register dhsi_lake_files: %w", err)
	}
	list, err := newDomainDatasetList(f)
	if err != nil {
		return err
	}
	if err := duckdb.RegisterScalarUDF(conn, "domain_dataset_list", list); err != nil {
		return fmt.Errorf("register domain_dataset_list: %w", err)
	}
	for _, s := range []string{
		"CREATE OR REPLACE VIEW public.datasets AS SELECT * FROM dhsi_datasets()",
		"COMMENT ON VIEW public.datasets IS 'dhsi: the dataset registry of the current index version'",
		"CREATE OR REPLACE VIEW public.dataset_grants AS SELECT * FROM dhsi_dataset_grants()",
		"COMMENT ON VIEW public.dataset_grants IS 'dhsi: who may see which dataset (CALL grant_dataset / revoke_dataset); a dataset without grants is visible to everyone'",
	} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create view datasets: %w", err)
		}
	}
	return nil
}

// Native returns domain_datasets, domain_urls, dataset_domains and
// dataset_domains_set as the server answers them
// without DuckDB (sqlserver.NativeFunction): their one statement of
// arguments and result columns, which RegisterURLIndex registers in DuckDB
// too.
//
// Each computes its rows once, typed (Rows: the server encodes them without
// an allocation per cell); Run, which DuckDB's table function calls, boxes
// the same rows (sqlserver.NativeValues), so the two paths always answer
// alike.
func (f URLIndexFuncs) Native() map[string]sqlserver.NativeFunction {
	out := map[string]sqlserver.NativeFunction{
		"domain_datasets": {
			Args:    []duckdb.Type{duckdb.TYPE_VARCHAR},
			Columns: domainDatasetsColumns,
			Run:     f.DomainDatasetsRows,
			Rows:    f.domainDatasets,
		},
		"domain_urls": {
			Args:    []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT, duckdb.TYPE_BIGINT},
			Columns: domainURLsColumns,
			Run:     f.DomainURLsRows,
			Rows:    f.domainURLs,
		},
		// domain_urls with what the input said about each URL: the CDX
		// fields as typed columns, the dataset's other kept columns as
		// one JSON object. One shape for every dataset, so a statement
		// prepared before its dataset_id is bound knows its columns.
		"domain_url_fields": {
			Args:    []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT, duckdb.TYPE_BIGINT},
			Columns: domainURLFieldsColumns,
			Run:     f.DomainURLFieldsRows,
			Rows:    f.domainURLFields,
		},
		// the dataset registry (the datasets view: sqlserver's
		// NativeViews), which a person joins domain_datasets with
		"dhsi_datasets": {
			Columns: datasetsColumns,
			Run:     f.DatasetsRows,
			Rows:    f.datasets,
		},
	}
	for name, nf := range f.reverseNative() {
		out[name] = nf
	}
	return out
}

// DatasetsRows is dhsi_datasets(), boxed for DuckDB's table function.
func (f URLIndexFuncs) DatasetsRows(ctx context.Context, args []any) ([][]any, error) {
	rows, err := f.datasets(ctx, args)
	if err != nil {
		return nil, err
	}
	return sqlserver.NativeValues(datasetsColumns, rows), nil
}

// datasets is dhsi_datasets(), typed: the registry of the current index
// version, the datasets the caller may see (A3).
func (f URLIndexFuncs) datasets(ctx context.Context, _ []any) (sqlserver.NativeRows, error) {
	all := f.snapshot(ctx).Datasets.Datasets
	visible := f.visibility(ctx)
	if visible.All() {
		return registryRows(all), nil // a snapshot is never changed
	}
	var out registryRows
	for _, d := range all {
		if visible.Sees(d.Name) {
			out = append(out, d)
		}
	}
	return out, nil
}

// registryRows are dhsi_datasets' rows, typed (sqlserver.NativeRows).
type registryRows []catalog.Dataset

func (r registryRows) Len() int { return len(r) }

func (r registryRows) Cell(row, col int) sqlserver.NativeValue {
	d := &r[row]
	switch col {
	case 0:
		return sqlserver.NativeInt(int64(int32(d.ID)))
	case 1:
		return sqlserver.NativeString(d.Name)
	case 2:
		return sqlserver.NativeString(d.Source)
	case 3:
		return sqlserver.NativeTime(d.Created)
	case 4:
		return sqlserver.NativeTime(d.Updated)
	case 5:
		return sqlserver.NativeInt(d.URLs)
	case 6:
		return sqlserver.NativeInt(d.Domains)
	case 7:
		return sqlserver.NativeInt(int64(d.Files))
	}
	return sqlserver.NativeNull()
}

var (
	// Unique (a native join's key): a registry's ids and names; a domain's
	// datasets; a run's URLs, strictly ascending (lake L1, L2), and their
	// 64-bit url_ids (sqlserver.NativeColumn.Unique only bounds a join's
	// size, so a hash collision would cost memory, not a wrong answer)
	datasetsColumns = []sqlserver.NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER, Unique: true}, {Name: "dataset", Type: duckdb.TYPE_VARCHAR, Unique: true},
		{Name: "source", Type: duckdb.TYPE_VARCHAR}, {Name: "created", Type: duckdb.TYPE_TIMESTAMP_TZ}, {Name: "updated", Type: duckdb.TYPE_TIMESTAMP_TZ},
		{Name: "urls", Type: duckdb.TYPE_BIGINT}, {Name: "domains", Type: duckdb.TYPE_BIGINT}, {Name: "files", Type: duckdb.TYPE_BIGINT}}
	domainDatasetsColumns = []sqlserver.NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER, Unique: true}, {Name: "dataset", Type: duckdb.TYPE_VARCHAR, Unique: true}, {Name: "url_count", Type: duckdb.TYPE_BIGINT}}
	domainURLsColumns     = []sqlserver.NativeColumn{{Name: "url_id", Type: duckdb.TYPE_UBIGINT, Unique: true}, {Name: "url", Type: duckdb.TYPE_VARCHAR, Unique: true}, {Name: "ts", Type: duckdb.TYPE_TIMESTAMP}}
	// domain_urls' columns, catalog.CDXColumns, then fields (JSON)
	domainURLFieldsColumns = append(append([]sqlserver.NativeColumn(nil), domainURLsColumns...),
		sqlserver.NativeColumn{Name: "status", Type: duckdb.TYPE_INTEGER}, sqlserver.NativeColumn{Name: "mime", Type: duckdb.TYPE_VARCHAR},
		sqlserver.NativeColumn{Name: "digest", Type: duckdb.TYPE_VARCHAR}, sqlserver.NativeColumn{Name: "length", Type: duckdb.TYPE_BIGINT},
		sqlserver.NativeColumn{Name: "offset", Type: duckdb.TYPE_BIGINT}, sqlserver.NativeColumn{Name: "filename", Type: duckdb.TYPE_VARCHAR},
		sqlserver.NativeColumn{Name: "fields", Type: duckdb.TYPE_VARCHAR})
)

// fieldRows are domain_url_fields' rows, typed: each row's CDX fields
// found by the dataset's column positions (cdx[k]: the position of
// catalog.CDXColumns[k], or -1).
type fieldRows struct {
	rows []catalog.FieldRow
	cols []catalog.Column
	cdx  [6]int
}

func (r *fieldRows) Len() int { return len(r.rows) }

func (r *fieldRows) Cell(row, col int) sqlserver.NativeValue {
	if col < 3 {
		return urlCell(&r.rows[row].URLRow, col)
	}
	vals := r.rows[row].Fields
	if col == 9 {
		if js, ok := catalog.OtherFieldsJSON(r.cols, vals); ok {
			return sqlserver.NativeString(js)
		}
		return sqlserver.NativeNull()
	}
	k := r.cdx[col-3]
	if k < 0 || k >= len(vals) || vals[k] == nil {
		return sqlserver.NativeNull()
	}
	switch v := vals[k].(type) {
	case int32:
		return sqlserver.NativeInt(int64(v))
	case int64:
		return sqlserver.NativeInt(v)
	case string:
		return sqlserver.NativeString(v)
	}
	return sqlserver.NativeNull()
}

// DomainURLFieldsRows computes domain_url_fields(domain, dataset_id,
// offset, limit).
func (f URLIndexFuncs) DomainURLFieldsRows(ctx context.Context, args []any) ([][]any, error) {
	rows, err := f.domainURLFields(ctx, args)
	if err != nil || rows == nil {
		return nil, err
	}
	return sqlserver.NativeValues(domainURLFieldsColumns, rows), nil
}

func (f URLIndexFuncs) domainURLFields(ctx context.Context, args []any) (sqlserver.NativeRows, error) {
	q, ok, err := f.urlPage(ctx, "domain_url_fields", args)
	if err != nil || !ok {
		return nil, err
	}
	rows, _, cols, err := q.snap.DomainURLFields(ctx, q.domain, q.dataset, q.offset, q.limit)
	if err != nil {
		return nil, err
	}
	out := &fieldRows{rows: rows, cols: cols}
	for k, c := range catalog.CDXColumns {
		out.cdx[k] = catalog.ColumnIndex(cols, c.Name)
	}
	return out, nil
}

// urlPage is a checked call of domain_urls or domain_url_fields.
type urlPage struct {
	snap          *catalog.Snapshot
	domain        string
	dataset       uint32
	offset, limit int64
}

// datasetCounts are domain_datasets' rows, typed (sqlserver.NativeRows).
type datasetCounts []catalog.DatasetCount

func (r datasetCounts) Len() int { return len(r) }

func (r datasetCounts) Cell(row, col int) sqlserver.NativeValue {
	var v sqlserver.NativeValue
	setDatasetCountCell(&v, &r[row], col)
	return v
}

// setDatasetCountCell makes v column col of domain_datasets' row d.
func setDatasetCountCell(v *sqlserver.NativeValue, d *catalog.DatasetCount, col int) {
	switch col {
	case 0:
		v.SetInt(int64(int32(d.DatasetID)))
	case 1:
		v.SetString(d.Dataset)
	case 2:
		v.SetInt(int64(d.URLCount))
	default:
		v.SetNull()
	}
}

// urlRows are domain_urls' rows, typed (sqlserver.NativeRows).
type urlRows []catalog.URLRow

func (r urlRows) Len() int { return len(r) }

func (r urlRows) Cell(row, col int) sqlserver.NativeValue { return urlCell(&r[row], col) }

// urlCell is column col of domain_urls' row r.
func urlCell(r *catalog.URLRow, col int) sqlserver.NativeValue {
	var v sqlserver.NativeValue
	setURLCell(&v, r, col)
	return v
}

// setURLCell makes v column col of domain_urls' row r.
func setURLCell(v *sqlserver.NativeValue, r *catalog.URLRow, col int) {
	switch {
	case col == 0:
		v.SetUint(r.URLID)
	case col == 1:
		v.SetString(r.URL)
	case col == 2 && r.HasTS:
		v.SetTime(r.TS)
	default:
		v.SetNull()
	}
}

// DomainDatasetsRows computes domain_datasets(args[0]). The DuckDB table
// function and the server's native path (sqlserver.NativeFunction) both
// call it, so the two always answer alike.
func (f URLIndexFuncs) DomainDatasetsRows(ctx context.Context, args []any) ([][]any, error) {
	rows, err := f.domainDatasets(ctx, args)
	if err != nil || rows == nil {
		return nil, err
	}
	return sqlserver.NativeValues(domainDatasetsColumns, rows), nil
}

// domainDatasets computes domain_datasets(args[0]), typed; nil for no rows
// to compute.
func (f URLIndexFuncs) domainDatasets(ctx context.Context, args []any) (sqlserver.NativeRows, error) {
	if len(args) != 1 || args[0] == nil {
		return nil, nil
	}
	arg, _ := args[0].(string)
	d, err := f.Domain(arg)
	if err != nil {
		return nil, &InvalidArgument{err}
	}
	visible := f.visibility(ctx)
	// cached per principal: a hit must not tell one user what another
	// looked up (catalog C2)
	got, err := f.snapshot(ctx).DomainDatasetsCached(d, access.FromContext(ctx).User)
	if err != nil {
		return nil, err
	}
	if visible.All() {
		return datasetCounts(got), nil // shared: read only (catalog C1)
	}
	out := make([]catalog.DatasetCount, 0, len(got)) // not got[:0]: shared (C1)
	for _, g := range got {
		if !visible.Sees(g.Dataset) {
			continue // A3: absent, not zero
		}
		out = append(out, g)
	}
	return datasetCounts(out), nil
}

// DomainURLsRows computes domain_urls(domain, dataset_id, offset, limit).
func (f URLIndexFuncs) DomainURLsRows(ctx context.Context, args []any) ([][]any, error) {
	rows, err := f.domainURLs(ctx, args)
	if err != nil || rows == nil {
		return nil, err
	}
	return sqlserver.NativeValues(domainURLsColumns, rows), nil
}

// duckSignature is a native function's arguments and result columns as a
// DuckDB table function declares them.
func duckSignature(nf sqlserver.NativeFunction, t func(duckdb.Type) duckdb.TypeInfo) ([]duckdb.TypeInfo, []duckdb.ColumnInfo) {
	var argTypes []duckdb.TypeInfo
	for _, a := range nf.Args {
		argTypes = append(argTypes, t(a))
	}
	var cols []duckdb.ColumnInfo
	for _, c := range nf.Columns {
		cols = append(cols, duckdb.ColumnInfo{Name: c.Name, T: t(c.Type)})
	}
	return argTypes, cols
}

// domainURLs computes domain_urls(domain, dataset_id, offset, limit),
// typed; nil for no rows to compute.
func (f URLIndexFuncs) domainURLs(ctx context.Context, args []any) (sqlserver.NativeRows, error) {
	q, ok, err := f.urlPage(ctx, "domain_urls", args)
	if err != nil || !ok {
		return nil, err
	}
	rows, _, err := q.snap.DomainURLs(ctx, q.domain, q.dataset, q.offset, q.limit)
	if err != nil {
		return nil, err
	}
	return urlRows(rows), nil
}

// urlPage checks the arguments of name(domain, dataset_id, offset, limit)
// and the caller's grant on the dataset; !ok for no rows to compute. (A
// value, not a pointer: domain_urls' hot path allocates nothing for it.)
func (f URLIndexFuncs) urlPage(ctx context.Context, name string, args []any) (q urlPage, ok bool, err error) {
	if len(args) != 4 || args[0] == nil || args[1] == nil {
		return q, false, nil
	}
	arg, _ := args[0].(string)
	ds, _ := args[1].(int32)
	off, lim := int64(0), int64(1000)
	if v, ok := args[2].(int64); ok {
		off = v
	}
	if v, ok := args[3].(int64); ok {
		lim = v
	}
	if lim > catalog.MaxPageSize {
		return q, false, &InvalidArgument{fmt.Errorf("%s: limit %d is above the page-size cap of %d; page with offset", name, lim, catalog.MaxPageSize)}
	}
	if off < 0 || lim < 0 {
		return q, false, &InvalidArgument{fmt.Errorf("%s: offset %d and limit %d: neither may be negative", name, off, lim)}
	}
	d, err := f.Domain(arg)
	if err != nil {
		return q, false, &InvalidArgument{err}
	}
	snap := f.snapshot(ctx)
	// A3: decided before the dataset's postings are touched, and a hidden
	// dataset answers exactly as an id that does not exist
	meta, known := snap.Datasets.ByID(uint32(ds))
	if known {
		if !f.visibility(ctx).Sees(meta.Name) {
			known = false
		}
	}
	if !known || ds < 0 {
		return q, false, &UnknownDataset{ID: int64(ds), Version: snap.Version.Version}
	}
	return urlPage{snap: snap, domain: d, dataset: uint32(ds), offset: off, limit: lim}, true, nil
}

func (f URLIndexFuncs) grants() *access.Grants {
	if f.Grants == nil {
		return access.EmptyGrants
	}
	return f.Grants()
}

// visibility is the grants' view of the principal ctx carries (A1, A2).
// snapshot is the index version a statement reads: the current one, pinned
// for the rest of the statement by its first call (M4).
func (f URLIndexFuncs) snapshot(ctx context.Context) *catalog.Snapshot {
	return sqlserver.OncePerStatement(ctx, snapshotKey{}, f.Snapshot)
}

type snapshotKey struct{}

func (f URLIndexFuncs) visibility(ctx context.Context) access.Visibility {
	return f.grants().Filter(access.FromContext(ctx))
}

// VisibleDatasetIDs is the dataset-id form of visibility, for callers that
// hold ids (the lake's files, the JSON API): nil means every dataset.
func (f URLIndexFuncs) VisibleDatasetIDs(ctx context.Context, snap *catalog.Snapshot) func(id uint32) bool {
	visible := f.visibility(ctx)
	if visible.All() {
		return nil
	}
	return func(id uint32) bool {
		meta, ok := snap.Datasets.ByID(id)
		return ok && visible.Sees(meta.Name)
	}
}

// lakeFiles is dhsi_lake_files(): the local paths of the current version's
// Parquet files of the datasets the caller may see. The urls view reads
// read_parquet(dhsi_lake_files()), which DuckDB folds when it binds the
// view for a query, in that query's session: the view's text names no file,
// and a hidden dataset's files are never opened (A3).
type lakeFiles struct{ f URLIndexFuncs }

func (l *lakeFiles) Config() duckdb.ScalarFuncConfig {
	varchar, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	list, _ := duckdb.NewListInfo(varchar)
	return duckdb.ScalarFuncConfig{ResultTypeInfo: list}
}

func (l *lakeFiles) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowContextExecutor: func(ctx context.Context, values []driver.Value) (out any, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("dhsi_lake_files: internal error: %v", r)
			}
		}()
		snap := l.f.snapshot(ctx)
		if l.f.LakePaths == nil {
			return []string{}, nil
		}
		paths, err := l.f.LakePaths(snap, l.f.VisibleDatasetIDs(ctx, snap))
		if err != nil {
			return nil, err
		}
		return paths, nil
	}}
}

// UnknownDataset is domain_urls' answer for a dataset id that the current
// version does not have, or that the caller may not see: the same words as
// the JSON API's 404, and SQLSTATE 42704 (undefined_object) on every path.
type UnknownDataset struct {
	ID      int64
	Version string
}

func (e *UnknownDataset) Error() string {
	return fmt.Sprintf("dataset %d is not in index version %q", e.ID, e.Version)
}

// SQLState is undefined_object.
func (e *UnknownDataset) SQLState() string { return "42704" }

// InvalidArgument is a caller's mistake in an argument (a malformed domain,
// a negative offset): SQLSTATE 22023 (invalid_parameter_value), not an
// internal error, and never logged as one.
type InvalidArgument struct{ Err error }

func (e *InvalidArgument) Error() string { return e.Err.Error() }
func (e *InvalidArgument) Unwrap() error { return e.Err }

// SQLState is invalid_parameter_value.
func (e *InvalidArgument) SQLState() string { return "22023" }

// NotInPrerequisiteState is an error of a call the store's state does not
// allow now (a resharding to another width in progress): SQLSTATE 55000.
type NotInPrerequisiteState struct{ Err error }

func (e *NotInPrerequisiteState) Error() string { return e.Err.Error() }
func (e *NotInPrerequisiteState) Unwrap() error { return e.Err }

// SQLState is object_not_in_prerequisite_state.
func (e *NotInPrerequisiteState) SQLState() string { return "55000" }

// domainDatasetList is domain_dataset_list(domain) → a list of
// {dataset_id, dataset, url_count}: domain_datasets as a scalar, so a
// table of domains joins the index in one statement (issue 17 §3; DuckDB's
// table functions take no lateral arguments):
//
//	SELECT d.domain, x.dataset_id, x.url_count
//	FROM my_domains d, unnest(domain_dataset_list(d.domain)) t(x)
//
// Datasets the caller may not see are left out (access A3), as in
// domain_datasets. An argument that names no registered domain gives NULL,
// not an error, so one bad row does not fail a batch; domain_datasets
// explains what it expected.
type domainDatasetList struct {
	f   URLIndexFuncs
	cfg duckdb.ScalarFuncConfig
}

func newDomainDatasetList(f URLIndexFuncs) (*domainDatasetList, error) {
	t := func(typ duckdb.Type) duckdb.TypeInfo { ti, _ := duckdb.NewTypeInfo(typ); return ti }
	var entries []duckdb.StructEntry
	for _, c := range []struct {
		name string
		typ  duckdb.Type
	}{{"dataset_id", duckdb.TYPE_INTEGER}, {"dataset", duckdb.TYPE_VARCHAR}, {"url_count", duckdb.TYPE_BIGINT}} {
		e, err := duckdb.NewStructEntry(t(c.typ), c.name)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	st, err := duckdb.NewStructInfo(entries[0], entries[1:]...)
	if err != nil {
		return nil, err
	}
	list, err := duckdb.NewListInfo(st)
	if err != nil {
		return nil, err
	}
	// volatile: the answer changes with the index version, so DuckDB must
	// not fold a constant argument into a plan a prepared statement keeps
	return &domainDatasetList{f: f, cfg: duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{t(duckdb.TYPE_VARCHAR)}, ResultTypeInfo: list, Volatile: true}}, nil
}

func (l *domainDatasetList) Config() duckdb.ScalarFuncConfig { return l.cfg }

func (l *domainDatasetList) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{
		// duckdb-go keeps the context a scalar function's plan first ran
		// with for every later execution of that plan (a statement a client
		// keeps prepared), and fails once that context is done. The
		// function needs only the caller's principal, the same for every
		// execution of a session's plan: bind detaches it from the binding
		// statement's lifetime.
		ScalarBinder: func(ctx context.Context, _ []duckdb.ScalarUDFArg) (context.Context, error) {
			return access.WithPrincipal(context.Background(), access.FromContext(ctx)), nil
		},
		RowContextExecutor: l.row,
	}
}

func (l *domainDatasetList) row(ctx context.Context, values []driver.Value) (out any, err error) {
	{
		defer func() {
			if r := recover(); r != nil {
				out, err = nil, fmt.Errorf("domain_dataset_list: internal error: %v", r)
			}
		}()
		arg, ok := values[0].(string)
		if !ok {
			return nil, nil
		}
		d, err := l.f.Domain(arg)
		if err != nil {
			return nil, nil // not a domain: NULL (see the type's comment)
		}
		got, err := l.f.snapshot(ctx).DomainDatasets(d)
		if err != nil {
			return nil, err
		}
		visible := l.f.visibility(ctx)
		res := make([]any, 0, len(got))
		for _, g := range got {
			if !visible.Sees(g.Dataset) {
				continue // A3
			}
			res = append(res, map[string]any{"dataset_id": int32(g.DatasetID), "dataset": g.Dataset, "url_count": int64(g.URLCount)})
		}
		return res, nil
	}
}

// Cells is sqlserver.RowCells: one call per row the server sends.
func (r datasetCounts) Cells(row int, cols []int, dst []sqlserver.NativeValue) {
	d := &r[row]
	for j, c := range cols {
		setDatasetCountCell(&dst[j], d, c)
	}
}

// Cells is sqlserver.RowCells: one call per row the server sends.
func (r urlRows) Cells(row int, cols []int, dst []sqlserver.NativeValue) {
	u := &r[row]
	for j, c := range cols {
		setURLCell(&dst[j], u, c)
	}
}
