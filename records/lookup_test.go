package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/tableschema"
)

// countingStore counts the GETs of shard objects.
type countingStore struct {
	store.Store
	mu   sync.Mutex
	gets map[string]int
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, store.Attrs, error) {
	if _, ok := compiler.ShardOfKey(key); ok {
		c.mu.Lock()
		c.gets[key]++
		c.mu.Unlock()
	}
	return c.Store.Get(ctx, key)
}

func (c *countingStore) shardGets() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.gets {
		n += v
	}
	return n
}

const testHeader = "domain␟company_name␟scraper_version␟updated_at␟␞"

func testLine(d, company string) string {
	return d + "␟" + company + "␟1␟2024-01-01T00:00:00Z␟␞"
}

// putShards writes shard objects of the default layout holding domains
// d0.example … d{n-1}.example, company "C{i}".
func putShards(t *testing.T, st store.Store, n int, company func(i int) string) map[string]string {
	t.Helper()
	byShard := map[string][]string{}
	home := map[string]string{}
	for i := 0; i < n; i++ {
		d := fmt.Sprintf("d%d.example", i)
		id := shard.Default().Of(d)
		byShard[id] = append(byShard[id], testLine(d, company(i)))
		home[d] = id
	}
	for id, lines := range byShard {
		if _, err := st.Put(context.Background(), compiler.ShardKey(id), strings.NewReader(testHeader+strings.Join(lines, "")), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func openTestDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1) // one in-memory database for every statement
	if _, err := db.Exec("CREATE SCHEMA IF NOT EXISTS public"); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestLookupsReadOneShard: start-up reads no shard, a lookup reads the one
// shard its domain hashes to, once, and again only when it changed; a
// full scan still answers every domain, within the cache's bound.
func TestLookupsReadOneShard(t *testing.T) {
	ctx := context.Background()
	base, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &countingStore{Store: base, gets: map[string]int{}}
	const n = 3000
	home := putShards(t, st, n, func(i int) string { return fmt.Sprintf("C%d", i) })
	db := openTestDB(t)
	d, err := Open(ctx, st, db, Options{CacheBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if g := st.shardGets(); g != 0 {
		t.Fatalf("start-up read %d shards, want none", g)
	}
	company := func(q, domain string) []string {
		t.Helper()
		rows, err := db.QueryContext(ctx, q, domain)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		return out
	}
	const lookup = "SELECT company_name FROM public.domain_record($1)"
	if got := company(lookup, "d7.example"); len(got) != 1 || got[0] != "C7" {
		t.Fatalf("domain_record('d7.example') = %v", got)
	}
	if g := st.gets[compiler.ShardKey(home["d7.example"])]; g != 1 || st.shardGets() != 1 {
		t.Fatalf("one lookup read %d shards (%d of its own), want its one", st.shardGets(), g)
	}
	company(lookup, "d7.example")
	if g := st.shardGets(); g != 1 {
		t.Fatalf("a second lookup of the same shard read it again (%d GETs)", g)
	}
	if got := company(lookup, "absent.example"); len(got) != 0 {
		t.Fatalf("an absent domain: %v", got)
	}
	if got := company("SELECT company_name FROM public.domain_record(NULL::VARCHAR) WHERE $1 IS NULL OR true", ""); len(got) != 0 {
		t.Fatalf("domain_record(NULL): %v", got)
	}
	// the shard changes: a refresh sees the new ETag, the lookup reads it
	id := home["d7.example"]
	var lines []string
	for dom, h := range home {
		if h == id {
			c := "C" + strings.TrimSuffix(strings.TrimPrefix(dom, "d"), ".example")
			if dom == "d7.example" {
				c = "Renamed"
			}
			lines = append(lines, testLine(dom, c))
		}
	}
	sort.Strings(lines)
	if _, err := base.Put(ctx, compiler.ShardKey(id), strings.NewReader(testHeader+strings.Join(lines, "")), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := company(lookup, "d7.example"); len(got) != 1 || got[0] != "Renamed" {
		t.Fatalf("after the shard changed: %v", got)
	}
	// a full scan: every domain once, the cache within its bound
	var rows, distinct int
	if err := db.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT domain) FROM public.domains").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != n || distinct != n {
		t.Fatalf("domains: %d rows, %d distinct, want %d", rows, distinct, n)
	}
	if s := d.CacheStats(); s.Used > s.Limit || s.Evictions == 0 {
		t.Fatalf("cache after a full scan: %+v; want used <= limit, and evictions (the shards outgrow it)", s)
	}
}

// TestLookupDuringANarrowing is R2 for a lookup: the view listed the old
// shard 5e and the new shard 5, then a mover put 5e's record into 5 and
// deleted 5e. The lookup finds 5e gone and reads 5 as it is now.
func TestLookupDuringANarrowing(t *testing.T) {
	ctx := context.Background()
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pkg, etag, err := LoadPackageVersion(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := WithLayouts(pkg, Layouts{Current: shard.Layout{Width: 1}, Previous: shard.Layout{Width: 2}})
	if _, err := st.Put(ctx, compiler.SchemaKey, strings.NewReader(string(body)), store.Cond{IfMatch: etag}); err != nil {
		t.Fatal(err)
	}
	var moving string
	for i := 0; moving == ""; i++ {
		if d := fmt.Sprintf("m%d.example", i); shard.Default().Of(d) == "5e" {
			moving = d
		}
	}
	if _, err := st.Put(ctx, compiler.ShardKey("5e"), strings.NewReader(testHeader+testLine(moving, "Moving")), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, compiler.ShardKey("5"), strings.NewReader(testHeader), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	if _, err := Open(ctx, st, db, Options{}); err != nil {
		t.Fatal(err)
	}
	// the mover, after the view was listed (no refresh follows)
	if _, err := st.Put(ctx, compiler.ShardKey("5"), strings.NewReader(testHeader+testLine(moving, "Moving")), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, compiler.ShardKey("5e"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	var c string
	if err := db.QueryRowContext(ctx, "SELECT company_name FROM public.domain_record($1)", moving).Scan(&c); err != nil || c != "Moving" {
		t.Fatalf("lookup of a moved domain: %q %v", c, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM public.domains").Scan(&n); err != nil || n != 1 {
		t.Fatalf("scan after the move: %d rows %v, want 1", n, err)
	}
}

// TestScanAcrossAResharding: a resharding 2 → 3 begins after the view was
// listed, and a mover deletes shard 5e once its records are in 5e0…5ef.
// A scan and a lookup through that view still find every record.
func TestScanAcrossAResharding(t *testing.T) {
	ctx := context.Background()
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var moving []string
	for i := 0; len(moving) < 5; i++ {
		if d := fmt.Sprintf("w%d.example", i); shard.Default().Of(d) == "5e" {
			moving = append(moving, d)
		}
	}
	var lines []string
	for _, d := range moving {
		lines = append(lines, testLine(d, "Moving"))
	}
	sort.Strings(lines)
	if _, err := st.Put(ctx, compiler.ShardKey("5e"), strings.NewReader(testHeader+strings.Join(lines, "")), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, compiler.ShardKey("00"), strings.NewReader(testHeader+testLine("stays.example", "Stays")), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	if _, err := Open(ctx, st, db, Options{FullRefreshShare: -1, FullRefreshEvery: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// the resharding, after the view: the package first, then the move
	pkg, etag, err := LoadPackageVersion(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := WithLayouts(pkg, Layouts{Current: shard.Layout{Width: 3}, Previous: shard.Layout{Width: 2}})
	if _, err := st.Put(ctx, compiler.SchemaKey, strings.NewReader(string(body)), store.Cond{IfMatch: etag}); err != nil {
		t.Fatal(err)
	}
	for _, d := range moving {
		id := shard.Layout{Width: 3}.Of(d)
		if _, err := st.Put(ctx, compiler.ShardKey(id), strings.NewReader(testHeader+testLine(d, "Moving")), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Delete(ctx, compiler.ShardKey("5e"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(DISTINCT domain) FROM public.domains").Scan(&n); err != nil || n != len(moving)+1 {
		t.Fatalf("scan during the resharding: %d domains %v, want %d", n, err, len(moving)+1)
	}
	var c string
	if err := db.QueryRowContext(ctx, "SELECT company_name FROM public.domain_record($1)", moving[0]).Scan(&c); err != nil || c != "Moving" {
		t.Fatalf("lookup during the resharding: %q %v", c, err)
	}
}

// TestSchemaTypeChangeRetypesTheViews: a datapackage.json that changes a
// field's type but no name makes the views type it anew at the next
// refresh, and the native lookup refuses instead of casting by the old type.
func TestSchemaTypeChangeRetypesTheViews(t *testing.T) {
	ctx := context.Background()
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	putShards(t, st, 10, func(i int) string { return fmt.Sprintf("C%d", i) })
	db := openTestDB(t)
	d, err := Open(ctx, st, db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	typeOf := func() string {
		var s string
		if err := db.QueryRowContext(ctx, "SELECT typeof(scraper_version) FROM public.domains LIMIT 1").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := typeOf(); got != "BIGINT" {
		t.Fatalf("scraper_version is %s, want BIGINT", got)
	}
	native, ok := d.NativeLookup()
	if !ok {
		t.Fatal("the default schema has no native lookup")
	}
	editSchema(t, st, func(sch *tableschema.Schema) {
		for i, f := range sch.Fields {
			if f.Name == "scraper_version" {
				sch.Fields[i].Type = "string"
			}
		}
	})
	if err := d.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := typeOf(); got != "VARCHAR" {
		t.Fatalf("after the type change scraper_version is %s, want VARCHAR", got)
	}
	if _, err := native.Run(ctx, "d1.example"); !errors.Is(err, errSchemaChanged) {
		t.Fatalf("the native lookup of the old schema answered (%v), want errSchemaChanged", err)
	}
	if !native.Stale() {
		t.Error("the old schema's native lookup does not say it is stale")
	}
	fresh, ok := d.NativeLookup()
	if !ok || fresh.Stale() {
		t.Fatalf("a native lookup made after the change: ok %v", ok)
	}
}

// TestSchemaMissingValuesAreNull: a schema's own missingValues (["", "NA"]
// here, not the default [""]) mean NULL in the views, in the lookup through
// DuckDB and in the native lookup, for a string and an integer field alike,
// as tableschema.RowChecker reads them when compaction checks a record.
func TestSchemaMissingValuesAreNull(t *testing.T) {
	ctx := context.Background()
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	editSchema(t, st, func(sch *tableschema.Schema) { sch.MissingValues = []string{"", "NA"} })
	const d = "missing.example"
	key := compiler.ShardKey(shard.Default().Of(d))
	if _, err := st.Put(ctx, key, strings.NewReader(testHeader+d+"␟NA␟NA␟2024-01-01T00:00:00Z␟␞"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	db := openTestDB(t)
	dom, err := Open(ctx, st, db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT company_name, scraper_version FROM public.domains WHERE domain = $1",
		"SELECT company_name, scraper_version FROM public.domain_record($1)",
	} {
		var company sql.NullString
		var version sql.NullInt64
		if err := db.QueryRowContext(ctx, q, d).Scan(&company, &version); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if company.Valid || version.Valid {
			t.Errorf("%s: company_name %v, scraper_version %v; want both NULL (\"NA\" is a missing value)", q, company, version)
		}
	}
	var nErr int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM public.domain_errors").Scan(&nErr); err != nil || nErr != 0 {
		t.Errorf("domain_errors lists %d problems (%v); \"NA\" is a missing value, not an error", nErr, err)
	}
	native, ok := dom.NativeLookup()
	if !ok {
		t.Fatal("no native lookup for the default fields")
	}
	rows, err := native.Run(ctx, d)
	if err != nil || len(rows) != 1 {
		t.Fatalf("native lookup: %v, %v", rows, err)
	}
	for i, c := range native.Columns {
		if (c.Name == "company_name" || c.Name == "scraper_version") && rows[0][i] != nil {
			t.Errorf("native lookup: %s = %#v, want nil", c.Name, rows[0][i])
		}
	}
}

// editSchema changes the store's datapackage.json schema in place (a
// conditional write on the version read).
func editSchema(t *testing.T, st store.Store, edit func(*tableschema.Schema)) {
	t.Helper()
	ctx := context.Background()
	pkg, etag, err := LoadPackageVersion(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	edit(pkg.Resources[0].Schema)
	body, err := json.Marshal(pkg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, compiler.SchemaKey, strings.NewReader(string(body)), store.Cond{IfMatch: etag}); err != nil {
		t.Fatal(err)
	}
}
