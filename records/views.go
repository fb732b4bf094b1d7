package records

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/duckproj"
	"github.com/dhsi/dhsi/tableschema"
)

// The SQL surface of the domain records: table functions that read a view
// (view.go), and the typed views and macro over them. The functions are
// DHSI's own plumbing; people and tools use the views (and domain_record),
// which type every field by datapackage.json:
//
//	dhsi_domain_rows(source)     'all', 'inbox' or 'shards': raw rows
//	dhsi_domain_lookup(domain, is_null)  one domain's latest raw row (view.lookup)
//	dhsi_domain_errors()         domain_errors' rows
//
// A raw row is rowColumns, then every schema field as text.

// TableFunctions are the functions above: DuckDB's bind must never see a
// NULL among their arguments (sqlserver.Config.NullUnsafeFunctions).
var TableFunctions = []string{"dhsi_domain_rows", "dhsi_domain_lookup", "dhsi_domain_errors"}

// rowColumns lead every raw row: where the record came from and its
// ordering keys (computed in Go by the compiler's functions).
var rowColumns = []string{"_source", "_key", "_record", "_updated_at", "_tiebreak"}

// latestWins is the merge rule in SQL (compiler's package comment): one row
// per domain, the latest updated_at, ties broken by TieBreakKey.
const latestWins = "QUALIFY row_number() OVER (PARTITION BY r.domain ORDER BY r._updated_at DESC NULLS LAST, r._tiebreak DESC) = 1"

// createViews (re)creates the views and domain_record for sch.
func (d *Domains) createViews(ctx context.Context, sch *tableschema.Schema) error {
	var typed []string
	for _, f := range sch.Fields {
		cast, err := tableschema.DuckDBCast(f, "r."+quoteIdent(f.Name))
		if f.Name == compiler.DomainField {
			cast, err = "r."+quoteIdent(f.Name), nil // the key passes through untouched
		}
		if err != nil {
			// a format DuckDB cannot express: keep the raw text, and say so
			d.log.Warn("schema field kept as text in SQL", "field", f.Name, "err", err)
			cast = "r." + quoteIdent(f.Name)
		}
		typed = append(typed, cast+" AS "+quoteIdent(f.Name))
	}
	sel := "SELECT " + strings.Join(typed, ", ")
	stmts := []string{
		// the DuckDB mirror of earlier releases: nothing reads it now
		"DROP SCHEMA IF EXISTS dhsi_cache CASCADE",
		"CREATE OR REPLACE VIEW public.domains_shards AS " + sel + " FROM dhsi_domain_rows('shards') r",
		"COMMENT ON VIEW public.domains_shards IS 'dhsi: every record of the compacted shards, typed by datapackage.json'",
		"CREATE OR REPLACE VIEW public.domains_inbox AS " + sel + " FROM dhsi_domain_rows('inbox') r",
		"COMMENT ON VIEW public.domains_inbox IS 'dhsi: every record waiting in the inbox, typed by datapackage.json'",
		"CREATE OR REPLACE VIEW public.domains AS " + sel + " FROM dhsi_domain_rows('all') r " + latestWins,
		"COMMENT ON VIEW public.domains IS 'dhsi: one row per domain; the latest updated_at wins across shards and inbox'",
		// a NULL VARCHAR argument would abort the process in duckdb-go's
		// bind (sqlserver/nullguard.go): the lookup gets '' and a flag
		// dhsi_domain_lookup merges in Go (latest): no window to plan
		"CREATE OR REPLACE MACRO public." + LookupFunction + "(domain) AS TABLE " + sel + " FROM dhsi_domain_lookup(coalesce(domain, ''), domain IS NULL) r",
		"CREATE OR REPLACE VIEW public.domain_errors AS SELECT file, record, field, reason FROM dhsi_domain_errors()",
		"COMMENT ON VIEW public.domain_errors IS 'dhsi: records and files that fail the schema: file, record number, field, reason'",
	}
	for _, s := range stmts {
		if _, err := d.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create the domain views: %w", err)
		}
	}
	return nil
}

// registerFunctions registers the table functions the views read.
func (d *Domains) registerFunctions(ctx context.Context) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	varchar, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	fns := map[string]duckdb.ChunkTableFunction{
		"dhsi_domain_rows": {
			Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{varchar}},
			BindArguments: func(named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
				src, ok := map[string]rowSource{"all": sourceAll, "inbox": sourceInbox, "shards": sourceShards}[fmt.Sprint(args[0])]
				if !ok {
					return nil, fmt.Errorf("dhsi_domain_rows: source must be 'all', 'inbox' or 'shards', not %q", fmt.Sprint(args[0]))
				}
				return d.rowTable(func(ctx context.Context, v *view) (func() ([]driver.Value, error), error) {
					return v.scan(ctx, d.st, src).next, nil
				})
			},
		},
		"dhsi_domain_lookup": {
			Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{varchar, typeInfo(duckdb.TYPE_BOOLEAN)}},
			BindArguments: func(named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
				domain, _ := args[0].(string)
				isNull, _ := args[1].(bool) // domain_record(NULL): no row
				return d.rowTable(func(ctx context.Context, v *view) (func() ([]driver.Value, error), error) {
					if isNull {
						return rowsOf(nil), nil
					}
					rows, err := d.lookup(ctx, v, domain)
					if len(rows) > 1 {
						rows = [][]driver.Value{latest(rows)}
					}
					return rowsOf(rows), err
				})
			},
		},
		"dhsi_domain_errors": {
			BindArguments: func(named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
				cols := []duckdb.ColumnInfo{{Name: "file", T: varchar}, {Name: "record", T: typeInfo(duckdb.TYPE_INTEGER)}, {Name: "field", T: varchar}, {Name: "reason", T: varchar}}
				return &rowTable{cols: cols, start: func(ctx context.Context) (func() ([]driver.Value, error), error) {
					rows, err := d.view.Load().errorRows(ctx, d.st)
					return rowsOf(rows), err
				}}, nil
			},
		},
	}
	for name, f := range fns {
		if err := duckdb.RegisterTableUDF(conn, name, f); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	return nil
}

