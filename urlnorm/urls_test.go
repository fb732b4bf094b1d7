package urlnorm

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestURLFiles parses every line of every real URL list, logs the rejects
// by Reason per file, and checks that each accepted URL is a fixed point.
func TestURLFiles(t *testing.T) {
	n := newTestNormalizer(t, Config{List: loadDatList(t)})
	for _, f := range loadURLFiles(t) {
		counts := map[string]int{}
		ok := 0
		for _, line := range f.lines {
			u, err := n.Parse(line)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Reason == ReasonNone || e.Raw != line {
					t.Errorf("%s: Parse(%q) error %v is not an *Error with a reason and the raw input", f.name, line, err)
				}
				counts[ReasonOf(err).String()]++
				continue
			}
			ok++
			if u.Raw != line {
				t.Errorf("%s: Raw %q, want the line %q", f.name, u.Raw, line)
			}
			checkFixedPoint(t, n, u)
		}
		var parts []string
		for r, c := range counts {
			parts = append(parts, fmt.Sprintf("%s=%d", r, c))
		}
		sort.Strings(parts)
		t.Logf("%-30s %6d lines: ok=%d %s", f.name, len(f.lines), ok, strings.Join(parts, " "))
	}
}

// checkFixedPoint asserts that normalizing u.Normalized changes nothing.
func checkFixedPoint(t testing.TB, n *Normalizer, u URL) {
	t.Helper()
	v, err := n.Parse(u.Normalized)
	if err != nil {
		t.Errorf("Parse(%q) accepted, but its Normalized %q is rejected: %v", u.Raw, u.Normalized, err)
		return
	}
	if v.Normalized != u.Normalized || v.Domain != u.Domain || v.Host != u.Host || v.HostKind != u.HostKind {
		t.Errorf("not a fixed point: %q → %q (domain %q) → %q (domain %q)", u.Raw, u.Normalized, u.Domain, v.Normalized, v.Domain)
	}
}

// TestURLFileEdgeCases pins one real line per edge case the testdata
// README lists; each line is checked to be in its file, so the examples
// stay real.
func TestURLFileEdgeCases(t *testing.T) {
	n := newTestNormalizer(t, Config{List: loadDatList(t)})
	files := map[string][]string{}
	for _, f := range loadURLFiles(t) {
		files[f.name] = f.lines
	}
	for _, tc := range []struct {
		name       string
		file, line string
		normalized string
		domain     string
		kind       HostKind
		reason     Reason
	}{
		{"an IPv4 host is indexed under its own address",
			"ada_userbait.txt", "http://202.77.121.186/kliping/",
			"http://202.77.121.186/kliping/", "202.77.121.186", HostIPv4, 0},
		{"an explicit default http port is dropped",
			"ada_userbait.txt", "http://www.360.ru:80/",
			"http://www.360.ru/", "360.ru", HostDomain, 0},
		{"an explicit default https port is dropped",
			"ada_userbait.txt", "https://life4news.ru:443/",
			"https://life4news.ru/", "life4news.ru", HostDomain, 0},
		{"a default port on a bare host is dropped and the path becomes /",
			"cdx_toolkit_api_mocks.txt", "http://example.com:80/",
			"http://example.com/", "example.com", HostDomain, 0},
		{"userinfo is dropped from the canonical form",
			"pywb_sample_archive.txt", "http://test@example.com/",
			"http://example.com/", "example.com", HostDomain, 0},
		{"a trailing-dot host keeps its dot in the URL but not in the domain",
			"ada_kasztp.txt", "https://bkent.net./Doc/simple5.htm",
			"https://bkent.net./Doc/simple5.htm", "bkent.net", HostDomain, 0},
		{"a trailing-dot host without a path gets the path /",
			"ada_userbait.txt", "http://n-change.net.",
			"http://n-change.net./", "n-change.net", HostDomain, 0},
		{"an upper-case host is lower-cased, the path is not",
			"ada_userbait.txt", "http://www.Cisco.com/c/en/us/td/docs/ios-xml/ios/sec_data_zbf/configuration/xe-3s/sec-data-zbf-xe-book/fw-stateful-icmp.pdf",
			"http://www.cisco.com/c/en/us/td/docs/ios-xml/ios/sec_data_zbf/configuration/xe-3s/sec-data-zbf-xe-book/fw-stateful-icmp.pdf", "cisco.com", HostDomain, 0},
		{"an xn-- host is validated and kept in punycode",
			"ada_userbait.txt", "https://www.xn--mhringen-n4a.de/",
			"https://www.xn--mhringen-n4a.de/", "xn--mhringen-n4a.de", HostDomain, 0},
		{"a backslash separates path segments and %7E is decoded to ~",
			"ada_kasztp.txt", `https://homepages.tesco.net/\%7Em_w_fenrych/translators/index.htm`,
			"https://homepages.tesco.net/~m_w_fenrych/translators/index.htm", "tesco.net", HostDomain, 0},
		{"a fragment is dropped",
			"ada_kasztp.txt", "https://www.alliancepastorale.fr/#Introduction",
			"https://www.alliancepastorale.fr/", "alliancepastorale.fr", HostDomain, 0},
		{"a fragment with a space is dropped with it",
			"ada_kasztp.txt", "https://www.countrysidemag.com/issues/3_1998.htm#Swiss Goats",
			"https://www.countrysidemag.com/issues/3_1998.htm", "countrysidemag.com", HostDomain, 0},
		{"a host beginning with a quote is not a DNS name and is rejected",
			"ada_kasztp.txt", `https://"www.mobygames.com/company/history/companyId`,
			"", "", HostNone, ReasonBadHost},
		{"a host with an underscore is accepted",
			"ada_kasztp.txt", "https://singapore_aberdeen.tripod.com/mackenzie.html",
			"https://singapore_aberdeen.tripod.com/mackenzie.html", "tripod.com", HostDomain, 0},
		{"a line with no scheme that starts with a quote is rejected",
			"ada_userbait.txt", `"http://www.tomshardware.com/reviews/gigabit-ethernet-bandwidth`,
			"", "", HostNone, ReasonBadScheme},
		{"a non-ASCII path is percent-encoded as UTF-8",
			"ada_userbait.txt", "https://9m.no/拠傅",
			"https://9m.no/%E6%8B%A0%E5%82%85", "9m.no", HostDomain, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Contains(files[tc.file], tc.line) {
				t.Fatalf("%q is not a line of %s", tc.line, tc.file)
			}
			u, err := n.Parse(tc.line)
			if r := ReasonOf(err); r != tc.reason {
				t.Fatalf("Parse(%q): reason %v (%v), want %v", tc.line, r, err, tc.reason)
			}
			if u.Normalized != tc.normalized || u.Domain != tc.domain || u.HostKind != tc.kind {
				t.Fatalf("Parse(%q) = %q domain %q kind %v; want %q domain %q kind %v",
					tc.line, u.Normalized, u.Domain, u.HostKind, tc.normalized, tc.domain, tc.kind)
			}
		})
	}
}
