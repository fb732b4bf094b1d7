package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store/localfs"
)

// membership is the brute-force answer the reverse lookups are held to:
// dataset → domain → url_count, from domain_datasets over every domain.
type membership map[int32]map[string]int64

// bruteForceMembership asks domain_datasets about every domain of the
// lake, one at a time.
func bruteForceMembership(t *testing.T, c *pgx.Conn) (membership, []int32) {
	t.Helper()
	ctx := context.Background()
	domains := queryStrings(t, c, "SELECT DISTINCT etld1(url) FROM urls WHERE etld1(url) IS NOT NULL ORDER BY 1")
	m := membership{}
	var ids []int32
	rows, err := c.Query(ctx, "SELECT dataset_id FROM datasets ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int32
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		m[id] = map[string]int64{}
	}
	rows.Close()
	for _, d := range domains {
		rows, err := c.Query(ctx, "SELECT dataset_id, url_count FROM domain_datasets($1)", d)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int32
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				t.Fatal(err)
			}
			m[id][d] = n
		}
		rows.Close()
	}
	return m, ids
}

// expectSet is the brute-force answer of dataset_domains_set(a, op, b), in
// the rows' text form.
func (m membership) expectSet(a int32, op string, b int32) []string {
	in := map[string]bool{}
	for d := range m[a] {
		in[d] = true
	}
	for d := range m[b] {
		in[d] = true
	}
	var out []string
	for _, d := range sortedKeys(in) {
		ca, inA := m[a][d]
		cb, inB := m[b][d]
		keep := map[string]bool{"and": inA && inB, "or": true, "andnot": inA && !inB, "xor": inA != inB}[op]
		if keep {
			out = append(out, fmt.Sprintf("%s|%s|%s", d, countText(ca, inA), countText(cb, inB)))
		}
	}
	return out
}

// expectDomains is the brute-force answer of dataset_domains(id), in
// domain order.
func (m membership) expectDomains(id int32) []string {
	var out []string
	for _, d := range sortedKeys(m[id]) {
		out = append(out, fmt.Sprintf("%s|%d", d, m[id][d]))
	}
	return out
}

