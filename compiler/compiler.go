package compiler

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/tableschema"
)

// Statuses of one shard compaction.
const (
	StatusCompacted   = "compacted"
	StatusLocked      = "locked"
	StatusConflict    = "conflict"
	StatusNothingToDo = "nothing-to-do"
)

// DefaultLockTTL is how long a lock protects a compaction that stopped
// renewing it (a crashed worker).
const DefaultLockTTL = 5 * time.Minute

// DefaultSchemaFields are the fields of the design's default schema, in
// order; a store's datapackage.json overrides them.
var DefaultSchemaFields = []string{"domain", "company_name", "scraper_version", "updated_at"}

// Config configures a Compiler.
type Config struct {
	WorkerID     string        // names this worker in locks; default host-pid-random
	LockTTL      time.Duration // default DefaultLockTTL
	Layout       shard.Layout  // default shard.Default()
	SchemaFields []string      // output fields in order; default DefaultSchemaFields
	// Schema types the records (the record rule, rule.go); nil checks only
	// the domain key and updated_at
	Schema *tableschema.Schema
	// Parallel bounds concurrent store requests of one compaction, and the
	// shards CompactAll works on at once (default 16).
	Parallel int
	// PackageETag is the ETag of the datapackage.json this configuration
	// was read from; when set, the compiler checks it before every write
	// that depends on the layout (I7, move.go). Empty: no check.
	PackageETag store.ETag
}

// Defaults fills unset fields.
func (c Config) Defaults() Config {
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		b := make([]byte, 3)
		rand.Read(b)
		c.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	if c.LockTTL == 0 {
		c.LockTTL = DefaultLockTTL
	}
	if c.Layout.Width == 0 {
		c.Layout = shard.Default()
	}
	if len(c.SchemaFields) == 0 {
		c.SchemaFields = DefaultSchemaFields
	}
	if c.Parallel <= 0 {
		c.Parallel = 16
	}
	return c
}

// Validate reports a configuration error.
func (c Config) Validate() error {
	if c.LockTTL < time.Second {
		return fmt.Errorf("compiler: lock TTL %v is under a second", c.LockTTL)
	}
	if indexOf(c.SchemaFields, DomainField) < 0 || indexOf(c.SchemaFields, UpdatedAtField) < 0 {
		return fmt.Errorf("compiler: schema must have %q and %q fields", DomainField, UpdatedAtField)
	}
	return c.Layout.Validate()
}

// Compiler compacts inbox objects into shards on one store.
type Compiler struct {
	st   store.Store
	cfg  Config
	rule Rule
	log  *slog.Logger
	// signals are the change signals this compiler bumps (signal.go)
	signals *signaler
}

// New returns a compiler.
func New(st store.Store, cfg Config, log *slog.Logger) (*Compiler, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rule, err := NewRule(cfg.Schema)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("worker", cfg.WorkerID)
	return &Compiler{st: st, cfg: cfg, rule: rule, log: log, signals: newSignaler(st, log)}, nil
}

// Result reports one shard compaction (the row of CALL compact_shard).
type Result struct {
	Shard         string
	Status        string
	InboxMerged   int // inbox objects merged and deleted
	InboxKept     int // merged, but rewritten since, so kept for next time (I3)
	InboxPartial  int // valid records merged, object kept for its bad ones (I4, rule K3)
	RecordsBefore int // records in the shard before
	RecordsAfter  int
	BytesWritten  int64
	Duration      time.Duration
	Errors        []InboxError // inbox objects with problems, reported and kept (I4)
}

// InboxError is one inbox object that could not be merged.
type InboxError struct {
	Key    string
	Reason string
}

// ShardOf returns the shard of a domain under this compiler's layout.
func (c *Compiler) ShardOf(domain string) string { return c.cfg.Layout.Of(domain) }

// Pending lists the inbox once and groups its objects by shard (I5).
// Objects whose key is not a valid domain are reported under shard "".
func (c *Compiler) Pending(ctx context.Context) (map[string][]store.Attrs, error) {
	out := map[string][]store.Attrs{}
	err := ListPending(ctx, c.st, "", func(a store.Attrs) error {
		if id, ok := c.shardOfPending(a.Key); ok {
			out[id] = append(out[id], a)
		}
		return nil
	})
	return out, err
}

