package udf

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/duckproj"
)

// Procedures are the side-effecting table functions that SQL reaches with
// CALL: compact_shard('5e'), compact_all() and inbox_put(domain, json). They
// do their work when the statement executes (on the first row requested),
// never when it is prepared, so a client that prepares and then executes
// runs it once.
type Procedures struct {
	// Compiler returns a compiler for the store and its current schema and
	// layout.
	Compiler func(ctx context.Context) (*compiler.Compiler, error)
	// Reshard moves the domain-record index to a new shard width (CALL
	// reshard(n)); nil leaves it unregistered.
	Reshard func(ctx context.Context, width int) (ReshardResult, error)
	// PutInbox lands one record (field → text) for a domain.
	PutInbox func(ctx context.Context, domain string, fields map[string]string) (key string, err error)
	// Changed runs after a procedure wrote to the store, so the server's
	// views show the result at once.
	Changed func(ctx context.Context) error
	// Observe, when set, is told of every shard compaction a CALL ran
	// (metrics).
	Observe func(compiler.Result)
	// Ingest runs an ingest of server-side files into a dataset (CALL
	// ingest); nil leaves it unregistered.
	Ingest func(ctx context.Context, dataset string, files []string, opts IngestOptions) (IngestResult, error)
	// Timeout bounds one call (default 10 minutes).
	Timeout time.Duration
	// Grants, when set, registers grant_dataset and revoke_dataset.
	Grants *access.Book
	// CheckIngestFiles vets the server-side files a non-admin asks CALL
	// ingest to read (nil: only admins may ingest server files).
	CheckIngestFiles func(files []string) error
}

// ProcedureRoles are the procedures and the role each needs; the server's
// statement checks and the procedures themselves both enforce them.
var ProcedureRoles = map[string]access.Role{
	"inbox_put": access.Writer, "compact_shard": access.Writer, "compact_all": access.Writer, "ingest": access.Writer,
	"dhsi_ingest":   access.Writer, // what the ingest macro calls
	"grant_dataset": access.Admin, "revoke_dataset": access.Admin,
	// a resharding rewrites every shard of the store: the operator's call
	"reshard": access.Admin,
}

// bindAs is a procedure's bind: it refuses a caller without the role the
// procedure needs (authoritative whatever way the call was written: CALL,
// SELECT * FROM, a view), and hands the work its principal.
func bindAs(name string, bind func(p access.Principal, args []any) (*lazyRows, error)) func(ctx context.Context, named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
	return func(ctx context.Context, named map[string]any, args ...any) (duckdb.ChunkTableSource, error) {
		if err := access.Require(ctx, ProcedureRoles[name], "run "+name+"()"); err != nil {
			return nil, err
		}
		l, err := bind(access.FromContext(ctx), args)
		if err != nil {
			return nil, err
		}
		l.principal = access.FromContext(ctx)
		return l, nil
	}
}

// ReshardResult is the row of CALL reshard.
type ReshardResult struct {
	From, To                                        int
	Status                                          string // "resharded", "resumed and finished", "already at width N"
	ShardsMoved, RecordsMoved, BatchesMoved, Passes int
	Duration                                        time.Duration
}

// withCompiler runs work with a compiler made for the store's package as
// it is now (compiler.WithCurrentLayout).
func (p Procedures) withCompiler(ctx context.Context, work func(*compiler.Compiler) error) error {
	return compiler.WithCurrentLayout(func() (*compiler.Compiler, error) { return p.Compiler(ctx) }, work)
}

// IngestOptions are CALL ingest's named arguments.
type IngestOptions struct {
	// KeepColumns is keep_columns := 'name[:type],...', dhsi ingest's
	// --keep-columns ("" when not given); Ingest parses it.
	KeepColumns string
}

// IngestResult is the row of CALL ingest.
type IngestResult struct {
	Version, Dataset                    string
	DatasetID                           uint32
	Read, Normalized, Written, Rejected int64
	RejectsKey                          string
}

