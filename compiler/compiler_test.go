package compiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/tableschema"
)

// backends runs a test on the local directory and on a real versitygw.
func backends(t *testing.T, fn func(t *testing.T, newStore func(t *testing.T) store.Store)) {
	t.Run("localfs", func(t *testing.T) {
		fn(t, func(t *testing.T) store.Store {
			st, err := localfs.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return st
		})
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		fn(t, func(t *testing.T) store.Store {
			st, _ := srv.NewStore(t)
			return st
		})
	})
}

var fields = DefaultSchemaFields

func rec(domain, company string, version int, at string) Table {
	return Table{Header: fields, Rows: [][]string{{domain, company, fmt.Sprint(version), at}}}
}

func put(t *testing.T, st store.Store, domain, company string, version int, at string) {
	t.Helper()
	c, err := New(st, Config{SchemaFields: fields}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteInbox(context.Background(), domain, rec(domain, company, version, at)); err != nil {
		t.Fatal(err)
	}
}

func shardRows(t *testing.T, st store.Store, id string) map[string][]string {
	t.Helper()
	b, _, err := store.ReadAll(context.Background(), st, ShardKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return map[string][]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ParseTable(b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range tb.Rows {
		if _, dup := out[r[0]]; dup {
			t.Fatalf("domain %s appears twice in shard %s", r[0], id)
		}
		out[r[0]] = r
	}
	return out
}

func inboxKeys(t *testing.T, st store.Store) []string {
	t.Helper()
	var keys []string
	st.List(context.Background(), InboxPrefix, func(a store.Attrs) error {
		if _, ok := DomainOfInboxKey(a.Key); ok {
			keys = append(keys, a.Key)
		}
		return nil
	})
	return keys
}

// domainsIn returns n domains that all fall in shard id.
func domainsIn(id string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		d := fmt.Sprintf("site%d.example", i)
		if shard.Default().Of(d) == id {
			out = append(out, d)
		}
	}
	return out
}

func newCompiler(t *testing.T, st store.Store, cfg Config) *Compiler {
	t.Helper()
	c, err := New(st, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// a folded signal's timer may write after the test, into a directory
	// its cleanup is removing
	t.Cleanup(c.FlushSignals)
	return c
}

func TestCompaction(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		t.Run("the latest updated_at wins and the inbox is emptied", func(t *testing.T) {
			st := newStore(t)
			ds := domainsIn("5e", 3)
			put(t, st, ds[0], "Old", 1, "2024-01-01T00:00:00Z")
			put(t, st, ds[0], "New", 2, "2024-06-01T00:00:00Z")
			put(t, st, ds[0], "Late but older", 3, "2023-01-01T00:00:00Z") // arrives late, older
			put(t, st, ds[1], "B", 1, "2024-01-01T00:00:00Z")
			c := newCompiler(t, st, Config{})
			r, err := c.CompactShard(ctx, "5e")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != StatusCompacted || r.InboxMerged != 2 || r.RecordsBefore != 0 || r.RecordsAfter != 2 || r.BytesWritten == 0 {
				t.Fatalf("result %+v", r)
			}
			rows := shardRows(t, st, "5e")
			if rows[ds[0]][1] != "New" || rows[ds[1]][1] != "B" || len(rows) != 2 {
				t.Fatalf("shard rows %v", rows)
			}
			if k := inboxKeys(t, st); len(k) != 0 {
				t.Fatalf("inbox not emptied: %v", k)
			}
			// a second compaction finds nothing to do and changes nothing
			r, err = c.CompactShard(ctx, "5e")
			if err != nil || r.Status != StatusNothingToDo {
				t.Fatalf("second compaction %+v %v", r, err)
			}
		})
		t.Run("a newer record replaces the shard's, an older one does not", func(t *testing.T) {
			st := newStore(t)
			d := domainsIn("07", 1)[0]
			c := newCompiler(t, st, Config{})
			put(t, st, d, "v2", 2, "2024-02-01T00:00:00Z")
			c.CompactShard(ctx, "07")
			put(t, st, d, "v1", 1, "2024-01-01T00:00:00Z")
			c.CompactShard(ctx, "07")
			if got := shardRows(t, st, "07")[d][1]; got != "v2" {
				t.Fatalf("an older record replaced a newer one: %q", got)
			}
			put(t, st, d, "v3", 3, "2024-03-01T00:00:00Z")
			r, _ := c.CompactShard(ctx, "07")
			if got := shardRows(t, st, "07")[d][1]; got != "v3" || r.RecordsBefore != 1 || r.RecordsAfter != 1 {
				t.Fatalf("shard has %q after a newer record, result %+v", got, r)
			}
		})
		t.Run("a malformed inbox object is reported and kept, the rest is merged (I4)", func(t *testing.T) {
			st := newStore(t)
			ds := domainsIn("a1", 2)
			put(t, st, ds[0], "Good", 1, "2024-01-01T00:00:00Z")
			if _, err := st.Put(ctx, InboxKey(ds[1]), strings.NewReader("domain␟updated_at␞\n"+ds[1]+"␟yesterday␞\n"), store.Cond{}); err != nil {
				t.Fatal(err)
			}
			r, err := newCompiler(t, st, Config{}).CompactShard(ctx, "a1")
			if err != nil || r.Status != StatusCompacted || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Reason, "RFC 3339") {
				t.Fatalf("result %+v, %v", r, err)
			}
			if k := inboxKeys(t, st); len(k) != 1 || k[0] != InboxKey(ds[1]) {
				t.Fatalf("inbox after compaction %v, want only the malformed object", k)
			}
		})
		t.Run("a partly bad object: its valid records merged, every problem reported, the object kept (rule K3)", func(t *testing.T) {
			st := newStore(t)
			d := domainsIn("a1", 1)[0]
			body := "domain␟company_name␟scraper_version␟updated_at␞" +
				d + "␟Good␟1␟2024-01-01T00:00:00Z␞" +
				d + "␟Bad time␟2␟␞" +
				d + "␟Bad version␟two␟2025-01-01T00:00:00Z␞"
			if _, err := st.Put(ctx, InboxKey(d), strings.NewReader(body), store.Cond{}); err != nil {
				t.Fatal(err)
			}
			c := newCompiler(t, st, Config{Schema: testSchema(t)})
			r, err := c.CompactShard(ctx, "a1")
			if err != nil || r.Status != StatusCompacted || r.InboxPartial != 1 || r.InboxMerged != 0 || len(r.Errors) != 1 ||
				!strings.Contains(r.Errors[0].Reason, "record 3: updated_at") || !strings.Contains(r.Errors[0].Reason, `record 4: field "scraper_version"`) {
				t.Fatalf("result %+v, %v", r, err)
			}
			if got := shardRows(t, st, "a1")[d]; len(got) == 0 || got[1] != "Good" {
				t.Fatalf("shard row %v, want the valid record", got)
			}
			if k := inboxKeys(t, st); len(k) != 1 {
				t.Fatalf("inbox %v: the partly bad object must stay until it is fixed", k)
			}
			// again: nothing new to merge, so the shard is not rewritten
			_, before, _ := store.ReadAll(ctx, st, ShardKey("a1"))
			r, err = c.CompactShard(ctx, "a1")
			_, after, _ := store.ReadAll(ctx, st, ShardKey("a1"))
			if err != nil || r.Status != StatusNothingToDo || len(r.Errors) != 1 || before.ETag != after.ETag {
				t.Fatalf("second compaction %+v %v; shard ETag %s → %s", r, err, before.ETag, after.ETag)
			}
		})
		t.Run("a live lock makes the compaction report locked (I1)", func(t *testing.T) {
			st := newStore(t)
			put(t, st, domainsIn("3c", 1)[0], "x", 1, "2024-01-01T00:00:00Z")
			a := newCompiler(t, st, Config{WorkerID: "a"})
			if _, held, err := a.acquire(ctx, "3c"); err != nil || held {
				t.Fatalf("acquire: held=%v err=%v", held, err)
			}
			r, err := newCompiler(t, st, Config{WorkerID: "b"}).CompactShard(ctx, "3c")
			if err != nil || r.Status != StatusLocked {
				t.Fatalf("result %+v %v", r, err)
			}
		})
		t.Run("a stale lock is taken over, judged by the store's clock (I1)", func(t *testing.T) {
			st := newStore(t)
			d := domainsIn("3c", 1)[0]
			put(t, st, d, "x", 1, "2024-01-01T00:00:00Z")
			crashed := newCompiler(t, st, Config{WorkerID: "crashed", LockTTL: time.Second})
			if _, _, err := crashed.acquire(ctx, "3c"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2100 * time.Millisecond) // S3 LastModified has one-second resolution
			r, err := newCompiler(t, st, Config{WorkerID: "b"}).CompactShard(ctx, "3c")
			if err != nil || r.Status != StatusCompacted {
				t.Fatalf("result %+v %v", r, err)
			}
			if _, err := st.Head(ctx, LockKey("3c")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("lock left behind: %v", err)
			}
		})
	})
}

