package compiler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

// allShardRecords reads every shard object of any width: domain → (shard
// id, record). A domain in two shards, or in a shard not its own under
// that shard's width, fails the test.
func allShardRecords(t *testing.T, st store.Store) map[string][2]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][2]string{}
	var ids []string
	st.List(ctx, ShardPrefix, func(a store.Attrs) error {
		if id, ok := ShardOfKey(a.Key); ok {
			ids = append(ids, id)
		}
		return nil
	})
	for _, id := range ids {
		for d, r := range shardRows(t, st, id) {
			if prev, dup := out[d]; dup {
				t.Fatalf("domain %s is in shards %s and %s", d, prev[0], id)
			}
			if got := shard.LayoutOfID(id).Of(d); got != id {
				t.Fatalf("domain %s is in shard %s, its shard at width %d is %s", d, id, len(id), got)
			}
			out[d] = [2]string{id, strings.Join(r, "|")}
		}
	}
	return out
}

func shardWidths(t *testing.T, st store.Store) map[int]int {
	t.Helper()
	n := map[int]int{}
	st.List(context.Background(), ShardPrefix, func(a store.Attrs) error {
		if id, ok := ShardOfKey(a.Key); ok {
			n[len(id)]++
		}
		return nil
	})
	return n
}

func TestMoveShard(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		for _, c := range []struct{ from, to int }{{2, 3}, {2, 1}, {1, 3}} {
			t.Run(fmt.Sprintf("width %d to %d", c.from, c.to), func(t *testing.T) {
				st := newStore(t)
				old := newCompiler(t, st, Config{Layout: shard.Layout{Width: c.from}})
				var want []string
				for i := 0; i < 120; i++ {
					d := fmt.Sprintf("move%03d.example", i)
					put(t, st, d, "old", i, "2024-01-01T00:00:00Z")
					want = append(want, d)
				}
				if _, err := old.CompactAll(ctx); err != nil {
					t.Fatal(err)
				}
				// a newer record compacted into the new layout before the
				// move: the move must not bring the older one back
				put(t, st, "move007.example", "newer", 7, "2024-06-01T00:00:00Z")
				nc := newCompiler(t, st, Config{Layout: shard.Layout{Width: c.to}})
				if _, err := nc.CompactAll(ctx); err != nil {
					t.Fatal(err)
				}
				var oldIDs []string
				st.List(ctx, ShardPrefix, func(a store.Attrs) error {
					if id, ok := ShardOfKey(a.Key); ok && len(id) == c.from {
						oldIDs = append(oldIDs, id)
					}
					return nil
				})
				moved := 0
				for _, id := range oldIDs {
					r, err := nc.MoveShard(ctx, id)
					if err != nil || r.Status != StatusMoved {
						t.Fatalf("move %s: %+v %v", id, r, err)
					}
					moved += r.RecordsBefore
				}
				if moved != 120 {
					t.Fatalf("moved %d records, want 120", moved)
				}
				got := allShardRecords(t, st)
				if len(got) != 120 {
					t.Fatalf("%d domains in the shards, want 120", len(got))
				}
				for _, d := range want {
					if len(got[d][0]) != c.to {
						t.Fatalf("%s is in shard %q, want width %d", d, got[d][0], c.to)
					}
				}
				if !strings.Contains(got["move007.example"][1], "newer") {
					t.Fatalf("the older record came back: %s", got["move007.example"][1])
				}
				if w := shardWidths(t, st); w[c.from] != 0 {
					t.Fatalf("old shards left: %v", w)
				}
				// a second move of a gone shard is nothing to do
				if r, err := nc.MoveShard(ctx, oldIDs[0]); err != nil || r.Status != StatusNothingToDo {
					t.Fatalf("again: %+v %v", r, err)
				}
			})
		}
	})
}

// TestMoveCrashAtEveryStep: a mover killed after any number of store calls
// leaves a store that the next move finishes, every record present once
// (compiler I6).
func TestMoveCrashAtEveryStep(t *testing.T) {
	ctx := context.Background()
	for n := 0; n < 60; n++ {
		t.Run(fmt.Sprintf("crash after %d store calls", n), func(t *testing.T) {
			base, _ := localfs.Open(t.TempDir())
			for i, d := range domainsIn("5e", 12) {
				put(t, base, d, "v", i, "2024-01-01T00:00:00Z")
			}
			newCompiler(t, base, Config{}).CompactShard(ctx, "5e")
			to := Config{Layout: shard.Layout{Width: 3}, LockTTL: time.Second}
			cr := &crashing{Store: base, n: n}
			newCompiler(t, cr, to).MoveShard(ctx, "5e") // may crash anywhere
			if _, err := base.Head(ctx, LockKey("5e")); err == nil {
				time.Sleep(1100 * time.Millisecond)
			}
			r, err := newCompiler(t, base, to).MoveShard(ctx, "5e")
			if err != nil || (r.Status != StatusMoved && r.Status != StatusNothingToDo) {
				t.Fatalf("repair: %+v %v", r, err)
			}
			if got := allShardRecords(t, base); len(got) != 12 {
				t.Fatalf("%d domains, want 12", len(got))
			}
			if w := shardWidths(t, base); w[2] != 0 {
				t.Fatalf("old shard left: %v", w)
			}
			var locks []string
			base.List(ctx, ShardPrefix, func(a store.Attrs) error {
				if strings.HasSuffix(a.Key, lockSuffix) {
					locks = append(locks, a.Key)
				}
				return nil
			})
			if len(locks) != 0 {
				// a killed mover's target lock goes stale; a compaction reaps it
				time.Sleep(1100 * time.Millisecond)
				if _, err := newCompiler(t, base, to).CompactAll(ctx); err != nil {
					t.Fatal(err)
				}
				locks = nil
				base.List(ctx, ShardPrefix, func(a store.Attrs) error {
					if strings.HasSuffix(a.Key, lockSuffix) {
						locks = append(locks, a.Key)
					}
					return nil
				})
				if len(locks) != 0 {
					t.Fatalf("locks left: %v", locks)
				}
			}
		})
	}
}