// RegisterProcedures installs the procedures on db.
func RegisterProcedures(ctx context.Context, db *sql.DB, p Procedures) error {
	if p.Timeout == 0 {
		p.Timeout = 10 * time.Minute
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	varchar, err := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	if err != nil {
		return err
	}
	bigint, err := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	if err != nil {
		return err
	}
	double, err := duckdb.NewTypeInfo(duckdb.TYPE_DOUBLE)
	if err != nil {
		return err
	}
	resultCols := []duckdb.ColumnInfo{
		{Name: "shard", T: varchar}, {Name: "status", T: varchar},
		{Name: "inbox_merged", T: bigint}, {Name: "inbox_kept", T: bigint},
		{Name: "records_before", T: bigint}, {Name: "records_after", T: bigint},
		{Name: "bytes_written", T: bigint}, {Name: "duration_ms", T: double},
		{Name: "errors", T: bigint}, {Name: "error_detail", T: varchar},
	}
	resultRow := func(r compiler.Result) []any {
		var details []string
		for _, e := range r.Errors {
			details = append(details, e.Key+": "+e.Reason)
		}
		return []any{r.Shard, r.Status, int64(r.InboxMerged), int64(r.InboxKept), int64(r.RecordsBefore),
			int64(r.RecordsAfter), r.BytesWritten, float64(r.Duration.Microseconds()) / 1000, int64(len(r.Errors)), strings.Join(details, "\n")}
	}
	compactShard := duckdb.ChunkTableFunction{
		Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{varchar}},
		BindArgumentsContext: bindAs("compact_shard", func(_ access.Principal, args []any) (*lazyRows, error) {
			id, _ := args[0].(string)
			return &lazyRows{cols: resultCols, run: func(ctx context.Context) ([][]any, error) {
				var r compiler.Result
				err := p.withCompiler(ctx, func(c *compiler.Compiler) (err error) {
					r, err = c.CompactShard(ctx, id)
					return err
				})
				if err == nil && p.Observe != nil {
					p.Observe(r)
				}
				if err != nil {
					return nil, err
				}
				if r.Status == compiler.StatusCompacted && p.Changed != nil {
					if err := p.Changed(ctx); err != nil {
						return nil, fmt.Errorf("compacted, but refreshing the views failed: %w", err)
					}
				}
				return [][]any{resultRow(r)}, nil
			}, timeout: p.Timeout}, nil
		}),
	}
	compactAll := duckdb.ChunkTableFunction{
		BindArgumentsContext: bindAs("compact_all", func(_ access.Principal, args []any) (*lazyRows, error) {
			return &lazyRows{cols: resultCols, run: func(ctx context.Context) ([][]any, error) {
				var rs []compiler.Result
				err := p.withCompiler(ctx, func(c *compiler.Compiler) (err error) {
					rs, err = c.CompactAll(ctx)
					return err
				})
				if p.Observe != nil {
					for _, r := range rs {
						p.Observe(r)
					}
				}
				if p.Changed != nil {
					if cerr := p.Changed(ctx); err == nil && cerr != nil {
						err = fmt.Errorf("compacted, but refreshing the views failed: %w", cerr)
					}
				}
				if err != nil {
					return nil, err
				}
				var out [][]any
				for _, r := range rs {
					out = append(out, resultRow(r))
				}
				return out, nil
			}, timeout: p.Timeout}, nil
		}),
	}
	inboxPut := duckdb.ChunkTableFunction{
		Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{varchar, varchar}},
		BindArgumentsContext: bindAs("inbox_put", func(_ access.Principal, args []any) (*lazyRows, error) {
			domain, _ := args[0].(string)
			record, _ := args[1].(string)
			cols := []duckdb.ColumnInfo{{Name: "domain", T: varchar}, {Name: "shard", T: varchar}, {Name: "object_key", T: varchar}}
			return &lazyRows{cols: cols, run: func(ctx context.Context) ([][]any, error) {
				if len(record) > MaxInboxRecordBytes {
					return nil, &InvalidArgument{fmt.Errorf("inbox_put: the record is %d bytes of JSON, more than a record's %d", len(record), MaxInboxRecordBytes)}
				}
				fields, err := recordFields(record)
				if err != nil {
					return nil, err
				}
				d, err := compiler.NormalizeDomain(domain) // the record rule's K1
				if err != nil {
					return nil, &InvalidArgument{err}
				}
				key, err := p.PutInbox(ctx, d, fields)
				if err != nil {
					return nil, err
				}
				if p.Changed != nil {
					if err := p.Changed(ctx); err != nil {
						return nil, fmt.Errorf("written, but refreshing the views failed: %w", err)
					}
				}
				c, err := p.Compiler(ctx)
				if err != nil {
					return nil, err
				}
				return [][]any{{d, c.ShardOf(d), key}}, nil
			}, timeout: p.Timeout}, nil
		}),
	}
	fns := map[string]duckdb.ChunkTableFunction{"compact_shard": compactShard, "compact_all": compactAll, "inbox_put": inboxPut}
	if p.Reshard != nil {
		integer, err := duckdb.NewTypeInfo(duckdb.TYPE_INTEGER)
		if err != nil {
			return err
		}
		cols := []duckdb.ColumnInfo{{Name: "from_width", T: bigint}, {Name: "to_width", T: bigint}, {Name: "status", T: varchar},
			{Name: "shards_moved", T: bigint}, {Name: "records_moved", T: bigint}, {Name: "batches_moved", T: bigint},
			{Name: "passes", T: bigint}, {Name: "duration_ms", T: double}}
		fns["reshard"] = duckdb.ChunkTableFunction{
			Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{integer}},
			BindArgumentsContext: bindAs("reshard", func(_ access.Principal, args []any) (*lazyRows, error) {
				width, ok := args[0].(int32)
				if !ok {
					return nil, &InvalidArgument{fmt.Errorf("reshard(width): width must be an integer from 1 to 4")}
				}
				return &lazyRows{cols: cols, timeout: p.Timeout, run: func(ctx context.Context) ([][]any, error) {
					r, err := p.Reshard(ctx, int(width))
					if err != nil {
						return nil, err
					}
					if p.Changed != nil {
						if err := p.Changed(ctx); err != nil {
							return nil, fmt.Errorf("resharded, but refreshing the views failed: %w", err)
						}
					}
					return [][]any{{int64(r.From), int64(r.To), r.Status, int64(r.ShardsMoved), int64(r.RecordsMoved),
						int64(r.BatchesMoved), int64(r.Passes), float64(r.Duration.Microseconds()) / 1000}}, nil
				}}, nil
			}),
		}
	}
	if p.Ingest != nil {
		// CALL ingest is the table macro IngestMacro over this function,
		// which takes every option positionally: duckdb-go (v2.10505.0)
		// fails the bind of a call that leaves out a named argument of a
		// Go table function ("unsupported data type: INVALID"), and
		// registers one function per name, so ingest(d, f) and
		// ingest(d, f, keep_columns := k) cannot both be Go functions
		fns["dhsi_ingest"] = duckdb.ChunkTableFunction{
			Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{varchar, varchar, varchar}},
			BindArgumentsContext: bindAs("ingest", func(caller access.Principal, args []any) (*lazyRows, error) {
				dataset, _ := args[0].(string)
				paths, _ := args[1].(string)
				var opts IngestOptions
				opts.KeepColumns, _ = args[2].(string)
				cols := []duckdb.ColumnInfo{{Name: "version", T: varchar}, {Name: "dataset", T: varchar}, {Name: "dataset_id", T: bigint},
					{Name: "read", T: bigint}, {Name: "normalized", T: bigint}, {Name: "written", T: bigint}, {Name: "rejected", T: bigint}, {Name: "rejects", T: varchar}}
				return &lazyRows{cols: cols, timeout: p.Timeout, run: func(ctx context.Context) ([][]any, error) {
					var files []string
					for _, f := range strings.Split(paths, ",") {
						if f = strings.TrimSpace(f); f != "" {
							files = append(files, f)
						}
					}
					if len(files) == 0 {
						return nil, fmt.Errorf("ingest: give the server-side files as a comma-separated list, e.g. CALL ingest('crawl', '/data/a.cdxj,/data/b.txt')")
					}
					if !caller.AtLeast(access.Admin) {
						// reading a path of the server is an admin's right;
						// writers may read only where the operator said
						if p.CheckIngestFiles == nil {
							return nil, &access.Denied{Principal: caller, What: "ingest files of the server's file system", Needs: "the admin role, or a directory opened to writers with serve --ingest-dir"}
						}
						if err := p.CheckIngestFiles(files); err != nil {
							return nil, err
						}
					}
					r, err := p.Ingest(ctx, dataset, files, opts)
					if err != nil {
						return nil, err
					}
					return [][]any{{r.Version, r.Dataset, int64(r.DatasetID), r.Read, r.Normalized, r.Written, r.Rejected, r.RejectsKey}}, nil
				}}, nil
			}),
		}
	}
	if p.Grants != nil {
		grantCols := []duckdb.ColumnInfo{{Name: "dataset", T: varchar}, {Name: "grantee", T: varchar}, {Name: "changed", T: bigint}, {Name: "grants_version", T: bigint}}
		for _, name := range []string{"grant_dataset", "revoke_dataset"} {
			fns[name] = duckdb.ChunkTableFunction{
				Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{varchar, varchar}},
				BindArgumentsContext: bindAs(name, func(_ access.Principal, args []any) (*lazyRows, error) {
					dataset, _ := args[0].(string)
					grantee, _ := args[1].(string)
					return &lazyRows{cols: grantCols, timeout: p.Timeout, run: func(ctx context.Context) ([][]any, error) {
						change := p.Grants.Grant
						if name == "revoke_dataset" {
							change = p.Grants.Revoke
						}
						c, err := change(ctx, dataset, grantee)
						if err != nil {
							return nil, err
						}
						changed := int64(0)
						if c.Changed {
							changed = 1
						}
						return [][]any{{dataset, grantee, changed, c.Version}}, nil
					}}, nil
				}),
			}
		}
	}
	for name, f := range fns {
		if err := duckdb.RegisterTableUDF(conn, name, f); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	// the server's database file keeps a macro: replaced at every start,
	// dropped when this server has no ingest
	macro := "DROP MACRO TABLE IF EXISTS ingest"
	if p.Ingest != nil {
		macro = IngestMacro
	}
	if _, err := conn.ExecContext(ctx, macro); err != nil {
		return fmt.Errorf("create the ingest macro: %w", err)
	}
	return nil
}

