package udf

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/sqlserver"
)

// URLIndexFuncs are the table functions over the URL index:
//
//	domain_datasets(domain)                          → dataset_id, dataset, url_count
//	domain_urls(domain, dataset_id, offset, limit)   → url_id, url, ts
//	dhsi_datasets()                                  → the dataset registry (view "datasets")
//
// Each call pins the current snapshot once (M4), so a manifest flip during a
// query never mixes versions.
type URLIndexFuncs struct {
	Snapshot func() *catalog.Snapshot
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
	varchar, integer, bigint := t(duckdb.TYPE_VARCHAR), t(duckdb.TYPE_INTEGER), t(duckdb.TYPE_BIGINT)

	// the two lookups: DuckDB's table functions answer any SQL around them,
	// and run the same Run as the server's native path (f.Native)
	fns := map[string]duckdb.ChunkTableFunction{}
	for name, nf := range f.Native() {
		var argTypes []duckdb.TypeInfo
		for _, a := range nf.Args {
			argTypes = append(argTypes, t(a))
		}
		var cols []duckdb.ColumnInfo
		for _, c := range nf.Columns {
			cols = append(cols, duckdb.ColumnInfo{Name: c.Name, T: t(c.Type)})
		}
		fns[name] = duckdb.ChunkTableFunction{
			Config: duckdb.TableFunctionConfig{Arguments: argTypes},
			BindArguments: func(named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
				return &lazyRows{cols: cols, timeout: time.Minute, run: func(ctx context.Context) ([][]any, error) {
					return nf.Run(ctx, args)
				}}, nil
			},
		}
	}
	datasets := duckdb.ChunkTableFunction{
		BindArguments: func(named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
			tstz := t(duckdb.TYPE_TIMESTAMP_TZ)
			cols := []duckdb.ColumnInfo{{Name: "dataset_id", T: integer}, {Name: "dataset", T: varchar}, {Name: "source", T: varchar},
				{Name: "created", T: tstz}, {Name: "updated", T: tstz}, {Name: "urls", T: bigint}, {Name: "domains", T: bigint}, {Name: "files", T: bigint}}
			return &lazyRows{cols: cols, timeout: time.Minute, run: func(ctx context.Context) ([][]any, error) {
				var out [][]any
				for _, d := range f.Snapshot().Datasets.Datasets {
					out = append(out, []any{int32(d.ID), d.Name, d.Source, d.Created, d.Updated, d.URLs, d.Domains, int64(d.Files)})
				}
				return out, nil
			}}, nil
		},
	}
	fns["dhsi_datasets"] = datasets
	for name, fn := range fns {
		if err := duckdb.RegisterTableUDF(conn, name, fn); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	for _, s := range []string{
		"CREATE OR REPLACE VIEW public.datasets AS SELECT * FROM dhsi_datasets()",
		"COMMENT ON VIEW public.datasets IS 'dhsi: the dataset registry of the current index version'",
	} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create view datasets: %w", err)
		}
	}
	return nil
}

// Native returns domain_datasets and domain_urls as the server answers them
// without DuckDB (sqlserver.NativeFunction): their one statement of
// arguments and result columns, which RegisterURLIndex registers in DuckDB
// too.
func (f URLIndexFuncs) Native() map[string]sqlserver.NativeFunction {
	return map[string]sqlserver.NativeFunction{
		"domain_datasets": {
			Args:    []duckdb.Type{duckdb.TYPE_VARCHAR},
			Columns: []sqlserver.NativeColumn{{Name: "dataset_id", Type: duckdb.TYPE_INTEGER}, {Name: "dataset", Type: duckdb.TYPE_VARCHAR}, {Name: "url_count", Type: duckdb.TYPE_BIGINT}},
			Run:     f.DomainDatasetsRows,
		},
		"domain_urls": {
			Args:    []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT, duckdb.TYPE_BIGINT},
			Columns: []sqlserver.NativeColumn{{Name: "url_id", Type: duckdb.TYPE_UBIGINT}, {Name: "url", Type: duckdb.TYPE_VARCHAR}, {Name: "ts", Type: duckdb.TYPE_TIMESTAMP}},
			Run:     f.DomainURLsRows,
		},
	}
}

// DomainDatasetsRows computes domain_datasets(args[0]). The DuckDB table
// function and the server's native path (sqlserver.NativeFunction) both
// call it, so the two always answer alike.
func (f URLIndexFuncs) DomainDatasetsRows(ctx context.Context, args []any) ([][]any, error) {
	if len(args) != 1 || args[0] == nil {
		return nil, nil
	}
	arg, _ := args[0].(string)
	d, err := f.Domain(arg)
	if err != nil {
		return nil, err
	}
	got, err := f.Snapshot().DomainDatasets(d)
	if err != nil {
		return nil, err
	}
	out := make([][]any, len(got))
	for i, g := range got {
		out[i] = []any{int32(g.DatasetID), g.Dataset, int64(g.URLCount)}
	}
	return out, nil
}

// DomainURLsRows computes domain_urls(domain, dataset_id, offset, limit).
func (f URLIndexFuncs) DomainURLsRows(ctx context.Context, args []any) ([][]any, error) {
	if len(args) != 4 || args[0] == nil || args[1] == nil {
		return nil, nil
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
		return nil, fmt.Errorf("domain_urls: limit %d is above the page-size cap of %d; page with offset", lim, catalog.MaxPageSize)
	}
	d, err := f.Domain(arg)
	if err != nil {
		return nil, err
	}
	rows, _, err := f.Snapshot().DomainURLs(ctx, d, uint32(ds), off, lim)
	if err != nil {
		return nil, err
	}
	out := make([][]any, len(rows))
	cells := make([]any, 3*len(rows)) // one allocation for every row's cells
	for i, r := range rows {
		row := cells[3*i : 3*i+3 : 3*i+3]
		row[0], row[1] = r.URLID, r.URL
		if r.HasTS {
			row[2] = r.TS
		}
		out[i] = row
	}
	return out, nil
}
