package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/httpapi/cdxtest"
	"github.com/dhsi/dhsi/urlnorm"
)

// cdxjCapture is what a CDXJ line says about its URL.
type cdxjCapture struct {
	ts                                  string
	status, mime, digest, filename, raw string
	length, offset                      int64
	keys                                map[string]string // every key of the line's JSON
}

// readCDXJCaptures reads a CDXJ file into the capture ingest keeps per
// normalized URL: the latest (ties: the first line).
func readCDXJCaptures(t *testing.T, path string) map[string]cdxjCapture {
	t.Helper()
	n, err := urlnorm.NewNormalizer(urlnorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]cdxjCapture{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), " ", 3)
		var m map[string]string
		if err := json.Unmarshal([]byte(parts[2]), &m); err != nil {
			t.Fatal(err)
		}
		u, err := n.Parse(m["url"])
		if err != nil {
			continue
		}
		c := cdxjCapture{ts: parts[1], status: m["status"], mime: m["mime"], digest: m["digest"], filename: m["filename"], raw: m["url"], keys: m}
		c.length, _ = strconv.ParseInt(m["length"], 10, 64)
		c.offset, _ = strconv.ParseInt(m["offset"], 10, 64)
		if old, ok := out[u.Normalized]; !ok || c.ts > old.ts {
			out[u.Normalized] = c
		}
	}
	return out
}