// racing wraps a store and runs hook once, just before the first Put of a
// shard: another compiler or writer acting between our read and our write.
type racing struct {
	store.Store
	once sync.Once
	hook func()
}

func (r *racing) Put(ctx context.Context, key string, body io.Reader, cond store.Cond) (store.Attrs, error) {
	if strings.HasPrefix(key, ShardPrefix) && strings.HasSuffix(key, shardSuffix) {
		r.once.Do(r.hook)
	}
	return r.Store.Put(ctx, key, body, cond)
}

func TestRaces(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		t.Run("a shard written by another compiler meanwhile gives conflict and loses nothing (I2)", func(t *testing.T) {
			base := newStore(t)
			ds := domainsIn("42", 2)
			put(t, base, ds[0], "mine", 1, "2024-01-01T00:00:00Z")
			st := &racing{Store: base, hook: func() {
				other := rec(ds[1], "theirs", 1, "2024-01-01T00:00:00Z")
				var buf bytes.Buffer
				other.Encode(&buf)
				if _, err := base.Put(ctx, ShardKey("42"), &buf, store.Cond{}); err != nil {
					t.Error(err)
				}
			}}
			r, err := newCompiler(t, st, Config{}).CompactShard(ctx, "42")
			if err != nil || r.Status != StatusConflict {
				t.Fatalf("result %+v %v", r, err)
			}
			if k := inboxKeys(t, base); len(k) != 1 {
				t.Fatalf("after a conflict the inbox must be untouched: %v", k)
			}
			if _, err := base.Head(ctx, LockKey("42")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("lock not released after a conflict: %v", err)
			}
			r, _ = newCompiler(t, base, Config{}).CompactShard(ctx, "42")
			rows := shardRows(t, base, "42")
			if r.Status != StatusCompacted || rows[ds[0]][1] != "mine" || rows[ds[1]][1] != "theirs" {
				t.Fatalf("after retrying: %+v %v", r, rows)
			}
		})
		t.Run("an inbox object rewritten during compaction survives for the next one (I3)", func(t *testing.T) {
			base := newStore(t)
			d := domainsIn("42", 1)[0]
			put(t, base, d, "first", 1, "2024-01-01T00:00:00Z")
			st := &racing{Store: base, hook: func() { put(t, base, d, "second", 2, "2024-02-01T00:00:00Z") }}
			r, err := newCompiler(t, st, Config{}).CompactShard(ctx, "42")
			if err != nil || r.Status != StatusCompacted || r.InboxKept != 1 || r.InboxMerged != 0 {
				t.Fatalf("result %+v %v", r, err)
			}
			if got := shardRows(t, base, "42")[d][1]; got != "first" {
				t.Fatalf("shard has %q, want the version read under the lock", got)
			}
			newCompiler(t, base, Config{}).CompactShard(ctx, "42")
			if got := shardRows(t, base, "42")[d][1]; got != "second" {
				t.Fatalf("the rewritten record was lost: shard has %q", got)
			}
			if k := inboxKeys(t, base); len(k) != 0 {
				t.Fatalf("inbox %v", k)
			}
		})
	})
}

