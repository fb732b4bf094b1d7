package records

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/lru"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/tableschema"
)

// Domains serves the domain-record index (issue 3) to SQL. A refresh
// observes the store — the pending objects (inbox and batch objects),
// fetched and parsed, and the list of shards with their ETags, not their
// contents — and publishes what it saw as one immutable view. Statements
// read shards when they need them, through a bounded cache (shardCache),
// so start-up time and local disk do not grow with the number of domains
// (issue 15 §3). The SQL surface (views.go):
//
//	domains          one row per domain: latest updated_at wins across shards
//	                 and inbox, ties broken by compiler.TieBreakKey
//	domain_record(d) domains WHERE domain = d, reading the one shard (or,
//	                 during a resharding, two) d hashes to
//	domains_shards   every shard record, typed
//	domains_inbox    every pending inbox record, typed
//	domain_errors    (file, record, field, reason) for what fails the schema
//
// Invariants:
//   - A view is immutable and published whole (an atomic pointer): a
//     statement reads the pending records and the shard list of one
//     refresh, never a mix of two.
//   - R1, reads never lose a record (issue 15 §2): a refresh observes the
//     whole inbox (lists it, fetches what changed) before it lists the
//     shards — every shard in a full refresh; between full ones (change
//     signals, refreshOnce) at least the shards of every object it finds
//     retired, and a refresh that does not observe the inbox keeps every
//     pending record it had. By compiler I3 an inbox object is retired (tombstoned or
//     deleted) only after the shard holding its record is durable, so an
//     inbox record the refresh finds gone is in a shard version the later
//     shard listing returns, or a newer one (which keeps the record or a
//     newer one for its domain), and a statement reads that version or a
//     newer one (shardCache S2). Every domain stays visible, at a version
//     never older than before (S1). Listing indexes/domains/ in one pass
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
//     held throughout. A statement reads foreign shards before current
//     ones for the same reason: one it finds gone since the view's listing
//     sends it to current-width shards as they are after that (a new
//     listing for a scan, a GET begun then for a lookup).
//   - Ordering keys are computed in Go with the compiler's own functions
//     (compiler.ParseTimestamp, compiler.TieBreakKey), so the views and the
//     compiler always pick the same record.
//
// Nothing of the index is kept on local disk: a restart lists the store
// again.
type Domains struct {
	st     store.Store
	db     *sql.DB
	log    *slog.Logger
	limit  int64       // the shard cache's bound in bytes
	shards *shardCache // replaced when the schema changes

	view atomic.Pointer[view] // what statements read: the last refresh's

	mu      sync.Mutex // serialises Refresh; guards the fields below
	pkg     *tableschema.Package
	pkgETag store.ETag    // the version of datapackage.json pkg is (R2)
	layouts Layouts       // the recorded shard layouts
	rule    compiler.Rule // the record rule: what the views serve from the inbox
	sch     *tableschema.Schema
	fields  []string                  // schema field names, in order
	sig     string                    // the schema the views were made for, to notice a change
	pending map[string]*pendingObject // the inbox as last observed, by key
	// the change signals as last listed (nil before the first refresh),
	// when the last full refresh began, and how far apart full ones are
	signals   map[string]store.ETag
	lastFull  time.Time
	fullTook  time.Duration // how long the last full refresh took
	fullEvery time.Duration
	fullShare float64
	fullNext  bool // RefreshAll asked for one
	// onSchema runs after a refresh that installed a new schema (the
	// server makes its native lookup again); schemaMoved says one did
	onSchema    func()
	schemaMoved bool
}

