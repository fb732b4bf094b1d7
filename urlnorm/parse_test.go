package urlnorm

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	n := newTestNormalizer(t, Config{})
	for _, tc := range []struct {
		name, raw  string
		normalized string // "" when an error is expected
		domain     string
		reason     Reason
	}{
		// Scheme and host case, IDNA.
		{"scheme and host are lower-cased", "HTTPS://WWW.Example.COM/Path", "https://www.example.com/Path", "example.com", 0},
		{"a Unicode host becomes punycode", "http://BÜCHER.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example", 0},
		{"a percent-encoded Unicode host is decoded, then converted", "http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example", 0},
		{"invalid punycode is a bad-idna error", "http://xn--a.com/", "", "", ReasonBadIDNA},
		{"a forbidden code point in the host is rejected", "http://a<b.com/", "", "", ReasonBadHost},
		{"a percent-encoded space in the host is rejected", "http://exa%20mple.com/", "", "", ReasonBadHost},
		{"an underscore in a host is accepted", "http://my_site.example.com/", "http://my_site.example.com/", "example.com", 0},

		// IPv4 in all WHATWG spellings.
		{"hex and a short form give 127.0.0.1", "http://0x7f.1/", "http://127.0.0.1/", "127.0.0.1", 0},
		{"one decimal number is the whole address", "http://2130706433/", "http://127.0.0.1/", "127.0.0.1", 0},
		{"a leading zero means octal", "http://0177.0.0.01/", "http://127.0.0.1/", "127.0.0.1", 0},
		{"three parts fill the last two bytes from the last", "http://10.0.258/", "http://10.0.1.2/", "10.0.1.2", 0},
		{"an IPv4 host's root dot is dropped", "http://1.2.3.4./", "http://1.2.3.4/", "1.2.3.4", 0},
		{"an IPv4 part above 255 is a bad-ip error", "http://1.2.3.256/", "", "", ReasonBadIP},
		{"a host ending in an invalid number is a bad-ip error", "http://foo.09/", "", "", ReasonBadIP},

		// IPv6.
		{"IPv6 is compressed and lower-cased in brackets", "http://[2001:DB8:0:0:0:0:0:1]:8080/", "http://[2001:db8::1]:8080/", "2001:db8::1", 0},
		{"an IPv4-mapped IPv6 address is written in hex", "http://[::ffff:1.2.3.4]/", "http://[::ffff:102:304]/", "::ffff:102:304", 0},
		{"two :: in an IPv6 address is a bad-ip error", "http://[1::2::3]/", "", "", ReasonBadIP},
		{"an unclosed bracket is a bad-ip error", "http://[::1/", "", "", ReasonBadIP},

		// Ports.
		{"the default http port is dropped", "http://a.com:80/", "http://a.com/", "a.com", 0},
		{"the default https port is dropped even with leading zeros", "https://a.com:0443/", "https://a.com/", "a.com", 0},
		{"the default ftp port is dropped", "ftp://ftp.a.com:21/f", "ftp://ftp.a.com/f", "a.com", 0},
		{"the default wss port is dropped", "wss://a.com:443/s", "wss://a.com/s", "a.com", 0},
		{"https's port on http is kept", "http://a.com:443/", "http://a.com:443/", "a.com", 0},
		{"leading zeros of a port are dropped", "http://a.com:08080/", "http://a.com:8080/", "a.com", 0},
		{"an empty port is no port", "http://a.com:/", "http://a.com/", "a.com", 0},
		{"a port above 65535 is a bad-port error", "http://a.com:65536/", "", "", ReasonBadPort},
		{"a port with a letter is a bad-port error", "http://a.com:8o/", "", "", ReasonBadPort},

		// Userinfo, fragments, whitespace.
		{"userinfo is dropped", "https://user:pa%40ss@a.com/", "https://a.com/", "a.com", 0},
		{"the last @ ends the userinfo", "http://a@b@c.com/", "http://c.com/", "c.com", 0},
		{"the fragment is dropped", "http://a.com/p?q=1#frag?x", "http://a.com/p?q=1", "a.com", 0},
		{"leading and trailing spaces and controls are stripped", " \x01http://a.com/ \n", "http://a.com/", "a.com", 0},
		{"tabs and newlines inside are removed", "http://a.\ncom/p\tq", "http://a.com/pq", "a.com", 0},

		// Schemes.
		{"ftp is indexed", "ftp://ftp.example.org/pub", "ftp://ftp.example.org/pub", "example.org", 0},
		{"file URLs have no domain and are rejected", "file:///etc/hosts", "", "", ReasonBadScheme},
		{"a file URL with a host is rejected too", "file://server.example.com/share/a.pdf", "", "", ReasonBadScheme},
		{"mailto has no authority", "mailto:a@example.com", "", "", ReasonNoAuthority},
		{"javascript has no authority", "javascript:alert(1)", "", "", ReasonNoAuthority},
		{"no slashes after a special scheme still means an authority", "http:example.com/a", "http://example.com/a", "example.com", 0},
		{"backslashes after the scheme are slashes", `http:\\example.com\a\b`, "http://example.com/a/b", "example.com", 0},

		// No scheme.
		{"a line without a scheme is taken as http", "example.com/path", "http://example.com/path", "example.com", 0},
		{"a scheme-relative line is taken as http", "//cdn.example.com/x.js", "http://cdn.example.com/x.js", "example.com", 0},
		{"host:port without a scheme is taken as http", "www.example.com:8080/x", "http://www.example.com:8080/x", "example.com", 0},
		{"a bare path is a bad-scheme error", "/just/a/path", "", "", ReasonBadScheme},
		{"a leading quote is a bad-scheme error", `"http://a.com/`, "", "", ReasonBadScheme},

		// Path.
		{"dot segments are removed", "http://a.com/a/./b/../c", "http://a.com/a/c", "a.com", 0},
		{"percent-encoded dot segments are removed", "http://a.com/a/%2e/b/%2E%2e/c", "http://a.com/a/c", "a.com", 0},
		{"a final .. leaves a trailing slash", "http://a.com/a/b/..", "http://a.com/a/", "a.com", 0},
		{".. above the root stays at the root", "http://a.com/../../x", "http://a.com/x", "a.com", 0},
		{"double slashes are collapsed", "http://a.com//a///b", "http://a.com/a/b", "a.com", 0},
		{"a trailing slash is kept", "http://a.com/a/b//", "http://a.com/a/b/", "a.com", 0},
		{".. pops an empty segment before slashes collapse, as WHATWG", "http://a.com/a/b//..", "http://a.com/a/b/", "a.com", 0},
		{"an empty path is /", "http://a.com", "http://a.com/", "a.com", 0},
		{"spaces and quotes in the path are percent-encoded", `http://a.com/a b"c`, "http://a.com/a%20b%22c", "a.com", 0},
		{"escapes of unreserved characters are decoded", "http://a.com/%7Euser/%41%2d", "http://a.com/~user/A-", "a.com", 0},
		{"other escapes get upper-case hex", "http://a.com/a%2fb%3a", "http://a.com/a%2Fb%3A", "a.com", 0},
		{"a stray percent sign is kept", "http://a.com/100%/x%zz", "http://a.com/100%/x%zz", "a.com", 0},
		{"a decoded hex digit never completes a stray percent", "http://a.com/%%341", "http://a.com/%%341", "a.com", 0},

		// Query.
		{"query pairs are sorted by key", "http://a.com/?b=2&a=1&c=3", "http://a.com/?a=1&b=2&c=3", "a.com", 0},
		{"duplicate keys keep their relative order", "http://a.com/?b=1&a=2&b=0&a=1", "http://a.com/?a=2&a=1&b=1&b=0", "a.com", 0},
		{"a key without = sorts with its key", "http://a.com/?b&a=1&a", "http://a.com/?a=1&a&b", "a.com", 0},
		{"empty pairs are dropped", "http://a.com/?&a=1&&b=2&", "http://a.com/?a=1&b=2", "a.com", 0},
		{"an empty query is dropped", "http://a.com/p?", "http://a.com/p", "a.com", 0},
		{"a query of only separators is dropped", "http://a.com/p?&&", "http://a.com/p", "a.com", 0},
		{"plus and %20 are left as they are", "http://a.com/?q=a+b&r=a%20b", "http://a.com/?q=a+b&r=a%20b", "a.com", 0},
		{"a space and a quote in the query are encoded", "http://a.com/?q=a b'c", "http://a.com/?q=a%20b%27c", "a.com", 0},
		{"an encoded & or = is not a separator", "http://a.com/?b=1%262&a%3D=x", "http://a.com/?a%3D=x&b=1%262", "a.com", 0},
		{"? and / in the query stay", "http://a.com/?u=http://b.com/?x", "http://a.com/?u=http://b.com/?x", "a.com", 0},

		// Limits and emptiness.
		{"an empty line is an empty error", "", "", "", ReasonEmpty},
		{"a line of spaces is an empty error", "  \t ", "", "", ReasonEmpty},
		{"a URL over MaxLength is too-long", "http://a.com/" + strings.Repeat("x", DefaultMaxLength), "", "", ReasonTooLong},
		{"a URL over MaxLength once percent-encoded is too-long", "http://a.com/" + strings.Repeat("\x9b", DefaultMaxLength/3), "", "", ReasonTooLong},
		{"no host at all is a no-host error", "http://", "", "", ReasonNoHost},
		{"userinfo with no host is a no-host error", "http://user@/", "", "", ReasonNoHost},
		{"a port with no host is a no-host error", "http://:80/", "", "", ReasonNoHost},
		{"a host label over 63 bytes is a bad-host error", "http://" + strings.Repeat("a", 64) + ".com/", "", "", ReasonBadHost},
		{"an empty label is a bad-host error", "http://a..com/", "", "", ReasonBadHost},
		{"a dotted host that is a public suffix is indexed under itself", "http://co.uk/", "http://co.uk/", "co.uk", 0},
		{"a single-label host is reported as a public suffix", "http://localhost/", "", "", ReasonHostIsPublicSuffix},
		{"a TLD alone is reported as a public suffix", "http://com./x", "", "", ReasonHostIsPublicSuffix},

		// Other schemes (WHATWG non-special URLs with an authority).
		{"a gopher URL is indexed under its scheme", "gopher://bitreich.org/1/scm/sacc", "gopher://bitreich.org/1/scm/sacc", "bitreich.org", 0},
		{"the host of another scheme is lower-cased", "GOPHER://BitReich.ORG/1/x", "gopher://bitreich.org/1/x", "bitreich.org", 0},
		{"the host of another scheme goes through IDNA", "sc://faß.ExAmPlE/", "sc://xn--fa-hia.example/", "xn--fa-hia.example", 0},
		{"an IPv4 host of another scheme is canonical", "ssh://0x7f.1/", "ssh://127.0.0.1/", "127.0.0.1", 0},
		{"a port of another scheme is kept, even its usual one", "gopher://bitreich.org:70/1/", "gopher://bitreich.org:70/1/", "bitreich.org", 0},
		{"an http default port on another scheme is kept", "irc://irc.libera.chat:80/", "irc://irc.libera.chat:80/", "libera.chat", 0},
		{"leading zeros of another scheme's port are dropped", "ssh://git.example.com:0022/r", "ssh://git.example.com:22/r", "example.com", 0},
		{"an empty port of another scheme is no port", "ssh://git.example.com:/r", "ssh://git.example.com/r", "example.com", 0},
		{"userinfo of another scheme is dropped", "ssh://git@github.com/o/r.git", "ssh://github.com/o/r.git", "github.com", 0},
		{"an empty path of another scheme stays empty", "gopher://bitreich.org", "gopher://bitreich.org", "bitreich.org", 0},
		{"double slashes in another scheme's path stay", "gopher://h.example.com//a///b", "gopher://h.example.com//a///b", "example.com", 0},
		{"dot segments in another scheme's path are removed", "git://h.example.com/a/./b/../c", "git://h.example.com/a/c", "example.com", 0},
		{"a backslash in another scheme's path is not a separator", `sc://h.example.com/a\b/..`, "sc://h.example.com/", "example.com", 0},
		{"escapes in another scheme's path are kept as they are", "sc://h.example.com/%7euser/%2fx", "sc://h.example.com/%7euser/%2fx", "example.com", 0},
		{"spaces and quotes in another scheme's path are encoded", `sc://h.example.com/a b"c`, "sc://h.example.com/a%20b%22c", "example.com", 0},
		{"another scheme's query is not sorted", "redis://h.example.com:6379/0?b=1&a=2&&", "redis://h.example.com:6379/0?b=1&a=2&&", "example.com", 0},
		{"another scheme keeps an empty query", "sc://h.example.com/p?", "sc://h.example.com/p?", "example.com", 0},
		{"a quote in another scheme's query stays", "sc://h.example.com/?q=a b'c", "sc://h.example.com/?q=a%20b'c", "example.com", 0},
		{"another scheme's fragment is dropped", "sc://h.example.com/p#f", "sc://h.example.com/p", "example.com", 0},
		{"a backslash ends no authority in another scheme", `sc://h.example.com\x`, "", "", ReasonBadHost},
		{"another scheme without // has no authority", "gopher:/1/x", "", "", ReasonNoAuthority},
		{"another scheme with backslashes has no authority", `gopher:\\bitreich.org/1`, "", "", ReasonNoAuthority},
		{"a urn has no authority", "urn:isbn:0451450523", "", "", ReasonNoAuthority},
		{"javascript with // has no host by definition", "javascript://example.com/%0Aalert(1)", "", "", ReasonNoAuthority},
		{"data with // has no host by definition", "data://example.com/x", "", "", ReasonNoAuthority},
		{"another scheme with an empty host is a no-host error", "gopher:///1/x", "", "", ReasonNoHost},
		{"another scheme's opaque host that is no DNS name is a bad-host error", "sc://%25/", "", "", ReasonBadHost},
		{"another scheme's IPv6 host is canonical", "sc://[1:2:0:0:5:0:0:0]:80/", "sc://[1:2:0:0:5::]:80/", "1:2:0:0:5::", 0},
		{"a dotted word and a port without a scheme still means http", "gopher.example.com:70/x", "http://gopher.example.com:70/x", "example.com", 0},
		{"a dotless word and a port is a scheme without an authority", "localhost:8080/x", "", "", ReasonNoAuthority},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := n.Parse(tc.raw)
			if r := ReasonOf(err); r != tc.reason {
				t.Fatalf("Parse(%q): reason %v (%v), want %v", tc.raw, r, err, tc.reason)
			}
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Raw != tc.raw || e.Err == nil {
					t.Fatalf("Parse(%q) error %#v lacks the raw input or detail", tc.raw, err)
				}
				if tc.reason != ReasonHostIsPublicSuffix {
					if u != (URL{}) {
						t.Fatalf("Parse(%q) returned %+v with its error, want the zero URL", tc.raw, u)
					}
				}
				return
			}
			if u.Normalized != tc.normalized || u.Domain != tc.domain {
				t.Fatalf("Parse(%q) = %q domain %q; want %q domain %q", tc.raw, u.Normalized, u.Domain, tc.normalized, tc.domain)
			}
			if u.Raw != tc.raw {
				t.Fatalf("Raw = %q, want the input %q", u.Raw, tc.raw)
			}
			checkParts(t, u)
			checkFixedPoint(t, n, u)
		})
	}
}