func TestTombstones(t *testing.T) {
	ctx := context.Background()
	defer func(d time.Duration) { tombstoneWait = d }(tombstoneWait)
	tombstoneWait = 200 * time.Millisecond
	tombstone := func(t *testing.T, st store.Store, d string) {
		t.Helper()
		if _, err := st.Put(ctx, InboxKey(d), bytes.NewReader(nil), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	inboxCompany := func(t *testing.T, st store.Store, d string) string {
		t.Helper()
		b, _, err := store.ReadAll(ctx, st, InboxKey(d))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			return "(tombstone)"
		}
		tb, err := ParseTable(b)
		if err != nil {
			t.Fatal(err)
		}
		return tb.Rows[0][1]
	}
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		t.Run("a writer never writes over a tombstone while its compaction holds the lock (I3)", func(t *testing.T) {
			st := newStore(t)
			d := domainsIn("5e", 1)[0]
			compaction := newCompiler(t, st, Config{WorkerID: "compaction"})
			lk, held, err := compaction.acquire(ctx, "5e")
			if err != nil || held {
				t.Fatalf("acquire: %v %v", held, err)
			}
			tombstone(t, st, d)
			done := make(chan error, 1)
			go func() {
				done <- newCompiler(t, st, Config{WorkerID: "writer"}).WriteInbox(ctx, d, rec(d, "after", 2, "2024-02-01T00:00:00Z"))
			}()
			time.Sleep(3 * tombstoneWait)
			if got := inboxCompany(t, st, d); got != "(tombstone)" {
				t.Fatalf("the writer wrote over a tombstone under a live lock: inbox has %q", got)
			}
			select {
			case err := <-done:
				t.Fatalf("the writer returned while the tombstone stood: %v", err)
			default:
			}
			// the compaction deletes its tombstone and releases its lock
			a, err := st.Head(ctx, InboxKey(d))
			if err != nil {
				t.Fatal(err)
			}
			compaction.deleteTombstone(ctx, InboxKey(d), a.ETag)
			compaction.release(lk)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := inboxCompany(t, st, d); got != "after" {
				t.Fatalf("inbox has %q", got)
			}
		})
		t.Run("a writer clears a tombstone its crashed compaction left (I3)", func(t *testing.T) {
			st := newStore(t)
			d := domainsIn("5e", 1)[0]
			tombstone(t, st, d)
			if err := newCompiler(t, st, Config{}).WriteInbox(ctx, d, rec(d, "after", 2, "2024-02-01T00:00:00Z")); err != nil {
				t.Fatal(err)
			}
			if got := inboxCompany(t, st, d); got != "after" {
				t.Fatalf("inbox has %q", got)
			}
			if _, err := st.Head(ctx, LockKey("5e")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the writer left the shard lock: %v", err)
			}
		})
		t.Run("the next compaction deletes a tombstone left behind (I3)", func(t *testing.T) {
			st := newStore(t)
			ds := domainsIn("5e", 2)
			tombstone(t, st, ds[0])
			c := newCompiler(t, st, Config{})
			r, err := c.CompactShard(ctx, "5e")
			if err != nil || r.Status != StatusNothingToDo || len(r.Errors) != 0 {
				t.Fatalf("result %+v %v", r, err)
			}
			if k := inboxKeys(t, st); len(k) != 0 {
				t.Fatalf("inbox %v", k)
			}
			tombstone(t, st, ds[0])
			put(t, st, ds[1], "x", 1, "2024-01-01T00:00:00Z")
			if r, err := c.CompactShard(ctx, "5e"); err != nil || r.Status != StatusCompacted || r.InboxMerged != 1 || len(r.Errors) != 0 {
				t.Fatalf("result %+v %v", r, err)
			}
			if k := inboxKeys(t, st); len(k) != 0 {
				t.Fatalf("inbox %v", k)
			}
		})
	})
}

