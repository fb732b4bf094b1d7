package httpapi

import (
	"regexp"
	"sort"
	"strings"
)

// SURT is the CDX urlkey of a normalized URL (docs/urlnorm.md): the
// Sort-friendly URI Reordering Transform with the Internet Archive's
// canonicalization, as the surt package that pywb, the Wayback CDX server
// and Common Crawl's index compute it (surt.surt(url) with its defaults):
//
//   - the scheme, userinfo and fragment are dropped;
//   - the host is lower-cased, loses a leading "www." (or "www2." …) and
//     its root dot, and is written label by label in reverse, joined by
//     commas, then ")": www.iana.org → "org,iana)"; a port other than the
//     scheme's default stays ("org,iana:8080)"); IPv4 addresses are
//     reversed like names;
//   - escapes in the path and query are decoded repeatedly, then only
//     bytes <= 0x20, "#", "%" and bytes >= 0x7f are escaped again;
//   - the path drops "." and ".." segments and empty segments, is
//     lower-cased, loses a trailing "/" (unless it is "/"), and a session
//     id segment of an .aspx path;
//   - the query loses jsessionid, phpsessid, sid, ASPSESSIONID and
//     cfid/cftoken session ids, is lower-cased, and its arguments are sorted
//     (by name, then value); an empty query is dropped.
//
// So http://www.iana.org/_css/2013.1/fonts/Inconsolata.otf and
// https://iana.org/_css/2013.1/fonts/inconsolata.otf share the urlkey
// "org,iana)/_css/2013.1/fonts/inconsolata.otf".
func SURT(normalized string) string {
	host, rest := surtHostPart(normalized)
	return host + rest
}

// surtHostPart splits a normalized URL's SURT into the host part, with its
// closing ")" (e.g. "org,iana)"), and the rest (path and query).
func surtHostPart(normalized string) (host, rest string) {
	authority, path, query, hasQuery := splitNormalized(normalized)
	return surtHost(authority), surtPath(path) + surtQuery(query, hasQuery)
}

// splitNormalized splits a normalized URL into its authority (userinfo
// dropped), path and query (the fragment dropped).
func splitNormalized(u string) (authority, path, query string, hasQuery bool) {
	s := u
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	end := strings.IndexAny(s, "/?#")
	if end < 0 {
		end = len(s)
	}
	authority, tail := s[:end], s[end:]
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		tail = tail[:i]
	}
	path = tail
	if i := strings.IndexByte(tail, '?'); i >= 0 {
		path, query, hasQuery = tail[:i], tail[i+1:], true
	}
	return authority, path, query, hasQuery
}