// sortedKeys are a map's domains in byte-wise order, the order the reverse
// lookups answer in (the dictionary's).
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for d := range m {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

func countText(n int64, ok bool) string {
	if !ok {
		return "NULL"
	}
	return fmt.Sprint(n)
}

// reverseRows runs q and returns its rows as "domain|count[|count]", NULL
// spelled out, in the order the server sent them.
func reverseRows(t *testing.T, c *pgx.Conn, q string, args ...any) ([]string, error) {
	t.Helper()
	rows, err := c.Query(context.Background(), q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rows.Err()
}

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return fmt.Sprint(err)
}

// ingestReverseCorpus ingests five datasets with overlapping domains: the
// pywb and Common Crawl samples, the CDX mocks (sharing example.com with
// pywb), and two slices of testdata/shared/urls/ada_userbait.txt (7,000
// domains): its even lines and every third line, which share a sixth.
func ingestReverseCorpus(t *testing.T, dir string) {
	t.Helper()
	urls := filepath.Join("..", "..", "testdata", "shared", "urls")
	body, err := os.ReadFile(filepath.Join(urls, "ada_userbait.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(body), "\n")
	slice := func(name string, every int) string {
		var b strings.Builder
		for i := 0; i < len(lines); i += every {
			b.WriteString(lines[i] + "\n")
		}
		p := filepath.Join(t.TempDir(), name+".txt")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ ds, path string }{
		{"pywb", filepath.Join(urls, "pywb_sample_archive.txt")},
		{"cc", filepath.Join(urls, "cc_main_2024_30_cdx00187.txt")},
		{"mocks", filepath.Join(urls, "cdx_toolkit_api_mocks.txt")},
		{"half", slice("half", 2)},
		{"third", slice("third", 3)},
	} {
		if code := run(context.Background(), []string{"ingest", "--store", dir, "--dataset", c.ds, c.path}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("ingest %s: exit %d", c.ds, code)
		}
	}
}

// TestDatasetDomains is issue 17 §3's reverse: dataset_domains and
// dataset_domains_set equal the brute-force answer from domain_datasets
// over every domain, on the server's native path and through DuckDB
// (--no-native), for every dataset and every pair under every operation;
// the new object is the transpose of the membership file, byte for byte;
// mistakes and unknown datasets answer 22023 and 42704; and a kept
// prepared statement follows a new index version.
func TestDatasetDomains(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ingestReverseCorpus(t, dir)
	native := connect(t, startServe(t, "--store", dir, "--cache-dir", t.TempDir(), "--refresh-interval", "100ms"))
	duck := connect(t, startServe(t, "--store", dir, "--cache-dir", t.TempDir(), "--refresh-interval", "100ms", "--no-native"))
	m, ids := bruteForceMembership(t, native)
	if len(ids) != 5 {
		t.Fatalf("datasets %v, want 5", ids)
	}
	pairs := 0
	for _, id := range ids {
		pairs += len(m[id])
	}
	t.Logf("%d datasets, %d (domain, dataset) pairs", len(ids), pairs)

	for name, c := range map[string]*pgx.Conn{"native": native, "DuckDB": duck} {
		t.Run("dataset_domains of every dataset, "+name, func(t *testing.T) {
			for _, id := range ids {
				got, err := reverseRows(t, c, "SELECT * FROM dataset_domains($1)", id)
				if err != nil {
					t.Fatal(err)
				}
				if want := m.expectDomains(id); !slices.Equal(got, want) {
					t.Fatalf("dataset_domains(%d):\n got %v\nwant %v", id, got, want)
				}
				// and through DuckDB around it, with a projection
				proj, err := reverseRows(t, c, "SELECT domain FROM dataset_domains($1) WHERE url_count > 0 ORDER BY domain", id)
				if err != nil || len(proj) != len(got) {
					t.Fatalf("projected: %d rows, %v", len(proj), err)
				}
			}
		})
		t.Run("dataset_domains_set of every pair, every operation, "+name, func(t *testing.T) {
			for _, a := range ids {
				for _, b := range ids {
					for _, op := range []string{"and", "or", "andnot", "xor"} {
						got, err := reverseRows(t, c, "SELECT * FROM dataset_domains_set($1, $2, $3)", a, op, b)
						if err != nil {
							t.Fatal(err)
						}
						if want := m.expectSet(a, op, b); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
							t.Fatalf("dataset_domains_set(%d, %s, %d):\n got %v\nwant %v", a, op, b, got, want)
						}
					}
				}
			}
		})
		t.Run("a column alone, or in WHERE and ORDER BY, answers as in SELECT * (counts DuckDB does not read are not looked up), "+name, func(t *testing.T) {
			mode := pgx.QueryExecModeCacheStatement
			a, b := ids[0], ids[1]
			full := allRows(t, c, mode, "SELECT * FROM dataset_domains_set($1, 'or', $2)", a, b)
			column := func(rows [][]any, cols ...int) string {
				var out []string
				for _, r := range rows {
					var f []any
					for _, k := range cols {
						f = append(f, r[k])
					}
					out = append(out, fmt.Sprint(f...))
				}
				return strings.Join(out, "\n")
			}
			for q, cols := range map[string][]int{
				"SELECT domain FROM dataset_domains_set($1, 'or', $2)":                 {0},
				"SELECT url_count_b FROM dataset_domains_set($1, 'or', $2)":            {2},
				"SELECT url_count_a, domain FROM dataset_domains_set($1, 'or', $2)":    {1, 0},
				"SELECT domain FROM dataset_domains_set($1, 'or', $2) ORDER BY domain": {0},
			} {
				if got, want := column(allRows(t, c, mode, q, a, b), 0, len(cols)-1), column(full, cols[0], cols[len(cols)-1]); got != want {
					t.Fatalf("%s:\n%s\nwant\n%s", q, got, want)
				}
			}
			// a count read only by WHERE or ORDER BY is read
			var big, byCount []string
			single := allRows(t, c, mode, "SELECT * FROM dataset_domains($1)", a)
			for _, r := range single {
				if r[1].(int64) > 1 {
					big = append(big, r[0].(string))
				}
			}
			slices.SortStableFunc(single, func(x, y []any) int { return int(y[1].(int64) - x[1].(int64)) })
			for _, r := range single {
				byCount = append(byCount, r[0].(string))
			}
			if got := column(allRows(t, c, mode, "SELECT domain FROM dataset_domains($1) WHERE url_count > 1", a), 0); got != strings.Join(big, "\n") || len(big) == 0 {
				t.Fatalf("WHERE url_count > 1: %q, want %q", got, big)
			}
			if got := column(allRows(t, c, mode, "SELECT domain FROM dataset_domains($1) ORDER BY url_count DESC, domain", a), 0); got != strings.Join(byCount, "\n") {
				t.Fatalf("ORDER BY url_count DESC:\n%s\nwant\n%s", got, strings.Join(byCount, "\n"))
			}
			if n := one[int64](t, c, "SELECT count(*) FROM dataset_domains($1)", a); n != int64(len(single)) {
				t.Fatalf("count(*): %d, want %d", n, len(single))
			}
		})
		t.Run("the SQL names of the operations are the same operations, "+name, func(t *testing.T) {
			for alias, op := range map[string]string{"intersect": "and", "UNION": "or", " except ": "andnot", "XOR": "xor"} {
				got, err := reverseRows(t, c, "SELECT * FROM dataset_domains_set($1, $2, $3)", ids[0], alias, ids[1])
				if err != nil {
					t.Fatal(err)
				}
				if want := m.expectSet(ids[0], op, ids[1]); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("%q: %v, want %v", alias, got, want)
				}
			}
		})
		t.Run("literal arguments, as psql sends them, "+name, func(t *testing.T) {
			got, err := reverseRows(t, c, fmt.Sprintf("SELECT * FROM dataset_domains_set(%d, 'andnot', %d)", ids[1], ids[0]))
			if err != nil {
				t.Fatal(err)
			}
			if want := m.expectSet(ids[1], "andnot", ids[0]); !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
		t.Run("mistakes and unknown datasets, "+name, func(t *testing.T) {
			for _, c2 := range []struct {
				q    string
				args []any
				want string
			}{
				{"SELECT * FROM dataset_domains($1)", []any{int32(999)}, "42704"},
				{"SELECT * FROM dataset_domains($1)", []any{int32(-1)}, "42704"},
				{"SELECT count(*) FROM dataset_domains($1)", []any{int32(999)}, "42704"},
				{"SELECT * FROM dataset_domains_set($1, 'and', $2)", []any{ids[0], int32(999)}, "42704"},
				{"SELECT * FROM dataset_domains_set($1, 'and', $2)", []any{int32(999), ids[0]}, "42704"},
				{"SELECT * FROM dataset_domains_set($1, 'nand', $2)", []any{ids[0], ids[1]}, "22023"},
				{"SELECT * FROM dataset_domains_set($1, 'nand', $2)", []any{ids[0], int32(999)}, "22023"},
				{"SELECT * FROM dataset_domains($1)", []any{nil}, "22004"},
			} {
				_, err := reverseRows(t, c, c2.q, c2.args...)
				if got := sqlstate(err); got != c2.want {
					t.Errorf("%s %v: %s, want %s", c2.q, c2.args, got, c2.want)
				}
			}
		})
	}

	t.Run("through DuckDB, SELECT * with an INTEGER argument as a parameter is described (domain_urls too)", func(t *testing.T) {
		// the server describes such a statement by preparing it with each
		// parameter replaced: by 0 for an INTEGER argument, as '0' does
		// not bind to one
		rows, err := reverseRows(t, duck, "SELECT * FROM domain_urls($1, $2, 0, 3)", "iana.org", ids[0])
		if err != nil || len(rows) == 0 {
			t.Fatalf("domain_urls through DuckDB: %v %v", rows, err)
		}
	})

	t.Run("the object is the version's only membership file and holds the postings' pairs", func(t *testing.T) {
		man := localManifest(t, dir)
		for _, v := range man.Versions {
			if v.DatasetToDomainsRoar == "" || v.D2DRoar != "" {
				t.Fatalf("version %s: dataset_to_domains_roar %q, d2d_roar %q: want only the first", v.Version, v.DatasetToDomainsRoar, v.D2DRoar)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "index", man.CurrentVersion, "domain_to_datasets.roar")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("domain_to_datasets.roar of %s: %v, want none", man.CurrentVersion, err)
		}
		// verify holds every version's file to its postings (V5)
		var out strings.Builder
		if code := run(ctx, []string{"verify", "--store", dir}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), ": 0 problems") {
			t.Fatalf("verify: exit %d\n%s", code, out.String())
		}
	})

	t.Run("a kept prepared statement answers from the newest version", func(t *testing.T) {
		const q = "SELECT count(*) FROM dataset_domains_set($1, 'or', $2)"
		before := one[int64](t, native, q, ids[0], ids[1])
		path := filepath.Join("..", "..", "testdata", "shared", "urls", "ada_userbait.txt")
		if code := run(ctx, []string{"ingest", "--store", dir, "--dataset", "cc", path}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("ingest into cc: exit %d", code)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			after := one[int64](t, native, q, ids[0], ids[1])
			if after > before {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still %d, as before an ingest that added domains to cc, 20s later", q, after)
			}
		}
		// and the two paths agree on the bigger version
		m2, _ := bruteForceMembership(t, native)
		for _, c := range []*pgx.Conn{native, duck} {
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				got, err := reverseRows(t, c, "SELECT * FROM dataset_domains($1)", ids[1])
				if err != nil {
					t.Fatal(err)
				}
				if slices.Equal(got, m2.expectDomains(ids[1])) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("dataset_domains(%d) after the ingest: %d rows, brute force %d", ids[1], len(got), len(m2[ids[1]]))
				}
			}
		}
	})
}

