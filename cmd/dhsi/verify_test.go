package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/index/dsdr"
	"github.com/dhsi/dhsi/index/dtdr"
	"github.com/dhsi/dhsi/index/files"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

// TestVerifyFindsDamage is issue 18 §4: dhsi verify passes a sound store
// and names each kind of damaged object (bit flip, truncation, deletion),
// exiting nonzero.
func TestVerifyFindsDamage(t *testing.T) {
	ctx := context.Background()
	sound := t.TempDir()
	list := filepath.Join("..", "..", "testdata", "shared", "urls", "pywb_sample_archive.txt")
	for _, ds := range []string{"one", "two"} { // two versions, the second reusing postings
		if code := run(ctx, []string{"ingest", "--store", sound, "--dataset", ds, list}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("ingest exit %d", code)
		}
	}
	putAndCompact(t, sound, "example.com", "example.org", "example.net")
	verifyStore := func(t *testing.T, dir string, args ...string) (int, string) {
		t.Helper()
		var out strings.Builder
		code := run(ctx, append([]string{"verify", "--store", dir}, args...), &out, io.Discard)
		return code, out.String()
	}
	if code, out := verifyStore(t, sound, "--deep"); code != 0 || !strings.Contains(out, "checked 2 index versions") || !strings.Contains(out, ": 0 problems") {
		t.Fatalf("a sound store: exit %d\n%s", code, out)
	}

	m := localManifest(t, sound)
	cur, _ := m.Current()
	regBytes, err := os.ReadFile(filepath.Join(sound, cur.FilesTSV))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := files.Read(strings.NewReader(string(regBytes)))
	if err != nil {
		t.Fatal(err)
	}
	parquet := reg.All()[0].Path
	var used []catalog.PostingsShard // postings shards that hold entries
	for _, p := range cur.Postings {
		if fi, err := os.Stat(filepath.Join(sound, p.Dat)); err == nil && fi.Size() > 0 {
			used = append(used, p)
		}
	}
	if len(used) < 2 {
		t.Fatalf("%d postings shards hold entries; the test needs 2", len(used))
	}
	shards, _ := filepath.Glob(filepath.Join(sound, "indexes/domains/shards/*.usv"))
	if len(shards) == 0 {
		t.Fatal("no shard to damage")
	}
	shard, _ := filepath.Rel(sound, shards[0])

	flip := func(at func(size int) int) func(b []byte) []byte {
		return func(b []byte) []byte { b[at(len(b))] ^= 0x5a; return b }
	}
	middle := flip(func(n int) int { return n / 2 })
	truncate := func(b []byte) []byte { return b[:len(b)/2] }
	for _, c := range []struct {
		name, key string
		damage    func([]byte) []byte // nil: delete
		deep      bool
		says      string
	}{
		{"a bit flip in the domain dictionary", cur.DomainsDict, middle, false, ""},
		{"a truncated dataset→domains file", cur.DatasetToDomainsRoar, truncate, false, ""},
		{"a bit flip in the dataset→domains file", cur.DatasetToDomainsRoar, middle, false, ""},
		{"a dataset→domains file of another version", cur.DatasetToDomainsRoar, func([]byte) []byte {
			b, err := os.ReadFile(filepath.Join(sound, m.Versions[0].DatasetToDomainsRoar))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, false, "datasets.json has"},
		{"a sound dataset→domains file that lacks one domain of a dataset", cur.DatasetToDomainsRoar, func(b []byte) []byte {
			r, err := dsdr.Open(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			w := dsdr.NewWriter(&out, r.Len())
			for i, ds := range r.Datasets() {
				bm, _, err := r.Get(ds)
				if err != nil {
					t.Fatal(err)
				}
				if i == len(r.Datasets())-1 {
					bm.Remove(bm.Minimum())
				}
				w.Add(ds, bm)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			return out.Bytes()
		}, false, "the postings says"},
		{"a bit flip in a postings shard's data", used[0].Dat, middle, false, ""},
		{"a truncated postings index", used[1].Idx, truncate, false, ""},
		{"a deleted postings file", used[1].Dat, nil, false, "missing"},
		{"a truncated files.tsv", cur.FilesTSV, truncate, false, ""},
		{"a deleted Parquet file", parquet, nil, false, "missing"},
		// in the first data page's header (its uncompressed size): the
		// middle of a small file may be its page index, which a reader of
		// the rows never looks at, and zstd pages carry no checksum, so a
		// flip inside compressed bytes can decode to other bytes unseen
		{"a bit flip in a Parquet file's data", parquet, flip(func(int) int { return 7 }), true, ""},
		{"a truncated Parquet file", parquet, truncate, true, ""},
		// zstd pages have no checksum: an edit damaged inside them reads as
		// other bytes, which only decoding it against its url shows
		{"a raw edit that does not decode", parquet, func(b []byte) []byte {
			return rewriteParquet(t, b, "* REPLACE (CASE WHEN row_number() OVER () = 1 THEN '\\x0f'::BLOB ELSE raw_edit END AS raw_edit)")
		}, true, "raw_edit of"},
		{"a domain-record shard that no longer parses", shard, func(b []byte) []byte { return append(b, 0xff, 0xfe) }, false, ""},
		{"a domain-record shard with a record of another shard", shard, func(b []byte) []byte {
			return append(b, []byte("elsewhere-"+strings.Repeat("z", 3)+".example␟X␟␟2024-01-01T00:00:00Z␟␞\n")...)
		}, false, "belongs to shard"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			if err := os.CopyFS(dir, os.DirFS(sound)); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, c.key)
			if c.damage == nil {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			} else {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, c.damage(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var args []string
			if c.deep {
				args = append(args, "--deep")
			}
			code, out := verifyStore(t, dir, args...)
			if code != 1 || !strings.Contains(out, c.key+": ") || !strings.Contains(out, c.says) {
				t.Fatalf("exit %d; want 1 and a line naming %s (saying %q):\n%s", code, c.key, c.says, out)
			}
		})
	}
}

// rewriteParquet returns the Parquet file b with its rows selected by
// DuckDB's `SELECT projection FROM file`, in one row group like the
// small files of the tests, and the same key-value metadata.
func rewriteParquet(t *testing.T, b []byte, projection string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.parquet"), filepath.Join(dir, "out.parquet")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("COPY (SELECT " + projection + " FROM read_parquet('" + in + "')) TO '" + out + "' (FORMAT parquet, KV_METADATA {'dhsi.lake.layout': '4'})"); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVerifyWritesNothing: verify of a store whose inbox a plain S3 client
// filled, with no datapackage.json yet, reads it under the default schema
// and leaves the store as it found it.
func TestVerifyWritesNothing(t *testing.T) {
	dir := t.TempDir()
	inbox := filepath.Join(dir, "indexes", "domains")
	if err := os.MkdirAll(inbox, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "domain␟updated_at␟␞\nexample.com␟2024-01-01T00:00:00Z␟␞\n"
	if err := os.WriteFile(filepath.Join(inbox, "example.com.usv"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if code := run(context.Background(), []string{"verify", "--store", dir}, &out, io.Discard); code != 0 {
		t.Fatalf("verify: exit %d\n%s", code, out.String())
	}
	if _, err := os.Stat(filepath.Join(inbox, "datapackage.json")); !os.IsNotExist(err) {
		t.Fatalf("verify wrote datapackage.json (%v)", err)
	}
}

// TestVerifyDuringAResharding: a shard of another width is a problem in a
// store that records no resharding (with the command that fixes it), and
// expected during one (a warning that counts what remains); dhsi reshard
// moves a stray one.
func TestVerifyDuringAResharding(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	putAndCompact(t, dir, "example.com", "example.org")
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := "stray-record.net"
	key := compiler.ShardKey(shard.Layout{Width: 3}.Of(d))
	body := "domain␟company_name␟updated_at␟␞" + d + "␟Y␟2024-01-01T00:00:00Z␟␞"
	if _, err := st.Put(ctx, key, strings.NewReader(body), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	verify := func() (int, string) {
		var out strings.Builder
		code := run(ctx, []string{"verify", "--store", dir}, &out, io.Discard)
		return code, out.String()
	}
	if code, out := verify(); code != 1 || !strings.Contains(out, key+": a shard of width 3 in a store of width 2") || !strings.Contains(out, "dhsi reshard --width 2") {
		t.Fatalf("a stray shard: exit %d\n%s", code, out)
	}
	// the same shard while the package records a resharding 3 → 2
	pkg, etag, err := records.LoadPackageVersion(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := records.WithLayouts(pkg, records.Layouts{Current: shard.Layout{Width: 2}, Previous: shard.Layout{Width: 3}})
	if _, err := st.Put(ctx, compiler.SchemaKey, bytes.NewReader(b), store.Cond{IfMatch: etag}); err != nil {
		t.Fatal(err)
	}
	if code, out := verify(); code != 0 || !strings.Contains(out, "a resharding from width 3 to 2 is in progress: 1 shards of width 3 remain") {
		t.Fatalf("during a resharding: exit %d\n%s", code, out)
	}
	var out strings.Builder
	if code := run(ctx, []string{"reshard", "--store", dir, "--width", "2"}, &out, &out); code != 0 || !strings.Contains(out.String(), "1 shards moved (1 records)") {
		t.Fatalf("reshard: exit %d\n%s", code, out.String())
	}
	if code, out := verify(); code != 0 || strings.Contains(out, "resharding") {
		t.Fatalf("after the resharding: exit %d\n%s", code, out)
	}
	seen := map[string]string{}
	st.List(ctx, compiler.ShardPrefix, func(a store.Attrs) error {
		id, ok := compiler.ShardOfKey(a.Key)
		if !ok {
			return nil
		}
		b, _, err := store.ReadAll(ctx, st, a.Key)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := compiler.ParseTable(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tb.Rows {
			if seen[r[0]] != "" || len(id) != 2 {
				t.Fatalf("%s in shard %s (and %q)", r[0], id, seen[r[0]])
			}
			seen[r[0]] = id
		}
		return nil
	})
	if len(seen) != 3 || seen[d] == "" {
		t.Fatalf("shards hold %v", seen)
	}
}

// TestReshardOverSQL: CALL reshard(n) while a resharding to another width
// is recorded is refused with 55000 (object_not_in_prerequisite_state);
// CALL reshard of the width in progress resumes and finishes it.
func TestReshardOverSQL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	putAndCompact(t, dir, "example.com")
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	// a resharding 2 → 3 that a killed run left recorded
	pkg, etag, err := records.LoadPackageVersion(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := records.WithLayouts(pkg, records.Layouts{Current: shard.Layout{Width: 3}, Previous: shard.Layout{Width: 2}})
	if _, err := st.Put(ctx, compiler.SchemaKey, bytes.NewReader(b), store.Cond{IfMatch: etag}); err != nil {
		t.Fatal(err)
	}
	cn := connect(t, startServe(t, "--store", dir))
	_, err = cn.Exec(ctx, "CALL reshard(1)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55000" || !strings.Contains(pe.Message, "dhsi reshard --width 3") {
		t.Fatalf("CALL reshard(1) during a resharding to 3: %v", err)
	}
	var status string
	var moved int64
	if err := cn.QueryRow(ctx, "SELECT status, shards_moved FROM reshard(3)").Scan(&status, &moved); err != nil || status != "resumed and finished" || moved != 1 {
		t.Fatalf("reshard(3): %q, %d shards moved, %v", status, moved, err)
	}
	var id string
	if err := cn.QueryRow(ctx, "SELECT shard_id('example.com')").Scan(&id); err != nil || len(id) != 3 {
		t.Fatalf("shard_id after the resharding: %q %v", id, err)
	}
	var n int
	if err := cn.QueryRow(ctx, "SELECT count(*) FROM domains_shards WHERE domain = 'example.com'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("example.com in %d shard records, %v", n, err)
	}
}

// putAndCompact lands a record (company_name X) for each domain in the
// store at dir with dhsi put, then runs dhsi compact --all.
func putAndCompact(t *testing.T, dir string, domains ...string) {
	t.Helper()
	ctx := context.Background()
	for _, d := range domains {
		if code := run(ctx, []string{"put", "--store", dir, "domain=" + d, "company_name=X"}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("put %s: exit %d", d, code)
		}
	}
	if code := run(ctx, []string{"compact", "--store", dir, "--all"}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("compact exit %d", code)
	}
}

// TestVerifyHoldsAnOlderMembershipFileToThePostings: in a version written
// before 2026-11-28, which has domain_to_datasets.roar and no reverse, a pair
// the postings and the registry lack (domain 0 in dataset 99) is a
// problem naming that file; verify reported nothing, and the next ingest
// failed on it (a review, stop 42).
func TestVerifyHoldsAnOlderMembershipFileToThePostings(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "testdata", "stores", "previous-release"))); err != nil {
		t.Fatal(err)
	}
	cur, _ := localManifest(t, dir).Current()
	if cur.D2DRoar == "" || cur.DatasetToDomainsRoar != "" {
		t.Fatalf("the fixture's version has d2d_roar %q and dataset_to_domains_roar %q", cur.D2DRoar, cur.DatasetToDomainsRoar)
	}
	path := filepath.Join(dir, cur.D2DRoar)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := dtdr.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := dtdr.NewWriter(&out, r.Len())
	for d := range r.Len() {
		bm, err := r.Get(d)
		if err != nil {
			t.Fatal(err)
		}
		if d == 0 {
			bm.Add(99)
		}
		if err := w.Add(d, bm); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var report strings.Builder
	if code := run(ctx, []string{"verify", "--store", dir}, &report, io.Discard); code == 0 || !strings.Contains(report.String(), cur.D2DRoar) || !strings.Contains(report.String(), "99") {
		t.Fatalf("verify: exit %d\n%s", code, report.String())
	}
}
