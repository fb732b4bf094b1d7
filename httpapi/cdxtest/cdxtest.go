// Package cdxtest is the conformance suite of DHSI's CDX server API
// (httpapi/cdx.go): a corpus of CDX indexes (testdata/cdx/corpus, and
// pywb's sample index in testdata/shared/cdx), the request and response
// examples of pywb's and the Wayback CDX server's documentation adapted to
// it as fixtures (testdata/cdx/*.txt; testdata/cdx/README.md says where
// each comes from), and checks no fixture can state: every paging of an
// answer equals the answer, and pywb's own sample index is the oracle of
// every match type on its URLs.
//
// The httpapi tests run it against the handler in process, cmd/dhsi's
// against `dhsi serve --http`.
package cdxtest

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/urlnorm"
)

// Rewrite makes Run write the answers it gets into the fixture files
// (go test -run … -cdx-rewrite); review the diff before committing.
var Rewrite = flag.Bool("cdx-rewrite", false, "rewrite testdata/cdx/*.txt with the answers received")

// Dataset is one dataset of the corpus: its name and its input files,
// relative to the repository's testdata directory.
type Dataset struct {
	Name  string
	Files []string
}

// Datasets is the corpus, in the order ingest gives them ids (1, 2, …).
// "hidden" is the dataset the grants hide from the user rita.
var Datasets = []Dataset{
	{"iana", []string{"shared/cdx/pywb-iana.cdxj"}},
	{"archive", []string{"cdx/corpus/archive.cdx"}},
	{"example", []string{"cdx/corpus/example.cdxj"}},
	{"mirror", []string{"cdx/corpus/mirror.cdx"}},
	{"hidden", []string{"cdx/corpus/hidden.cdx"}},
	{"list", []string{"cdx/corpus/list.txt"}},
}

// HiddenDataset is granted to alice (an admin) only; rita, a reader, must
// never see its lines.
const HiddenDataset = "hidden"

// Ingest loads the corpus. A CDX index holds many captures of one URL, and
// an ingest keeps one row per URL (the latest ts: lake L2), so each input
// is split by capture rank: the k-th capture of every URL goes into the
// k-th ingest, whose files (under work) ingestRank gets as dataset → files,
// each file named after its dataset (for dhsi ingest --dataset-per-file).
func Ingest(testdata, work string, ingestRank func(rank int, files map[string][]string, order []string) error) error {
	norm, err := urlnorm.NewNormalizer(urlnorm.Config{})
	if err != nil {
		return err
	}
	ranks := []map[string][]string{}
	for _, d := range Datasets {
		for _, f := range d.Files {
			byRank, header, ext, err := splitByRank(filepath.Join(testdata, f), norm)
			if err != nil {
				return err
			}
			for k, lines := range byRank {
				dir := filepath.Join(work, fmt.Sprintf("rank-%02d", k+1))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				p := filepath.Join(dir, d.Name+ext)
				body := header + strings.Join(lines, "\n") + "\n"
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					return err
				}
				for len(ranks) <= k {
					ranks = append(ranks, map[string][]string{})
				}
				ranks[k][d.Name] = append(ranks[k][d.Name], p)
			}
		}
	}
	for k, files := range ranks {
		var order []string
		for _, d := range Datasets {
			if _, ok := files[d.Name]; ok {
				order = append(order, d.Name)
			}
		}
		if err := ingestRank(k+1, files, order); err != nil {
			return fmt.Errorf("ingest rank %d: %w", k+1, err)
		}
	}
	return nil
}