// crashing fails every store call after the first n: a worker that dies at
// that point. Nothing after the crash point reaches the store.
type crashing struct {
	store.Store
	mu    sync.Mutex
	calls int
	n     int
}

var errCrash = errors.New("crashed")

func (c *crashing) step() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls > c.n {
		return errCrash
	}
	return nil
}

func (c *crashing) Get(ctx context.Context, key string) (io.ReadCloser, store.Attrs, error) {
	if err := c.step(); err != nil {
		return nil, store.Attrs{}, err
	}
	return c.Store.Get(ctx, key)
}
func (c *crashing) Head(ctx context.Context, key string) (store.Attrs, error) {
	if err := c.step(); err != nil {
		return store.Attrs{}, err
	}
	return c.Store.Head(ctx, key)
}
func (c *crashing) Put(ctx context.Context, key string, r io.Reader, cond store.Cond) (store.Attrs, error) {
	if err := c.step(); err != nil {
		return store.Attrs{}, err
	}
	return c.Store.Put(ctx, key, r, cond)
}
func (c *crashing) Delete(ctx context.Context, key string, cond store.Cond) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.Store.Delete(ctx, key, cond)
}
func (c *crashing) List(ctx context.Context, prefix string, fn func(store.Attrs) error) error {
	if err := c.step(); err != nil {
		return err
	}
	return c.Store.List(ctx, prefix, fn)
}