// checkParts asserts the documented relation of URL's fields.
func checkParts(t testing.TB, u URL) {
	t.Helper()
	_, special := specialScheme(u.Scheme)
	want := u.Scheme + "://" + u.Host
	if u.Port != "" {
		want += ":" + u.Port
	}
	want += u.Path
	// another scheme keeps an empty query's "?" (Query is then "")
	if u.Query != "" || !special && strings.HasSuffix(u.Normalized, "?") && !strings.HasSuffix(want, "?") {
		want += "?" + u.Query
	}
	if want != u.Normalized {
		t.Errorf("fields of %q reassemble to %q", u.Normalized, want)
	}
	switch {
	case special && (!strings.HasPrefix(u.Path, "/") || strings.Contains(u.Path, "//")):
		t.Errorf("path %q of %q is not canonical", u.Path, u.Normalized)
	case !special && u.Path != "" && !strings.HasPrefix(u.Path, "/"):
		t.Errorf("path %q of %q does not start with /", u.Path, u.Normalized)
	}
	if u.HostKind == HostDomain && !strings.HasSuffix(strings.TrimSuffix(u.Host, "."), u.Domain) {
		t.Errorf("domain %q is not a suffix of host %q", u.Domain, u.Host)
	}
	if u.PublicSuffixHost && (u.HostKind != HostDomain || strings.TrimSuffix(u.Host, ".") != u.Domain || !strings.Contains(u.Domain, ".")) {
		t.Errorf("%q is flagged as a public-suffix host, but its domain %q is not its dotted host %q", u.Normalized, u.Domain, u.Host)
	}
}