func ingestOK(t *testing.T, args ...string) {
	t.Helper()
	var stderr strings.Builder
	if code := run(context.Background(), append([]string{"ingest"}, args...), io.Discard, &stderr); code != 0 {
		t.Fatalf("dhsi ingest %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
}

// TestKeptFieldsOverSQL (issue 17 §1): Common Crawl's CDXJ ingested by
// `dhsi ingest` answers, through a PostgreSQL client, each URL's status,
// mime type, digest, length, offset and WARC file as the input line says
// them, from domain_url_fields on the native path and through DuckDB
// alike, and from the urls view; domain_urls keeps its three columns; a
// CSV's --keep-columns come back typed in the fields JSON and as view
// columns.
func TestKeptFieldsOverSQL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	cdxj := filepath.Join("..", "..", "testdata", "shared", "cdx", "cc-main-2024-30-cdx-00187.cdxj")
	ingestOK(t, "--store", store, "--dataset", "cc", cdxj)
	ingestOK(t, "--store", store, "--dataset", "iana", filepath.Join("..", "..", "testdata", "shared", "cdx", "pywb-iana.cdx"))
	csv := filepath.Join(dir, "shop.csv")
	if err := os.WriteFile(csv, []byte("url,lang,score,seen,price\nhttps://shop.example/a,en,3,2024-01-02T03:04:05Z,1.5\nhttps://shop.example/b,fr,,,2\nhttps://shop.example/c,,7,2024-02-03,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ingestOK(t, "--store", store, "--dataset", "shop", "--keep-columns", "lang,score,seen:timestamp,price", csv)

	native := connect(t, startServe(t, "--store", store, "--cache-dir", t.TempDir()))
	duck := connect(t, startServe(t, "--store", store, "--cache-dir", t.TempDir(), "--no-native"))
	var ccID, shopID int32
	if err := native.QueryRow(ctx, "SELECT dataset_id FROM datasets WHERE dataset = 'cc'").Scan(&ccID); err != nil {
		t.Fatal(err)
	}
	if err := native.QueryRow(ctx, "SELECT dataset_id FROM datasets WHERE dataset = 'shop'").Scan(&shopID); err != nil {
		t.Fatal(err)
	}
	answer := func(c *pgx.Conn, q string, args ...any) string {
		t.Helper()
		rows, err := c.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
		}
		if rows.Err() != nil {
			t.Fatalf("%s: %v", q, rows.Err())
		}
		var names []string
		for _, fd := range rows.FieldDescriptions() {
			names = append(names, fmt.Sprintf("%s:%d", fd.Name, fd.DataTypeOID))
		}
		return strings.Join(names, ",") + "\n" + strings.Join(out, "\n")
	}

	want := readCDXJCaptures(t, cdxj)
	domains := queryStrings(t, native, "SELECT DISTINCT domain FROM urls WHERE dataset_id = $1 ORDER BY 1", ccID)
	if len(domains) == 0 {
		t.Fatal("no domain in dataset cc")
	}
	seen := 0
	for _, d := range domains {
		for _, q := range []string{
			`SELECT url, ts, status, mime, digest, length, "offset", filename, fields FROM domain_url_fields($1, $2, 0, 10000)`,
			`SELECT * FROM domain_url_fields($1, $2, 0, 10000)`,
			`SELECT url, status FROM domain_url_fields($1, $2, 0, 10000) WHERE status = 404`,
			`SELECT url, length FROM domain_url_fields($1, $2, 0, 10000) WHERE mime = 'text/html' ORDER BY length DESC, url LIMIT 5`,
			`SELECT url FROM domain_url_fields($1, $2, 3, 7) ORDER BY url`,
		} {
			a, b := answer(native, q, d, ccID), answer(duck, q, d, ccID)
			if a != b {
				t.Fatalf("%s: %s: the native path and DuckDB differ:\n%s\n---\n%s", d, q, a, b)
			}
		}
		rows, err := native.Query(ctx, `SELECT * FROM domain_url_fields($1, $2, 0, 10000)`, d, ccID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var (
				id                       uint64
				url                      string
				ts                       any
				status                   *int32
				mime, digest, file, flds *string
				length, offset           *int64
			)
			if err := rows.Scan(&id, &url, &ts, &status, &mime, &digest, &length, &offset, &file, &flds); err != nil {
				t.Fatal(err)
			}
			w, ok := want[url]
			if !ok {
				t.Fatalf("%s is not a URL of the input", url)
			}
			got := fmt.Sprintf("%d %s %s %d %d %s %v", *status, *mime, *digest, *length, *offset, *file, flds)
			exp := fmt.Sprintf("%s %s %s %d %d %s %v", w.status, w.mime, w.digest, w.length, w.offset, w.filename, (*string)(nil))
			if got != exp {
				t.Fatalf("%s: domain_url_fields says %s, the CDXJ line %s", url, got, exp)
			}
			seen++
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	if seen != len(want) {
		t.Fatalf("domain_url_fields gave %d URLs, the input has %d", seen, len(want))
	}
	// the view: the same fields for the same URLs
	var n int
	if err := native.QueryRow(ctx, `SELECT count(*) FROM urls WHERE dataset_id = $1 AND status IS NOT NULL AND mime IS NOT NULL AND "offset" IS NOT NULL`, ccID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Fatalf("the urls view has the fields of %d URLs, want %d", n, len(want))
	}
	var url, mime string
	var status int32
	var offset int64
	if err := native.QueryRow(ctx, `SELECT url, status, mime, "offset" FROM urls WHERE dataset_id = $1 AND status = 404 ORDER BY url LIMIT 1`, ccID).Scan(&url, &status, &mime, &offset); err != nil {
		t.Fatal(err)
	}
	if w := want[url]; w.status != "404" || w.mime != mime || w.offset != offset {
		t.Fatalf("urls view: %s status %d mime %s offset %d, the input %+v", url, status, mime, offset, w)
	}
	// domain_urls is as it was
	if got := answer(native, "SELECT * FROM domain_urls('missiondefrance.fr', $1, 0, 1)", ccID); !strings.HasPrefix(got, "url_id:1700,url:25,ts:1114\n") {
		t.Fatalf("domain_urls' columns changed: %s", got)
	}

	// the CSV's kept columns: typed, in the fields JSON and the view
	q := `SELECT url, status, fields FROM domain_url_fields('shop.example', $1, 0, 10)`
	got, other := answer(native, q, shopID), answer(duck, q, shopID)
	if got != other {
		t.Fatalf("native and DuckDB differ:\n%s\n---\n%s", got, other)
	}
	wantShop := `url:25,status:23,fields:25
https://shop.example/a <nil> {"lang":"en","score":3,"seen":"2024-01-02T03:04:05Z","price":1.5}
https://shop.example/b <nil> {"lang":"fr","price":2}
https://shop.example/c <nil> {"score":7,"seen":"2024-02-03T00:00:00Z"}`
	if got != wantShop {
		t.Fatalf("domain_url_fields over the CSV:\n%s\nwant\n%s", got, wantShop)
	}
	got = answer(native, `SELECT url, lang, score + 1, seen, price * 2 FROM urls WHERE dataset_id = $1 ORDER BY url`, shopID)
	wantView := "url:25,lang:25,(score + 1):20,seen:1114,(price * 2):701\n" +
		"https://shop.example/a en 4 2024-01-02 03:04:05 +0000 UTC 3\n" +
		"https://shop.example/b fr <nil> <nil> 4\n" +
		"https://shop.example/c <nil> 8 2024-02-03 00:00:00 +0000 UTC <nil>"
	if got != wantView {
		t.Fatalf("urls view over the CSV:\n%s\nwant\n%s", got, wantView)
	}
	types := queryStrings(t, native, "SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_name = 'urls' ORDER BY ordinal_position")
	sort.Strings(types)
	t.Logf("urls view: %s", strings.Join(types, ", "))
}

// TestKeptFieldsOverHTTPAndGrants (issue 17 §1): the JSON API and the CDX
// API of `dhsi serve --http` answer the fields of Common Crawl's CDXJ as
// its lines say them; a dataset granted to someone else shows none of its
// fields to a reader — not through domain_url_fields, the urls view's
// columns, the JSON API nor the CDX API.
func TestKeptFieldsOverHTTPAndGrants(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	cdxj := filepath.Join("..", "..", "testdata", "shared", "cdx", "cc-main-2024-30-cdx-00187.cdxj")
	ingestOK(t, "--store", store, "--dataset", "cc", cdxj)
	secret := filepath.Join(dir, "secret.jsonl")
	if err := os.WriteFile(secret, []byte(`{"url": "https://bibliotheque.missiondefrance.fr/secret", "owner": "x", "ssn_like": 12}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ingestOK(t, "--store", store, "--dataset", "secret", "--keep-columns", "owner,ssn_like", secret)
	admin, rita, httpAddr := serveAliceAndRita(t, store, dir)
	get := cdxtest.HTTPGetter("http://" + httpAddr)

	var ccID, secretID int32
	admin.QueryRow(ctx, "SELECT dataset_id FROM datasets WHERE dataset = 'cc'").Scan(&ccID)
	admin.QueryRow(ctx, "SELECT dataset_id FROM datasets WHERE dataset = 'secret'").Scan(&secretID)
	want := readCDXJCaptures(t, cdxj)

	// the JSON API: every URL of a domain with its fields
	code, _, body, err := get("rita", fmt.Sprintf("/v1/domain/missiondefrance.fr/datasets/%d/urls?limit=10000", ccID))
	if err != nil || code != 200 {
		t.Fatalf("GET urls: %d %v %s", code, err, body)
	}
	var page struct {
		Items []struct {
			URL    string
			Fields map[string]any
		}
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber() // offsets as written, not as float64
	if err := dec.Decode(&page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) == 0 {
		t.Fatal("no URL")
	}
	for _, it := range page.Items {
		w := want[it.URL]
		got := fmt.Sprintln(it.Fields["status"], it.Fields["mime"], it.Fields["digest"], it.Fields["length"], it.Fields["offset"], it.Fields["filename"])
		exp := fmt.Sprintln(w.status, w.mime, w.digest, w.length, w.offset, w.filename)
		if got != exp {
			t.Fatalf("%s: the JSON API says %s, the CDXJ line %s", it.URL, got, exp)
		}
	}
	code, _, body, _ = get("rita", fmt.Sprintf("/v1/domain/missiondefrance.fr/datasets/%d/urls?limit=1&fields=false", ccID))
	if code != 200 || strings.Contains(body, `"fields"`) {
		t.Fatalf("fields=false: %d %s", code, body)
	}

	// the CDX API: the Wayback server's columns from the kept fields, and a
	// filter and collapse on them
	code, _, body, _ = get("rita", "/cdx/search/cdx?url=bibliotheque.missiondefrance.fr&matchType=host&fl=original,timestamp,statuscode,mimetype,digest,length,offset,filename&dataset=cc")
	if code != 200 {
		t.Fatalf("CDX: %d %s", code, body)
	}
	lines := strings.Split(strings.TrimSpace(body), "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		w, ok := want[mustNormalize(t, f[0])]
		if !ok || w.raw != f[0] || w.ts != f[1] {
			t.Fatalf("CDX line %q: not a capture of the input (%+v)", line, w)
		}
		if exp := fmt.Sprint(w.raw, " ", w.ts, " ", w.status, " ", w.mime, " ", w.digest, " ", w.length, " ", w.offset, " ", w.filename); line != exp {
			t.Fatalf("CDX line\n%s\nthe input's\n%s", line, exp)
		}
	}
	code, _, body, _ = get("rita", "/cdx/search/cdx?url=missiondefrance.fr&matchType=domain&filter=statuscode:404&fl=statuscode&dataset=cc")
	if n404 := strings.Count(body, "404\n"); code != 200 || n404 == 0 || n404 != len(strings.Split(strings.TrimSpace(body), "\n")) {
		t.Fatalf("filter=statuscode:404: %d %q", code, body)
	}
	code, _, body, _ = get("rita", "/cdx/search/cdx?url=missiondefrance.fr&matchType=domain&collapse=statuscode&fl=statuscode&dataset=cc")
	if code != 200 || strings.Count(body, "\n") < 2 || strings.Count(body, "\n") >= len(lines) {
		t.Fatalf("collapse=statuscode: %d %q", code, body)
	}

	// grants: secret is alice's alone
	if _, err := admin.Exec(ctx, "CALL grant_dataset('secret', 'alice')"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; {
		code, _, _, _ := get("rita", fmt.Sprintf("/v1/domain/missiondefrance.fr/datasets/%d/urls", secretID))
		if code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the grant did not hide secret from rita within 15s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := rita.Exec(ctx, "SELECT * FROM domain_url_fields('missiondefrance.fr', $1, 0, 10)", secretID); err == nil || !strings.Contains(err.Error(), "is not in index version") {
		t.Fatalf("rita reads secret's fields: %v", err)
	}
	var fields string
	if err := admin.QueryRow(ctx, "SELECT fields FROM domain_url_fields('missiondefrance.fr', $1, 0, 10)", secretID).Scan(&fields); err != nil || fields != `{"owner":"x","ssn_like":12}` {
		t.Fatalf("alice reads secret's fields: %q %v", fields, err)
	}
	for _, c := range []*pgx.Conn{rita, admin} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'urls' AND column_name IN ('owner', 'ssn_like')").Scan(&n); err != nil || n != 0 {
			t.Fatalf("the urls view names a column only a granted dataset keeps: %d %v", n, err)
		}
	}
	code, _, body, _ = get("rita", "/cdx?url=bibliotheque.missiondefrance.fr/secret&output=json")
	if code != 200 || strings.Contains(body, "secret") {
		t.Fatalf("rita's CDX answer shows secret's line: %d %s", code, body)
	}
}

func mustNormalize(t *testing.T, raw string) string {
	t.Helper()
	n, err := urlnorm.NewNormalizer(urlnorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := n.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Normalized
}

// TestVerifyKeptColumns: dhsi verify --deep checks each lake file's kept
// columns against datasets.json: a type the registry does not give them is
// a problem.
func TestVerifyKeptColumns(t *testing.T) {
	ctx := context.Background()
	store := filepath.Join(t.TempDir(), "store")
	ingestOK(t, "--store", store, "--dataset", "iana", filepath.Join("..", "..", "testdata", "shared", "cdx", "pywb-iana.cdx"))
	verify := func() string {
		var out strings.Builder
		run(ctx, []string{"verify", "--store", store, "--deep"}, &out, io.Discard)
		return out.String()
	}
	if out := verify(); !strings.Contains(out, ": 0 problems, 0 warnings") {
		t.Fatalf("verify of a fresh store:\n%s", out)
	}
	regs, _ := filepath.Glob(filepath.Join(store, "index", "*", "datasets.json"))
	if len(regs) != 1 {
		t.Fatalf("%d datasets.json", len(regs))
	}
	b, err := os.ReadFile(regs[0])
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.Replace(string(b), `"int32"`, `"int64"`, 1))
	if err := os.WriteFile(regs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := verify(); !strings.Contains(out, "column status is INT32, datasets.json says int64") {
		t.Fatalf("verify of a registry that retypes status:\n%s", out)
	}
}
