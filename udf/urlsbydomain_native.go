package udf

import (
	"context"
	"slices"
	"sort"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/sqlserver"
)

// The native path of urls_by_domain and urls_by_domain_dataset: what a
// person writes against the urls view,
//
//	SELECT url, ts FROM urls WHERE domain = $1 AND dataset_id = $2
//	  AND url LIKE 'https://%' ORDER BY url LIMIT 100
//
// rewritten by the server into urls_by_domain_dataset($1, $2) (the point
// lookup), answered without DuckDB when the rest is a shape nativeSelect
// answers (a projection; WHERE of comparisons, LIKE, IS NULL; ORDER BY;
// LIMIT/OFFSET). The rows are the DuckDB table function's (urlsByDomainSource):
// the same runs, read by the same Snapshot.ReadLakeRun, with the same
// grants (A3), the same NULL rules and the same cell values (viewValue);
// TestURLsByDomainAgreesWithTheView compares the two.
//
// Three things make the native rows cheaper than a DuckDB statement beyond
// skipping its prepare and plan:
//   - kept fields are decoded only when the statement reads one of them
//     (sqlserver.NativeFunction.RowsUsing): the URL columns come from the
//     row cache, the fields from the file each time;
//   - rows that are strictly ascending by url (one dataset's runs: L1, L2)
//     say so (sqlserver.SortedRows), so a url condition is a binary search
//     and ORDER BY url LIMIT n stops after n rows;
//   - a run is read only when one of its rows is looked at, and a domain
//     of millions of URLs keeps at most viewRowsBudget rows decoded.

// urlsViewNativeTypes are the kept-field types the native cells carry;
// a view with another (DOUBLE, BOOLEAN) is left to DuckDB.
var urlsViewNativeTypes = map[duckdb.Type]bool{duckdb.TYPE_VARCHAR: true, duckdb.TYPE_INTEGER: true, duckdb.TYPE_BIGINT: true, duckdb.TYPE_TIMESTAMP: true}

// URLsByDomainNative returns urls_by_domain and urls_by_domain_dataset for
// the server's native path, with the columns of the urls view whose kept
// fields are extra; stale tells the server when the view's columns have
// changed since (sqlserver.NativeFunction.Stale). ok is false when a kept
// column has a type the native path does not carry.
func (f URLIndexFuncs) URLsByDomainNative(extra []ViewColumn, stale func() bool) (map[string]sqlserver.NativeFunction, bool) {
	cols := make([]sqlserver.NativeColumn, 0, len(urlsViewColumns)+len(extra))
	for _, c := range urlsViewColumns {
		cols = append(cols, sqlserver.NativeColumn{Name: c.name, Type: c.typ})
	}
	for _, c := range extra {
		t := duckTypeOfSQL(c.SQLType)
		if !urlsViewNativeTypes[t] {
			return nil, false
		}
		cols = append(cols, sqlserver.NativeColumn{Name: c.Name, Type: t})
	}
	make1 := func(narrow bool) sqlserver.NativeFunction {
		args := []duckdb.Type{duckdb.TYPE_VARCHAR}
		cols := cols
		var describe []duckdb.Type
		if narrow {
			// BIGINT, described as the column's INTEGER (urlsByDomainFunction)
			args = append(args, duckdb.TYPE_BIGINT)
			describe = []duckdb.Type{duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER}
			// one dataset's runs: URLs strictly ascending (L1, L2), and
			// their ids (NativeColumn.Unique: a join's key)
			cols = slices.Clone(cols)
			for i := range cols {
				cols[i].Unique = cols[i].Name == "url" || cols[i].Name == "url_id"
			}
		}
		rowsUsing := func(ctx context.Context, args []any, used []bool) (sqlserver.NativeRows, error) {
			return f.urlsByDomainRows(ctx, args, extra, used, narrow)
		}
		return sqlserver.NativeFunction{
			Args:         args,
			DescribeArgs: describe,
			Columns:      cols,
			// the view's domain = NULL (or dataset_id = NULL) keeps no row
			NullMeansNoRows: true,
			RowsUsing:       rowsUsing,
			Run: func(ctx context.Context, args []any) ([][]any, error) {
				all := make([]bool, len(cols))
				for i := range all {
					all[i] = true
				}
				rows, err := rowsUsing(ctx, args, all)
				if err != nil || rows == nil {
					return nil, err
				}
				vals := sqlserver.NativeValues(cols, rows)
				if err := rows.(*viewRows).Err(); err != nil {
					return nil, err
				}
				return vals, nil
			},
			Stale: stale,
		}
	}
	return map[string]sqlserver.NativeFunction{
		URLsByDomainFunction:        make1(false),
		URLsByDomainDatasetFunction: make1(true),
	}, true
}

