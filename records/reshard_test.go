package records

import (
	"context"
	"strings"
	"sync"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

// pausingStore runs hook once, the first time a listing of the shards has
// passed key after arm: another process acting while a reader lists them.
type pausingStore struct {
	store.Store
	mu    sync.Mutex
	key   string
	hook  func()
	armed bool
}

func (p *pausingStore) arm(key string, hook func()) {
	p.mu.Lock()
	p.key, p.hook, p.armed = key, hook, true
	p.mu.Unlock()
}

func (p *pausingStore) List(ctx context.Context, prefix string, fn func(store.Attrs) error) error {
	return p.Store.List(ctx, prefix, func(a store.Attrs) error {
		if err := fn(a); err != nil {
			return err
		}
		p.mu.Lock()
		run := p.armed && a.Key == p.key && prefix == compiler.ShardPrefix
		if run {
			p.armed = false
		}
		p.mu.Unlock()
		if run {
			p.hook()
		}
		return nil
	})
}

// TestRefreshDuringANarrowing is invariant R2 at the moment it matters: a
// store narrowing from width 2 to 1, where the new shard 5.usv sorts before
// the old 5e.usv. While a reader lists the shards, just after the listing
// passed 5.usv, a mover merges 5e's record into 5.usv and deletes 5e.usv.
// A single listing would see 5.usv unchanged and 5e.usv gone, and the
// domain would vanish; R2 takes 5e.usv from a first listing and 5.usv
// from a second.
func TestRefreshDuringANarrowing(t *testing.T) {
	ctx := context.Background()
	base, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &pausingStore{Store: base}
	pkg, etag, err := LoadPackageVersion(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := WithLayouts(pkg, Layouts{Current: shard.Layout{Width: 1}, Previous: shard.Layout{Width: 2}})
	if _, err := st.Put(ctx, compiler.SchemaKey, strings.NewReader(string(body)), store.Cond{IfMatch: etag}); err != nil {
		t.Fatal(err)
	}
	// a domain of old shard 5e, and one already in new shard 5
	var moving, staying string
	for i := 0; moving == "" || staying == ""; i++ {
		d := "d" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + ".com"
		d = strings.Replace(d, "x", string(rune('a'+(i/26)%26)), -1)
		switch {
		case shard.Default().Of(d) == "5e" && moving == "":
			moving = d
		case shard.Layout{Width: 1}.Of(d) == "5" && shard.Default().Of(d) != "5e" && staying == "":
			staying = d
		}
	}
	const header = "domain␟company_name␟scraper_version␟updated_at␟␞"
	line := func(d string) string { return d + "␟X␟1␟2024-01-01T00:00:00Z␟␞" }
	if _, err := st.Put(ctx, compiler.ShardKey("5e"), strings.NewReader(header+line(moving)), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, compiler.ShardKey("5"), strings.NewReader(header+line(staying)), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	d, err := OpenDomains(ctx, st, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM public.domains").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("%d domains before the move, want 2", n)
	}
	moved := false
	st.arm(compiler.ShardKey("5"), func() {
		// the mover (compiler I6): 5e's record into 5, then 5e deleted
		if _, err := base.Put(ctx, compiler.ShardKey("5"), strings.NewReader(header+line(moving)+line(staying)), store.Cond{}); err != nil {
			t.Error(err)
		}
		if err := base.Delete(ctx, compiler.ShardKey("5e"), store.Cond{}); err != nil {
			t.Error(err)
		}
		moved = true
	})
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if !moved {
		t.Fatal("the move did not happen during the refresh")
	}
	if n := count(); n != 2 {
		t.Fatalf("%d domains right after the move, want 2: a record vanished", n)
	}
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d domains after the next refresh, want 2", n)
	}
}
