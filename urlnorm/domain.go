package urlnorm

import (
	"fmt"
	"strings"
)

// RegisteredDomain returns the registered domain (eTLD+1) of a URL host:
// any case, Unicode or punycode, percent-encoded, with or without the root
// dot; an IPv6 address must be in brackets. For an IP address it returns
// the canonical IP text (IPv6 without brackets). A host that is itself a
// public suffix is an *Error with ReasonHostIsPublicSuffix.
func (n *Normalizer) RegisteredDomain(host string) (string, error) {
	if host == "" {
		return "", newError(host, ReasonEmpty, errNoHost)
	}
	var stack [256]byte
	buf, kind, ascii, r, err := appendWHATWGHost(n.idna, stack[:0], host)
	if err != nil {
		return "", newError(host, r, err)
	}
	if kind == HostDomain {
		if err := checkDNSName(ascii); err != nil {
			return "", newError(host, ReasonBadHost, err)
		}
	}
	d, r, err := n.domainOf(string(buf), kind)
	if err != nil {
		return "", newError(host, r, err)
	}
	return d, nil
}

// QueryDomain turns a user's domain argument (the server's /domain/{d} and
// SQL functions) into the registered domain DHSI indexes. It accepts a
// registered domain ("example.com"), any host under it ("www.example.com",
// "Example.COM.", "bücher.example", "xn--bcher-kva.example"), an IP
// address, or a URL ("https://www.example.com/path"). When the answer is
// not the input verbatim, note says what changed and why, for the client
// to show, e.g.
//
//	"www.example.com" → "example.com": DHSI indexes registered domains (eTLD+1)
func (n *Normalizer) QueryDomain(s string) (domain, note string, err error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return "", "", fmt.Errorf("domain argument is empty: want a registered domain such as example.com: %w",
			newError(s, ReasonEmpty, errEmptyInput))
	}
	hostText := inputHost(in)
	parseIn, isURL := in, hostText != in
	if !isURL {
		// A bare host: parse it as one, whatever its first character.
		if strings.Count(in, ":") >= 2 && !strings.HasPrefix(in, "[") {
			hostText = "[" + in + "]" // a bare IPv6 address, as users type it
		}
		parseIn = "http://" + hostText
	}
	u, err := n.Parse(parseIn)
	if err != nil {
		return "", "", fmt.Errorf("domain argument %q: want a registered domain such as example.com, a host name such as www.example.com, or an http(s) URL: %w", s, err)
	}
	domain = u.Domain
	if domain == in {
		return domain, "", nil
	}

	var why []string
	if isURL {
		why = append(why, fmt.Sprintf("used the host %q of the URL", hostText))
	}
	name := strings.TrimSuffix(u.Host, ".")
	switch {
	case hostText == u.Host || hostText == name:
	case strings.EqualFold(strings.TrimSuffix(hostText, "."), name):
		why = append(why, "domains are lower-case, without the root dot")
	case u.HostKind == HostDomain && !isASCIIString(hostText):
		why = append(why, fmt.Sprintf("internationalized names are indexed in punycode (%q)", u.Host))
	default:
		why = append(why, fmt.Sprintf("the canonical form of the host is %q", u.Host))
	}
	if u.HostKind == HostDomain && name != domain {
		why = append(why, "DHSI indexes registered domains (eTLD+1)")
	}
	if u.HostKind == HostIPv6 {
		why = append(why, "IPv6 addresses are indexed without brackets")
	}
	return domain, fmt.Sprintf("%q → %q: %s", s, domain, strings.Join(why, "; ")), nil
}

// inputHost cuts the host text out of a domain argument that may be a URL:
// the scheme, userinfo, port, path, query and fragment are removed.
func inputHost(in string) string {
	h := in
	if i := strings.Index(h, "://"); i >= 0 {
		h = h[i+3:]
	}
	h = strings.TrimLeft(h, `/\`)
	if i := strings.IndexAny(h, `/\?#`); i >= 0 {
		h = h[:i]
	}
	if i := strings.LastIndexByte(h, '@'); i >= 0 {
		h = h[i+1:]
	}
	if strings.Count(h, ":") >= 2 && !strings.HasPrefix(h, "[") {
		return h // a bare IPv6 address has no port
	}
	h, _ = splitHostPort(h)
	return h
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
