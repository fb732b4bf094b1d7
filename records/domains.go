package records

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/tableschema"
)

// Domains serves the domain-record index (issue 3) to SQL. It mirrors the
// shards and the pending inbox into DuckDB tables of raw text, refreshed
// from the store, and defines typed views over them:
//
//	domains          one row per domain: latest updated_at wins across shards
//	                 and inbox, ties broken by compiler.TieBreakKey
//	domains_shards   every shard record, typed
//	domains_inbox    every pending inbox record, typed
//	domain_errors    (file, record, field, reason) for what fails the schema
//
// Invariants:
//   - The mirror holds, for every object key it lists, exactly the rows of
//     the object version whose ETag it records (dhsi_cache.objects): a
//     refresh replaces an object's rows and its ETag in one transaction.
//   - R1, reads never lose a record (issue 15 §2): a refresh observes the
//     whole inbox (lists it, fetches what changed) before it lists the
//     shards, and applies both in one transaction. By compiler I3 an inbox
//     object is retired (tombstoned or deleted) only after the shard holding
//     its record is durable, so an inbox record the refresh finds gone is in
//     a shard version the later shard listing returns (or a newer one, which
//     keeps the record or a newer one for its domain). Rows of an inbox
//     object therefore leave the mirror only in the transaction that brings
//     in the shard that holds them, and every domain stays visible, at a
//     version never older than before. Listing indexes/domains/ in one pass
//     would break this: inbox keys that sort after "shards/" are listed
//     after the shards.
//   - Ordering keys are computed in Go with the compiler's own functions
//     (compiler.ParseTimestamp, compiler.TieBreakKey), so the view and the
//     compiler always pick the same record.
//
// The DuckDB file is a cache: deleting it loses nothing; the next refresh
// rebuilds it from the store.
type Domains struct {
	st  store.Store
	db  *sql.DB
	log *slog.Logger

	mu     sync.Mutex // serialises Refresh; guards the fields below
	pkg    *tableschema.Package
	rule   compiler.Rule // the record rule: what the views serve from the inbox
	layout shard.Layout  // the recorded shard layout (batch objects' shards)
	fields []string      // schema field names, in order (mirror columns)
	known  map[string]store.ETag
}

// SchemaFields returns the current schema's field names.
func (d *Domains) SchemaFields() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.fields...)
}

// Package returns the current data package.
func (d *Domains) Package() *tableschema.Package {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pkg
}

// LoadPackage reads indexes/domains/datapackage.json, writing the design's
// default (create-only, so concurrent servers agree) when the store has none.
func LoadPackage(ctx context.Context, st store.Store) (*tableschema.Package, error) {
	b, _, err := store.ReadAll(ctx, st, compiler.SchemaKey)
	if errors.Is(err, store.ErrNotFound) {
		body, err := defaultPackageBody()
		if err != nil {
			return nil, err
		}
		if _, err := st.Put(ctx, compiler.SchemaKey, bytes.NewReader(body), store.Cond{IfNoneMatch: true}); err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("write default %s: %w", compiler.SchemaKey, err)
		}
		b, _, err = store.ReadAll(ctx, st, compiler.SchemaKey)
		if err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", compiler.SchemaKey, err)
	}
	return parsePackage(b)
}

// ReadPackage is LoadPackage for readers that must not write (dhsi
// verify): a store without datapackage.json gets the default LoadPackage
// would write, without writing it.
func ReadPackage(ctx context.Context, st store.Store) (*tableschema.Package, error) {
	b, _, err := store.ReadAll(ctx, st, compiler.SchemaKey)
	if errors.Is(err, store.ErrNotFound) {
		if b, err = defaultPackageBody(); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", compiler.SchemaKey, err)
	}
	return parsePackage(b)
}

// defaultPackageBody is the design's default datapackage.json, its shard
// width recorded.
func defaultPackageBody() ([]byte, error) {
	def := tableschema.DefaultDomainPackage()
	rec, _ := json.Marshal(layoutDoc{ShardWidth: shard.DefaultWidth})
	if def.Extra == nil {
		def.Extra = map[string]json.RawMessage{}
	}
	def.Extra[layoutProperty] = rec
	return json.MarshalIndent(def, "", "  ")
}