// shardOfPending classifies a key under InboxPrefix: an inbox or batch
// object and its shard ("" when its key names none), or false for what is
// neither (shards, locks, the schema).
func (c *Compiler) shardOfPending(key string) (string, bool) {
	if id, ok := ShardOfBatchKey(key); ok {
		if !shard.ValidID(id) {
			id = "" // a key no layout names: reported, kept (I4)
		}
		return id, true // a foreign width is moved (I6)
	}
	d, ok := DomainOfInboxKey(key)
	if !ok {
		return "", false
	}
	if CheckKey(d) != nil {
		return "", true
	}
	return c.cfg.Layout.Of(d), true
}

// errAtShards stops ListPending's first listing where the shards begin.
var errAtShards = errors.New("at the shards")

// shardsSkipped is where ListPending's second listing starts: every key
// under ShardPrefix ("…/shards/…") sorts before it ('/' < '0'), every other
// key after "…/shards/" sorts after it.
const shardsSkipped = InboxPrefix + "shards0"

// ListPending calls fn, in key order, for every object under InboxPrefix
// whose key is greater than startAfter, except the shards, locks and clock
// objects under ShardPrefix: a store with StartAfter (S3) skips them with a
// second listing instead of walking up to 2·16⁴ keys. fn also sees keys that
// are no pending object (the schema): callers classify them.
func ListPending(ctx context.Context, st store.Store, startAfter string, fn func(store.Attrs) error) error {
	if startAfter < ShardPrefix {
		err := store.ListFrom(ctx, st, InboxPrefix, startAfter, func(a store.Attrs) error {
			if strings.HasPrefix(a.Key, ShardPrefix) {
				return errAtShards
			}
			return fn(a)
		})
		if !errors.Is(err, errAtShards) {
			return err // the end of the inbox came before the shards, or an error
		}
	}
	return store.ListFrom(ctx, st, InboxPrefix, max(startAfter, shardsSkipped), fn)
}

// errPageFull stops a bounded listing.
var errPageFull = errors.New("page full")

// PendingPage is a bounded view of the inbox (I5'): at most limit inbox
// and batch objects, taken in key order from the first key after from and
// wrapping round to the start, grouped by shard. A looping worker that
// starts each round at a random point claims work from one page, so a
// round costs the same whatever the size of the inbox, and a worker killed
// every few seconds still finishes rounds.
func (c *Compiler) PendingPage(ctx context.Context, from string, limit int) (map[string][]store.Attrs, error) {
	out := map[string][]store.Attrs{}
	n := 0
	take := func(a store.Attrs) error {
		if id, ok := c.shardOfPending(a.Key); ok {
			out[id] = append(out[id], a)
			if n++; n >= limit {
				return errPageFull
			}
		}
		return nil
	}
	err := ListPending(ctx, c.st, from, take)
	if err == nil {
		// wrap round: the keys up to from
		err = ListPending(ctx, c.st, "", func(a store.Attrs) error {
			if a.Key > from {
				return errPageFull
			}
			return take(a)
		})
	}
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	return out, nil
}

// CompactObjects merges the given pending objects of shard id (a page of
// PendingPage); the shard's other pending objects wait for another round.
func (c *Compiler) CompactObjects(ctx context.Context, id string, objs []store.Attrs) (Result, error) {
	if !c.cfg.Layout.Valid(id) && !c.foreign(id) {
		return Result{}, fmt.Errorf("compiler: %q is not a shard id of width %d", id, c.cfg.Layout.Width)
	}
	return c.compact(ctx, id, objs)
}

// CompactShard merges the pending inbox objects of one shard.
func (c *Compiler) CompactShard(ctx context.Context, id string) (Result, error) {
	if !c.cfg.Layout.Valid(id) {
		return Result{}, fmt.Errorf("compiler: %q is not a shard id of width %d (want e.g. %q)", id, c.cfg.Layout.Width, c.cfg.Layout.ID(0x5e%c.cfg.Layout.Count()))
	}
	pending, err := c.Pending(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("list inbox: %w", err)
	}
	return c.compact(ctx, id, pending[id])
}

