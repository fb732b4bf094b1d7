package urlnorm

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/idna"
)

// DefaultMaxLength is the default cap on a raw URL, in bytes. The longest
// URL in the real test lists is 1,641 bytes; anything past 8 KiB is an
// extraction accident, not a link, and would bloat every index row.
const DefaultMaxLength = 8 << 10

// Config configures a Normalizer.
type Config struct {
	// List is the Public Suffix List; nil means Embedded().
	List List
	// ICANNOnly ignores the PSL's PRIVATE section, as Common Crawl's
	// url_host_registered_domain does: "user.github.io" → "github.io"
	// instead of "user.github.io".
	ICANNOnly bool
	// MaxLength caps the raw URL in bytes; 0 means DefaultMaxLength.
	MaxLength int
}

// Defaults returns c with zero fields set to their defaults.
func (c Config) Defaults() Config {
	if c.List == nil {
		c.List = Embedded()
	}
	if c.MaxLength == 0 {
		c.MaxLength = DefaultMaxLength
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxLength < 0 {
		return fmt.Errorf("urlnorm: MaxLength %d is negative", c.MaxLength)
	}
	return nil
}

// Normalizer parses and canonicalizes URLs and domains. It is immutable and
// safe for concurrent use.
type Normalizer struct {
	cfg  Config
	idna *idna.Profile // immutable after construction
}

// NewNormalizer returns a Normalizer for cfg (defaults applied).
func NewNormalizer(cfg Config) (*Normalizer, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Normalizer{cfg: cfg, idna: newWHATWGProfile()}, nil
}

// Config returns the configuration in effect, defaults applied.
func (n *Normalizer) Config() Config { return n.cfg }

// ListVersion is what ingest records in the manifest: the list's Version
// and the mode, e.g. "sha256:… (icann-only)".
func (n *Normalizer) ListVersion() string {
	mode := "all"
	if n.cfg.ICANNOnly {
		mode = "icann-only"
	}
	return n.cfg.List.Version() + " (" + mode + ")"
}

// URL is a parsed, canonical URL. All string fields except Raw are slices
// of Normalized (one allocation per URL).
type URL struct {
	Raw        string // the input exactly as given, for provenance
	Scheme     string // lower-case: http, https, ws, wss or ftp
	Host       string // canonical host: punycode domain (root dot kept), dotted IPv4, or [IPv6]
	Port       string // decimal without leading zeros; "" when absent or the scheme's default
	Path       string // starts with "/"
	Query      string // without "?"; pairs sorted by key; "" when absent or empty
	Domain     string // registered domain (eTLD+1, no root dot), or the IP text for IP hosts
	Normalized string // scheme://host[:port]path[?query]
	HostKind   HostKind
}

// specialScheme reports whether DHSI indexes scheme (already lower-case),
// with its default port. These are the WHATWG special schemes that have a
// host; "file" URLs have no domain to index.
func specialScheme(scheme string) (defaultPort string, ok bool) {
	switch scheme {
	case "http", "ws":
		return "80", true
	case "https", "wss":
		return "443", true
	case "ftp":
		return "21", true
	}
	return "", false
}

var (
	errNoScheme     = errors.New("no scheme, and the line does not start like a host name")
	errHostMissing  = errors.New("no host after the userinfo")
	errEmptyInput   = errors.New("nothing but spaces and control characters")
	errPortNotDigit = errors.New("port is not a decimal number")
	errPortRange    = errors.New("port is above 65535")
)

// Parse normalizes one raw URL. See docs/urlnorm.md for the exact rules;
// in short it follows the WHATWG URL parser for http(s), ws(s) and ftp,
// then drops userinfo and the fragment, collapses empty path segments,
// sorts query pairs by key, and computes the registered domain.
//
// On error the URL is the zero value, except with ReasonHostIsPublicSuffix:
// then every field but Domain is filled in, so the rejection can be
// reported with the host that caused it.
func (n *Normalizer) Parse(raw string) (URL, error) {
	if len(raw) > n.cfg.MaxLength {
		return URL{}, errorf(raw, ReasonTooLong, "%d bytes, the limit is %d", len(raw), n.cfg.MaxLength)
	}
	s := trimControlSpace(raw)
	if s == "" {
		return URL{}, newError(raw, ReasonEmpty, errEmptyInput)
	}
	if strings.ContainsAny(s, "\t\n\r") {
		s = removeTabNewline(s)
	}

	scheme, rest, r, err := splitScheme(s)
	if err != nil {
		return URL{}, newError(raw, r, err)
	}
	defaultPort, _ := specialScheme(scheme)

	// Special authority (ignore) slashes: any run of '/' and '\' before the
	// authority, so "http:example.com" and "http:\\\example.com" both have
	// host example.com, as in browsers.
	i := 0
	for i < len(rest) && (rest[i] == '/' || rest[i] == '\\') {
		i++
	}
	rest = rest[i:]
	end := len(rest)
	for j := 0; j < len(rest); j++ {
		if c := rest[j]; c == '/' || c == '\\' || c == '?' || c == '#' {
			end = j
			break
		}
	}
	auth := rest[:end]
	rest = rest[end:]
	// Userinfo: everything up to the last '@' is credentials, which DHSI
	// drops (they identify a user, not a resource, and leak secrets).
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		auth = auth[at+1:]
		if auth == "" {
			return URL{}, newError(raw, ReasonNoHost, errHostMissing)
		}
	}
	host, port := splitHostPort(auth)
	if host == "" {
		return URL{}, newError(raw, ReasonNoHost, errNoHost)
	}
	port, r, err = canonicalPort(port, defaultPort)
	if err != nil {
		return URL{}, newError(raw, r, err)
	}

	// One buffer for the whole normalized URL; 512 bytes on the stack cover
	// nearly every real URL, so the only heap allocation is the final string.
	var stack [512]byte
	buf := stack[:0]
	buf = append(buf, scheme...)
	buf = append(buf, "://"...)
	hostStart := len(buf)
	buf, kind, ascii, r, err := appendWHATWGHost(n.idna, buf, host)
	if err != nil {
		return URL{}, newError(raw, r, err)
	}
	if kind == HostDomain {
		if err := checkDNSName(ascii); err != nil {
			return URL{}, newError(raw, ReasonBadHost, err)
		}
	}
	hostEnd := len(buf)
	portStart, portEnd := hostEnd, hostEnd
	if port != "" {
		buf = append(buf, ':')
		portStart = len(buf)
		buf = append(buf, port...)
		portEnd = len(buf)
	}

	pathPart, query := rest, ""
	hasQuery := false
	if j := strings.IndexAny(rest, "?#"); j >= 0 {
		pathPart = rest[:j]
		if rest[j] == '?' {
			hasQuery = true
			query = rest[j+1:]
			if k := strings.IndexByte(query, '#'); k >= 0 {
				query = query[:k] // the fragment is dropped
			}
		}
	}
	pathStart := len(buf)
	buf = appendPath(buf, pathPart)
	pathEnd := len(buf)
	queryStart, queryEnd := pathEnd, pathEnd
	if hasQuery {
		buf = append(buf, '?')
		queryStart = len(buf)
		buf = appendQuery(buf, query)
		queryEnd = len(buf)
		if queryEnd == queryStart { // "?" or "?&&": no query at all
			buf = buf[:pathEnd]
			queryStart, queryEnd = pathEnd, pathEnd
		}
	}

	norm := string(buf)
	u := URL{
		Raw:        raw,
		Scheme:     norm[:len(scheme)],
		Host:       norm[hostStart:hostEnd],
		Port:       norm[portStart:portEnd],
		Path:       norm[pathStart:pathEnd],
		Query:      norm[queryStart:queryEnd],
		Normalized: norm,
		HostKind:   kind,
	}
	u.Domain, r, err = n.domainOf(u.Host, kind)
	if err != nil {
		if r == ReasonHostIsPublicSuffix {
			// The URL itself is fine; only its domain is missing. Keep it so
			// callers can report what was rejected ("localhost", "co.uk").
			return u, newError(raw, r, err)
		}
		return URL{}, newError(raw, r, err)
	}
	return u, nil
}

