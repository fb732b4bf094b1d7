package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/httpapi"
	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/urlnorm"
)

func TestAPI(t *testing.T) {
	ctx := context.Background()
	st, _ := localfs.Open(t.TempDir())
	norm, _ := urlnorm.NewNormalizer(urlnorm.Config{})
	if _, err := ingest.Run(ctx, ingest.Options{Store: st, Dataset: "pywb", Files: []string{filepath.Join("..", "testdata", "shared", "urls", "pywb_sample_archive.txt")}, Normalizer: norm}); err != nil {
		t.Fatal(err)
	}
	x, err := catalog.OpenURLIndex(ctx, st, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Snapshot: x.Current, Domain: norm.QueryDomain}))
	defer srv.Close()
	get := func(path string, want int, into any) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != want {
			var e map[string]string
			json.NewDecoder(resp.Body).Decode(&e)
			t.Fatalf("GET %s: %d %v, want %d", path, resp.StatusCode, e, want)
		}
		if into != nil {
			if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("a domain lists its datasets with exact counts, and a subdomain is normalized with a note", func(t *testing.T) {
		var d httpapi.DomainResponse
		get("/v1/domain/www.iana.org", 200, &d)
		if d.Domain != "iana.org" || d.Note == "" || len(d.Datasets) != 1 || d.Datasets[0].Dataset != "pywb" || d.Datasets[0].URLCount != 48 {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("URLs page with an exact total and next_offset until the last page", func(t *testing.T) {
		var all []string
		off := int64(0)
		for {
			var u httpapi.URLsResponse
			get("/v1/domain/iana.org/datasets/1/urls?offset="+itoa(off)+"&limit=20", 200, &u)
			if u.Total != 48 {
				t.Fatalf("total %d", u.Total)
			}
			for _, it := range u.Items {
				all = append(all, it.URL)
			}
			if u.NextOffset == nil {
				break
			}
			off = *u.NextOffset
		}
		if len(all) != 48 {
			t.Fatalf("paged through %d URLs, want 48", len(all))
		}
	})
	t.Run("bad requests say what was expected", func(t *testing.T) {
		get("/v1/domain/iana.org/datasets/x/urls", 400, nil)
		get("/v1/domain/iana.org/datasets/1/urls?limit=0", 400, nil)
		get("/v1/domain/iana.org/datasets/1/urls?limit=100000", 400, nil)
		get("/v1/domain/no-such-domain-here.example", 404, nil)
		get("/v1/domain/iana.org/datasets/99/urls", 404, nil)
		get("/v2/whatever", 404, nil)
	})
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestHealthAndReadiness: /healthz and /readyz answer without credentials,
// /readyz with 503 and the reason when the server cannot answer.
func TestHealthAndReadiness(t *testing.T) {
	ctx := context.Background()
	st, _ := localfs.Open(t.TempDir())
	x, err := catalog.OpenURLIndex(ctx, st, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	var notReady error
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Snapshot: x.Current,
		Authenticate: func(user, password string) (access.Principal, bool) { return access.Principal{}, false },
		Ready:        func(context.Context) error { return notReady }}))
	defer srv.Close()
	status := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("/healthz"); got != http.StatusOK {
		t.Errorf("/healthz: %d", got)
	}
	if got := status("/readyz"); got != http.StatusOK {
		t.Errorf("/readyz: %d", got)
	}
	notReady = errors.New("store unreachable")
	if got := status("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the store down: %d, want 503", got)
	}
	if got := status("/v1/domain/example.com"); got != http.StatusUnauthorized {
		t.Errorf("the API without credentials: %d, want 401", got)
	}
}
