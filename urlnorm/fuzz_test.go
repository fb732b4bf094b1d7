package urlnorm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, every error is an *Error with a known
// Reason, and every accepted URL is a fixed point with consistent fields.
// RegisteredDomain and QueryDomain must not panic on the same input.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"http://0x7f.1/", "HTTP://User:pw@WWW.Example.COM.:080/a//b/./c/../d/?b=2&a=1&&a=0#frag",
		"example.com/path", "http://[::FFFF:1.2.3.4]:8080/", `https://"www.mobygames.com/x`,
		`https://www.h-m-holding.com/hm\%202006/en/obm/home.asp`, "http://bücher.example/",
		"http://a/%2e%2E/b/..", "http://xn--a.com/", "http://a.com/%%341?%%34%31=1&%41",
		"http://a.com/a/b//../?q=a+b%20c&'", "ftp://[1:2:3:4:5:6:7:8]/", "ws://1.2.3.4./",
		"http://%F0%9F%92%A9.com/", "//cdn.example.com/x", "www.example.com:8080", "http://.",
		"http://a\u00ad.com/", "http://\u0661.com/", "http://a.b.c.mm/",
		"gopher://bitreich.org/1/scm/sacc", "sc://H%4fSt:070//a/./b/%2e%2E/c\\d?b&a=1&&#f", "ssh://u@[::1]:22",
		"https://freedesktop.org./x", "http://co.uk", "mailto:a@b.c", "javascript://x.com/%0A", "sc://ñ?",
	} {
		f.Add(s)
	}
	n, err := NewNormalizer(Config{CacheHosts: true})
	if err != nil {
		f.Fatal(err)
	}
	strict, err := NewNormalizer(Config{StrictSuffix: true})
	if err != nil {
		f.Fatal(err)
	}
	uncached, err := NewNormalizer(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := n.Parse(raw)
		// The host cache changes nothing: a miss, a hit, and no cache at
		// all give the same URL and the same error.
		for _, m := range []*Normalizer{n, uncached} {
			if mu, merr := m.Parse(raw); mu != u || fmt.Sprint(merr) != fmt.Sprint(err) {
				t.Fatalf("Parse(%q) = %+v, %v; again or uncached: %+v, %v", raw, u, err, mu, merr)
			}
		}
		// StrictSuffix only rejects more, and agrees on what it accepts.
		if su, serr := strict.Parse(raw); serr == nil && (err != nil || su != u) {
			t.Fatalf("Parse(%q) = %+v, %v; with StrictSuffix %+v", raw, u, err, su)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Reason == ReasonNone || e.Reason >= numReasons || e.Raw != raw || e.Err == nil {
				t.Fatalf("Parse(%q): error %#v is not a complete *Error", raw, err)
			}
			_ = e.Error()
			if e.Reason != ReasonHostIsPublicSuffix {
				return
			}
		} else {
			checkParts(t, u)
			if u.Domain == "" {
				t.Fatalf("Parse(%q) accepted %q without a domain", raw, u.Normalized)
			}
		}
		v, err2 := n.Parse(u.Normalized)
		if ReasonOf(err2) != ReasonOf(err) {
			t.Fatalf("Parse(%q) → %q (%v), which parses with %v", raw, u.Normalized, err, err2)
		}
		if v.Normalized != u.Normalized || v.Domain != u.Domain || v.HostKind != u.HostKind {
			t.Fatalf("not a fixed point: %q → %q → %q (domains %q, %q)", raw, u.Normalized, v.Normalized, u.Domain, v.Domain)
		}
		if strings.ContainsAny(u.Normalized, "# \t\n") {
			t.Fatalf("Normalized %q has a fragment or whitespace", u.Normalized)
		}
	})
}

// FuzzHost: the host entry points never panic, and a registered domain is
// itself a fixed point of RegisteredDomain.
func FuzzHost(f *testing.F) {
	for _, s := range []string{"www.example.com", "Example.COM.", "bücher.example", "[::1]", "0x7f.1", "co.uk", "2001:db8::1", "https://a.b.com/x", ""} {
		f.Add(s)
	}
	n, err := NewNormalizer(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _, _ = n.QueryDomain(s)
		d, err := n.RegisteredDomain(s)
		if err != nil {
			return
		}
		if strings.Contains(d, ":") {
			d = "[" + d + "]"
		}
		if d2, err := n.RegisteredDomain(d); err != nil || strings.Trim(d2, "[]") != strings.Trim(d, "[]") {
			t.Fatalf("RegisteredDomain(%q) = %q, but RegisteredDomain of that = %q, %v", s, d, d2, err)
		}
	})
}

// FuzzPathFastPaths: the whole-path copy of appendPath and the run copies
// of appendEscaped give what a byte at a time does.
func FuzzPathFastPaths(f *testing.F) {
	for _, s := range []string{"/a/b.html", "/a//b", "/.well-known/x", "/a/./b", "/a/%7e%2F", "/a b", "/é/\\x", "/", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if plainPath(p) {
			if got := string(appendPathSegments(nil, p)); got != p {
				t.Fatalf("plainPath(%q), but its segments give %q", p, got)
			}
		}
		for _, set := range []struct {
			enc  func(byte) bool
			stop *byteSet
		}{{inPathEncodeSet, pathEscapeSet}, {inSpecialQueryEncodeSet, specialQueryEscapeSet}} {
			if got, want := string(appendEscaped(nil, p, set.stop)), string(appendEscapedByByte(nil, p, set.enc)); got != want {
				t.Fatalf("appendEscaped(%q) = %q, a byte at a time %q", p, got, want)
			}
		}
	})
}

// appendEscapedByByte is appendEscaped as it was before it copied runs:
// a byte at a time, with the same escape normalization.
func appendEscapedByByte(dst []byte, s string, enc func(byte) bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if d, ok := appendNormEscape(dst, s[i:]); ok {
			dst = d
			i += 2
			continue
		}
		if enc(c) {
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}
