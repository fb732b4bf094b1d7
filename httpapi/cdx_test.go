package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/httpapi"
	"github.com/dhsi/dhsi/httpapi/cdxtest"
	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/urlnorm"
)

// cdxServer serves the CDX corpus (cdxtest) in process, with the users of
// the fixtures: alice, an admin, sees every dataset; rita, a reader, every
// one but cdxtest.HiddenDataset (as a grant to alice alone would hide it).
func cdxServer(t *testing.T) (*httptest.Server, httpapi.Config) {
	t.Helper()
	ctx := context.Background()
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	norm, err := urlnorm.NewNormalizer(urlnorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	err = cdxtest.Ingest(filepath.Join("..", "testdata"), t.TempDir(), func(rank int, files map[string][]string, order []string) error {
		var batches []ingest.Batch
		for _, name := range order {
			batches = append(batches, ingest.Batch{Dataset: name, Files: files[name]})
		}
		_, err := ingest.RunAll(ctx, ingest.Options{Store: st, Normalizer: norm}, batches)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	x, err := catalog.OpenURLIndex(ctx, st, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := httpapi.Config{
		Snapshot: x.Current, Domain: norm.QueryDomain, URL: norm.Parse,
		Authenticate: func(user, password string) (access.Principal, bool) {
			switch {
			case password != user+"-pw":
				return access.Principal{}, false
			case user == "alice":
				return access.Principal{User: user, Role: access.Admin}, true
			case user == "rita":
				return access.Principal{User: user, Role: access.Reader}, true
			}
			return access.Principal{}, false
		},
		Visible: func(ctx context.Context, snap *catalog.Snapshot) func(uint32) bool {
			if access.FromContext(ctx).Role == access.Admin {
				return nil
			}
			hidden, _ := snap.Datasets.ByName(cdxtest.HiddenDataset)
			return func(id uint32) bool { return id != hidden.ID }
		},
	}
	srv := httptest.NewServer(httpapi.New(cfg))
	t.Cleanup(srv.Close)
	return srv, cfg
}

// PagingQueries are the queries whose pages TestCDX joins: every match
// type, from/to, filters and collapsing, over several datasets.
var pagingQueries = []string{
	"url=archive.org",
	"url=*.archive.org",
	"url=archive.org/about/&matchType=prefix&collapse=urlkey",
	"url=iana.org/_css/*&collapse=timestamp:10",
	"url=iana.org/_css/*&collapse=urlkey&collapse=timestamp:12",
	"url=iana.org&matchType=domain&filter=!original:.*\\.(ttf|otf)&from=20140126200700&to=201401262010",
	"url=example.com&matchType=domain&dataset=example&dataset=hidden",
	"url=example.org/*",
}

func TestCDX(t *testing.T) {
	srv, cfg := cdxServer(t)
	get := cdxtest.HTTPGetter(srv.URL)
	t.Run("the fixtures of testdata/cdx answer as written", func(t *testing.T) {
		cdxtest.Run(t, filepath.Join("..", "testdata", "cdx"), get)
	})
	t.Run("all pages joined by their resume keys equal the unpaged answer", func(t *testing.T) {
		cdxtest.CheckPaging(t, get, pagingQueries)
	})
	t.Run("pywb's own index of its sample archive is the oracle of the match types", func(t *testing.T) {
		cdxtest.CheckIanaOracle(t, get, filepath.Join("..", "testdata"))
	})
	t.Run("a hidden dataset's lines never reach a user it is hidden from, whatever the query", func(t *testing.T) {
		for _, q := range []string{
			"/cdx/search/cdx?url=*.archive.org", "/cdx/search/cdx?url=archive.org&fl=dataset,original",
			"/cdx?url=example.com/*&output=json", "/cdx?url=example.com/secret.php",
			"/cdx?url=archive.org&filter=dataset:hidden", "/cdx/search/cdx?url=archive.org/secret/plans.html&limit=-1",
		} {
			code, _, body, err := get("rita", q)
			if err != nil || code != http.StatusOK {
				t.Fatalf("GET %s: %d %v", q, code, err)
			}
			if strings.Contains(body, "secret") || strings.Contains(body, "hidden") {
				t.Errorf("GET %s as rita shows the hidden dataset:\n%s", q, body)
			}
		}
		for _, c := range []struct{ hidden, missing, hiddenName, missingName string }{
			{"/hidden/cdx?url=archive.org", "/nosuch/cdx?url=archive.org", "hidden", "nosuch"},
			{"/cdx?url=archive.org&dataset=hidden", "/cdx?url=archive.org&dataset=nosuch", "hidden", "nosuch"},
			{"/cdx?url=archive.org&dataset=5", "/cdx?url=archive.org&dataset=99", "5", "99"},
		} {
			code, _, hidden, _ := get("rita", c.hidden)
			code2, _, missing, _ := get("rita", c.missing)
			same := strings.ReplaceAll(hidden, `\"`+c.hiddenName+`\"`, "X") == strings.ReplaceAll(missing, `\"`+c.missingName+`\"`, "X")
			if code != http.StatusNotFound || code2 != http.StatusNotFound || !same {
				t.Errorf("GET %s as rita: %d %s; a missing dataset: %d %s; want the same 404", c.hidden, code, hidden, code2, missing)
			}
		}
	})
	t.Run("a collapsed answer read in many short rounds is the answer read in one", func(t *testing.T) {
		queries := []string{
			"/cdx/search/cdx?url=iana.org/*&collapse=urlkey",
			"/cdx/search/cdx?url=*.iana.org&collapse=timestamp:10&limit=5",
			"/cdx/search/cdx?url=*.iana.org&collapse=urlkey&collapse=timestamp:11&limit=20",
			"/cdx?url=*.archive.org&collapse=urlkey&output=json",
		}
		var want []string
		for _, q := range queries {
			_, _, body, _ := get("alice", q)
			want = append(want, body)
		}
		defer httpapi.SetCollapseRound(2)()
		for i, q := range queries {
			if _, _, body, _ := get("alice", q); body != want[i] {
				t.Errorf("GET %s in rounds of 2:\n%s\nwant:\n%s", q, body, want[i])
			}
		}
		cdxtest.CheckPaging(t, get, []string{"url=iana.org/*&collapse=urlkey", "url=*.archive.org&collapse=timestamp:4"})
	})
	t.Run("a negative limit over more lines than the server sorts is a 400 that says how to narrow it", func(t *testing.T) {
		small := cfg
		small.CDXMaxLines = 5
		srv := httptest.NewServer(httpapi.New(small))
		defer srv.Close()
		get := cdxtest.HTTPGetter(srv.URL)
		if code, _, body, _ := get("alice", "/cdx/search/cdx?url=archive.org&limit=-1"); code != http.StatusBadRequest || !strings.Contains(body, "more than 5") {
			t.Errorf("limit=-1 over 9 lines with a cap of 5: %d %s", code, body)
		}
		if code, _, body, _ := get("alice", "/cdx/search/cdx?url=archive.org&limit=-1&from=2011"); code != http.StatusOK || !strings.Contains(body, "20120101000000") {
			t.Errorf("limit=-1 over 3 lines with a cap of 5: %d %s", code, body)
		}
		if code, _, body, _ := get("alice", "/cdx/search/cdx?url=archive.org&limit=3"); code != http.StatusOK || strings.Count(body, "\n") != 3 {
			t.Errorf("a positive limit is not capped by it: %d %s", code, body)
		}
	})
	t.Run("without credentials the CDX API answers 401", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/cdx?url=archive.org")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
	})
}