// surtHost is the host part of a SURT, ")" included, from an authority
// (host[:port], the port already absent when it is the scheme's default).
func surtHost(authority string) string {
	h, port := authority, ""
	if strings.HasPrefix(h, "[") { // IPv6: the port follows the bracket
		if i := strings.IndexByte(h, ']'); i >= 0 {
			h, port = h[:i+1], strings.TrimPrefix(h[i+1:], ":")
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		h, port = h[:i], h[i+1:]
	}
	h = strings.ToLower(unescapeRepeatedly(h))
	for strings.Contains(h, "..") {
		h = strings.ReplaceAll(h, "..", ".")
	}
	h = strings.Trim(h, ".")
	h = escapeOnce(h)
	if m := wwwPrefix.FindString(h); m != "" {
		h = h[len(m):]
	}
	labels := strings.Split(h, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	var b strings.Builder
	b.Grow(len(h) + len(port) + 2)
	b.WriteString(strings.Join(labels, ","))
	if port != "" {
		b.WriteByte(':')
		b.WriteString(port)
	}
	b.WriteByte(')')
	return b.String()
}

var wwwPrefix = regexp.MustCompile(`^www\d*\.`)

// surtPath canonicalizes a path as the Google and then the IA canonicalizer
// of the surt package do.
func surtPath(path string) string {
	p := normalizeSURTPath(unescapeRepeatedly(path))
	p = strings.ToLower(escapeOnce(p))
	for _, re := range pathSessionIDs {
		if m := re.FindStringSubmatch(p); m != nil {
			p = m[1] + m[3]
		}
	}
	if len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	return p
}

var pathSessionIDs = []*regexp.Regexp{
	regexp.MustCompile(`(?is)^(.*/)(\((?:[a-z]\([0-9a-z]{24}\))+\)/)([^\?]+\.aspx.*)$`),
	regexp.MustCompile(`(?is)^(.*/)(\([0-9a-z]{24}\)/)([^\?]+\.aspx.*)$`),
}

// normalizeSURTPath removes "." and ".." segments and empty segments; an
// empty path is "/" and a trailing "/" stays.
func normalizeSURTPath(path string) string {
	if path == "" {
		return "/"
	}
	parts := strings.Split(path, "/")[1:]
	kept := make([]string, 0, len(parts))
	for _, p := range parts {
		switch p {
		case ".":
		case "..":
			if len(kept) > 0 {
				kept = kept[:len(kept)-1]
			} else {
				kept = append(kept, p)
			}
		default:
			kept = append(kept, p)
		}
	}
	var b strings.Builder
	b.Grow(len(path) + 1)
	b.WriteByte('/')
	for i, p := range kept {
		if i == len(kept)-1 {
			b.WriteString(p)
		} else if p != "" {
			b.WriteString(p)
			b.WriteByte('/')
		}
	}
	return b.String()
}

// surtQuery is "?" and the canonical query, or "" when there is none left.
func surtQuery(query string, present bool) string {
	if !present || query == "" {
		return ""
	}
	q := escapeOnce(unescapeRepeatedly(query))
	for _, re := range querySessionIDs {
		if m := re.FindStringSubmatchIndex(q); m != nil {
			if m[4] >= 0 && m[5] > m[4] {
				q = q[m[2]:m[3]] + q[m[4]:m[5]]
			} else {
				q = q[m[2]:m[3]]
			}
		}
	}
	q = alphaReorderQuery(strings.ToLower(q))
	if q == "" {
		return ""
	}
	return "?" + q
}

var querySessionIDs = []*regexp.Regexp{
	regexp.MustCompile(`(?is)^(.*)(?:jsessionid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
	regexp.MustCompile(`(?is)^(.*)(?:phpsessid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
	regexp.MustCompile(`(?is)^(.*)(?:sid=[0-9a-zA-Z]{32})(?:&(.*))?$`),
	regexp.MustCompile(`(?is)^(.*)(?:ASPSESSIONID[a-zA-Z]{8}=[a-zA-Z]{24})(?:&(.*))?$`),
	regexp.MustCompile(`(?is)^(.*)(?:cfid=[^&]+&cftoken=[^&]+)(?:&(.*))?$`),
}

// alphaReorderQuery sorts the arguments of a query by name, then value
// ("a" before "a=" before "a=1"), bytewise.
func alphaReorderQuery(q string) string {
	if len(q) <= 1 {
		return q
	}
	args := strings.Split(q, "&")
	sort.SliceStable(args, func(i, j int) bool {
		ki, vi, hi := strings.Cut(args[i], "=")
		kj, vj, hj := strings.Cut(args[j], "=")
		if ki != kj {
			return ki < kj
		}
		if hi != hj {
			return !hi
		}
		return vi < vj
	})
	return strings.Join(args, "&")
}

// unescapeRepeatedly decodes %XX escapes until none is left to decode (a
// "%" not followed by two hex digits stays).
func unescapeRepeatedly(s string) string {
	for strings.IndexByte(s, '%') >= 0 {
		u := unescapeOnce(s)
		if u == s {
			break
		}
		s = u
	}
	return s
}

func unescapeOnce(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			if b == nil {
				b = make([]byte, 0, len(s))
				b = append(b, s[:i]...)
			}
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		if b != nil {
			b = append(b, s[i])
		}
	}
	if b == nil {
		return s
	}
	return string(b)
}

// escapeOnce escapes, as %XX with upper-case hex, the bytes the surt
// package escapes: <= 0x20, "#", "%" and >= 0x7f.
func escapeOnce(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func needsEscape(c byte) bool { return c <= 0x20 || c >= 0x7f || c == '#' || c == '%' }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