// lookup is v.lookup, redone once on a fresh view when a resharding moved
// a shard since v was listed.
func (d *Domains) lookup(ctx context.Context, v *view, domain string) ([][]driver.Value, error) {
	rows, err := v.lookup(ctx, domain)
	if errors.Is(err, errLayoutMoved) {
		if err := d.Refresh(ctx); err != nil {
			return nil, err
		}
		rows, err = d.view.Load().lookup(ctx, domain)
	}
	return rows, err
}

// latest is latestWins in Go, for one domain's rows: the latest
// _updated_at (a row without one loses), ties to the greater _tiebreak.
func latest(rows [][]driver.Value) []driver.Value {
	const updated, tiebreak = 3, 4 // their places in rowColumns
	best := rows[0]
	for _, r := range rows[1:] {
		bt, bok := best[updated].(time.Time)
		rt, rok := r[updated].(time.Time)
		switch {
		case rok != bok:
			if rok {
				best = r
			}
		case rok && !rt.Equal(bt):
			if rt.After(bt) {
				best = r
			}
		case r[tiebreak].(string) > best[tiebreak].(string):
			best = r
		}
	}
	return best
}

func typeInfo(t duckdb.Type) duckdb.TypeInfo {
	ti, _ := duckdb.NewTypeInfo(t)
	return ti
}

// rowTable is a raw-row table function over the view current at bind.
func (d *Domains) rowTable(start func(context.Context, *view) (func() ([]driver.Value, error), error)) (duckdb.ChunkTableSource, error) {
	v := d.view.Load()
	varchar := typeInfo(duckdb.TYPE_VARCHAR)
	cols := []duckdb.ColumnInfo{{Name: "_source", T: varchar}, {Name: "_key", T: varchar}, {Name: "_record", T: typeInfo(duckdb.TYPE_INTEGER)},
		{Name: "_updated_at", T: typeInfo(duckdb.TYPE_TIMESTAMP_TZ)}, {Name: "_tiebreak", T: varchar}}
	for _, f := range v.fields {
		cols = append(cols, duckdb.ColumnInfo{Name: f, T: varchar})
	}
	fields := v.fields
	return &rowTable{cols: cols, start: func(ctx context.Context) (func() ([]driver.Value, error), error) {
		// each execution reads the view current then (a kept prepared
		// statement sees later refreshes), bound to the fields it has
		now := d.view.Load()
		if !slices.Equal(now.fields, fields) {
			return nil, errors.New("the domain record schema (datapackage.json) changed since the statement was prepared; prepare it again")
		}
		return start(ctx, now)
	}}, nil
}

func rowsOf(rows [][]driver.Value) func() ([]driver.Value, error) {
	return func() ([]driver.Value, error) {
		if len(rows) == 0 {
			return nil, nil
		}
		r := rows[0]
		rows = rows[1:]
		return r, nil
	}
}

// rowTable streams rows from next, started at the first FillChunk of each
// execution. A panic becomes the statement's error: a Go panic inside
// DuckDB would end the process.
type rowTable struct {
	cols  []duckdb.ColumnInfo
	start func(ctx context.Context) (func() ([]driver.Value, error), error)
	next  func() ([]driver.Value, error)
	done  bool
	read  duckproj.Projection
}

func (t *rowTable) ColumnInfos() []duckdb.ColumnInfo     { return t.cols }
func (t *rowTable) Cardinality() *duckdb.CardinalityInfo { return nil }
func (t *rowTable) Init()                                { t.next, t.done, t.read = nil, false, nil }

func (t *rowTable) FillChunk(chunk duckdb.DataChunk) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v\n%s", r, debug.Stack())
		}
	}()
	if t.done {
		return chunk.SetSize(0)
	}
	if t.next == nil {
		if t.next, err = t.start(context.Background()); err != nil {
			return err
		}
	}
	n := 0
	for ; n < chunkRows; n++ {
		row, err := t.next()
		if err != nil {
			return err
		}
		if row == nil {
			t.done = true
			break
		}
		if err := duckproj.SetRow(chunk, n, row, &t.read); err != nil {
			return err
		}
	}
	return chunk.SetSize(n)
}

// chunkRows is DuckDB's standard vector size.
const chunkRows = 2048

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// LookupFunction is the table macro that answers domains WHERE domain = d
// from the one shard d hashes to: sqlserver rewrites that shape into it
// (pgsql.PointLookups), and anyone may call it.
const LookupFunction = "domain_record"