// landWidth2Batch lands batch objects of width 2, as a writer that loaded
// the layout before a resharding does: n records of the domains format
// names (with %d), company and version 1, updated 2024-01-01.
func landWidth2Batch(t *testing.T, st store.Store, format string, n int, company string) {
	t.Helper()
	writer := newCompiler(t, st, Config{Layout: shard.Layout{Width: 2}})
	tb := Table{Header: fields}
	for i := 0; i < n; i++ {
		tb.Rows = append(tb.Rows, []string{fmt.Sprintf(format, i), company, "1", "2024-01-01T00:00:00Z"})
	}
	if _, err := writer.WriteBatch(context.Background(), tb); err != nil {
		t.Fatal(err)
	}
}

// TestForeignBatches: a writer that loaded the layout before a resharding
// lands batch objects of the old width; compaction in the new layout
// moves their records and deletes them (I6).
func TestForeignBatches(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		st := newStore(t)
		landWidth2Batch(t, st, "batch%03d.example", 300, "b")
		rs, err := newCompiler(t, st, Config{Layout: shard.Layout{Width: 3}}).CompactAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		merged := 0
		for _, r := range rs {
			merged += r.InboxMerged
			if len(r.Errors) > 0 {
				t.Fatalf("errors: %+v", r.Errors)
			}
		}
		got := allShardRecords(t, st)
		if len(got) != 300 {
			t.Fatalf("%d domains in shards, want 300", len(got))
		}
		if w := shardWidths(t, st); w[2] != 0 || w[3] == 0 {
			t.Fatalf("widths %v", w)
		}
		var left []string
		st.List(ctx, BatchPrefix, func(a store.Attrs) error { left = append(left, a.Key); return nil })
		if len(left) != 0 || merged == 0 {
			t.Fatalf("batch objects left %v, merged %d", left, merged)
		}
	})
}

// TestOneCompactAllMovesAndCompactsTheSameShards: a foreign batch object's
// records are merged into shards whose own pending objects the same
// CompactAll compacts at the same time; the move's locks must not leave
// those shards "locked" and their objects pending (the chaos test's
// final compact --all once left one so).
func TestOneCompactAllMovesAndCompactsTheSameShards(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		st := newStore(t)
		const n = 200
		landWidth2Batch(t, st, "both%03d.example", n, "batch")
		for i := 0; i < n; i++ { // a newer version of each, pending in its own shard
			put(t, st, fmt.Sprintf("both%03d.example", i), "newer", 2, "2024-06-01T00:00:00Z")
		}
		rs, err := newCompiler(t, st, Config{Layout: shard.Layout{Width: 3}}).CompactAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Status == StatusLocked {
				t.Errorf("shard %s was left locked by the run's own move", r.Shard)
			}
		}
		if left := inboxKeys(t, st); len(left) != 0 {
			t.Errorf("%d inbox objects left after one compact --all, e.g. %s", len(left), left[0])
		}
		got := allShardRecords(t, st)
		stale := 0
		for i := 0; i < n; i++ {
			if !strings.Contains(got[fmt.Sprintf("both%03d.example", i)][1], "newer") {
				stale++
			}
		}
		if len(got) != n || stale != 0 {
			t.Errorf("%d domains in shards, %d not the newer version; want %d and 0", len(got), stale, n)
		}
	})
}

// TestLayoutChangedStopsTheWrite: compiler I7.
func TestLayoutChangedStopsTheWrite(t *testing.T) {
	ctx := context.Background()
	st, _ := localfs.Open(t.TempDir())
	a, err := st.Put(ctx, SchemaKey, strings.NewReader(`{"v":1}`), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	d := domainsIn("5e", 1)[0]
	put(t, st, d, "x", 1, "2024-01-01T00:00:00Z")
	c := newCompiler(t, st, Config{PackageETag: a.ETag})
	if _, err := st.Put(ctx, SchemaKey, strings.NewReader(`{"v":2}`), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompactShard(ctx, "5e"); !errors.Is(err, ErrLayoutChanged) {
		t.Fatalf("err = %v, want ErrLayoutChanged", err)
	}
	if _, err := st.Head(ctx, ShardKey("5e")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the shard was written: %v", err)
	}
	if len(inboxKeys(t, st)) != 1 {
		t.Fatal("the inbox object went")
	}
	if _, err := st.Head(ctx, LockKey("5e")); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("the lock was left")
	}
}
