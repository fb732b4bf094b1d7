package reshard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

func backends(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Run("localfs", func(t *testing.T) {
		st, err := localfs.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fn(t, st)
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		st, _ := srv.NewStore(t)
		fn(t, st)
	})
}

// seed writes n domains through the store's own layout, compacts them,
// and leaves a newer version of every tenth in the inbox and in a batch
// object.
func seed(t *testing.T, st store.Store, n int) {
	t.Helper()
	ctx := context.Background()
	cfg, err := records.LoadCompilerConfig(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	c, err := compiler.New(st, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.FlushSignals()
	tb := compiler.Table{Header: cfg.SchemaFields}
	for i := 0; i < n; i++ {
		tb.Rows = append(tb.Rows, []string{fmt.Sprintf("d%05d.com", i), "old", "1", "2024-01-01T00:00:00Z"})
	}
	if _, err := c.WriteBatch(ctx, tb); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompactAll(ctx); err != nil {
		t.Fatal(err)
	}
	newer := compiler.Table{Header: cfg.SchemaFields}
	for i := 0; i < n; i += 10 {
		d := fmt.Sprintf("d%05d.com", i)
		if i%20 == 0 {
			newer.Rows = append(newer.Rows, []string{d, "new", "2", "2024-02-01T00:00:00Z"})
			continue
		}
		if err := c.WriteInbox(ctx, d, compiler.Table{Header: cfg.SchemaFields, Rows: [][]string{{d, "new", "2", "2024-02-01T00:00:00Z"}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.WriteBatch(ctx, newer); err != nil {
		t.Fatal(err)
	}
}

// everything compacts the store in its current layout and returns every
// shard record: domain → company, checking each domain is in one shard,
// its own.
func everything(t *testing.T, st store.Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	cfg, err := records.LoadCompilerConfig(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := compiler.New(st, cfg, nil)
	defer c.FlushSignals()
	if _, err := c.CompactAll(ctx); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var keys []string
	st.List(ctx, compiler.ShardPrefix, func(a store.Attrs) error {
		if _, ok := compiler.ShardOfKey(a.Key); ok {
			keys = append(keys, a.Key)
		}
		return nil
	})
	for _, k := range keys {
		id, _ := compiler.ShardOfKey(k)
		if len(id) != cfg.Layout.Width {
			t.Fatalf("shard %s of width %d left in a store of width %d", k, len(id), cfg.Layout.Width)
		}
		b, _, err := store.ReadAll(ctx, st, k)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := compiler.ParseTable(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tb.Rows {
			if _, dup := out[r[0]]; dup {
				t.Fatalf("%s twice", r[0])
			}
			if cfg.Layout.Of(r[0]) != id {
				t.Fatalf("%s in shard %s", r[0], id)
			}
			out[r[0]] = r[1]
		}
	}
	return out
}

func checkAll(t *testing.T, got map[string]string, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d domains, want %d", len(got), n)
	}
	for i := 0; i < n; i++ {
		want := "old"
		if i%10 == 0 {
			want = "new"
		}
		if d := fmt.Sprintf("d%05d.com", i); got[d] != want {
			t.Fatalf("%s: %q, want %q", d, got[d], want)
		}
	}
}

func layouts(t *testing.T, st store.Store) records.Layouts {
	t.Helper()
	pkg, err := records.LoadPackage(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	l, err := records.LayoutsOf(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, st store.Store) {
		const n = 1500
		seed(t, st, n)
		var progress []Progress
		r, err := Run(ctx, st, Options{Width: 1, Progress: func(p Progress) { progress = append(progress, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if r.From != 2 || r.To != 1 || r.AlreadyDone || r.Resumed || r.ShardsMoved != 256 || r.RecordsMoved < n || r.Duration <= 0 {
			t.Fatalf("report %+v", r)
		}
		if len(progress) == 0 || progress[len(progress)-1].Done != progress[len(progress)-1].Total {
			t.Fatalf("progress %+v", progress)
		}
		if l := layouts(t, st); l.Current.Width != 1 || l.Resharding() {
			t.Fatalf("layouts %+v", l)
		}
		checkAll(t, everything(t, st), n)

		again, err := Run(ctx, st, Options{Width: 1})
		if err != nil || !again.AlreadyDone || again.Status() != "already at width 1" {
			t.Fatalf("again: %+v %v", again, err)
		}
		// widening works the same way
		if r, err := Run(ctx, st, Options{Width: 2}); err != nil || r.From != 1 || r.ShardsMoved != 16 {
			t.Fatalf("to 2: %+v %v", r, err)
		}
		checkAll(t, everything(t, st), n)
		if _, err := Run(ctx, st, Options{Width: 5}); !errors.Is(err, ErrWidth) {
			t.Fatalf("width 5: %v", err)
		}
	})
}

// TestInterruptedAndResumed: a resharding stopped after its first moves
// leaves the store recording both widths, every record served by a reader
// (records.Domains' union), and a rerun finishes it; a resharding to
// another width is refused meanwhile (S1).
func TestInterruptedAndResumed(t *testing.T) {
	backends(t, func(t *testing.T, st store.Store) {
		const n = 1200
		seed(t, st, n)
		ctx, cancel := context.WithCancel(context.Background())
		moves := 0
		_, err := Run(ctx, st, Options{Width: 1, Workers: 1, Progress: func(Progress) {
			if moves++; moves == 20 {
				cancel()
			}
		}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		l := layouts(t, st)
		if l.Current.Width != 1 || l.Previous.Width != 2 {
			t.Fatalf("layouts after the interruption %+v", l)
		}
		if _, err := Run(context.Background(), st, Options{Width: 4}); !errors.Is(err, ErrOtherResharding) {
			t.Fatalf("another width during a resharding: %v", err)
		}
		r, err := Run(context.Background(), st, Options{Width: 1})
		if err != nil || !r.Resumed || r.Status() != "resumed and finished" {
			t.Fatalf("resume: %+v %v", r, err)
		}
		checkAll(t, everything(t, st), n)
	})
}

// TestStrayShardReopens: a shard of another width in a store that records
// no resharding (written by hand, or by a run killed long ago) is moved by
// the next run, which records the resharding while it does.
func TestStrayShardReopens(t *testing.T) {
	ctx := context.Background()
	st, _ := localfs.Open(t.TempDir())
	seed(t, st, 300)
	// a width-3 shard of two records, one newer than the shards hold
	w3 := shard.Layout{Width: 3}
	d := "d00001.com"
	body := "domain\u241Fcompany_name\u241Fscraper_version\u241Fupdated_at\u241F\u241E" + d + "\u241Fstray\u241F3\u241F2025-01-01T00:00:00Z\u241F\u241E"
	if _, err := st.Put(ctx, compiler.ShardKey(w3.Of(d)), strings.NewReader(body), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	r, err := Run(ctx, st, Options{Width: 2, LockTTL: time.Second})
	if err != nil || r.ShardsMoved != 1 || r.AlreadyDone {
		t.Fatalf("%+v %v", r, err)
	}
	got := everything(t, st)
	if got[d] != "stray" || len(got) != 300 {
		t.Fatalf("%s: %q; %d domains", d, got[d], len(got))
	}
	if l := layouts(t, st); l.Resharding() || l.Current.Width != 2 {
		t.Fatalf("layouts %+v", l)
	}
}

// TestOtherPropertiesKept: recording the layouts keeps everything else the
// package says.
func TestOtherPropertiesKept(t *testing.T) {
	ctx := context.Background()
	st, _ := localfs.Open(t.TempDir())
	pkg, err := records.LoadPackage(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	b, err := records.WithLayouts(pkg, records.Layouts{Current: shard.Layout{Width: 2}})
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`"name": "domain-index",`), []byte(`"name": "domain-index", "licenses": [{"name": "CC0-1.0"}],`), 1)
	if _, err := st.Put(ctx, compiler.SchemaKey, bytes.NewReader(b), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, st, Options{Width: 1}); err != nil {
		t.Fatal(err)
	}
	after, _, _ := store.ReadAll(ctx, st, compiler.SchemaKey)
	if l := layouts(t, st); !bytes.Contains(after, []byte("CC0-1.0")) || l.Current.Width != 1 || bytes.Contains(after, []byte("previous_shard_width")) {
		t.Fatalf("package after:\n%s", after)
	}
}