// domainOf returns the registered domain of a canonical host.
func (n *Normalizer) domainOf(host string, kind HostKind) (string, Reason, error) {
	switch kind {
	case HostIPv4:
		return host, ReasonNone, nil
	case HostIPv6:
		// The bracket-less text, as a user would type the address.
		return host[1 : len(host)-1], ReasonNone, nil
	}
	// The root dot names the same domain; PSL rules have none.
	name := strings.TrimSuffix(host, ".")
	var suffix string
	if n.cfg.ICANNOnly {
		suffix = icannSuffix(n.cfg.List, name)
	} else {
		suffix, _ = n.cfg.List.PublicSuffix(name)
	}
	if len(suffix) >= len(name) {
		return "", ReasonHostIsPublicSuffix, fmt.Errorf("host %q is a public suffix, so it has no registered domain", name)
	}
	// suffix is a label-aligned suffix of name (List contract); guard anyway
	// so a broken List cannot make us slice out of range.
	rest := name[:len(name)-len(suffix)]
	if suffix != "" {
		if !strings.HasSuffix(name, suffix) || !strings.HasSuffix(rest, ".") {
			return "", ReasonBadHost, fmt.Errorf("public suffix list returned %q for %q", suffix, name)
		}
		rest = rest[:len(rest)-1]
	}
	return name[strings.LastIndexByte(rest, '.')+1:], ReasonNone, nil
}