// urlsByDomainRows lists the runs of urls_by_domain(args[0]), or with
// narrow urls_by_domain_dataset(args[0], args[1]), as urlsByDomainSource
// streams them, and reads each when a cell of it is first asked for
// (viewRows); kept fields only if used names one.
func (f URLIndexFuncs) urlsByDomainRows(ctx context.Context, args []any, extra []ViewColumn, used []bool, narrow bool) (sqlserver.NativeRows, error) {
	domain, ok := args[0].(string)
	if !ok {
		return nil, nil
	}
	withFields := false
	for i := len(urlsViewColumns); i < len(used); i++ {
		withFields = withFields || used[i]
	}
	snap := f.snapshot(ctx)
	visible := f.visibility(ctx)
	var ids []uint32
	if narrow {
		id, ok := narrowDataset(args[1])
		if !ok {
			return nil, nil // no row, as in the view
		}
		ids = []uint32{id}
	} else {
		datasets, err := snap.DomainDatasets(domain)
		if err != nil {
			return nil, err
		}
		for _, d := range datasets {
			ids = append(ids, d.DatasetID)
		}
	}
	// the runs are read after this returns, while the rows are filtered
	// and sent: not under the statement's context, which ends here, but
	// with its principal and values (a run is one row group, 16,384 rows
	// at most, and mostly in the row cache)
	out := &viewRows{ctx: context.WithoutCancel(ctx), snap: snap, domain: domain, extra: extra, sorted: true}
	var last catalog.LakeRun
	for _, id := range ids {
		meta, ok := snap.Datasets.ByID(id)
		if !ok || !visible.Sees(meta.Name) {
			continue // A3: as if it had no row
		}
		runs, err := snap.LakeRuns(domain, id)
		if err != nil {
			return nil, err
		}
		var cols []catalog.Column
		var at []int
		if withFields {
			cols = meta.Columns
			if cols == nil {
				cols = []catalog.Column{}
			}
			at = make([]int, len(extra))
			for i, c := range extra {
				at[i] = catalog.ColumnIndex(meta.Columns, c.Name)
			}
		}
		for _, r := range runs {
			if r.Rows() == 0 {
				continue
			}
			if len(out.runs) > 0 {
				out.sorted = out.sorted && last.Precedes(r)
			}
			out.runs = append(out.runs, viewRun{run: r, datasetID: int64(id), prefix: r.DomainPrefix(), cols: cols, at: at, start: out.n})
			out.n += r.Rows()
			last = r
		}
	}
	return out, nil
}

// viewRowsBudget is how many rows a statement's viewRows keep decoded at
// once: a domain with more (a web-scale host has millions of URLs) has its
// least recently read runs dropped and read again if asked for, so memory
// stays bounded, and ORDER BY url LIMIT n reads the runs it needs only.
const viewRowsBudget = 1 << 18

// viewRows are rows of the urls view, run after run, each run read when a
// cell of it is first asked for (sqlserver.SortedRows, FallibleRows).
type viewRows struct {
	ctx    context.Context
	snap   *catalog.Snapshot
	domain string
	extra  []ViewColumn
	runs   []viewRun
	n      int
	// sorted: the runs are one file's, in row-group order, so their urls
	// are strictly ascending throughout (L1, L2)
	sorted bool
	loaded []int // indexes of the runs read, oldest first
	held   int   // rows of those
	err    error // the first read that failed
	// last is the run of the row Cell read last: statements read rows in
	// order, so the next row is most often in it (a search per cell was a
	// fifth of a GROUP BY's time). A statement reads its rows from one
	// goroutine.
	last int
}