// CompactAll compacts every shard with pending inbox objects, listing the
// inbox once (I5). Results are in shard order.
func (c *Compiler) CompactAll(ctx context.Context) ([]Result, error) {
	pending, err := c.Pending(ctx)
	if err != nil {
		return nil, fmt.Errorf("list inbox: %w", err)
	}
	ids := make([]string, 0, len(pending))
	for id := range pending {
		if id != "" {
			ids = append(ids, id)
		}
	}
	// shards with a lock but nothing pending: reap the lock if it is stale;
	// and clock objects a killed worker left between storeNow's put and
	// delete
	var clocks []store.Attrs
	err = c.st.List(ctx, ShardPrefix, func(a store.Attrs) error {
		// locks of every width: a killed mover leaves one of a foreign shard
		if id, ok := ShardOfLockKey(a.Key); ok && shard.ValidID(id) {
			if _, pend := pending[id]; !pend {
				ids = append(ids, id)
			}
		}
		if strings.HasPrefix(a.Key, clockKeyStem) {
			clocks = append(clocks, a)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	if err := c.reapClocks(ctx, clocks); err != nil {
		return nil, err
	}
	sort.Strings(ids)
	results := make([]Result, len(ids))
	errs := make([]error, len(ids))
	// shards are independent (each has its own lock and ETag), so a few run
	// at once; each compaction has its own request parallelism too
	parallel.ForEach(len(ids), max(1, c.cfg.Parallel/4), func(i int) {
		results[i], errs[i] = c.compact(ctx, ids[i], pending[ids[i]])
	})
	// a shard found locked may have been locked by this run itself: moving
	// a foreign batch object (I6) merges into shards of the current layout
	// under their locks while those shards' own compactions run. Those
	// locks are released now, so each locked shard is tried once more; a
	// lock of another worker still stands, and the shard waits for it.
	for i, r := range results {
		if errs[i] == nil && r.Status == StatusLocked {
			results[i], errs[i] = c.compact(ctx, ids[i], pending[ids[i]])
		}
	}
	c.signals.flush() // a command that compacts all exits next
	var out []Result
	for i, r := range results {
		if errs[i] != nil {
			return out, fmt.Errorf("shard %s: %w", ids[i], errs[i])
		}
		out = append(out, r)
	}
	if bad := pending[""]; len(bad) > 0 {
		r := Result{Shard: "", Status: StatusNothingToDo}
		for _, a := range bad {
			reason := fmt.Sprintf("the batch's shard is not a shard id (1 to %d lower-case hex characters)", shard.MaxWidth)
			if d, ok := DomainOfInboxKey(a.Key); ok {
				reason = "the object's key: " + CheckKey(d).Error()
			}
			r.Errors = append(r.Errors, InboxError{Key: a.Key, Reason: reason})
		}
		out = append(out, r)
	}
	return out, nil
}

// compact runs one compaction of shard id over the given inbox objects.
func (c *Compiler) compact(ctx context.Context, id string, inbox []store.Attrs) (res Result, err error) {
	start := time.Now()
	res.Shard = id
	defer func() { res.Duration = time.Since(start) }()
	if len(inbox) == 0 {
		res.Status = StatusNothingToDo
		return res, c.reapStaleLock(ctx, id)
	}
	if c.foreign(id) {
		// batch objects of another width: landed by a writer that loaded
		// the layout before a resharding (I6)
		return c.moveObjects(ctx, id, inbox)
	}
	lk, held, err := c.acquire(ctx, id)
	if err != nil {
		return res, err
	}
	if held {
		res.Status = StatusLocked
		return res, nil
	}
	defer c.release(lk)

	// Read the shard under the lock; its ETag is the condition of the write (I2).
	cur, body, shardCond, err := c.readShard(ctx, id)
	if err != nil {
		return res, err
	}
	res.RecordsBefore = len(cur.Rows)

	// Read each inbox object once, Parallel at a time; remember the ETag of
	// the version read (I3). Results keep the listing's order.
	got := c.readPending(ctx, inbox)
	var used, tombs []merged
	partial := 0
	tables := []Table{cur}
	for i, f := range got {
		switch {
		case f.err != nil:
			return res, f.err
		case f.skip:
		case f.tomb:
			tombs = append(tombs, merged{key: inbox[i].Key, etag: f.etag})
		case len(f.bad) > 0: // I4: reported, kept, never blocks the shard
			res.Errors = append(res.Errors, InboxError{Key: inbox[i].Key, Reason: JoinProblems(f.bad)})
			if len(f.t.Rows) > 0 { // rule K3: its valid records are merged
				tables = append(tables, f.t)
				partial++
			}
		default:
			tables = append(tables, f.t)
			used = append(used, merged{key: inbox[i].Key, etag: f.etag, batch: f.batch})
		}
	}
	// tombstones hold no records: they go under this lock whatever else
	// happens, so a crash between marking and deleting is repaired here;
	// the tombstones this compaction makes below join them, and all go
	// together (deleteTombstones), after one more check of the lock
	defer func() {
		if len(tombs) == 0 || res.Status == StatusConflict || !c.stillHeld(ctx, lk) {
			return
		}
		c.deleteTombstones(ctx, tombs)
	}()
	res.InboxPartial = partial
	if len(used) == 0 && partial == 0 {
		res.Status = StatusNothingToDo
		res.RecordsAfter = res.RecordsBefore
		return res, nil
	}
	out, err := Merge(OutputHeader(c.cfg.SchemaFields, tables...), len(c.cfg.SchemaFields), tables...)
	if err != nil {
		return res, err
	}
	var buf bytes.Buffer
	if err := out.Encode(&buf); err != nil {
		return res, err
	}
	if len(used) == 0 && shardCond.IfMatch != "" && bytes.Equal(buf.Bytes(), body) {
		// only partly bad objects, merged before: the shard already holds
		// their valid records, and there is nothing to retire
		res.Status = StatusNothingToDo
		res.RecordsAfter = res.RecordsBefore
		return res, nil
	}
	n := int64(buf.Len())
	if err := c.checkPackage(ctx); err != nil { // I7
		return res, err
	}
	if _, err := c.st.Put(ctx, ShardKey(id), &buf, shardCond); err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) { // I2: abandon, never retry blindly
			res.Status = StatusConflict
			return res, nil
		}
		return res, fmt.Errorf("write shard: %w", err)
	}
	c.signals.bump(ShardSignalKey(id))
	// POINT OF NO RETURN: the shard holding every merged record is durable.
	// Only now may inbox versions go, and only the versions merged (I3):
	// each is first replaced by a tombstone with Put(IfMatch: the merged
	// ETag), which is atomic with concurrent puts on every store, and the
	// tombstones are then deleted, together (store.DeleteMany) when the
	// compaction ends. No DHSI writer writes over a tombstone, so the
	// delete has nothing to race with even where it is not atomic. A store
	// whose conditional delete is atomic (store.AtomicDeleter) gets one
	// Delete(IfMatch: the merged ETag) per object instead.
	res.Status, res.BytesWritten, res.RecordsAfter = StatusCompacted, n, len(out.Rows)
	deleted := make([]bool, len(used))
	if !c.stillHeld(ctx, lk) {
		// our lock went stale and another worker may be retiring the same
		// objects: leave them, the next compaction merges them again
		res.InboxKept = len(used)
		return res, nil
	}
	atomic := false
	if ad, ok := c.st.(store.AtomicDeleter); ok {
		atomic = ad.AtomicConditionalDelete() // no fence needed: one conditional delete
	}
	// What is deleted directly goes in one DeleteMany: the merged versions
	// on a store whose conditional delete is atomic, and batch objects,
	// whose key is never written again (BatchKey), so that their delete
	// races with no put, atomic or not.
	var direct []store.DeleteItem
	var directAt, fence []int
	for i, m := range used {
		switch {
		case atomic:
			direct = append(direct, store.DeleteItem{Key: m.key, Cond: store.Cond{IfMatch: m.etag}})
			directAt = append(directAt, i)
		case m.batch:
			direct = append(direct, store.DeleteItem{Key: m.key, Cond: c.raceFreeCond(ctx, m.etag)})
			directAt = append(directAt, i)
		default:
			fence = append(fence, i)
		}
	}
	retired := func(i int, err error) {
		switch {
		case err == nil:
			deleted[i] = true
		case errors.Is(err, store.ErrPreconditionFailed), errors.Is(err, store.ErrNotFound):
			// rewritten (or removed) since we read it: kept for next time
		default:
			// the merged content is safe in the shard; the object stays and is
			// merged again next time, which changes nothing
			c.log.Warn("retire merged inbox object", "key", used[i].key, "err", err)
		}
	}
	for j, err := range store.DeleteMany(ctx, c.st, direct) {
		retired(directAt[j], err)
	}
	// The other inbox objects are fenced: each merged version becomes a
	// tombstone (Put IfMatch: the merged ETag, atomic on every store), and
	// the tombstones are deleted together when this compaction ends (the
	// deferred deleteTombstones above), under this lock, checked again.
	made := make([]merged, len(fence))
	parallel.ForEach(len(fence), c.cfg.Parallel, func(j int) {
		m := used[fence[j]]
		a, err := c.st.Put(ctx, m.key, bytes.NewReader(nil), store.Cond{IfMatch: m.etag})
		if err == nil {
			made[j] = merged{key: m.key, etag: a.ETag, made: true}
		}
		retired(fence[j], err)
	})
	for _, m := range made {
		if m.key != "" {
			tombs = append(tombs, m)
		}
	}
	for _, ok := range deleted {
		if ok {
			res.InboxMerged++
		} else {
			res.InboxKept++
		}
	}
	if res.InboxMerged > 0 {
		c.signals.bump(PendingSignalKey) // the inbox changed too
	}
	return res, nil
}

// readShard reads shard id, which the caller has locked, and returns its
// records, its bytes, and the condition a write of it must carry (I2):
// IfMatch the ETag read, or IfNoneMatch for a shard that does not exist.
func (c *Compiler) readShard(ctx context.Context, id string) (cur Table, body []byte, cond store.Cond, err error) {
	body, attrs, err := store.ReadAll(ctx, c.st, ShardKey(id))
	switch {
	case err == nil:
		if cur, err = ParseTable(body); err != nil {
			return Table{}, nil, store.Cond{}, fmt.Errorf("shard %s is corrupt: %w", ShardKey(id), err)
		}
		return cur, body, store.Cond{IfMatch: attrs.ETag}, nil
	case errors.Is(err, store.ErrNotFound):
		return Table{}, nil, store.Cond{IfNoneMatch: true}, nil
	}
	return Table{}, nil, store.Cond{}, fmt.Errorf("read shard: %w", err)
}

// pendingRead is one pending object as read by readPending.
type pendingRead struct {
	t     Table // the records the rule accepts
	etag  store.ETag
	batch bool      // a batch object (BatchKey)
	skip  bool      // deleted meanwhile
	tomb  bool      // a tombstone left by a compaction that stopped (I3)
	bad   []Problem // what the rule refuses (I4)
	err   error     // I/O
}

// readPending reads pending objects, Parallel at a time, each once, with
// the ETag of the version read (I3), and applies the record rule to each.
// Results keep objs' order.
func (c *Compiler) readPending(ctx context.Context, objs []store.Attrs) []pendingRead {
	got := make([]pendingRead, len(objs))
	parallel.ForEach(len(objs), c.cfg.Parallel, func(i int) {
		key := objs[i].Key
		b, a, err := store.ReadAll(ctx, c.st, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			got[i].skip = true // merged and deleted by another compiler meanwhile
		case err != nil:
			got[i].err = fmt.Errorf("read %s: %w", key, err)
		case len(b) == 0:
			got[i] = pendingRead{etag: a.ETag, tomb: true}
		default:
			t, bad, _ := c.rule.CheckPending(key, b)
			_, batch := ShardOfBatchKey(key)
			got[i] = pendingRead{t: t, etag: a.ETag, batch: batch, bad: bad}
		}
	})
	return got
}

// stillHeld reports whether lk is still this worker's lock: not taken over
// after going stale. Retiring inbox objects needs the lock (I3).
func (c *Compiler) stillHeld(ctx context.Context, lk lock) bool {
	a, err := c.st.Head(ctx, lk.key)
	return err == nil && a.ETag == lk.etag
}

// merged is one version of a pending object that a compaction merged, or
// a tombstone it found or made.
type merged struct {
	key   string
	etag  store.ETag
	batch bool // a batch object: written once, deleted directly (I3)
	made  bool // a tombstone this compaction made (deleteTombstones)
}

// deleteTombstone removes one tombstone that a writer saw before it took
// the shard's lock (clearTombstone), always with Delete(IfMatch): it may
// have gone and a new object taken its key since, so unlike the
// tombstones a compaction reads under its lock, its delete is not free of
// races. A failure leaves the tombstone for the next compaction.
func (c *Compiler) deleteTombstone(ctx context.Context, key string, etag store.ETag) {
	err := c.st.Delete(ctx, key, store.Cond{IfMatch: etag})
	if err != nil && !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrNotFound) {
		c.log.Warn("delete inbox tombstone", "key", key, "err", err)
	}
}