// Options configure Open.
type Options struct {
	Log *slog.Logger
	// CacheBytes bounds the memory of parsed shards (default
	// DefaultCacheBytes; negative: keep none, every statement reads its
	// shards from the store).
	CacheBytes int64
	// FullRefreshEvery is how far apart refreshes list the whole inbox
	// and every shard at most (default DefaultFullRefresh); those between
	// list the change signals and what they name. Records landed by
	// writers that bump no signal (plain S3 PUTs) appear within it.
	FullRefreshEvery time.Duration
	// FullRefreshShare is the share of the time full refreshes may take
	// (default DefaultFullRefreshShare): one runs as soon as the time since
	// the last is that many times as long as the last took, so a small
	// store is listed whole at every refresh, a large one rarely. Negative:
	// only FullRefreshEvery.
	FullRefreshShare float64
}

// DefaultCacheBytes is the shard cache's default bound.
const DefaultCacheBytes = 256 << 20

// DefaultFullRefresh is how far apart full refreshes are at most by
// default.
const DefaultFullRefresh = 30 * time.Second

// DefaultFullRefreshShare is the share of the time full refreshes take at
// most, by default.
const DefaultFullRefreshShare = 0.05

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

// Layouts returns the shard layouts the last refresh read.
func (d *Domains) Layouts() Layouts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.layouts
}

// CacheStats reports the shard cache as "record" (for metrics).
func (d *Domains) CacheStats() lru.Stats { return d.view.Load().cache.stats() }

// OpenDomains is Open with default options and log.
func OpenDomains(ctx context.Context, st store.Store, db *sql.DB, log *slog.Logger) (*Domains, error) {
	return Open(ctx, st, db, Options{Log: log})
}