// TestDatasetDomainsWithoutTheObject: an index version whose manifest
// entry names no dataset_to_domains_roar, or names one that is gone, is
// answered all the same: the server builds it in memory on first use from
// the postings (a version with domain_to_datasets.roar, written before
// 2026-11-28, from that: TestPreviousReleaseStore), and says so in its log.
func TestDatasetDomainsWithoutTheObject(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ingestReverseCorpus(t, dir)
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref := connect(t, startServe(t, "--store", dir, "--cache-dir", t.TempDir()))
	m, ids := bruteForceMembership(t, ref)

	man, err := catalog.ReadManifest(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := man.Current()
	for _, c := range []struct {
		name   string
		absent bool // the field is absent; otherwise the object is gone
	}{
		{"the field is absent, as a previous release writes the manifest", true},
		{"the object the field names is gone", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir2 := filepath.Join(t.TempDir(), "store")
			if err := os.CopyFS(dir2, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			if c.absent {
				p := filepath.Join(dir2, catalog.ManifestKey)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, line := range strings.Split(string(b), "\n") {
					if !strings.Contains(line, `"dataset_to_domains_roar"`) {
						out = append(out, line)
					}
				}
				if err := os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(filepath.Join(dir2, cur.DatasetToDomainsRoar)); err != nil {
				t.Fatal(err)
			}
			log := &syncBuffer{}
			c := connect(t, startServeLogging(t, log, "--store", dir2, "--cache-dir", t.TempDir(), "--log-level", "info"))
			for _, id := range ids {
				got, err := reverseRows(t, c, "SELECT * FROM dataset_domains($1)", id)
				if err != nil {
					t.Fatal(err)
				}
				if want := m.expectDomains(id); !slices.Equal(got, want) {
					t.Fatalf("dataset_domains(%d):\n got %v\nwant %v", id, got, want)
				}
			}
			got, err := reverseRows(t, c, "SELECT * FROM dataset_domains_set($1, 'xor', $2)", ids[0], ids[1])
			if err != nil || !slices.Equal(got, m.expectSet(ids[0], "xor", ids[1])) {
				t.Fatalf("xor: %v %v", got, err)
			}
			if !strings.Contains(log.String(), "built each dataset's domains in memory") || !strings.Contains(log.String(), "from=\"the postings\"") {
				t.Errorf("the server's log does not say it built the reverse in memory:\n%s", log.String())
			}
			// an ingest builds on such a version from its postings, and
			// the version it publishes is whole again
			path := filepath.Join("..", "..", "testdata", "shared", "urls", "ada_userbait.txt")
			if code := run(ctx, []string{"ingest", "--store", dir2, "--dataset", "more", path}, io.Discard, io.Discard); code != 0 {
				t.Fatalf("ingest on the version: exit %d", code)
			}
			if code := run(ctx, []string{"gc", "--store", dir2, "--keep", "1"}, io.Discard, io.Discard); code != 0 {
				t.Fatalf("gc: exit %d", code)
			}
			var out strings.Builder
			if code := run(ctx, []string{"verify", "--store", dir2}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), ": 0 problems, 0 warnings") {
				t.Fatalf("verify of the version the ingest published: exit %d\n%s", code, out.String())
			}
			for _, id := range ids { // every earlier pair kept
				got, err := reverseRows(t, c, "SELECT * FROM dataset_domains($1)", id)
				if want := m.expectDomains(id); err != nil || !slices.Equal(got, want) {
					t.Fatalf("dataset_domains(%d) after the ingest: %d rows (%v), want %d", id, len(got), err, len(want))
				}
			}
		})
	}
}