// deleteTombstones removes tombstones under the shard's lock, which the
// caller still holds (I3). Those this compaction made may go without a
// condition (raceFreeCond): no DHSI writer writes over them, and a
// compaction that lost this lock to us can no longer retire their key
// (its tombstone put fails: the ETag is ours). A tombstone found is
// deleted with Delete(IfMatch): the compaction that left it may yet
// delete it after a stall past the lock's TTL, and a writer then put a
// new object on the key. Found ones are rare (a crash); they cost a
// request or two each. A failure leaves a tombstone for the next
// compaction.
func (c *Compiler) deleteTombstones(ctx context.Context, tombs []merged) {
	items := make([]store.DeleteItem, len(tombs))
	for i, m := range tombs {
		cond := store.Cond{IfMatch: m.etag}
		if m.made {
			cond = c.raceFreeCond(ctx, m.etag)
		}
		items[i] = store.DeleteItem{Key: m.key, Cond: cond}
	}
	for i, err := range store.DeleteMany(ctx, c.st, items) {
		if err != nil && !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrNotFound) {
			c.log.Warn("delete inbox tombstone", "key", tombs[i].key, "err", err)
		}
	}
}

// raceFreeCond is the condition of the delete of a key that no DHSI writer
// writes while it is deleted: a tombstone made under its shard's lock,
// still held (I3), a batch object (BatchKey). Such a delete races with no put, so its
// condition only guards against a writer outside DHSI's protocol. It is
// IfMatch etag, unless the store's bulk delete sends conditional deletes
// one by one (versitygw v1.8.0 ignores the ETags of a DeleteObjects): there
// the condition is dropped, so that a compaction's tombstones go in one
// request instead of a HEAD and a DELETE each. That store's conditional
// delete is not atomic anyway, so a plain S3 client writing there already
// had no protection from it (I3).
func (c *Compiler) raceFreeCond(ctx context.Context, etag store.ETag) store.Cond {
	if bulk, conditional := store.BulkDelete(ctx, c.st); bulk && !conditional {
		return store.Cond{}
	}
	return store.Cond{IfMatch: etag}
}