// splitByRank reads a CDX, CDXJ or URL list and returns its lines by
// capture rank of their normalized URL, the CDX header line to repeat, and
// the file's extension.
func splitByRank(path string, norm *urlnorm.Normalizer) ([][]string, string, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", "", err
	}
	defer f.Close()
	ext := filepath.Ext(path)
	var out [][]string
	header := ""
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " CDX") {
			header = line + "\n"
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		raw := line
		switch ext {
		case ".cdx":
			if fs := strings.Fields(line); len(fs) > 2 {
				raw = fs[2]
			}
		case ".cdxj":
			parts := strings.SplitN(line, " ", 3)
			var m map[string]any
			if len(parts) == 3 && json.Unmarshal([]byte(parts[2]), &m) == nil {
				raw, _ = m["url"].(string)
			}
		}
		key := raw
		if u, err := norm.Parse(raw); err == nil {
			key = u.Normalized
		}
		k := seen[key]
		seen[key] = k + 1
		for len(out) <= k {
			out = append(out, nil)
		}
		out[k] = append(out[k], line)
	}
	return out, header, ext, sc.Err()
}

// Case is one fixture: a request and the answer DHSI must give.
type Case struct {
	File, Name string
	Source     []string // the comment lines above it: where it comes from
	Request    string   // path and query
	User       string   // HTTP Basic user ("alice" when not given)
	Status     string   // "200 text/plain; charset=utf-8"
	Body       string
	line       int
}

// Load reads every fixture file of dir (testdata/cdx/*.txt).
//
//	# where the example comes from (any number of comment lines)
//	case: a sentence saying what it shows
//	GET /cdx/search/cdx?url=archive.org&output=json&limit=3
//	user: rita                      (optional)
//	----
//	200 application/json
//	…the body, to a line "====" …
//	====
func Load(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no fixtures in %s: %v", dir, err)
	}
	var out []Case
	for _, f := range files {
		cs, err := loadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

func loadFile(path string) ([]Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	var out []Case
	var comments []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "#"):
			comments = append(comments, l)
		case strings.TrimSpace(l) == "":
		case strings.HasPrefix(l, "case: "):
			c := Case{File: path, Name: strings.TrimPrefix(l, "case: "), Source: comments, User: "alice", line: i + 1}
			comments = nil
			for i++; i < len(lines) && lines[i] != "----"; i++ {
				switch l := lines[i]; {
				case strings.HasPrefix(l, "GET "):
					c.Request = strings.TrimPrefix(l, "GET ")
				case strings.HasPrefix(l, "user: "):
					c.User = strings.TrimPrefix(l, "user: ")
				default:
					return nil, fmt.Errorf("%s:%d: %q: want GET …, user: … or ----", path, i+1, l)
				}
			}
			if i+1 >= len(lines) {
				return nil, fmt.Errorf("%s:%d: case %q has no answer", path, c.line, c.Name)
			}
			i++
			c.Status = lines[i]
			var body []string
			for i++; i < len(lines) && lines[i] != "===="; i++ {
				body = append(body, lines[i])
			}
			if i >= len(lines) {
				return nil, fmt.Errorf("%s:%d: case %q: no ==== after the answer", path, c.line, c.Name)
			}
			c.Body = strings.Join(body, "\n")
			if c.Body != "" {
				c.Body += "\n"
			}
			out = append(out, c)
		default:
			return nil, fmt.Errorf("%s:%d: %q: want # comment or case: …", path, i+1, l)
		}
	}
	return out, nil
}

// Getter does one GET as a user: status code, content type, body.
type Getter func(user, pathAndQuery string) (int, string, string, error)

// HTTPGetter gets from base (http://host:port) with HTTP Basic credentials
// user:user-pw.
func HTTPGetter(base string) Getter {
	client := &http.Client{Timeout: 30 * time.Second}
	return func(user, p string) (int, string, string, error) {
		req, err := http.NewRequest(http.MethodGet, base+p, nil)
		if err != nil {
			return 0, "", "", err
		}
		req.SetBasicAuth(user, user+"-pw")
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b), err
	}
}

var versionName = regexp.MustCompile(`v[0-9]{6}-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]+`)