// crashingBulk is crashing with a bulk delete that sends conditional
// deletes one by one (BulkDelete: true, false), as s3store on versitygw:
// the compaction deletes its tombstones in one DeleteMany without
// conditions, which counts as one store call.
type crashingBulk struct{ *crashing }

func (c crashingBulk) DeleteMany(ctx context.Context, items []store.DeleteItem) []error {
	errs := make([]error, len(items))
	if err := c.step(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	return store.DeleteEach(ctx, c.Store, items)
}

func (c crashingBulk) BulkDelete(context.Context) (bool, bool) { return true, false }

func TestCrashAtEveryStep(t *testing.T) {
	// I3: a worker killed after any number of store calls leaves a state that
	// the next compaction repairs, with every latest record present once.
	ctx := context.Background()
	for n := 0; n < 120; n++ {
		bulk := n%2 == 1
		n := n / 2
		name := fmt.Sprintf("crash after %d store calls", n)
		if bulk {
			name += ", tombstones deleted in bulk without conditions"
		}
		t.Run(name, func(t *testing.T) {
			base, _ := localfs.Open(t.TempDir())
			ds := domainsIn("5e", 4)
			// a shard already holding older versions
			for i, d := range ds {
				put(t, base, d, "old", i, "2024-01-01T00:00:00Z")
			}
			newCompiler(t, base, Config{}).CompactShard(ctx, "5e")
			for i, d := range ds[:3] {
				put(t, base, d, "new", i, "2024-02-01T00:00:00Z")
			}
			var cr store.Store = &crashing{Store: base, n: n}
			if bulk {
				cr = crashingBulk{cr.(*crashing)}
			}
			newCompiler(t, cr, Config{WorkerID: "doomed", LockTTL: time.Second}).CompactShard(ctx, "5e") // may crash anywhere
			if _, err := base.Head(ctx, LockKey("5e")); err == nil {
				time.Sleep(1100 * time.Millisecond) // let the lock it left go stale
			}
			r, err := newCompiler(t, base, Config{}).CompactShard(ctx, "5e")
			if err != nil || r.Status == StatusLocked || r.Status == StatusConflict {
				t.Fatalf("repair compaction: %+v %v", r, err)
			}
			rows := shardRows(t, base, "5e")
			for i, d := range ds {
				want := "old"
				if i < 3 {
					want = "new"
				}
				if rows[d] == nil || rows[d][1] != want {
					t.Fatalf("domain %s: %v, want %s", d, rows[d], want)
				}
			}
			if k := inboxKeys(t, base); len(k) != 0 {
				t.Fatalf("inbox left %v", k)
			}
			if _, err := base.Head(ctx, LockKey("5e")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("lock left behind")
			}
		})
	}
}

// bulkRecorder is a store (not atomic: no AtomicDeleter) whose bulk delete
// sends conditional deletes one by one, as s3store on versitygw; it
// records what reaches DeleteMany and Delete.
type bulkRecorder struct {
	store.Store
	mu      sync.Mutex
	many    [][]store.DeleteItem
	deletes []store.DeleteItem
}

func (b *bulkRecorder) DeleteMany(ctx context.Context, items []store.DeleteItem) []error {
	b.mu.Lock()
	b.many = append(b.many, items)
	b.mu.Unlock()
	return store.DeleteEach(ctx, b.Store, items)
}

func (b *bulkRecorder) BulkDelete(context.Context) (bool, bool) { return true, false }

func (b *bulkRecorder) Delete(ctx context.Context, key string, cond store.Cond) error {
	b.mu.Lock()
	b.deletes = append(b.deletes, store.DeleteItem{Key: key, Cond: cond})
	b.mu.Unlock()
	return b.Store.Delete(ctx, key, cond)
}

// TestTombstonesGoInOneBulkDelete: on a store whose bulk delete would send
// conditional deletes one by one (versitygw), a compaction deletes the
// tombstones it made under its lock in one DeleteMany without conditions
// (raceFreeCond), and one it found with its IfMatch; a writer clearing a
// tombstone it saw before taking the lock keeps its IfMatch, since a new
// object may have taken the key since.
func TestTombstonesGoInOneBulkDelete(t *testing.T) {
	ctx := context.Background()
	base, _ := localfs.Open(t.TempDir())
	ds := domainsIn("5e", 5)
	for i, d := range ds[:4] {
		put(t, base, d, "c", i, "2024-01-01T00:00:00Z")
	}
	// a tombstone a killed compaction left
	if _, err := base.Put(ctx, InboxKey(ds[4]), bytes.NewReader(nil), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	st := &bulkRecorder{Store: base}
	r, err := newCompiler(t, st, Config{}).CompactShard(ctx, "5e")
	if err != nil || r.Status != StatusCompacted || r.InboxMerged != 4 {
		t.Fatalf("result %+v %v", r, err)
	}
	if k := inboxKeys(t, base); len(k) != 0 {
		t.Fatalf("inbox left %v", k)
	}
	if len(st.many) != 1 || len(st.many[0]) != 5 {
		t.Fatalf("DeleteMany calls %v, want one of the 5 tombstones", st.many)
	}
	for _, it := range st.many[0] {
		found := it.Key == InboxKey(ds[4])
		if found && it.Cond.IfMatch == "" || !found && it.Cond != (store.Cond{}) {
			t.Errorf("tombstone %s deleted with %+v, want no condition for those the compaction made, IfMatch for the one it found", it.Key, it.Cond)
		}
	}
	for _, it := range st.deletes {
		if strings.HasPrefix(it.Key, InboxPrefix) && !strings.HasPrefix(it.Key, ShardPrefix) {
			t.Errorf("an inbox key deleted alone: %+v", it)
		}
	}
	// a writer's clearTombstone
	a, err := base.Put(ctx, InboxKey(ds[0]), bytes.NewReader(nil), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	st.deletes = nil
	if err := newCompiler(t, st, Config{}).clearTombstone(ctx, InboxKey(ds[0]), a.ETag); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range st.deletes {
		if it.Key == InboxKey(ds[0]) {
			found = it.Cond.IfMatch == a.ETag
		}
	}
	if !found {
		t.Errorf("the writer's tombstone delete: %+v, want IfMatch %s", st.deletes, a.ETag)
	}
}

// TestCompactAllRemovesStaleClockObjects: a worker killed between
// storeNow's put and delete leaves .clock-<worker>; the next compact_all
// removes it once it is older than the lock TTL (issue 15 §4: nothing a
// crash leaves behind outlives the next compaction).
func TestCompactAllRemovesStaleClockObjects(t *testing.T) {
	ctx := context.Background()
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, clockKeyStem+"dead", bytes.NewReader(nil), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	// a TTL of 1 s (the least allowed), which the object outlives
	c := newCompiler(t, st, Config{SchemaFields: []string{"domain", "updated_at"}, LockTTL: time.Second, WorkerID: "me"})
	time.Sleep(2100 * time.Millisecond) // past the TTL, at whole-second LastModified
	if _, err := c.CompactAll(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Head(ctx, clockKeyStem+"dead"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the stale clock object is still there: %v", err)
	}
}

func testSchema(t *testing.T) *tableschema.Schema {
	t.Helper()
	return tableschema.DefaultDomainPackage().Resources[0].Schema
}

// TestBatches: records of many domains landed as batch objects (one per
// shard, written once) are merged by compaction like inbox objects, and the
// batch objects are deleted once their shards are durable; what the rule
// refuses is reported, never written.
func TestBatches(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		st := newStore(t)
		c := newCompiler(t, st, Config{Schema: testSchema(t)})
		tb := Table{Header: fields}
		for i := 0; i < 300; i++ {
			d := fmt.Sprintf("batch%d.example", i)
			tb.Rows = append(tb.Rows, []string{d, "Co", "1", "2024-01-01T00:00:00Z"})
		}
		tb.Rows = append(tb.Rows, []string{"com", "Suffix", "1", "2024-01-01T00:00:00Z"}, []string{"batch7.example", "Bad", "x", "2025-01-01T00:00:00Z"})
		rep, err := c.WriteBatch(ctx, tb)
		if err != nil || rep.Landed != 300 || rep.Failed != 2 || len(rep.Errors) != 2 || rep.Objects > 256 {
			t.Fatalf("WriteBatch: %+v, %v", rep, err)
		}
		// refusals name the caller's record numbers, not a shard group's
		if errs := strings.Join(rep.Errors, "\n"); !strings.Contains(errs, `record 302 ("com")`) || !strings.Contains(errs, `record 303 ("batch7.example")`) {
			t.Fatalf("WriteBatch errors:\n%s", errs)
		}
		res, err := c.CompactAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		merged, records := 0, 0
		for _, r := range res {
			merged += r.InboxMerged
			records += r.RecordsAfter
			if len(r.Errors) > 0 {
				t.Errorf("shard %s: %v", r.Shard, r.Errors)
			}
		}
		if merged != rep.Objects || records != 300 {
			t.Fatalf("compaction merged %d of %d batch objects, shards hold %d records", merged, rep.Objects, records)
		}
		if k := inboxKeys(t, st); len(k) != 0 {
			t.Fatalf("batch objects left after compaction: %v", k)
		}
		var left []string
		st.List(ctx, BatchPrefix, func(a store.Attrs) error { left = append(left, a.Key); return nil })
		if len(left) != 0 {
			t.Fatalf("batch objects left: %v", left)
		}

		t.Run("a record in the wrong shard's batch is refused, the others merged", func(t *testing.T) {
			d := domainsIn("10", 1)[0]
			body := "domain␟updated_at␟␞" + d + "␟2024-01-01T00:00:00Z␟␞" + domainsIn("11", 1)[0] + "␟2024-01-01T00:00:00Z␟␞"
			if _, err := st.Put(ctx, BatchKey("10", "handmade"), strings.NewReader(body), store.Cond{}); err != nil {
				t.Fatal(err)
			}
			r, err := c.CompactShard(ctx, "10")
			if err != nil || r.InboxPartial != 1 || len(r.Errors) != 1 || !strings.Contains(r.Errors[0].Reason, "belongs to shard 11") {
				t.Fatalf("result %+v %v", r, err)
			}
			if _, ok := shardRows(t, st, "10")[d]; !ok {
				t.Fatal("the valid record was not merged")
			}
		})
	})
}

func TestBatcher(t *testing.T) {
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := newCompiler(t, st, Config{})
	b := c.NewBatcher(fields, BatcherConfig{MaxRecords: 1000, MaxDelay: 50 * time.Millisecond, InFlight: 2})
	for i := 0; i < 2500; i++ {
		d := fmt.Sprintf("batcher%d.example", i)
		if err := b.Add([]string{d, "Co", "1", "2024-01-01T00:00:00Z"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Add([]string{"www.batcher1.example", "Co", "1", "2024-01-01T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	rep, err := b.Flush(context.Background())
	if err != nil || rep.Landed != 2500 || rep.Failed != 1 || !strings.Contains(strings.Join(rep.Errors, ""), "registered domain") {
		t.Fatalf("Flush: %+v, %v", rep, err)
	}
	// a lone record is landed by MaxDelay, without a Flush
	count := func() int {
		n := 0
		st.List(context.Background(), BatchPrefix+shard.Default().Of("late.example")+"/", func(a store.Attrs) error { n++; return nil })
		return n
	}
	before := count()
	if err := b.Add([]string{"late.example", "Co", "1", "2024-01-01T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if count() > before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a queued record was not landed within MaxDelay")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rep, err := b.Flush(context.Background()); err != nil || rep.Landed != 2501 {
		t.Fatalf("second Flush: %+v %v", rep, err)
	}
}

// TestBatcherFlushWaitsForTheTimersLanding: records the MaxDelay timer took
// while every write slot was busy are durable when Flush returns. Flush
// once found nothing pending and returned while the timer's land still
// waited for a slot (and its later WaitGroup.Add could panic a Wait).
func TestBatcherFlushWaitsForTheTimersLanding(t *testing.T) {
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := newCompiler(t, st, Config{})
	b := c.NewBatcher(fields, BatcherConfig{MaxRecords: 2, MaxDelay: time.Millisecond, InFlight: 1})
	added, early := 0, 0
	for i := 0; i < 100; i++ {
		// two land at once and hold the one slot; the third is the timer's
		for j := 0; j < 3; j++ {
			if err := b.Add([]string{fmt.Sprintf("slot%d-%d.example", i, j), "Co", "1", "2024-01-01T00:00:00Z"}); err != nil {
				t.Fatal(err)
			}
		}
		added += 3
		time.Sleep(3 * time.Millisecond)
		rep, err := b.Flush(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Landed+rep.Failed != added {
			early++
			added = rep.Landed + rep.Failed
		}
	}
	if early > 0 {
		t.Errorf("%d of 100 Flushes returned before every record added before them was landed", early)
	}
}

// TestPendingPage: a looping worker's view of the inbox is bounded, starts
// after the given key and wraps round, so pages from every start together
// cover the inbox (I5).
func TestPendingPage(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		st := newStore(t)
		c := newCompiler(t, st, Config{})
		var all []string
		for i := 0; i < 60; i++ {
			d := fmt.Sprintf("page%02d.example", i)
			put(t, st, d, "Co", 1, "2024-01-01T00:00:00Z")
			all = append(all, InboxKey(d))
		}
		if _, err := c.WriteBatch(ctx, Table{Header: fields, Rows: [][]string{{"zbatch.example", "Co", "1", "2024-01-01T00:00:00Z"}}}); err != nil {
			t.Fatal(err)
		}
		count := func(m map[string][]store.Attrs) (n int, keys map[string]bool) {
			keys = map[string]bool{}
			for id, objs := range m {
				for _, a := range objs {
					if id != c.ShardOf(strings.TrimSuffix(strings.TrimPrefix(a.Key, InboxPrefix), ".usv")) && !strings.HasPrefix(a.Key, BatchPrefix) {
						t.Errorf("%s grouped under shard %s", a.Key, id)
					}
					keys[a.Key] = true
					n++
				}
			}
			return n, keys
		}
		page, err := c.PendingPage(ctx, InboxKey("page30.example"), 10)
		if err != nil {
			t.Fatal(err)
		}
		n, keys := count(page)
		if n != 10 || keys[InboxKey("page30.example")] || !keys[InboxKey("page31.example")] || !keys[InboxKey("page40.example")] {
			t.Fatalf("page after page30: %d objects %v", n, keys)
		}
		page, _ = c.PendingPage(ctx, InboxKey("page55.example"), 10)
		if n, keys = count(page); n != 10 || !keys[InboxKey("page59.example")] || !keys[InboxKey("page00.example")] {
			t.Fatalf("page after page55 does not wrap round: %d objects %v", n, keys)
		}
		page, _ = c.PendingPage(ctx, InboxPrefix, 1000)
		if n, _ = count(page); n != 61 {
			t.Fatalf("a page larger than the inbox has %d objects, want 61", n)
		}
	})
}