// lockBody is the JSON content of a lock object (docs/format/lock.md).
type lockBody struct {
	WorkerID   string    `json:"worker_id"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	TTLSeconds float64   `json:"ttl_seconds"`
}

type lock struct {
	key  string
	etag store.ETag
}

// acquire takes the shard's lock (I1). held reports a live lock of another
// worker.
func (c *Compiler) acquire(ctx context.Context, id string) (lk lock, held bool, err error) {
	key := LockKey(id)
	body := func() *bytes.Reader {
		now := time.Now().UTC()
		b, _ := json.Marshal(lockBody{WorkerID: c.cfg.WorkerID, CreatedAt: now, ExpiresAt: now.Add(c.cfg.LockTTL), TTLSeconds: c.cfg.LockTTL.Seconds()})
		return bytes.NewReader(b)
	}
	for attempt := 0; attempt < 2; attempt++ {
		a, err := c.st.Put(ctx, key, body(), store.Cond{IfNoneMatch: true})
		if err == nil {
			return lock{key, a.ETag}, false, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return lock{}, false, fmt.Errorf("acquire lock %s: %w", key, err)
		}
		// Someone holds it. Stale? Judge by the store's clock.
		b, la, err := store.ReadAll(ctx, c.st, key)
		if errors.Is(err, store.ErrNotFound) {
			continue // released meanwhile: try again once
		}
		if err != nil {
			return lock{}, false, fmt.Errorf("read lock %s: %w", key, err)
		}
		ttl := c.cfg.LockTTL
		var lb lockBody
		if json.Unmarshal(b, &lb) == nil && lb.TTLSeconds > 0 {
			ttl = time.Duration(lb.TTLSeconds * float64(time.Second))
		}
		now, err := c.storeNow(ctx)
		if err != nil {
			return lock{}, false, err
		}
		if now.Before(la.LastModified.Add(ttl)) {
			return lock{}, true, nil
		}
		a, err = c.st.Put(ctx, key, body(), store.Cond{IfMatch: la.ETag})
		if err == nil {
			c.log.Info("took over a stale lock", "shard", id, "previous", lb.WorkerID, "age", now.Sub(la.LastModified))
			return lock{key, a.ETag}, false, nil
		}
		if errors.Is(err, store.ErrPreconditionFailed) || errors.Is(err, store.ErrNotFound) {
			return lock{}, true, nil // another worker took it first
		}
		return lock{}, false, fmt.Errorf("take over lock %s: %w", key, err)
	}
	return lock{}, true, nil
}

// storeNow reads the store's clock: the LastModified of an object written
// now (I1). It costs a put and a delete, and runs only when a lock is found
// held.
func (c *Compiler) storeNow(ctx context.Context) (time.Time, error) {
	key := clockKeyStem + c.cfg.WorkerID
	a, err := c.st.Put(ctx, key, bytes.NewReader(nil), store.Cond{})
	if err != nil {
		return time.Time{}, fmt.Errorf("read the store's clock: %w", err)
	}
	_ = c.st.Delete(ctx, key, store.Cond{})
	return a.LastModified, nil
}

// reapClocks deletes clock objects (storeNow) older than the lock TTL by
// the store's clock: a live worker's exists for one put and one delete, so
// an old one was left by a worker killed in between.
func (c *Compiler) reapClocks(ctx context.Context, clocks []store.Attrs) error {
	if len(clocks) == 0 {
		return nil
	}
	now, err := c.storeNow(ctx)
	if err != nil {
		return err
	}
	for _, a := range clocks {
		if a.Key == clockKeyStem+c.cfg.WorkerID || !a.LastModified.Add(c.cfg.LockTTL).Before(now) {
			continue
		}
		if err := c.st.Delete(ctx, a.Key, store.Cond{IfMatch: a.ETag}); err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("delete a stale clock object %s: %w", a.Key, err)
		}
		c.log.Info("removed a clock object a killed worker left", "key", a.Key)
	}
	return nil
}

// reapStaleLock removes a shard's lock left by a crashed worker once it is
// stale, so an idle shard does not keep a dead lock forever. A live lock is
// left alone.
func (c *Compiler) reapStaleLock(ctx context.Context, id string) error {
	if _, err := c.st.Head(ctx, LockKey(id)); errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("check lock: %w", err)
	}
	lk, held, err := c.acquire(ctx, id) // takes it over only if stale (I1)
	if err != nil || held {
		return err
	}
	c.release(lk)
	return nil
}

// release deletes our lock, unless another worker has taken it over.
func (c *Compiler) release(lk lock) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := c.st.Delete(ctx, lk.key, store.Cond{IfMatch: lk.etag})
	if err != nil && !errors.Is(err, store.ErrPreconditionFailed) && !errors.Is(err, store.ErrNotFound) {
		c.log.Warn("release lock", "key", lk.key, "err", err)
	}
}
