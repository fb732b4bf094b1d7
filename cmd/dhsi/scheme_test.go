package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/internal/netwait"
)

// TestEveryURLWithAHostIsFound (issue 17 §6): gopher, ssh and ftp URLs and
// URLs whose host is itself a public suffix are ingested, and the query
// side (domain_datasets, domain_urls, etld1, norm_url, the urls view and
// the HTTP API) finds them under the domain ingest put them in; with
// --strict-suffix they are rejected as before.
func TestEveryURLWithAHostIsFound(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	input := filepath.Join(dir, "hosts.txt")
	lines := []string{
		"gopher://bitreich.org/1/scm/sacc",
		"GOPHER://BitReich.ORG:70/0/README",
		"ftp://ftp.bitreich.org/pub/",
		"ssh://git@git.sr.ht/~sircmpwn/hare",
		"https://freedesktop.org/wiki/Software/",
		"https://freedesktop.org./",
		"http://httpbin.org/get?b=2&a=1",
		"https://gitlab.freedesktop.org/xorg",
		"mailto:someone@example.org",
		"javascript:void(0)",
		"http://localhost/",
	}
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		flags  []string
		says   []string            // in the ingest summary
		counts map[string]int64    // domain_datasets(arg) → url_count; absent: no row
		urls   map[string][]string // domain → its URLs, by domain_urls
	}{
		{
			name: "default",
			says: []string{"rejected    3", "no-authority             2", "host-is-public-suffix    1",
				"flagged     3 (indexed, not rejected)", "host-is-public-suffix    3"},
			counts: map[string]int64{
				"freedesktop.org": 2, "FreeDesktop.org.": 2, "https://freedesktop.org/x": 2,
				"httpbin.org": 1, "gitlab.freedesktop.org": 1,
				"bitreich.org": 3, "gopher://bitreich.org/1/scm/sacc": 3, "sr.ht": 1,
			},
			urls: map[string][]string{
				"bitreich.org":    {"ftp://ftp.bitreich.org/pub/", "gopher://bitreich.org/1/scm/sacc", "gopher://bitreich.org:70/0/README"},
				"freedesktop.org": {"https://freedesktop.org./", "https://freedesktop.org/wiki/Software/"},
				"sr.ht":           {"ssh://git.sr.ht/~sircmpwn/hare"},
			},
		},
		{
			name:  "strict",
			flags: []string{"--strict-suffix"},
			says:  []string{"rejected    9", "bad-scheme               5", "host-is-public-suffix    4"},
			counts: map[string]int64{
				// the server reads any argument by the default rule: a
				// gopher URL names bitreich.org, which holds the ftp URL
				"gitlab.freedesktop.org": 1, "bitreich.org": 1, "gopher://bitreich.org/1/scm/sacc": 1,
			},
			urls: map[string][]string{
				"bitreich.org": {"ftp://ftp.bitreich.org/pub/"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storeDir := filepath.Join(dir, tc.name)
			var out, errb strings.Builder
			args := append(append([]string{"ingest", "--store", storeDir, "--dataset", "hosts"}, tc.flags...), input)
			if code := run(ctx, args, &out, &errb); code != 0 {
				t.Fatalf("ingest %v: exit %d\n%s%s", tc.flags, code, out.String(), errb.String())
			}
			for _, s := range tc.says {
				if !strings.Contains(out.String(), s) {
					t.Errorf("the ingest summary does not say %q:\n%s", s, out.String())
				}
			}
			if tc.name == "strict" && strings.Contains(out.String(), "flagged") {
				t.Errorf("--strict-suffix flags URLs:\n%s", out.String())
			}

			hp, err := netwait.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			httpAddr := "127.0.0.1:" + strconv.Itoa(hp)
			c := connect(t, startServe(t, "--store", storeDir, "--http", httpAddr))
			id := one[int32](t, c, "SELECT dataset_id FROM datasets WHERE dataset = 'hosts'")

			// SQL: every spelling of the domain finds what ingest indexed
			for _, arg := range []string{"freedesktop.org", "FreeDesktop.org.", "https://freedesktop.org/x", "httpbin.org",
				"gitlab.freedesktop.org", "bitreich.org", "gopher://bitreich.org/1/scm/sacc", "sr.ht"} {
				want, ok := tc.counts[arg]
				got := one[int64](t, c, "SELECT coalesce(sum(url_count), -1)::BIGINT FROM domain_datasets($1)", arg)
				if !ok {
					want = -1
				}
				if got != want {
					t.Errorf("domain_datasets(%q): %d URLs, want %d (-1: no row)", arg, got, want)
				}
			}
			for domain, want := range tc.urls {
				rows, err := c.Query(ctx, "SELECT url FROM domain_urls($1, $2, 0, 100)", domain, id)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for rows.Next() {
					var u string
					if err := rows.Scan(&u); err != nil {
						t.Fatal(err)
					}
					got = append(got, u)
				}
				if rows.Err() != nil {
					t.Fatal(rows.Err())
				}
				sort.Strings(got)
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("domain_urls(%q): %v, want %v", domain, got, want)
				}
			}
			// etld1 and norm_url agree with the index, row by row
			if got := one[string](t, c, "SELECT etld1('https://freedesktop.org/x')"); got != "freedesktop.org" {
				t.Errorf("etld1('https://freedesktop.org/x') = %q", got)
			}
			if got := one[string](t, c, "SELECT norm_url('GOPHER://BitReich.ORG:70/0/README')"); got != "gopher://bitreich.org:70/0/README" {
				t.Errorf("norm_url of a gopher URL = %q", got)
			}
			if got := one[bool](t, c, "SELECT etld1('com') IS NULL AND etld1('mailto:a@example.org') IS NULL"); !got {
				t.Error("etld1 gives a domain for a TLD alone or a mailto URL")
			}
			if n := one[int64](t, c, "SELECT count(*) FROM urls WHERE domain IS DISTINCT FROM etld1(url) OR url IS DISTINCT FROM norm_url(coalesce(raw, url))"); n != 0 {
				t.Errorf("%d rows of the urls view whose domain or url etld1() and norm_url() do not give", n)
			}
			if n := one[int64](t, c, "SELECT count(*) FROM urls WHERE domain = etld1('https://freedesktop.org/x')"); n != tc.counts["freedesktop.org"] {
				t.Errorf("the urls view has %d rows under etld1('https://freedesktop.org/x'), want %d", n, tc.counts["freedesktop.org"])
			}

			// HTTP: the domain, its note saying it is flagged, its URLs
			get := func(path string) (int, []byte) {
				t.Helper()
				client := &http.Client{Timeout: 10 * time.Second}
				resp, err := client.Get("http://" + httpAddr + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, b
			}
			code, body := get("/v1/domain/freedesktop.org")
			var dom struct {
				Domain   string `json:"domain"`
				Note     string `json:"note"`
				Datasets []struct {
					Dataset  string `json:"dataset"`
					URLCount int64  `json:"url_count"`
				} `json:"datasets"`
			}
			if tc.name == "strict" {
				if code != http.StatusNotFound {
					t.Errorf("GET /v1/domain/freedesktop.org after --strict-suffix: %d %s, want 404", code, body)
				}
			} else if err := json.Unmarshal(body, &dom); code != http.StatusOK || err != nil || dom.Domain != "freedesktop.org" ||
				len(dom.Datasets) != 1 || dom.Datasets[0].URLCount != 2 || !strings.Contains(dom.Note, "is itself a public suffix") {
				t.Errorf("GET /v1/domain/freedesktop.org: %d %s", code, body)
			}
			code, body = get("/v1/domain/bitreich.org/datasets/" + strconv.Itoa(int(id)) + "/urls")
			var page struct {
				Total uint64 `json:"total"`
				Items []struct {
					URL string `json:"url"`
				} `json:"items"`
			}
			if err := json.Unmarshal(body, &page); code != http.StatusOK || err != nil || page.Total != uint64(len(tc.urls["bitreich.org"])) {
				t.Errorf("GET bitreich.org's URLs: %d %s", code, body)
			}
		})
	}
}