type viewRun struct {
	run       catalog.LakeRun
	datasetID int64
	prefix    string
	cols      []catalog.Column // the dataset's kept columns to read (nil: none)
	at        []int            // at[i]: the index in fields of extra[i], or -1
	start     int              // the index of the run's first row among all rows
	rows      []catalog.URLRow // once read (the row cache's: never modified)
	fields    [][]any          // rows' kept fields, by cols
}

func (v *viewRows) Len() int { return v.n }

func (v *viewRows) SortedBy(col int) bool { return col == 4 && v.sorted }

func (v *viewRows) Err() error { return v.err }

// read decodes run k, dropping the oldest runs held beyond the budget.
func (v *viewRows) read(k int) bool {
	run := &v.runs[k]
	rows, fields, err := v.snap.ReadLakeRun(v.ctx, v.domain, run.run, run.cols)
	if err != nil {
		if v.err == nil {
			v.err = err
		}
		return false
	}
	for len(v.loaded) > 0 && v.held+len(rows) > viewRowsBudget {
		old := &v.runs[v.loaded[0]]
		v.held -= len(old.rows)
		old.rows, old.fields = nil, nil
		v.loaded = v.loaded[1:]
	}
	run.rows, run.fields = rows, fields
	v.loaded = append(v.loaded, k)
	v.held += len(rows)
	return true
}

// runOf is the index of the run holding row.
func (v *viewRows) runOf(row int) int {
	k := v.last
	if k < len(v.runs) && v.runs[k].start <= row && (k+1 == len(v.runs) || row < v.runs[k+1].start) {
		return k
	}
	if k++; k < len(v.runs) && v.runs[k].start <= row && (k+1 == len(v.runs) || row < v.runs[k+1].start) {
		v.last = k
		return k
	}
	k = 0
	if len(v.runs) > 1 {
		k = sort.Search(len(v.runs), func(i int) bool { return v.runs[i].start > row }) - 1
	}
	v.last = k
	return k
}

func (v *viewRows) Cell(row, col int) sqlserver.NativeValue {
	k := v.runOf(row)
	run := &v.runs[k]
	// a run's dataset, prefix and domain are its rows': a GROUP BY
	// dataset_id or a count of them decodes no row
	switch col {
	case 0:
		return sqlserver.NativeInt(run.datasetID)
	case 1:
		return sqlserver.NativeString(run.prefix)
	case 2:
		return sqlserver.NativeString(v.domain)
	}
	if run.rows == nil && !v.read(k) {
		return sqlserver.NativeNull() // the statement fails with v.err
	}
	i := row - run.start
	r := &run.rows[i]
	switch col {
	case 3:
		return urlCell(r, 0) // url_id
	case 4:
		return urlCell(r, 1) // url
	case 5:
		if r.Raw != "" {
			return sqlserver.NativeString(r.Raw)
		}
		return sqlserver.NativeNull()
	case 6:
		return urlCell(r, 2) // ts
	}
	x := col - len(urlsViewColumns)
	if x >= len(v.extra) || run.at == nil {
		return sqlserver.NativeNull()
	}
	k = run.at[x]
	if k < 0 || i >= len(run.fields) || k >= len(run.fields[i]) {
		return sqlserver.NativeNull()
	}
	switch val := viewValue(run.fields[i][k], v.extra[x].SQLType).(type) {
	case string:
		return sqlserver.NativeString(val)
	case int32:
		return sqlserver.NativeInt(int64(val))
	case int64:
		return sqlserver.NativeInt(val)
	case time.Time:
		return sqlserver.NativeTime(val)
	}
	return sqlserver.NativeNull()
}
