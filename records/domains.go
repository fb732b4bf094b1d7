package records

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/parallel"
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
//   - R2, reads never lose a record during a resharding (issue 15 §3): a
//     mover deletes a shard of another width than the current one (a
//     "foreign" shard) only once its records are durable in current-width
//     shards (compiler I6). So while the package records a resharding, a
//     refresh lists the shards twice: the foreign ones are taken from the
//     first listing, the current-width ones from the second, which starts
//     after the first ended. A foreign shard the first listing finds gone
//     was deleted before that, so the shards holding its records were
//     written before the second listing began. Widening and narrowing
//     alike: the rule does not depend on where keys sort. The package is
//     read before the listings and checked after; a refresh during which
//     it changed is thrown away and redone, so the widths it classified by
//     held throughout.
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

	mu      sync.Mutex // serialises Refresh; guards the fields below
	pkg     *tableschema.Package
	pkgETag store.ETag    // the version of datapackage.json pkg is (R2)
	layouts Layouts       // the recorded shard layouts
	rule    compiler.Rule // the record rule: what the views serve from the inbox
	fields  []string      // schema field names, in order (mirror columns)
	sig     string        // the mirror's columns, to notice a schema change
	known   map[string]store.ETag
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

// PackageVersion returns the current data package and the ETag of the
// version it was read from (for compiler.Config.PackageETag).
func (d *Domains) PackageVersion() (*tableschema.Package, store.ETag) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pkg, d.pkgETag
}

// Layouts returns the shard layouts the mirror last read.
func (d *Domains) Layouts() Layouts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.layouts
}

// OpenDomains loads the schema, creates the mirror and the views, and runs a
// first refresh.
func OpenDomains(ctx context.Context, st store.Store, db *sql.DB, log *slog.Logger) (*Domains, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pkg, etag, err := LoadPackageVersion(ctx, st)
	if err != nil {
		return nil, err
	}
	d := &Domains{st: st, db: db, log: log, known: map[string]store.ETag{}}
	d.mu.Lock()
	err = d.install(ctx, pkg, etag)
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := d.Refresh(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

const mirrorSchema = "dhsi_cache"

// install (re)creates the mirror tables for pkg's schema and the views.
// The caller holds d.mu.
func (d *Domains) install(ctx context.Context, pkg *tableschema.Package, etag store.ETag) error {
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
	layouts, err := LayoutsOf(pkg)
	if err != nil {
		return err
	}
	d.pkg, d.pkgETag, d.rule, d.layouts, d.fields, d.sig, d.known = pkg, etag, rule, layouts, fields, sig, known
	return nil
}

// Refresh brings the mirror up to date with the store, in the order R1 and
// R2 require: the package, the inbox (listed, changed objects fetched), the
// shards (listed, changed objects fetched; twice during a resharding), the
// package again, then one transaction that applies it all.
func (d *Domains) Refresh(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for attempt := 0; ; attempt++ {
		same, err := d.refreshOnce(ctx)
		if err != nil || same {
			return err
		}
		if attempt == 2 {
			return fmt.Errorf("refresh: %s changed during each of 3 refreshes; the next refresh retries", compiler.SchemaKey)
		}
	}
}

// refreshPackage reads datapackage.json when its ETag changed, and
// reinstalls the mirror when the schema's columns changed.
func (d *Domains) refreshPackage(ctx context.Context) error {
	a, err := d.st.Head(ctx, compiler.SchemaKey)
	if err != nil {
		return fmt.Errorf("check %s: %w", compiler.SchemaKey, err)
	}
	if a.ETag == d.pkgETag {
		return nil
	}
	b, a, err := store.ReadAll(ctx, d.st, compiler.SchemaKey)
	if err != nil {
		return fmt.Errorf("read %s: %w", compiler.SchemaKey, err)
	}
	pkg, err := parsePackage(b)
	if err != nil {
		return err
	}
	return d.install(ctx, pkg, a.ETag)
}

// refreshOnce is one refresh; same is false when datapackage.json changed
// while it ran, and nothing was applied (R2).
func (d *Domains) refreshOnce(ctx context.Context) (same bool, err error) {
	if err := d.refreshPackage(ctx); err != nil {
		return false, err
	}
	etag, current := d.pkgETag, d.layouts.Current
	inboxLoaded, inboxRemoved, err := d.refreshPart(ctx, compiler.InboxPrefix, "inbox", nil)
	if err != nil {
		return false, err
	}
	// R1: only now, after every inbox object was observed, the shards
	var shardLoaded []loadedObject
	var shardRemoved []string
	if d.layouts.Resharding() {
		// R2: foreign shards first, then, in a second listing, the
		// current layout's
		foreign := func(key string) bool { id, _ := compiler.ShardOfKey(key); return len(id) != current.Width }
		ours := func(key string) bool { return !foreign(key) }
		for _, keep := range []func(string) bool{foreign, ours} {
			l, r, err := d.refreshPart(ctx, compiler.ShardPrefix, "shard", keep)
			if err != nil {
				return false, err
			}
			shardLoaded, shardRemoved = append(shardLoaded, l...), append(shardRemoved, r...)
		}
	} else if shardLoaded, shardRemoved, err = d.refreshPart(ctx, compiler.ShardPrefix, "shard", nil); err != nil {
		return false, err
	}
	if a, err := d.st.Head(ctx, compiler.SchemaKey); err != nil {
		return false, fmt.Errorf("check %s: %w", compiler.SchemaKey, err)
	} else if a.ETag != etag {
		return false, nil // R2: the widths may have changed under the listings
	}
	loaded := append(inboxLoaded, shardLoaded...)
	removed := append(inboxRemoved, shardRemoved...)
	if len(loaded) == 0 && len(removed) == 0 {
		return true, nil
	}
	if err := d.apply(ctx, loaded, removed); err != nil {
		return false, err
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
	return true, nil
}

// refreshPart lists prefix and fetches the objects of one source ("inbox"
// or "shard") whose ETag changed, of those keep accepts (nil: all); it
// returns them and the keys that are gone. A shard that vanishes between
// listing and fetch fails the refresh (the mirror keeps its rows until a
// refresh sees a consistent store).
func (d *Domains) refreshPart(ctx context.Context, prefix, source string, keep func(string) bool) (loaded []loadedObject, removed []string, err error) {
	mine := func(key string) bool { return sourceOf(key) == source && (keep == nil || keep(key)) }
	current := map[string]store.ETag{}
	err = d.st.List(ctx, prefix, func(a store.Attrs) error {
		if mine(a.Key) {
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
		if _, ok := current[k]; !ok && mine(k) {
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
		t, problems, _ := d.rule.CheckPending(key, b)
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