func TestParsePublicSuffixHostKeepsURL(t *testing.T) {
	// A real line (pywb_sample_archive.txt): httpbin.org is a PRIVATE rule.
	const line = "http://httpbin.org/post?foo=bar"
	strict := newTestNormalizer(t, Config{List: loadDatList(t), StrictSuffix: true})
	u, err := strict.Parse(line)
	if ReasonOf(err) != ReasonHostIsPublicSuffix || u.Host != "httpbin.org" || u.Domain != "" || u.PublicSuffixHost || u.Normalized != line {
		t.Fatalf("strict: %+v, %v; want the URL without Domain and host-is-public-suffix", u, err)
	}
	full := newTestNormalizer(t, Config{List: loadDatList(t)})
	if u, err := full.Parse(line); err != nil || u.Domain != "httpbin.org" || !u.PublicSuffixHost || u.Normalized != line {
		t.Fatalf("full mode: %+v, %v; want domain httpbin.org, flagged", u, err)
	}
	icann := newTestNormalizer(t, Config{List: loadDatList(t), ICANNOnly: true})
	if u, err := icann.Parse(line); err != nil || u.Domain != "httpbin.org" || u.PublicSuffixHost {
		t.Fatalf("ICANN-only mode: %+v, %v; want domain httpbin.org, not flagged", u, err)
	}
	// A single label is reported with its URL in every mode.
	for _, n := range []*Normalizer{strict, full, icann} {
		if u, err := n.Parse("http://localhost:8080/x"); ReasonOf(err) != ReasonHostIsPublicSuffix || u.Host != "localhost" || u.Domain != "" {
			t.Fatalf("localhost: %+v, %v; want the URL without Domain and host-is-public-suffix", u, err)
		}
	}
}

