package urlnorm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexRule pins the rule of issue 17 §6 ("every URL with a host"),
// case by case, under the embedded list: which URLs are indexed, under
// which domain, which are flagged, which are rejected and why, and what
// Config.StrictSuffix (dhsi ingest --strict-suffix) answers instead. The
// table in docs/urlnorm.md ("Which URLs are indexed") is this one.
func TestIndexRule(t *testing.T) {
	n := newTestNormalizer(t, Config{})
	strict := newTestNormalizer(t, Config{StrictSuffix: true})
	for _, tc := range indexRuleCases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := n.Parse(tc.raw)
			if r := ReasonOf(err); r != tc.reason || u.Domain != tc.domain || u.PublicSuffixHost != tc.flagged {
				t.Fatalf("Parse(%q) = domain %q flagged %v reason %v (%v); want %q %v %v", tc.raw, u.Domain, u.PublicSuffixHost, r, err, tc.domain, tc.flagged, tc.reason)
			}
			if err == nil {
				checkParts(t, u)
				checkFixedPoint(t, n, u)
				// the query side finds it under the same domain
				if d, _, err := n.QueryDomain(tc.raw); err != nil || d != tc.domain {
					t.Fatalf("QueryDomain(%q) = %q, %v; want %q as Parse", tc.raw, d, err, tc.domain)
				}
				if d, _, err := n.QueryDomain(tc.domain); err != nil || d != tc.domain {
					t.Fatalf("QueryDomain(%q) = %q, %v; want it unchanged", tc.domain, d, err)
				}
			}
			su, err := strict.Parse(tc.raw)
			if r := ReasonOf(err); r != tc.strict {
				t.Fatalf("strict Parse(%q): reason %v (%v), want %v", tc.raw, r, err, tc.strict)
			}
			if err == nil && (su != u) {
				t.Fatalf("strict Parse(%q) = %+v, differs from %+v", tc.raw, su, u)
			}
		})
	}
}

// TestIndexRuleIsDocumented: every case of indexRuleCases is in the table
// of docs/urlnorm.md.
func TestIndexRuleIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "urlnorm.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range indexRuleCases {
		if !strings.Contains(string(doc), "`"+tc.raw+"`") {
			t.Errorf("docs/urlnorm.md does not list %q (%s)", tc.raw, tc.name)
		}
	}
}

var indexRuleCases = []struct {
	name    string
	raw     string
	domain  string // "" when rejected
	flagged bool
	reason  Reason // the rejection without StrictSuffix
	strict  Reason // the rejection with StrictSuffix (ReasonNone: indexed, as without)
}{
	{"a web URL is indexed under its registered domain", "https://www.example.com/a", "example.com", false, 0, 0},
	{"ftp, a special scheme, as before", "ftp://ftp.example.org/pub", "example.org", false, 0, 0},
	{"a gopher URL is indexed under its host's registered domain", "gopher://bitreich.org/1/scm/sacc", "bitreich.org", false, 0, ReasonBadScheme},
	{"an ssh URL too, its user dropped", "ssh://git@git.sr.ht/~sircmpwn/hare", "sr.ht", false, 0, ReasonBadScheme},
	{"an irc URL with its port", "irc://irc.libera.chat:6697/#go-nuts", "libera.chat", false, 0, ReasonBadScheme},
	{"a URL of an unregistered scheme with a host", "git+https://github.com/foo/bar", "github.com", false, 0, ReasonBadScheme},
	{"an IP host of another scheme", "telnet://192.0.2.7:23/", "192.0.2.7", false, 0, ReasonBadScheme},
	{"a host that is a private public suffix is indexed under itself, flagged", "https://freedesktop.org/wiki/", "freedesktop.org", true, 0, ReasonHostIsPublicSuffix},
	{"another private one: httpbin.org", "http://httpbin.org/get", "httpbin.org", true, 0, ReasonHostIsPublicSuffix},
	{"github.io itself", "https://github.io/", "github.io", true, 0, ReasonHostIsPublicSuffix},
	{"a name under a private suffix is a registered domain of its own", "https://gitlab.freedesktop.org/x", "gitlab.freedesktop.org", false, 0, 0},
	{"a dotted ICANN public suffix is indexed under itself, flagged", "http://co.uk/", "co.uk", true, 0, ReasonHostIsPublicSuffix},
	{"its root dot is dropped from the domain", "https://gov.uk./", "gov.uk", true, 0, ReasonHostIsPublicSuffix},
	{"a wildcard public suffix is indexed under itself, flagged", "http://foo.ck/", "foo.ck", true, 0, ReasonHostIsPublicSuffix},
	{"a public-suffix host of another scheme", "gopher://github.io/1", "github.io", true, 0, ReasonBadScheme},
	{"a TLD alone is not indexed", "http://com/", "", false, ReasonHostIsPublicSuffix, ReasonHostIsPublicSuffix},
	{"a TLD with its root dot neither", "http://com./", "", false, ReasonHostIsPublicSuffix, ReasonHostIsPublicSuffix},
	{"localhost is not indexed", "http://localhost:8080/", "", false, ReasonHostIsPublicSuffix, ReasonHostIsPublicSuffix},
	{"nor any single label", "gopher://intranet/1", "", false, ReasonHostIsPublicSuffix, ReasonBadScheme},
	{"mailto has no authority", "mailto:someone@example.org", "", false, ReasonNoAuthority, ReasonBadScheme},
	{"data has no authority", "data:text/plain,hi", "", false, ReasonNoAuthority, ReasonBadScheme},
	{"javascript has no authority", "javascript:alert(1)", "", false, ReasonNoAuthority, ReasonBadScheme},
	{"javascript has none even after //", "javascript://example.com/%0Aalert(1)", "", false, ReasonNoAuthority, ReasonBadScheme},
	{"urn has no authority", "urn:isbn:0451450523", "", false, ReasonNoAuthority, ReasonBadScheme},
	{"another scheme without // has no authority", "news:comp.lang.go", "", false, ReasonNoAuthority, ReasonBadScheme},
	{"file URLs are not indexed, host or not", "file://fileserver.example.com/a.pdf", "", false, ReasonBadScheme, ReasonBadScheme},
	{"an empty host of another scheme", "gopher:///1/x", "", false, ReasonNoHost, ReasonBadScheme},
	{"an opaque host that is no DNS name", "sc://%25/", "", false, ReasonBadHost, ReasonBadScheme},
}