func parsePackage(b []byte) (*tableschema.Package, error) {
	pkg, err := tableschema.ParsePackage(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", compiler.SchemaKey, err)
	}
	if len(pkg.Resources) == 0 || pkg.Resources[0].Schema == nil {
		return nil, fmt.Errorf("%s: resources[0].schema: missing", compiler.SchemaKey)
	}
	return pkg, nil
}

// layoutProperty is the custom datapackage.json property that records how
// the index is sharded: {"dhsi": {"shard_width": 2}}. The width is a
// recorded parameter, never a constant, so an index can be resharded.
const layoutProperty = "dhsi"

type layoutDoc struct {
	ShardWidth int `json:"shard_width"`
}

// LayoutOf returns the shard layout recorded in pkg, or the default for a
// package that records none (every index written before it was recorded).
func LayoutOf(pkg *tableschema.Package) (shard.Layout, error) {
	raw, ok := pkg.Extra[layoutProperty]
	if !ok {
		return shard.Default(), nil
	}
	var doc layoutDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return shard.Layout{}, fmt.Errorf("%s: %s: %w", compiler.SchemaKey, layoutProperty, err)
	}
	if doc.ShardWidth == 0 {
		return shard.Default(), nil
	}
	l := shard.Layout{Width: doc.ShardWidth}
	if err := l.Validate(); err != nil {
		return shard.Layout{}, fmt.Errorf("%s: %s.shard_width: %w", compiler.SchemaKey, layoutProperty, err)
	}
	return l, nil
}

// CompilerConfig returns the compiler configuration a store's package
// implies: its schema's fields and its shard layout.
func CompilerConfig(pkg *tableschema.Package) (compiler.Config, error) {
	sch, err := SchemaOf(pkg)
	if err != nil {
		return compiler.Config{}, err
	}
	layout, err := LayoutOf(pkg)
	if err != nil {
		return compiler.Config{}, err
	}
	return compiler.Config{SchemaFields: sch.FieldNames(), Schema: sch, Layout: layout}, nil
}