func TestQueryDomain(t *testing.T) {
	n := newTestNormalizer(t, Config{List: loadDatList(t)})
	for _, tc := range []struct {
		name, in, want, note string
		reason               Reason
	}{
		{"a registered domain is returned unchanged without a note", "example.com", "example.com", "", 0},
		{"case and the root dot are normalized", "Example.COM.", "example.com",
			`"Example.COM." → "example.com": domains are lower-case, without the root dot`, 0},
		{"a URL gives its host's registered domain", "https://www.example.com/path", "example.com",
			`"https://www.example.com/path" → "example.com": used the host "www.example.com" of the URL; DHSI indexes registered domains (eTLD+1)`, 0},
		{"a subdomain gives its registered domain", "www.example.com", "example.com",
			`"www.example.com" → "example.com": DHSI indexes registered domains (eTLD+1)`, 0},
		{"a punycode domain is returned unchanged", "xn--bcher-kva.example", "xn--bcher-kva.example", "", 0},
		{"a Unicode domain is converted to punycode", "bücher.example", "xn--bcher-kva.example",
			`"bücher.example" → "xn--bcher-kva.example": internationalized names are indexed in punycode ("xn--bcher-kva.example")`, 0},
		{"an IPv4 address in another spelling is canonicalized", "0x7f.1", "127.0.0.1",
			`"0x7f.1" → "127.0.0.1": the canonical form of the host is "127.0.0.1"`, 0},
		{"a bare IPv6 address is accepted", "2001:DB8::1", "2001:db8::1",
			`"2001:DB8::1" → "2001:db8::1": domains are lower-case, without the root dot; IPv6 addresses are indexed without brackets`, 0},
		{"a bracketed IPv6 address is accepted", "[::1]", "::1",
			`"[::1]" → "::1": IPv6 addresses are indexed without brackets`, 0},
		{"a private public suffix is its own domain, with a note", "freedesktop.org", "freedesktop.org",
			`"freedesktop.org" → "freedesktop.org": "freedesktop.org" is itself a public suffix (private section of the list), so it has no eTLD+1: DHSI indexes the URLs of that host under it, flagged as such`, 0},
		{"an ICANN public suffix is its own domain, with a note", "Co.UK", "co.uk",
			`"Co.UK" → "co.uk": domains are lower-case, without the root dot; "co.uk" is itself a public suffix (ICANN section of the list), so it has no eTLD+1: DHSI indexes the URLs of that host under it, flagged as such`, 0},
		{"a URL on a public-suffix host gives the host", "https://freedesktop.org/x", "freedesktop.org",
			`"https://freedesktop.org/x" → "freedesktop.org": used the host "freedesktop.org" of the URL; "freedesktop.org" is itself a public suffix (private section of the list), so it has no eTLD+1: DHSI indexes the URLs of that host under it, flagged as such`, 0},
		{"a name under a private suffix is a registered domain", "gitlab.freedesktop.org", "gitlab.freedesktop.org", "", 0},
		{"a URL of another scheme gives its host's registered domain", "gopher://bitreich.org/1/scm/sacc", "bitreich.org",
			`"gopher://bitreich.org/1/scm/sacc" → "bitreich.org": used the host "bitreich.org" of the URL`, 0},
		{"a TLD alone is an error", "com", "", "", ReasonHostIsPublicSuffix},
		{"a single label is an error", "localhost", "", "", ReasonHostIsPublicSuffix},
		{"an empty argument is an error", "  ", "", "", ReasonEmpty},
		{"a mailto URL is an error", "mailto:a@example.com", "", "", ReasonNoAuthority},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note, err := n.QueryDomain(tc.in)
			if r := ReasonOf(err); r != tc.reason {
				t.Fatalf("QueryDomain(%q): reason %v (%v), want %v", tc.in, r, err, tc.reason)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "want a registered domain") {
					t.Fatalf("QueryDomain(%q) error %q does not say what was expected", tc.in, err)
				}
				return
			}
			if got != tc.want || note != tc.note {
				t.Fatalf("QueryDomain(%q) = %q, %q; want %q, %q", tc.in, got, note, tc.want, tc.note)
			}
		})
	}
}