// Open loads the schema, registers the table functions and creates the
// views, and runs a first refresh.
func Open(ctx context.Context, st store.Store, db *sql.DB, o Options) (*Domains, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	pkg, etag, err := LoadPackageVersion(ctx, st)
	if err != nil {
		return nil, err
	}
	if o.FullRefreshEvery <= 0 {
		o.FullRefreshEvery = DefaultFullRefresh
	}
	if o.FullRefreshShare == 0 {
		o.FullRefreshShare = DefaultFullRefreshShare
	}
	d := &Domains{st: st, db: db, log: o.Log, limit: o.CacheBytes, pending: map[string]*pendingObject{}, fullEvery: o.FullRefreshEvery, fullShare: o.FullRefreshShare}
	if err := d.registerFunctions(ctx); err != nil {
		return nil, err
	}
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

// install takes pkg's schema and layouts, and (re)creates the views when
// the schema's columns changed. The caller holds d.mu.
func (d *Domains) install(ctx context.Context, pkg *tableschema.Package, etag store.ETag) error {
	sch, err := SchemaOf(pkg)
	if err != nil {
		return err
	}
	rule, err := compiler.NewRule(sch)
	if err != nil {
		return err
	}
	layouts, err := LayoutsOf(pkg)
	if err != nil {
		return err
	}
	fields := sch.FieldNames()
	// the whole schema, not only its names: a field's type or format
	// changes how the views type it and what the rule accepts
	sigJSON, err := json.Marshal(sch)
	if err != nil {
		return err
	}
	sig := string(sigJSON)
	if sig != d.sig || d.shards == nil {
		d.schemaMoved = d.shards != nil // not the first install
		// a new schema types and checks every record anew: parsed
		// objects are thrown away, the views made again
		d.shards = newShardCache(d.st, d.limit, func(key string, etag store.ETag, b []byte) *parsedShard {
			return parseShard(key, etag, b, sch)
		})
		d.pending = map[string]*pendingObject{}
		// the view the new SQL binds against: no record until the refresh
		// that follows (Refresh calls install, then reads the store)
		d.view.Store(&view{fields: fields, schema: sig, layouts: layouts, cache: d.shards, byDomain: map[string][]pendingRecord{}})
		if err := d.createViews(ctx, sch); err != nil {
			return err
		}
	}
	d.pkg, d.pkgETag, d.rule, d.sch, d.layouts, d.fields, d.sig = pkg, etag, rule, sch, layouts, fields, sig
	return nil
}

// Refresh brings the view up to date with the store, in the order R1 and
// R2 require: the package, the inbox (listed, changed objects fetched), the
// shards (listed; twice during a resharding), the package again; then the
// new view is published.
func (d *Domains) Refresh(ctx context.Context) error {
	d.mu.Lock()
	defer func() {
		hook := d.onSchema
		moved := d.schemaMoved && hook != nil
		if moved {
			d.schemaMoved = false
		}
		d.mu.Unlock()
		if moved {
			hook() // outside mu: it calls NativeLookup
		}
	}()
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

// OnSchemaChange sets f to run after a refresh that installed a new
// datapackage.json schema, outside the refresh's lock.
func (d *Domains) OnSchemaChange(f func()) {
	d.mu.Lock()
	d.onSchema = f
	d.mu.Unlock()
}

// RefreshAll is Refresh listing the whole inbox and every shard: what a
// statement that just changed the store (CALL compact_shard) runs, so its
// session sees everything it did.
func (d *Domains) RefreshAll(ctx context.Context) error {
	d.mu.Lock()
	d.fullNext = true
	d.mu.Unlock()
	return d.Refresh(ctx)
}

// refreshPackage reads datapackage.json when its ETag changed.
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
// while it ran, and nothing was published (R2).
//
// A full refresh lists the whole inbox and every shard. Between full ones
// (at most FullRefreshEvery apart), a refresh lists the change signals
// (compiler/signal.go) and lists only what they say changed: the inbox
// when a DHSI writer landed something, the shards of a hex prefix when a
// compaction or move wrote one. R1 holds either way: when the inbox is
// observed, the shards of every object found retired (gone, or a
// tombstone) are listed after it. A stale shard listing otherwise costs
// freshness only: the view still holds every pending record it saw.
func (d *Domains) refreshOnce(ctx context.Context) (same bool, err error) {
	began, before := time.Now(), d.pkgETag
	if err := d.refreshPackage(ctx); err != nil {
		return false, err
	}
	etag, layouts := d.pkgETag, d.layouts
	signals, err := listSignals(ctx, d.st)
	if err != nil {
		return false, err
	}
	since := time.Since(d.lastFull)
	full := d.signals == nil || len(signals) == 0 || etag != before || layouts.Resharding() || d.fullNext ||
		since >= d.fullEvery || d.fullShare > 0 && float64(since) >= float64(d.fullTook)/d.fullShare
	pending, shards := d.pending, map[string]listedShard{}
	observed, prefixes := full, map[string]bool{} // what this refresh read anew
	if full {
		if pending, _, err = d.observeInbox(ctx); err != nil {
			return false, err
		}
		// R1: only now, after every inbox object was observed, the shards
		if shards, err = listShards(ctx, d.st, layouts, false); err != nil {
			return false, err
		}
	} else {
		for k, e := range signals {
			if h, ok := compiler.ShardSignalPrefix(k); ok && d.signals[k] != e {
				prefixes[h] = true
			}
		}
		if signals[compiler.PendingSignalKey] != d.signals[compiler.PendingSignalKey] {
			observed = true
			var retired []string
			if pending, retired, err = d.observeInbox(ctx); err != nil {
				return false, err
			}
			for _, key := range retired {
				if h := shardPrefixOf(key); h != "" {
					prefixes[h] = true // R1: listed after the inbox was
				}
			}
		}
		if len(prefixes) == 0 {
			shards = d.view.Load().shards // immutable: shared, not copied
		} else {
			for k, ls := range d.view.Load().shards {
				if id, _ := compiler.ShardOfKey(k); !prefixes[id[:1]] {
					shards[k] = ls
				}
			}
		}
		for h := range prefixes {
			got, err := listShardPrefix(ctx, d.st, h)
			if err != nil {
				return false, err
			}
			for k, ls := range got {
				shards[k] = ls
			}
		}
	}
	if a, err := d.st.Head(ctx, compiler.SchemaKey); err != nil {
		return false, fmt.Errorf("check %s: %w", compiler.SchemaKey, err)
	} else if a.ETag != etag {
		return false, nil // R2: the widths may have changed under the listings
	}
	d.pending, d.signals = pending, signals
	if full {
		d.lastFull, d.fullTook, d.fullNext = began, time.Since(began), false
	}
	switch {
	case observed:
		d.view.Store(newView(d.fields, d.sig, layouts, pending, shards, d.shards))
	case len(prefixes) > 0:
		// the inbox as the last view has it: only the shards are new
		v := *d.view.Load()
		v.shards = shards
		d.view.Store(&v)
	}
	// else nothing changed: the view stands, not rebuilt from every
	// pending record and shard at each refresh
	return true, nil
}

// shardPrefixOf is the hex digit every shard id a pending object's records
// may live in starts with, at any width ("" for a key that names none).
func shardPrefixOf(key string) string {
	if id, ok := compiler.ShardOfBatchKey(key); ok && id != "" {
		return id[:1]
	}
	if dom, ok := compiler.DomainOfInboxKey(key); ok {
		return shard.Layout{Width: 1}.Of(dom)
	}
	return ""
}

// listSignals lists the change signals with their ETags.
func listSignals(ctx context.Context, st store.Store) (map[string]store.ETag, error) {
	out := map[string]store.ETag{}
	err := st.List(ctx, compiler.SignalPrefix, func(a store.Attrs) error {
		out[a.Key] = a.ETag
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", compiler.SignalPrefix, err)
	}
	return out, nil
}

// listShards lists the shards of layouts with their ETags, in the order
// R2 requires: while a resharding is recorded, the foreign ones from a
// first listing, the current layout's from a second (only those with
// currentOnly).
func listShards(ctx context.Context, st store.Store, layouts Layouts, currentOnly bool) (map[string]listedShard, error) {
	out := map[string]listedShard{}
	current := func(id string) bool { return len(id) == layouts.Current.Width }
	var err error
	switch {
	case currentOnly:
		err = listShardsInto(ctx, st, "", current, out)
	case layouts.Resharding():
		if err = listShardsInto(ctx, st, "", func(id string) bool { return !current(id) }, out); err == nil {
			err = listShardsInto(ctx, st, "", current, out)
		}
	default:
		err = listShardsInto(ctx, st, "", nil, out)
	}
	return out, err
}

// listShardPrefix lists the shards whose id starts with hex digit h.
func listShardPrefix(ctx context.Context, st store.Store, h string) (map[string]listedShard, error) {
	out := map[string]listedShard{}
	return out, listShardsInto(ctx, st, h, nil, out)
}

// listShardsInto lists the shards whose id starts with idPrefix and that
// keep accepts (nil: all) into out, each stamped with when the listing
// ended (shardCache S2).
func listShardsInto(ctx context.Context, st store.Store, idPrefix string, keep func(id string) bool, out map[string]listedShard) error {
	var keys []string
	var etags []store.ETag
	err := st.List(ctx, compiler.ShardPrefix+idPrefix, func(a store.Attrs) error {
		if id, ok := compiler.ShardOfKey(a.Key); ok && (keep == nil || keep(id)) {
			keys, etags = append(keys, a.Key), append(etags, a.ETag)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", compiler.ShardPrefix+idPrefix, err)
	}
	at := time.Now()
	for i, k := range keys {
		out[k] = listedShard{etags[i], at}
	}
	return nil
}

// observeInbox lists the pending objects and fetches those whose ETag
// changed since the last refresh; it returns the inbox as it is now, and
// the keys of the objects that held records and hold none now (retired by
// a compaction, compiler I3).
func (d *Domains) observeInbox(ctx context.Context) (map[string]*pendingObject, []string, error) {
	now := map[string]store.ETag{}
	err := compiler.ListPending(ctx, d.st, "", func(a store.Attrs) error {
		if compiler.IsPendingKey(a.Key) {
			now[a.Key] = a.ETag
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", compiler.InboxPrefix, err)
	}
	out := make(map[string]*pendingObject, len(now))
	var changed []string
	for k, e := range now {
		if o := d.pending[k]; o != nil && o.etag == e {
			out[k] = o
		} else {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	loaded, err := d.fetchPending(ctx, changed)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range loaded {
		if o.etag != "" { // "": gone since the listing
			out[o.key] = o
		}
	}
	var retired []string
	for k, o := range d.pending {
		if n := out[k]; len(o.records) > 0 && (n == nil || len(n.records) == 0) {
			retired = append(retired, k)
		}
	}
	return out, retired, nil
}

// pendingObject is one version of an inbox or batch object: the records
// the record rule serves from it, and its problems.
type pendingObject struct {
	key     string
	etag    store.ETag
	records []pendingRecord
	errors  [][]driver.Value
}

// pendingRecord is a record of a pending object, as a row of the views'
// table functions (rowColumns).
type pendingRecord struct {
	domain string
	row    []driver.Value
}

// fetchPending reads and parses pending objects, 8 at a time.
func (d *Domains) fetchPending(ctx context.Context, keys []string) ([]*pendingObject, error) {
	out := make([]*pendingObject, len(keys))
	var firstErr error
	var mu sync.Mutex
	parallel.ForEach(len(keys), 8, func(i int) {
		k := keys[i]
		b, a, err := store.ReadAll(ctx, d.st, k)
		if errors.Is(err, store.ErrNotFound) {
			out[i] = &pendingObject{key: k} // gone since the listing: no rows
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
		out[i] = d.parsePending(k, a.ETag, b)
	})
	return out, firstErr
}

// parsePending applies the record rule (compiler/rule.go) to one pending
// object: the views serve exactly what compaction would merge, and list
// every problem it would report. An empty object is a tombstone: merged,
// about to be deleted (compiler I3).
func (d *Domains) parsePending(key string, etag store.ETag, b []byte) *pendingObject {
	o := &pendingObject{key: key, etag: etag}
	if len(b) == 0 {
		return o
	}
	t, problems, _ := d.rule.CheckPending(key, b)
	for _, p := range problems {
		o.errors = append(o.errors, []driver.Value{key, int32(p.Record), p.Field, p.Reason})
	}
	di := slices.Index(t.Header, compiler.DomainField)
	m := newRowMaker(d.fields, t.Header)
	for i := range t.Rows {
		row := m.row("inbox", key, t, i)
		dom := ""
		if di >= 0 {
			dom = t.Rows[i][di]
		}
		o.records = append(o.records, pendingRecord{domain: dom, row: row})
	}
	return o
}

// rowMaker turns records of one header into rows of the views' table
// functions: the row columns (rowColumns), then the schema fields in
// order, with the ordering keys computed by the compiler's own functions.
type rowMaker struct {
	pos     []int // per schema field, its unit in the header (-1: none)
	updated int   // updated_at's index among the fields
}

func newRowMaker(fields, header []string) rowMaker {
	m := rowMaker{pos: make([]int, len(fields)), updated: slices.Index(fields, compiler.UpdatedAtField)}
	for f, name := range fields {
		m.pos[f] = slices.Index(header, name)
	}
	return m
}

// row is record i of t.
func (m rowMaker) row(source, key string, t compiler.Table, i int) []driver.Value {
	r := t.Rows[i]
	units := make([]string, len(m.pos))
	for f, p := range m.pos {
		if p >= 0 {
			units[f] = r[p]
		}
	}
	var updated driver.Value
	if ts, ok := compiler.ParseTimestamp(units[m.updated]); ok {
		updated = ts
	}
	row := make([]driver.Value, 0, len(rowColumns)+len(units))
	row = append(row, source, key, int32(t.RecordNo(i)), updated, compiler.TieBreakKey(units))
	for _, u := range units {
		row = append(row, u)
	}
	return row
}
