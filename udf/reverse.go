package udf

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/internal/duckproj"
	"github.com/dhsi/dhsi/sqlserver"
)

// The reverse lookups (issue 17 §3), from each dataset's Roaring bitmap of
// domain ids (dataset_to_domains.roar, docs/format/dsdr.md):
//
//	dataset_domains(dataset_id)              → domain, url_count
//	dataset_domains_set(a, op, b)            → domain, url_count_a, url_count_b
//
// dataset_domains lists every domain of a dataset; dataset_domains_set
// combines two datasets' domains with one Roaring operation: 'and' (in
// both; also 'intersect'), 'or' (in either; 'union'), 'andnot' (in a, not
// in b; 'except') or 'xor' (in exactly one). One function with the
// operation as an argument rather than four: one name to find in \df, the
// operations spelled as Roaring and SQL spell them, and a mistyped
// operation answers with the list of valid ones.
//
// Rows come in domain order (byte-wise, the dictionary's), from one index
// version per call (M4). url_count is the exact number of the domain's URLs
// in the dataset, from the postings, as domain_datasets counts it; in a set
// operation url_count_a and url_count_b are NULL where the domain is not in
// that dataset.
//
// Access (A3): each dataset named is checked before its bitmap is read; a
// dataset the caller may not see answers exactly as one that does not exist
// (UnknownDataset, SQLSTATE 42704), whichever side of the operation it is
// on, so no result ever depends on a hidden dataset's domains.

var (
	// a dataset's domains, each once (sqlserver.NativeColumn.Unique)
	datasetDomainsColumns    = []sqlserver.NativeColumn{{Name: "domain", Type: duckdb.TYPE_VARCHAR, Unique: true}, {Name: "url_count", Type: duckdb.TYPE_BIGINT}}
	datasetDomainsSetColumns = []sqlserver.NativeColumn{{Name: "domain", Type: duckdb.TYPE_VARCHAR, Unique: true}, {Name: "url_count_a", Type: duckdb.TYPE_BIGINT}, {Name: "url_count_b", Type: duckdb.TYPE_BIGINT}}
)

// setOps are dataset_domains_set's operations, by every name it accepts.
var setOps = map[string]func(a, b *roaring.Bitmap) *roaring.Bitmap{
	"and": roaring.And, "intersect": roaring.And,
	"or": roaring.Or, "union": roaring.Or,
	"andnot": roaring.AndNot, "except": roaring.AndNot,
	"xor": roaring.Xor,
}

// reverseCall is one call of dataset_domains (one operand) or
// dataset_domains_set (two), resolved against one snapshot: the answer's
// domain ids and the operands they came from.
type reverseCall struct {
	snap     *catalog.Snapshot
	ids      *roaring.Bitmap
	operands []*roaring.Bitmap
	datasets []uint32
}

// resolveReverse checks the arguments of dataset_domains (1) or
// dataset_domains_set (3) and computes the answer's domain ids; nil for no
// rows to compute (a NULL argument).
func (f URLIndexFuncs) resolveReverse(ctx context.Context, args []any) (*reverseCall, error) {
	var ids []any
	var op func(a, b *roaring.Bitmap) *roaring.Bitmap
	switch len(args) {
	case 1:
		ids = args
	case 3:
		name, ok := args[1].(string)
		if !ok {
			return nil, nil
		}
		if op = setOps[strings.ToLower(strings.TrimSpace(name))]; op == nil {
			if len(name) > 40 {
				name = name[:40] + "…"
			}
			return nil, &InvalidArgument{fmt.Errorf("dataset_domains_set: operation %q: want 'and', 'or', 'andnot' or 'xor' (or 'intersect', 'union', 'except')", name)}
		}
		ids = []any{args[0], args[2]}
	default:
		return nil, nil
	}
	c := &reverseCall{snap: f.snapshot(ctx)}
	visible := f.visibility(ctx)
	for _, a := range ids {
		id, ok := a.(int32)
		if !ok {
			return nil, nil
		}
		// A3: decided before the dataset's bitmap is read, and a hidden
		// dataset answers exactly as an id that does not exist
		meta, known := c.snap.Datasets.ByID(uint32(id))
		if id < 0 || !known || !visible.Sees(meta.Name) {
			return nil, &UnknownDataset{ID: int64(id), Version: c.snap.Version.Version}
		}
		c.datasets = append(c.datasets, uint32(id))
	}
	for _, id := range c.datasets {
		bm, ok, err := c.snap.DatasetDomainIDs(ctx, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &UnknownDataset{ID: int64(id), Version: c.snap.Version.Version}
		}
		c.operands = append(c.operands, bm)
	}
	if op == nil {
		c.ids = c.operands[0]
	} else {
		c.ids = op(c.operands[0], c.operands[1])
	}
	return c, nil
}