func TestReasonNamesAreStable(t *testing.T) {
	want := map[Reason]string{
		ReasonEmpty:              "empty",
		ReasonTooLong:            "too-long",
		ReasonBadScheme:          "bad-scheme",
		ReasonNoHost:             "no-host",
		ReasonBadHost:            "bad-host",
		ReasonBadIP:              "bad-ip",
		ReasonBadIDNA:            "bad-idna",
		ReasonBadPort:            "bad-port",
		ReasonHostIsPublicSuffix: "host-is-public-suffix",
		ReasonNoAuthority:        "no-authority",
	}
	rs := Reasons()
	if len(rs) != len(want) {
		t.Fatalf("Reasons() has %d entries, want %d: a new reason needs a stable name here and in docs/urlnorm.md", len(rs), len(want))
	}
	for _, r := range rs {
		if r.String() != want[r] {
			t.Errorf("reason %d is named %q, want %q", r, r, want[r])
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := NewNormalizer(Config{MaxLength: -1}); err == nil {
		t.Fatal("a negative MaxLength was accepted")
	}
	n := newTestNormalizer(t, Config{})
	if c := n.Config(); c.List == nil || c.MaxLength != DefaultMaxLength || c.ICANNOnly {
		t.Fatalf("defaults not applied: %+v", c)
	}
	if v := n.ListVersion(); !strings.Contains(v, "git revision") || !strings.HasSuffix(v, "(all)") {
		t.Fatalf("ListVersion() = %q, want the embedded revision and the mode", v)
	}
}