// Run checks every fixture of dir against get; with -cdx-rewrite it writes
// the answers received into the files instead.
func Run(t *testing.T, dir string, get Getter) {
	cases, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]Case{}
	for _, c := range cases {
		code, ctype, body, err := get(c.User, c.Request)
		if err != nil {
			t.Fatalf("%s: GET %s: %v", c.Name, c.Request, err)
		}
		status := fmt.Sprintf("%d %s", code, ctype)
		body = versionName.ReplaceAllString(body, "VERSION") // differs from run to run
		if *Rewrite {
			c.Status, c.Body = status, body
			got[c.File] = append(got[c.File], c)
			continue
		}
		if status != c.Status || body != c.Body {
			t.Errorf("%s:%d: %s\nGET %s (as %s)\n--- got\n%s\n%s--- want\n%s\n%s", filepath.Base(c.File), c.line, c.Name, c.Request, c.User, status, body, c.Status, c.Body)
		}
	}
	if *Rewrite {
		for f, cs := range got {
			if err := rewrite(f, cs); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func rewrite(path string, cs []Case) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// keep the file's head (comments before the first case)
	var head []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "case: ") {
			break
		}
		head = append(head, l)
	}
	for len(head) > 0 && head[len(head)-1] == "" {
		head = head[:len(head)-1]
	}
	var w strings.Builder
	for _, l := range head {
		w.WriteString(l + "\n")
	}
	for i, c := range cs {
		w.WriteString("\n")
		if i > 0 { // the first case's comments are in the head
			for _, s := range c.Source {
				w.WriteString(s + "\n")
			}
		}
		fmt.Fprintf(&w, "case: %s\nGET %s\n", c.Name, c.Request)
		if c.User != "alice" {
			fmt.Fprintf(&w, "user: %s\n", c.User)
		}
		fmt.Fprintf(&w, "----\n%s\n%s====\n", c.Status, c.Body)
	}
	return os.WriteFile(path, []byte(w.String()), 0o644)
}

// CheckPaging checks that, for each query, the pages of limit n joined by
// following the resume keys equal the answer without a limit, in every
// output format of both flavours.
func CheckPaging(t *testing.T, get Getter, queries []string) {
	t.Helper()
	for _, q := range queries {
		for _, flavour := range []struct{ path, output string }{
			{"/cdx/search/cdx", "json"}, {"/cdx/search/cdx", "text"},
			{"/cdx", "cdxj"}, {"/cdx", "json"}, {"/cdx", "text"},
		} {
			base := flavour.path + "?" + q + "&output=" + flavour.output
			whole := linesOf(t, get, base, flavour.output, flavour.path)
			if len(whole.lines) == 0 {
				t.Errorf("%s: no lines: the query proves nothing", base)
				continue
			}
			if whole.key != "" {
				t.Errorf("%s: a resume key without showResumeKey", base)
			}
			for _, n := range []int{1, 2, 3, 7} {
				var joined []string
				key, pages := "", 0
				for {
					p := fmt.Sprintf("%s&limit=%d&showResumeKey=true", base, n)
					if key != "" {
						p += "&resumeKey=" + url.QueryEscape(key)
					}
					page := linesOf(t, get, p, flavour.output, flavour.path)
					if len(page.lines) > n || len(page.lines) == 0 {
						t.Fatalf("%s: %d lines on a page of %d", p, len(page.lines), n)
					}
					joined = append(joined, page.lines...)
					pages++
					if page.key == "" {
						break
					}
					if pages > len(whole.lines)+1 {
						t.Fatalf("%s: more pages than lines", base)
					}
					key = page.key
				}
				if strings.Join(joined, "\n") != strings.Join(whole.lines, "\n") {
					t.Errorf("%s: %d pages of %d lines:\n%s\nwant the unpaged answer:\n%s", base, pages, n, strings.Join(joined, "\n"), strings.Join(whole.lines, "\n"))
				}
				if want := (len(whole.lines) + n - 1) / n; pages != want {
					t.Errorf("%s: %d pages of %d for %d lines, want %d (no empty last page)", base, pages, n, len(whole.lines), want)
				}
			}
		}
	}
}

type page struct {
	lines []string
	key   string
}