// fill computes the rows of domain ids: each domain and, per operand, its
// URL count in that dataset (-1 where the domain is not in it: NULL). A
// count the statement does not read (!need[k]) is not looked up: the
// postings lookup per domain is most of a call's work.
func (c *reverseCall) fill(ids []uint32, domains []string, counts [][]int64, need []bool) error {
	for i, id := range ids {
		d, err := c.snap.DomainName(id)
		if err != nil {
			return err
		}
		domains[i] = d
		for k, bm := range c.operands {
			counts[k][i] = -1
			if !need[k] || len(c.operands) > 1 && !bm.Contains(id) {
				continue
			}
			n, err := c.snap.URLCount(d, c.datasets[k])
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("domain %q is in dataset %d's domains but has no URL in its postings (index version %s)", d, c.datasets[k], c.snap.Version.Version)
			}
			counts[k][i] = int64(n)
		}
	}
	return nil
}

// reverseRows are the rows of a reverseCall, typed (sqlserver.NativeRows):
// the ids and counts computed up front, so an error is the statement's,
// and each domain name read from the dictionary as its cell is encoded.
type reverseRows struct {
	c      *reverseCall
	ids    []uint32
	counts [][]int64
}

func (r *reverseRows) Len() int { return len(r.ids) }

func (r *reverseRows) Cell(row, col int) sqlserver.NativeValue {
	if col == 0 {
		d, err := r.c.snap.DomainName(r.ids[row])
		if err != nil {
			return sqlserver.NativeNull() // not reached: fill read every id
		}
		return sqlserver.NativeString(d)
	}
	if n := r.counts[col-1][row]; n >= 0 {
		return sqlserver.NativeInt(n)
	}
	return sqlserver.NativeNull()
}

// reverseNativeRows computes a reverse call's rows for the native path.
func (f URLIndexFuncs) reverseNativeRows(ctx context.Context, args []any) (sqlserver.NativeRows, error) {
	return f.reverseNativeRowsUsing(ctx, args, nil)
}

// needCounts says which operands' url_count columns a statement reads,
// from the columns it uses (domain, then a count per operand; nil: all).
func needCounts(used []bool, operands int) []bool {
	need := make([]bool, operands)
	for k := range need {
		need[k] = used == nil || 1+k < len(used) && used[1+k]
	}
	return need
}

// reverseNativeRowsUsing is reverseNativeRows computing only the counts
// the statement reads (sqlserver.NativeFunction.RowsUsing).
func (f URLIndexFuncs) reverseNativeRowsUsing(ctx context.Context, args []any, used []bool) (sqlserver.NativeRows, error) {
	c, err := f.resolveReverse(ctx, args)
	if err != nil || c == nil {
		return nil, err
	}
	if n := c.ids.GetCardinality(); n > math.MaxInt32 || sqlserver.NativeRowsOver(ctx, int(n)*(1+len(c.operands))) {
		// the server's N1, which counts 8-byte positions: an id and a
		// count per operand a row. DuckDB's table function streams them
		// instead
		return nil, sqlserver.ErrNativeTooLarge
	}
	need := needCounts(used, len(c.operands))
	r := &reverseRows{c: c, ids: c.ids.ToArray(), counts: make([][]int64, len(c.operands))}
	for k := range r.counts {
		r.counts[k] = make([]int64, len(r.ids))
	}
	domains := make([]string, min(len(r.ids), chunkRows))
	for lo := 0; lo < len(r.ids); lo += chunkRows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+chunkRows, len(r.ids))
		sub := make([][]int64, len(r.counts))
		for k := range sub {
			sub[k] = r.counts[k][lo:hi]
		}
		if err := c.fill(r.ids[lo:hi], domains[:hi-lo], sub, need); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// reverseRunFor computes dataset_domains or dataset_domains_set boxed, as
// sqlserver.NativeFunction.Run wants them (cols are the function's).
func (f URLIndexFuncs) reverseRunFor(cols []sqlserver.NativeColumn) func(ctx context.Context, args []any) ([][]any, error) {
	return func(ctx context.Context, args []any) ([][]any, error) {
		rows, err := f.reverseNativeRows(ctx, args)
		if err != nil || rows == nil {
			return nil, err
		}
		return sqlserver.NativeValues(cols, rows), nil
	}
}