// SchemaOf returns the schema DHSI types shard records with: the first
// resource's, which must have domain and updated_at fields.
func SchemaOf(pkg *tableschema.Package) (*tableschema.Schema, error) {
	s := pkg.Resources[0].Schema
	var names []string
	for _, f := range s.Fields {
		names = append(names, f.Name)
	}
	for _, want := range []string{compiler.DomainField, compiler.UpdatedAtField} {
		if indexOf(names, want) < 0 {
			return nil, fmt.Errorf("%s: resources[0].schema.fields: no %q field", compiler.SchemaKey, want)
		}
	}
	return s, nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// OpenDomains loads the schema, creates the mirror and the views, and runs a
// first refresh.
func OpenDomains(ctx context.Context, st store.Store, db *sql.DB, log *slog.Logger) (*Domains, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pkg, err := LoadPackage(ctx, st)
	if err != nil {
		return nil, err
	}
	d := &Domains{st: st, db: db, log: log, known: map[string]store.ETag{}}
	if err := d.install(ctx, pkg); err != nil {
		return nil, err
	}
	if err := d.Refresh(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

const mirrorSchema = "dhsi_cache"

// install (re)creates the mirror tables for pkg's schema and the views.
func (d *Domains) install(ctx context.Context, pkg *tableschema.Package) error {
	sch, err := SchemaOf(pkg)
	if err != nil {
		return err
	}
	var fields, cols, typed []string
	for _, f := range sch.Fields {
		fields = append(fields, f.Name)
		cols = append(cols, quoteIdent(f.Name)+" VARCHAR")
		cast, err := tableschema.DuckDBCast(f, "r."+quoteIdent(f.Name))
		if f.Name == compiler.DomainField {
			// the key passes through untouched, so WHERE domain = $1 reaches
			// the window's partition key and the ART index
			cast, err = "r."+quoteIdent(f.Name), nil
		}
		if err != nil {
			// a format DuckDB cannot express: keep the raw text, and say so
			d.log.Warn("schema field kept as text in SQL", "field", f.Name, "err", err)
			cast = "r." + quoteIdent(f.Name)
		}
		typed = append(typed, cast+" AS "+quoteIdent(f.Name))
	}
	sig := strings.Join(cols, ", ")
	stmts := []string{
		"CREATE SCHEMA IF NOT EXISTS " + mirrorSchema,
		"CREATE TABLE IF NOT EXISTS " + mirrorSchema + ".meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
	}
	for _, s := range stmts {
		if _, err := d.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create mirror: %w", err)
		}
	}
	var oldSig string
	_ = d.db.QueryRowContext(ctx, "SELECT value FROM "+mirrorSchema+".meta WHERE key = 'columns'").Scan(&oldSig)
	if oldSig != sig {
		// the schema changed (or first start): rebuild the mirror from the store
		for _, s := range []string{
			"DROP TABLE IF EXISTS " + mirrorSchema + ".rows",
			"DROP TABLE IF EXISTS " + mirrorSchema + ".objects",
			"DROP TABLE IF EXISTS " + mirrorSchema + ".errors",
			"CREATE TABLE " + mirrorSchema + ".rows (_source VARCHAR, _key VARCHAR, _record INTEGER, _updated_at TIMESTAMPTZ, _tiebreak VARCHAR, " + sig + ")",
			// point lookups (WHERE domain = $1) use the ART index: the mirror is
			// appended shard by shard, so zone maps cannot prune by domain
			"CREATE INDEX rows_domain ON " + mirrorSchema + ".rows (domain)",
			"CREATE TABLE " + mirrorSchema + ".objects (key VARCHAR PRIMARY KEY, etag VARCHAR)",
			"CREATE TABLE " + mirrorSchema + ".errors (file VARCHAR, record INTEGER, field VARCHAR, reason VARCHAR)",
			"INSERT OR REPLACE INTO " + mirrorSchema + ".meta VALUES ('columns', " + quoteLiteral(sig) + ")",
		} {
			if _, err := d.db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("create mirror: %w", err)
			}
		}
	}
	known := map[string]store.ETag{}
	rows, err := d.db.QueryContext(ctx, "SELECT key, etag FROM "+mirrorSchema+".objects")
	if err != nil {
		return err
	}
	for rows.Next() {
		var k, e string
		if err := rows.Scan(&k, &e); err != nil {
			rows.Close()
			return err
		}
		known[k] = store.ETag(e)
	}
	rows.Close()

	sel := strings.Join(typed, ", ")
	views := []struct{ name, sql, comment string }{
		{"domains_shards", "SELECT " + sel + " FROM " + mirrorSchema + ".rows r WHERE r._source = 'shard'",
			"dhsi: every record of the compacted shards, typed by datapackage.json"},
		{"domains_inbox", "SELECT " + sel + " FROM " + mirrorSchema + ".rows r WHERE r._source = 'inbox'",
			"dhsi: every record waiting in the inbox, typed by datapackage.json"},
		// no filter on _source here: every mirror row is a shard or an inbox
		// record, and a second filter would keep DuckDB from an index scan
		{"domains", "SELECT " + sel + " FROM " + mirrorSchema + ".rows r " +
			"QUALIFY row_number() OVER (PARTITION BY r.domain ORDER BY r._updated_at DESC NULLS LAST, r._tiebreak DESC) = 1",
			"dhsi: one row per domain; the latest updated_at wins across shards and inbox"},
		{"domain_errors", "SELECT file, record, field, reason FROM " + mirrorSchema + ".errors",
			"dhsi: records and files that fail the schema: file, record number, field, reason"},
	}
	for _, v := range views {
		for _, s := range []string{
			"CREATE OR REPLACE VIEW public." + v.name + " AS " + v.sql,
			"COMMENT ON VIEW public." + v.name + " IS " + quoteLiteral(v.comment),
		} {
			if _, err := d.db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("create view %s: %w", v.name, err)
			}
		}
	}
	rule, err := compiler.NewRule(sch)
	if err != nil {
		return err
	}
	layout, err := LayoutOf(pkg)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.pkg, d.rule, d.layout, d.fields, d.known = pkg, rule, layout, fields, known
	d.mu.Unlock()
	return nil
}

