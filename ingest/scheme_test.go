package ingest

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/urlnorm"
)

// TestEveryURLWithAHost (issue 17 §6): URLs of other schemes with a host
// land under their registered domain, a host that is itself a public
// suffix under the host, counted as flagged rather than rejected; with
// urlnorm.Config.StrictSuffix the same URLs are rejected as before, under
// the same names.
func TestEveryURLWithAHost(t *testing.T) {
	ctx := context.Background()
	lines := []string{
		"gopher://bitreich.org/1/scm/sacc",
		"gopher://bitreich.org:70/0/README",
		"ftp://ftp.bitreich.org/pub/",
		"ssh://git@git.example.com/repo.git",
		"https://freedesktop.org/wiki/Software/",
		"https://freedesktop.org./",
		"http://httpbin.org/get?b=2&a=1",
		"https://gitlab.freedesktop.org/xorg",
		"mailto:someone@example.org",
		"http://localhost/",
	}
	input := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		strict   bool
		written  int64
		rejected map[string]int64
		flagged  map[string]int64
		domains  map[string][]string // domain → its URLs
	}{
		{
			name: "default", written: 8,
			rejected: map[string]int64{"no-authority": 1, "host-is-public-suffix": 1},
			flagged:  map[string]int64{"host-is-public-suffix": 3},
			domains: map[string][]string{
				"bitreich.org":           {"ftp://ftp.bitreich.org/pub/", "gopher://bitreich.org/1/scm/sacc", "gopher://bitreich.org:70/0/README"},
				"example.com":            {"ssh://git.example.com/repo.git"},
				"freedesktop.org":        {"https://freedesktop.org./", "https://freedesktop.org/wiki/Software/"},
				"httpbin.org":            {"http://httpbin.org/get?a=1&b=2"},
				"gitlab.freedesktop.org": {"https://gitlab.freedesktop.org/xorg"},
			},
		},
		{
			name: "strict", strict: true, written: 2,
			rejected: map[string]int64{"bad-scheme": 4, "host-is-public-suffix": 4},
			flagged:  map[string]int64{},
			domains: map[string][]string{
				"bitreich.org":           {"ftp://ftp.bitreich.org/pub/"},
				"gitlab.freedesktop.org": {"https://gitlab.freedesktop.org/xorg"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := localfs.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			norm, err := urlnorm.NewNormalizer(urlnorm.Config{StrictSuffix: tc.strict})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := Run(ctx, Options{Store: st, Dataset: "hosts", Files: []string{input}, Normalizer: norm, WorkDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Written != tc.written || !equalCounts(sum.Rejected, tc.rejected) || !equalCounts(sum.Flagged, tc.flagged) {
				t.Fatalf("written %d, rejected %v, flagged %v; want %d, %v, %v", sum.Written, sum.Rejected, sum.Flagged, tc.written, tc.rejected, tc.flagged)
			}
			x, err := catalog.OpenURLIndexWith(ctx, st, catalog.URLIndexOptions{})
			if err != nil {
				t.Fatal(err)
			}
			snap := x.Current()
			if got := snap.Version.PSLVersion; got != norm.ListVersion() {
				t.Fatalf("manifest PSL version %q, want %q", got, norm.ListVersion())
			}
			for domain, want := range tc.domains {
				rows, total, err := snap.DomainURLs(ctx, domain, sum.DatasetID, 0, 100)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range rows {
					got = append(got, r.URL)
				}
				sort.Strings(got)
				if total != uint64(len(want)) || strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("%s: %v (total %d), want %v", domain, got, total, want)
				}
			}
			if n := snap.Version.Domains; n != int64(len(tc.domains)) {
				t.Fatalf("%d domains, want %d", n, len(tc.domains))
			}
		})
	}
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