// TestStrictSuffixOnlyRejectsMore: on every real URL line and every WHATWG
// input, StrictSuffix accepts a subset of what the default accepts, with
// the same result (so versions built either way agree on every domain and
// ListVersion need not tell them apart), and what only the default
// accepts is another scheme or a flagged public-suffix host.
func TestStrictSuffixOnlyRejectsMore(t *testing.T) {
	list := loadDatList(t)
	var inputs []string
	for _, f := range loadURLFiles(t) {
		inputs = append(inputs, f.lines...)
	}
	for _, c := range loadWHATWG(t) {
		inputs = append(inputs, c.Input)
	}
	for _, icann := range []bool{false, true} {
		n := newTestNormalizer(t, Config{List: list, ICANNOnly: icann})
		strict := newTestNormalizer(t, Config{List: list, ICANNOnly: icann, StrictSuffix: true})
		if n.ListVersion() != strict.ListVersion() {
			t.Fatalf("ListVersion %q vs strict %q", n.ListVersion(), strict.ListVersion())
		}
		var onlyDefault, flagged, other int
		for _, in := range inputs {
			u, err := n.Parse(in)
			su, serr := strict.Parse(in)
			switch {
			case serr == nil && (err != nil || u != su):
				t.Errorf("icann=%v %q: strict accepts %+v, the default %+v, %v", icann, in, su, u, err)
			case serr != nil && err == nil:
				onlyDefault++
				_, special := specialScheme(u.Scheme)
				switch {
				case u.PublicSuffixHost && ReasonOf(serr) == ReasonHostIsPublicSuffix && special:
					flagged++
				case !special && ReasonOf(serr) == ReasonBadScheme:
					other++
				default:
					t.Errorf("icann=%v %q: strict rejects (%v), the default accepts %+v", icann, in, serr, u)
				}
			case serr != nil && err != nil:
				// Rejected both ways: the default never rejects a special URL
				// for a reason strict does not give.
				if _, special := specialScheme(strings.ToLower(strings.SplitN(in, ":", 2)[0])); special && ReasonOf(err) != ReasonOf(serr) {
					t.Errorf("icann=%v %q: reasons %v and strict %v", icann, in, err, serr)
				}
			}
		}
		t.Logf("icann-only=%v: %d inputs; %d accepted only without StrictSuffix (%d public-suffix hosts, %d other schemes)", icann, len(inputs), onlyDefault, flagged, other)
	}
}

func TestQueryDomainStrictSuffix(t *testing.T) {
	n := newTestNormalizer(t, Config{StrictSuffix: true})
	for in, want := range map[string]Reason{
		"freedesktop.org":                  ReasonHostIsPublicSuffix,
		"co.uk":                            ReasonHostIsPublicSuffix,
		"gopher://bitreich.org/1/scm/sacc": ReasonBadScheme,
		"mailto:a@example.com":             ReasonBadScheme,
	} {
		if d, _, err := n.QueryDomain(in); ReasonOf(err) != want {
			t.Errorf("strict QueryDomain(%q) = %q, %v; want %v", in, d, err, want)
		}
	}
}