// linesOf gets an answer and splits it into lines and the resume key.
func linesOf(t *testing.T, get Getter, p, output, path string) page {
	t.Helper()
	code, _, body, err := get("alice", p)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", p, code, err, body)
	}
	var pg page
	if path == "/cdx/search/cdx" && output == "json" {
		var rows [][]string
		if err := json.Unmarshal([]byte(body), &rows); err != nil {
			t.Fatalf("GET %s: %v\n%s", p, err, body)
		}
		if len(rows) == 0 {
			return pg
		}
		rows = rows[1:] // the header
		if n := len(rows); n >= 2 && len(rows[n-2]) == 0 {
			pg.key = rows[n-1][0]
			rows = rows[:n-2]
		}
		for _, r := range rows {
			pg.lines = append(pg.lines, strings.Join(r, " "))
		}
		return pg
	}
	ls := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if body == "" {
		ls = nil
	}
	if output == "json" && len(ls) > 0 && strings.HasPrefix(ls[len(ls)-1], `{"resumeKey": `) {
		var k struct{ ResumeKey string }
		if err := json.Unmarshal([]byte(ls[len(ls)-1]), &k); err != nil {
			t.Fatal(err)
		}
		pg.key, ls = k.ResumeKey, ls[:len(ls)-1]
	} else if n := len(ls); n >= 2 && ls[n-2] == "" {
		pg.key, ls = ls[n-1], ls[:n-2]
	}
	pg.lines = ls
	return pg
}

// CheckIanaOracle compares DHSI's answers on dataset iana with pywb's own
// index of the same captures (testdata/shared/cdx/pywb-iana.cdxj, sorted
// by urlkey and timestamp as pywb serves it): for each query, the urlkeys
// and timestamps DHSI answers are those of the index lines the query
// selects, in the index's order.
func CheckIanaOracle(t *testing.T, get Getter, testdata string) {
	t.Helper()
	f, err := os.Open(filepath.Join(testdata, "shared", "cdx", "pywb-iana.cdxj"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type line struct{ key, ts, rest string }
	var index []line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.SplitN(sc.Text(), " ", 3)
		index = append(index, line{p[0], p[1], p[2]})
	}
	if !sort.SliceIsSorted(index, func(i, j int) bool {
		return index[i].key < index[j].key || index[i].key == index[j].key && index[i].ts < index[j].ts
	}) {
		t.Fatal("pywb-iana.cdxj is not sorted by urlkey, timestamp")
	}
	for _, c := range []struct {
		query string
		pick  func(l line) bool
	}{
		{"url=http://www.iana.org/_css/2013.1/print.css", func(l line) bool { return l.key == "org,iana)/_css/2013.1/print.css" }},
		{"url=https://iana.org/_css/2013.1/fonts/OpenSans-Bold.ttf", func(l line) bool { return l.key == "org,iana)/_css/2013.1/fonts/opensans-bold.ttf" }},
		{"url=http://www.iana.org/_css/&matchType=prefix", func(l line) bool { return strings.HasPrefix(l.key, "org,iana)/_css/") }},
		{"url=iana.org/domains*", func(l line) bool { return strings.HasPrefix(l.key, "org,iana)/domains") }},
		{"url=iana.org/domains/*", func(l line) bool { return strings.HasPrefix(l.key, "org,iana)/domains/") }},
		{"url=www.iana.org/about&matchType=host", func(l line) bool { return strings.HasPrefix(l.key, "org,iana)") }},
		{"url=*.iana.org", func(l line) bool { return true }},
		{"url=iana.org/_js/*&from=201401262008&to=20140126201", func(l line) bool {
			return strings.HasPrefix(l.key, "org,iana)/_js/") && l.ts >= "20140126200800" && l.ts <= "20140126201999"
		}},
		{"url=iana.org/*&filter=!~url:http://", func(l line) bool { return strings.Contains(l.rest, `"url": "https://`) }},
	} {
		var want []string
		for _, l := range index {
			if c.pick(l) {
				want = append(want, l.key+" "+l.ts)
			}
		}
		p := "/iana/cdx?" + c.query + "&output=text&fl=urlkey,timestamp"
		code, _, body, err := get("alice", p)
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %v %s", p, code, err, body)
		}
		got := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("GET %s:\n%s\nwant pywb's lines:\n%s", p, body, strings.Join(want, "\n"))
		}
	}
}