// Refresh brings the mirror up to date with the store, in the order R1
// requires: the inbox (listed, changed objects fetched), then the shards
// (listed, changed objects fetched), then one transaction that applies both.
func (d *Domains) Refresh(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	inboxLoaded, inboxRemoved, err := d.refreshPart(ctx, compiler.InboxPrefix, "inbox")
	if err != nil {
		return err
	}
	// R1: only now, after every inbox object was observed, the shards
	shardLoaded, shardRemoved, err := d.refreshPart(ctx, compiler.ShardPrefix, "shard")
	if err != nil {
		return err
	}
	loaded := append(inboxLoaded, shardLoaded...)
	removed := append(inboxRemoved, shardRemoved...)
	if len(loaded) == 0 && len(removed) == 0 {
		return nil
	}
	if err := d.apply(ctx, loaded, removed); err != nil {
		return err
	}
	for _, k := range removed {
		delete(d.known, k)
	}
	for _, o := range loaded {
		if o.etag == "" {
			delete(d.known, o.key) // gone since the listing
		} else {
			d.known[o.key] = o.etag
		}
	}
	return nil
}

// refreshPart lists prefix and fetches the objects of one source ("inbox"
// or "shard") whose ETag changed; it returns them and the keys that are
// gone. A shard that vanishes between listing and fetch fails the refresh
// (the mirror keeps its rows until a refresh sees a consistent store).
func (d *Domains) refreshPart(ctx context.Context, prefix, source string) (loaded []loadedObject, removed []string, err error) {
	current := map[string]store.ETag{}
	err = d.st.List(ctx, prefix, func(a store.Attrs) error {
		if sourceOf(a.Key) == source {
			current[a.Key] = a.ETag
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	var changed []string
	for k, e := range current {
		if d.known[k] != e {
			changed = append(changed, k)
		}
	}
	for k := range d.known {
		if _, ok := current[k]; !ok && sourceOf(k) == source {
			removed = append(removed, k)
		}
	}
	sort.Strings(changed)
	loaded, err = d.fetch(ctx, changed)
	if err != nil {
		return nil, nil, err
	}
	if source == "shard" {
		for _, o := range loaded {
			if o.etag == "" {
				return nil, nil, fmt.Errorf("read %s: listed, then gone: the store is changing its shards; the next refresh retries", o.key)
			}
		}
	}
	return loaded, removed, nil
}

// sourceOf classifies a key under indexes/domains/: "shard", "inbox" or "".
func sourceOf(key string) string {
	if compiler.IsPendingKey(key) {
		return "inbox" // a domain's inbox object, or a batch object
	}
	if _, ok := compiler.ShardOfKey(key); ok {
		return "shard"
	}
	return ""
}

type loadedObject struct {
	key    string
	etag   store.ETag
	rows   [][]driver.Value
	errors [][]driver.Value
}

// fetch reads and parses objects, 8 at a time.
func (d *Domains) fetch(ctx context.Context, keys []string) ([]loadedObject, error) {
	out := make([]loadedObject, len(keys))
	sch, err := SchemaOf(d.pkg)
	if err != nil {
		return nil, err
	}
	var firstErr error
	var mu sync.Mutex
	parallel.ForEach(len(keys), 8, func(i int) {
		k := keys[i]
		b, a, err := store.ReadAll(ctx, d.st, k)
		if errors.Is(err, store.ErrNotFound) {
			out[i] = loadedObject{key: k} // gone since the listing: no rows
			return
		}
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("read %s: %w", k, err)
			}
			mu.Unlock()
			return
		}
		out[i] = d.parse(k, a.ETag, b, sch)
	})
	return out, firstErr
}

// parse turns one object into mirror rows and error rows. Nothing is
// dropped silently: a file that does not parse is one error row.
func (d *Domains) parse(key string, etag store.ETag, b []byte, sch *tableschema.Schema) loadedObject {
	o := loadedObject{key: key, etag: etag}
	source := sourceOf(key)
	if source == "inbox" {
		if len(b) == 0 {
			return o // a tombstone: merged, about to be deleted (compiler I3)
		}
		// the record rule (compiler/rule.go): serve exactly what compaction
		// would merge, list every problem it would report
		t, problems, _ := d.rule.CheckPending(key, b, d.layout.Of)
		for _, p := range problems {
			o.errors = append(o.errors, []driver.Value{key, int32(p.Record), p.Field, p.Reason})
		}
		o.rows = d.mirrorRows(source, key, t)
		return o
	}
	t, err := compiler.ParseTable(b)
	if err != nil {
		o.errors = append(o.errors, []driver.Value{key, int32(0), "", err.Error()})
		return o
	}
	// a shard holds what compaction accepted; a schema changed since may
	// find fault with it: its records are served, the faults listed
	checker, err := sch.NewRowChecker()
	if err == nil {
		_, err = checker.SetHeader(t.Header)
	}
	if err != nil {
		o.errors = append(o.errors, []driver.Value{key, int32(0), "", err.Error()})
		return o
	}
	for i, r := range t.Rows {
		_, ferrs := checker.Check(r)
		for _, fe := range ferrs {
			o.errors = append(o.errors, []driver.Value{key, int32(t.RecordNo(i)), fe.Field, fe.Error()})
		}
	}
	o.rows = d.mirrorRows(source, key, t)
	return o
}

// mirrorRows turns records into mirror rows: schema fields in order, with
// the ordering keys computed by the compiler's own functions.
func (d *Domains) mirrorRows(source, key string, t compiler.Table) [][]driver.Value {
	pos := make([]int, len(d.fields))
	for i, f := range d.fields {
		pos[i] = indexOf(t.Header, f)
	}
	ui := indexOf(d.fields, compiler.UpdatedAtField)
	out := make([][]driver.Value, 0, len(t.Rows))
	for n, r := range t.Rows {
		units := make([]string, len(d.fields))
		for i, p := range pos {
			if p >= 0 {
				units[i] = r[p]
			}
		}
		var updated driver.Value
		if ts, ok := compiler.ParseTimestamp(units[ui]); ok {
			updated = ts
		}
		row := []driver.Value{source, key, int32(t.RecordNo(n)), updated, compiler.TieBreakKey(units)}
		for _, u := range units {
			row = append(row, u)
		}
		out = append(out, row)
	}
	return out
}

// apply replaces the mirror rows of changed and removed objects in one
// transaction.
func (d *Domains) apply(ctx context.Context, loaded []loadedObject, removed []string) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	var keys []string
	keys = append(keys, removed...)
	for _, o := range loaded {
		keys = append(keys, o.key)
	}
	if len(keys) > 0 {
		if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE dhsi_refresh_keys (key VARCHAR)"); err != nil {
			return err
		}
		if err := appendRows(ctx, conn, "temp", "main", "dhsi_refresh_keys", func(a *duckdb.Appender) error {
			for _, k := range keys {
				if err := a.AppendRow(k); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		for _, t := range []string{"rows WHERE _key", "errors WHERE file", "objects WHERE key"} {
			if _, err := conn.ExecContext(ctx, "DELETE FROM "+mirrorSchema+"."+t+" IN (SELECT key FROM temp.main.dhsi_refresh_keys)"); err != nil {
				return err
			}
		}
	}
	if err := appendRows(ctx, conn, "", mirrorSchema, "rows", func(a *duckdb.Appender) error {
		for _, o := range loaded {
			for _, r := range o.rows {
				if err := a.AppendRow(r...); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("mirror rows: %w", err)
	}
	if err := appendRows(ctx, conn, "", mirrorSchema, "errors", func(a *duckdb.Appender) error {
		for _, o := range loaded {
			for _, r := range o.errors {
				if err := a.AppendRow(r...); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("mirror errors: %w", err)
	}
	if err := appendRows(ctx, conn, "", mirrorSchema, "objects", func(a *duckdb.Appender) error {
		for _, o := range loaded {
			if o.etag == "" {
				continue
			}
			if err := a.AppendRow(o.key, string(o.etag)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("mirror objects: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	ok = true
	return nil
}

func appendRows(ctx context.Context, conn *sql.Conn, catalog, schema, table string, fill func(*duckdb.Appender) error) error {
	return conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppender(dc.(driver.Conn), catalog, schema, table)
		if err != nil {
			return err
		}
		if err := fill(a); err != nil {
			a.Close()
			return err
		}
		return a.Close()
	})
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
