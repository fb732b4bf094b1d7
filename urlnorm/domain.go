package urlnorm

import (
	"fmt"
	"strings"
)

// RegisteredDomain returns the registered domain (eTLD+1) of a URL host:
// any case, Unicode or punycode, percent-encoded, with or without the root
// dot; an IPv6 address must be in brackets. For an IP address it returns
// the canonical IP text (IPv6 without brackets). A host that is itself a
// public suffix is an *Error with ReasonHostIsPublicSuffix, whatever
// Config.StrictSuffix says: this is the Public Suffix List's function (its
// own test cases pin it), where Parse and QueryDomain apply the index's
// rule, which keys such a host under itself.
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
// SQL functions) into the domain DHSI indexes, as Parse computes it. It
// accepts a registered domain ("example.com"), any host under it
// ("www.example.com", "Example.COM.", "bücher.example",
// "xn--bcher-kva.example"), an IP address, a URL with a host
// ("https://www.example.com/path", "gopher://bitreich.org/1/scm"), or a
// host that is itself a public suffix ("freedesktop.org", indexed under
// itself unless Config.StrictSuffix). When the answer is not the input
// verbatim, or is such a flagged host, note says what changed and why, for
// the client to show, e.g.
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
		return "", "", fmt.Errorf("domain argument %q: want a registered domain such as example.com, a host name such as www.example.com, or a URL with a host: %w", s, err)
	}
	domain = u.Domain
	if domain == in && !u.PublicSuffixHost {
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
	if u.PublicSuffixHost {
		section := "private"
		if _, icann := n.cfg.List.PublicSuffix(domain); icann || n.cfg.ICANNOnly {
			section = "ICANN"
		}
		why = append(why, fmt.Sprintf("%q is itself a public suffix (%s section of the list), so it has no eTLD+1: DHSI indexes the URLs of that host under it, flagged as such", domain, section))
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
