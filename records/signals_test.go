package records

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

// listingStore counts listings by prefix.
type listingStore struct {
	store.Store
	mu    sync.Mutex
	lists []string
}

func (l *listingStore) List(ctx context.Context, prefix string, fn func(store.Attrs) error) error {
	l.mu.Lock()
	l.lists = append(l.lists, prefix)
	l.mu.Unlock()
	return l.Store.List(ctx, prefix, fn)
}

func (l *listingStore) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lists
	l.lists = nil
	return out
}

// TestRefreshFollowsSignals: between full refreshes a refresh lists the
// change signals and only what they name; a record landed by a DHSI
// writer is served at the next refresh, one merged by a compaction never
// leaves the view, and a plain PUT (no signal) is served by the next full
// refresh.
func TestRefreshFollowsSignals(t *testing.T) {
	ctx := context.Background()
	base, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &listingStore{Store: base}
	cfg, err := LoadCompilerConfig(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	c, err := compiler.New(st, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	write := func(d, company string) {
		t.Helper()
		row := []string{d, company, "1", "2024-01-01T00:00:00Z"}
		if err := c.WriteInbox(ctx, d, compiler.Table{Header: cfg.SchemaFields, Rows: [][]string{row}}); err != nil {
			t.Fatal(err)
		}
	}
	write("first.example", "First")
	c.FlushSignals()
	db := openTestDB(t)
	d, err := Open(ctx, st, db, Options{FullRefreshEvery: time.Hour, FullRefreshShare: -1})
	if err != nil {
		t.Fatal(err)
	}
	company := func(dom string) string {
		t.Helper()
		var s string
		err := db.QueryRowContext(ctx, "SELECT company_name FROM public.domains WHERE domain = ?", dom).Scan(&s)
		if err != nil {
			return "(none: " + err.Error() + ")"
		}
		return s
	}
	refresh := func() []string {
		t.Helper()
		st.take()
		if err := d.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		return st.take()
	}
	// nothing changed: one listing, of the signals
	if got := refresh(); len(got) != 1 || got[0] != compiler.SignalPrefix {
		t.Fatalf("a refresh with nothing changed listed %q, want only the signals", got)
	}
	// a DHSI writer: the inbox is listed, no shard
	write("second.example", "Second")
	c.FlushSignals()
	got := refresh()
	if company("second.example") != "Second" {
		t.Fatalf("a written record is not served after the refresh (listed %q)", got)
	}
	for _, p := range got {
		if strings.HasPrefix(p, compiler.ShardPrefix) {
			t.Fatalf("a refresh after a write listed the shards: %q", got)
		}
	}
	// a compaction: the inbox (it retired an object) and the one shard
	// prefix it wrote are listed, not every shard; the record never leaves
	// the view
	id := cfg.Layout.Of("second.example")
	if _, err := c.CompactShard(ctx, id); err != nil {
		t.Fatal(err)
	}
	c.FlushSignals()
	got = refresh()
	if company("second.example") != "Second" {
		t.Fatal("a compacted record left the view")
	}
	listed := strings.Join(got, " ")
	if !strings.Contains(listed, compiler.InboxPrefix+" ") || !strings.HasSuffix(listed, " "+compiler.ShardPrefix+id[:1]) || strings.Contains(listed, compiler.ShardPrefix+" ") {
		t.Fatalf("after a compaction the refresh listed %q; want the inbox, then only shards %s*", got, id[:1])
	}
	if n := one(t, db, "SELECT count(*) FROM public.domains_inbox WHERE domain = 'second.example'"); n != 0 {
		t.Fatalf("the merged record is still listed as waiting in the inbox (%d)", n)
	}
	// the next write: the inbox is read again, nothing retired, no shard
	// signal; the shards the view had stay in it
	write("fourth.example", "Fourth")
	c.FlushSignals()
	refresh()
	if company("second.example") != "Second" || company("fourth.example") != "Fourth" {
		t.Fatalf("after a write that named no shard: %q, %q; the shard's record must stay", company("second.example"), company("fourth.example"))
	}
	// a plain PUT bumps nothing: served by the next full refresh
	if _, err := base.Put(ctx, compiler.InboxKey("plain.example"), strings.NewReader("domain␟company_name␟scraper_version␟updated_at␟␞plain.example␟Plain␟1␟2024-01-01T00:00:00Z␟␞"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	refresh()
	if company("plain.example") == "Plain" {
		t.Fatal("a plain PUT was served before a full refresh: the test no longer shows what signals skip")
	}
	d.mu.Lock()
	d.lastFull = time.Time{}
	d.mu.Unlock()
	refresh()
	if company("plain.example") != "Plain" {
		t.Fatalf("the full refresh did not serve the plain PUT: %s", company("plain.example"))
	}
}

func one(t *testing.T, db *sql.DB, q string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}