// IngestMacro is CALL ingest(dataset, files [, keep_columns := 'name[:type],...']):
// dhsi ingest's flags as named arguments, each optional.
const IngestMacro = `CREATE OR REPLACE MACRO ingest(dataset, files, keep_columns := '') AS TABLE
	SELECT * FROM dhsi_ingest(dataset, files, coalesce(keep_columns, ''))`

// MaxInboxRecordBytes bounds one record of inbox_put: until it is
// compacted every server keeps it parsed in its Go heap, at ~2 times its
// size, and ~510 MB of 3 MB records (a review, stop 41) ended a server.
// A domain's record is a few hundred bytes.
const MaxInboxRecordBytes = 1 << 20

// recordFields parses inbox_put's JSON object into field texts.
func recordFields(s string) (map[string]string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf(`inbox_put: the record must be a JSON object such as '{"company_name": "Example Inc", "scraper_version": 3}': %v`, err)
	}
	out := map[string]string{}
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			out[k] = ""
		case string:
			out[k] = x
		case json.Number:
			out[k] = x.String()
		case bool:
			out[k] = fmt.Sprint(x)
		default:
			b, _ := json.Marshal(x)
			out[k] = string(b)
		}
	}
	return out, nil
}

// lazyRows runs its work on the first FillRow: at execution, not at bind.
// A panic in the work becomes the statement's error (package invariant).
type lazyRows struct {
	// principal is who bound the call (access A1): the work runs as them
	principal access.Principal
	cols      []duckdb.ColumnInfo
	run       func(ctx context.Context) ([][]any, error)
	timeout   time.Duration
	rows      [][]any
	done      bool
	next      int
	read      duckproj.Projection
}