// splitScheme finds the scheme per the WHATWG scheme state and decides what
// DHSI does without one. It returns the lower-case scheme and what follows
// its ':' (or the whole input when the scheme is implied).
func splitScheme(s string) (scheme, rest string, r Reason, err error) {
	end := -1
	if isAlpha(s[0]) {
		for i := 1; i < len(s); i++ {
			c := s[i]
			if c == ':' {
				end = i
				break
			}
			if !(isAlpha(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
				break
			}
		}
	}
	if end < 0 {
		// No scheme. Real URL lists contain "example.com/path" and
		// "//example.com/path"; both mean http. Anything else (a leading
		// quote, a lone "/path") is not a URL DHSI can place.
		if hostStartByte(s[0]) || strings.HasPrefix(s, "//") || strings.HasPrefix(s, `\\`) {
			return "http", s, ReasonNone, nil
		}
		return "", "", ReasonBadScheme, errNoScheme
	}
	cand := s[:end]
	scheme = asciiLower(cand)
	if _, ok := specialScheme(scheme); ok {
		return scheme, s[end+1:], ReasonNone, nil
	}
	// "example.com:8080/x" scans as scheme "example.com"; a dotted
	// "scheme" followed by a port is a schemeless host:port.
	if strings.IndexByte(cand, '.') >= 0 && looksLikePort(s[end+1:]) {
		return "http", s, ReasonNone, nil
	}
	return "", "", ReasonBadScheme, fmt.Errorf("scheme %q is not indexed (want http, https, ws, wss or ftp)", scheme)
}

// looksLikePort: one or more digits, then the end or a path/query/fragment.
func looksLikePort(s string) bool {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	return i == len(s) || strings.IndexByte(`/\?#`, s[i]) >= 0
}

func hostStartByte(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c >= 0x80
}

// splitHostPort splits at the first ':' outside brackets (WHATWG host
// state), so "[::1]:80" has host "[::1]".
func splitHostPort(auth string) (host, port string) {
	inBrackets := false
	for i := 0; i < len(auth); i++ {
		switch auth[i] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				return auth[:i], auth[i+1:]
			}
		}
	}
	return auth, ""
}

// canonicalPort validates a port and returns it without leading zeros, or
// "" for an empty or default port.
func canonicalPort(port, defaultPort string) (string, Reason, error) {
	if port == "" {
		return "", ReasonNone, nil
	}
	v := 0
	for i := 0; i < len(port); i++ {
		c := port[i]
		if c < '0' || c > '9' {
			return "", ReasonBadPort, errPortNotDigit
		}
		v = v*10 + int(c-'0')
		if v > 65535 {
			return "", ReasonBadPort, errPortRange
		}
	}
	// Strip leading zeros without allocating: the canonical text is a
	// suffix of the input.
	for len(port) > 1 && port[0] == '0' {
		port = port[1:]
	}
	if port == defaultPort {
		return "", ReasonNone, nil
	}
	return port, ReasonNone, nil
}

// trimControlSpace strips leading and trailing C0 controls and spaces.
func trimControlSpace(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= 0x20 {
		i++
	}
	for j > i && s[j-1] <= 0x20 {
		j--
	}
	return s[i:j]
}

// removeTabNewline drops every tab, LF and CR (WHATWG does this anywhere
// in the input: URLs wrapped across lines in HTML).
func removeTabNewline(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// asciiLower returns s lower-cased, without allocating when it already is.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