// reverseNative are the two functions as the server's native path answers
// them (see Native).
func (f URLIndexFuncs) reverseNative() map[string]sqlserver.NativeFunction {
	return map[string]sqlserver.NativeFunction{
		"dataset_domains": {
			Args:      []duckdb.Type{duckdb.TYPE_INTEGER},
			Columns:   datasetDomainsColumns,
			Run:       f.reverseRunFor(datasetDomainsColumns),
			Rows:      f.reverseNativeRows,
			RowsUsing: f.reverseNativeRowsUsing,
		},
		"dataset_domains_set": {
			Args:      []duckdb.Type{duckdb.TYPE_INTEGER, duckdb.TYPE_VARCHAR, duckdb.TYPE_INTEGER},
			Columns:   datasetDomainsSetColumns,
			Run:       f.reverseRunFor(datasetDomainsSetColumns),
			Rows:      f.reverseNativeRows,
			RowsUsing: f.reverseNativeRowsUsing,
		},
	}
}

// reverseTableFunction is one of the two as a DuckDB table function that
// streams: a chunk of rows at a time, so a dataset of millions of domains
// never has its rows boxed at once. A URL count DuckDB does not read
// (SELECT domain FROM dataset_domains(1), count(*)) is not looked up
// (duckproj.Probe).
func (f URLIndexFuncs) reverseTableFunction(nf sqlserver.NativeFunction, t func(duckdb.Type) duckdb.TypeInfo) duckdb.ChunkTableFunction {
	argTypes, cols := duckSignature(nf, t)
	return duckdb.ChunkTableFunction{
		Config: duckdb.TableFunctionConfig{Arguments: argTypes},
		BindArgumentsContext: func(ctx context.Context, named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
			return &reverseSource{f: f, cols: cols, args: args, principal: access.FromContext(ctx)}, nil
		},
	}
}

// reverseSource streams a reverse call's rows into DuckDB. Each execution
// (Init) resolves the call again, against the snapshot current then.
type reverseSource struct {
	f         URLIndexFuncs
	cols      []duckdb.ColumnInfo
	args      []any
	principal access.Principal // who bound the call (access A1)

	started bool
	c       *reverseCall
	it      roaring.ManyIntIterable
	need    []bool // the counts DuckDB reads
	ids     []uint32
	domains []string
	counts  [][]int64
}

func (s *reverseSource) ColumnInfos() []duckdb.ColumnInfo     { return s.cols }
func (s *reverseSource) Cardinality() *duckdb.CardinalityInfo { return nil }

func (s *reverseSource) Init() { s.started, s.c, s.it = false, nil, nil }

func (s *reverseSource) FillChunk(chunk duckdb.DataChunk) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v\n%s", r, debug.Stack())
		}
	}()
	if !s.started {
		s.started = true
		ctx, cancel := context.WithTimeout(access.WithPrincipal(context.Background(), s.principal), time.Minute)
		defer cancel()
		if s.c, err = s.f.resolveReverse(ctx, s.args); err != nil {
			return err
		}
		if s.c != nil {
			s.it = s.c.ids.ManyIterator()
			s.ids = make([]uint32, chunkRows)
			s.domains = make([]string, chunkRows)
			s.counts = make([][]int64, len(s.c.operands))
			s.need = make([]bool, len(s.c.operands))
			for k := range s.counts {
				s.counts[k] = make([]int64, chunkRows)
				if s.need[k], err = duckproj.Probe(chunk, 1+k, duckdb.TYPE_BIGINT); err != nil {
					return err
				}
			}
		}
	}
	if s.c == nil {
		return chunk.SetSize(0)
	}
	n := s.it.NextMany(s.ids)
	if err := s.c.fill(s.ids[:n], s.domains[:n], s.counts, s.need); err != nil {
		return err
	}
	for i := range n {
		if err := chunk.SetValue(0, i, s.domains[i]); err != nil {
			return err
		}
		for k := range s.counts {
			if !s.need[k] {
				continue
			}
			var v any
			if c := s.counts[k][i]; c >= 0 {
				v = c
			}
			if err := chunk.SetValue(1+k, i, v); err != nil {
				return err
			}
		}
	}
	return chunk.SetSize(n)
}