func (l *lazyRows) ColumnInfos() []duckdb.ColumnInfo     { return l.cols }
func (l *lazyRows) Cardinality() *duckdb.CardinalityInfo { return nil }

// Init runs at the start of every execution: a prepared CALL executed
// again does its work again.
func (l *lazyRows) Init() { l.done, l.rows, l.next, l.read = false, nil, 0, nil }

// FillChunk emits up to a chunk of rows. It sets values through
// DataChunk.SetValue, which writes NULL for nil (Row.SetRowValue does not
// for every type, e.g. a nil TIMESTAMP panics).
func (l *lazyRows) FillChunk(chunk duckdb.DataChunk) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v\n%s", r, debug.Stack())
		}
	}()
	if !l.done {
		l.done = true
		ctx, cancel := context.WithTimeout(access.WithPrincipal(context.Background(), l.principal), l.timeout)
		defer cancel()
		if l.rows, err = l.run(ctx); err != nil {
			return err
		}
	}
	n := 0
	for ; n < chunkRows && l.next < len(l.rows); n, l.next = n+1, l.next+1 {
		if err := duckproj.SetRow(chunk, n, l.rows[l.next], &l.read); err != nil {
			return err
		}
	}
	return chunk.SetSize(n)
}

// chunkRows is DuckDB's standard vector size.
const chunkRows = 2048
