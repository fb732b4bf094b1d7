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
	// StrictSuffix restores the rule before issue 17 (dhsi ingest
	// --strict-suffix): only http, https, ws, wss and ftp URLs are indexed
	// (any other scheme is bad-scheme), and a host that is itself a public
	// suffix is rejected (host-is-public-suffix). Without it any scheme
	// whose URL has an authority is indexed, and a dotted public-suffix host
	// is indexed under itself, flagged. Both rules give an accepted URL the
	// same Domain; StrictSuffix only accepts fewer URLs.
	StrictSuffix bool
	// CacheHosts makes Parse remember what it found for recent hosts
	// (hostcache.go): for one owner parsing in bulk, as an ingest does.
	// Leave it off where strangers share the Normalizer, as a server's
	// sessions do: a hit is faster than a miss, so a shared cache would
	// tell one session, by timing, which hosts another parsed.
	CacheHosts bool
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

// Normalizer parses and canonicalizes URLs and domains. Its configuration
// is immutable, and it is safe for concurrent use.
type Normalizer struct {
	cfg   Config
	idna  *idna.Profile // immutable after construction
	hosts *hostCache    // what Parse found for recent hosts (hostcache.go)
}

// NewNormalizer returns a Normalizer for cfg (defaults applied).
func NewNormalizer(cfg Config) (*Normalizer, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Normalizer{cfg: cfg, idna: newWHATWGProfile()}
	if cfg.CacheHosts {
		n.hosts = newHostCache()
	}
	return n, nil
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
	// StrictSuffix is not part of it: it decides which URLs are accepted,
	// never the Domain of an accepted one, so versions built with and
	// without it agree on every domain (docs/urlnorm.md).
	return n.cfg.List.Version() + " (" + mode + ")"
}

// URL is a parsed, canonical URL. All string fields except Raw and Domain
// are slices of Normalized (one allocation per URL); with Config.CacheHosts,
// Domain may be shared by the URLs of a host.
type URL struct {
	Raw    string // the input exactly as given, for provenance
	Scheme string // lower-case: http, https, ws, wss, ftp, or any other scheme with an authority
	Host   string // canonical host: punycode domain (root dot kept), dotted IPv4, or [IPv6]
	Port   string // decimal without leading zeros; "" when absent or a special scheme's default
	// Path starts with "/" for the special schemes (http, https, ws, wss,
	// ftp); for other schemes it is "" or starts with "/".
	Path string
	// Query is without "?"; for the special schemes its pairs are sorted by
	// key and it is "" when absent or empty. Other schemes keep the query
	// as WHATWG does, including an empty one: Normalized then ends in "?"
	// and Query is "".
	Query string
	// Domain is the registered domain (eTLD+1, no root dot), the IP text
	// for IP hosts, or, when PublicSuffixHost, the host itself.
	Domain     string
	Normalized string // scheme://host[:port]path[?query]
	HostKind   HostKind
	// PublicSuffixHost flags a URL whose host is itself a public suffix
	// ("freedesktop.org", "github.io", "co.uk"): it has no eTLD+1, and
	// Domain is the host without its root dot. Never set with
	// Config.StrictSuffix, which rejects such URLs.
	PublicSuffixHost bool
}

// specialScheme reports whether scheme (already lower-case) is one of the
// WHATWG special schemes DHSI indexes, with its default port. Their URLs
// are parsed by the special rules; "file", the sixth special scheme, is
// not indexed (docs/urlnorm.md).
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
// in short it follows the WHATWG URL parser — the special rules for http(s),
// ws(s) and ftp, the non-special ones for any other scheme with an
// authority — then drops userinfo and the fragment, collapses empty path
// segments and sorts query pairs by key (special schemes only), and
// computes the registered domain. A dotted host that is itself a public
// suffix is indexed under itself, flagged (URL.PublicSuffixHost), unless
// Config.StrictSuffix.
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
	if strings.IndexByte(s, '\t') >= 0 || strings.IndexByte(s, '\n') >= 0 || strings.IndexByte(s, '\r') >= 0 {
		s = removeTabNewline(s)
	}

	scheme, rest, special, r, err := splitScheme(s, n.cfg.StrictSuffix)
	if err != nil {
		return URL{}, newError(raw, r, err)
	}
	defaultPort := "" // WHATWG: only the special schemes have default ports
	authEnd := nonSpecialAuthEnd
	if special {
		defaultPort, _ = specialScheme(scheme)
		authEnd = specialAuthEnd
		// Special authority (ignore) slashes: any run of '/' and '\' before
		// the authority, so "http:example.com" and "http:\\\example.com"
		// both have host example.com, as in browsers. (A non-special
		// scheme's "//" was consumed by splitScheme.)
		i := 0
		for i < len(rest) && (rest[i] == '/' || rest[i] == '\\') {
			i++
		}
		rest = rest[i:]
	}
	end := len(rest)
	if j := indexByteSet(rest, authEnd); j >= 0 {
		end = j
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
	cached, hostHash := n.hosts.lookup(host)
	var kind HostKind
	if cached != nil {
		buf = append(buf, cached.canon()...)
		kind = cached.kind
	} else {
		// Every scheme's host goes through the special host parser: DHSI
		// needs a DNS name or an IP address to find a domain, where WHATWG
		// keeps a non-special host opaque (docs/urlnorm.md, "Other
		// schemes").
		var ascii string
		buf, kind, ascii, r, err = appendWHATWGHost(n.idna, buf, host)
		if err != nil {
			return URL{}, newError(raw, r, err)
		}
		if kind == HostDomain {
			if err := checkDNSName(ascii); err != nil {
				return URL{}, newError(raw, ReasonBadHost, err)
			}
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
	if j := indexQueryOrFragment(rest); j >= 0 {
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
	if special {
		buf = appendPath(buf, pathPart)
	} else {
		buf = appendNonSpecialPath(buf, pathPart)
	}
	pathEnd := len(buf)
	queryStart, queryEnd := pathEnd, pathEnd
	switch {
	case hasQuery && special:
		buf = append(buf, '?')
		queryStart = len(buf)
		buf = appendQuery(buf, query)
		queryEnd = len(buf)
		if queryEnd == queryStart { // "?" or "?&&": no query at all
			buf = buf[:pathEnd]
			queryStart, queryEnd = pathEnd, pathEnd
		}
	case hasQuery:
		// WHATWG keeps a non-special query as it is, percent-encoding only,
		// and keeps an empty one: what "&", "=" or "?" mean is the
		// scheme's business.
		buf = append(buf, '?')
		queryStart = len(buf)
		buf = appendEncoded(buf, query, inQueryEncodeSet)
		queryEnd = len(buf)
	}

	if len(buf) > n.cfg.MaxLength {
		// Percent-encoding can triple a URL. A normalized URL past the
		// limit would be stored, and then refused when read back through
		// norm_url or Parse: refuse it here, so what is stored always
		// normalizes to itself.
		return URL{}, errorf(raw, ReasonTooLong, "%d bytes once normalized, the limit is %d", len(buf), n.cfg.MaxLength)
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
	if cached != nil {
		u.Domain, u.PublicSuffixHost = cached.domain(), cached.psuffix
		return u, nil
	}
	u.Domain, r, err = n.domainOf(u.Host, kind)
	if r == ReasonHostIsPublicSuffix {
		name := strings.TrimSuffix(u.Host, ".")
		switch {
		case n.cfg.StrictSuffix:
		case strings.IndexByte(name, '.') < 0:
			// "com", "localhost", "intranet": a dotless name is resolved
			// through each network's search list, not the global DNS, so it
			// names a different machine everywhere (and ICANN forbids
			// dotless gTLDs). Not a site to index.
			err = fmt.Errorf("host %q is a single label, a public suffix by itself: DHSI indexes a public-suffix host under itself only when it is a dotted name", name)
		default:
			// "freedesktop.org", "github.io", "co.uk": a real host with no
			// eTLD+1. Indexed under the host itself, flagged.
			u.Domain, u.PublicSuffixHost = name, true
			n.hosts.remember(hostHash, host, &u)
			return u, nil
		}
		// The URL itself is fine; only its domain is missing. Keep it so
		// callers can report what was rejected ("localhost", "co.uk").
		return u, newError(raw, r, err)
	}
	if err != nil {
		return URL{}, newError(raw, r, err)
	}
	n.hosts.remember(hostHash, host, &u)
	return u, nil
}

// Byte sets of Parse's scan of the authority (strings.IndexAny builds its
// set on every call, which showed in ingest profiles).
var (
	nonSpecialAuthEnd = setOf(nil, '/', '?', '#')
	specialAuthEnd    = setOf(nil, '/', '\\', '?', '#')
)

// indexQueryOrFragment is strings.IndexAny(s, "?#") by the vectorized
// IndexByte: a URL's path and query are most of its bytes.
func indexQueryOrFragment(s string) int {
	q := strings.IndexByte(s, '?')
	if q >= 0 {
		s = s[:q]
	}
	if h := strings.IndexByte(s, '#'); h >= 0 {
		return h
	}
	return q
}

// indexByteSet is strings.IndexAny with a set built once.
func indexByteSet(s string, set *byteSet) int {
	for i := 0; i < len(s); i++ {
		if set[s[i]] {
			return i
		}
	}
	return -1
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
// DHSI does with it, or without one. It returns the lower-case scheme, what
// follows its ':' (for a non-special scheme, what follows its "//": the
// authority), and whether the WHATWG special rules apply.
func splitScheme(s string, strict bool) (scheme, rest string, special bool, r Reason, err error) {
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
			return "http", s, true, ReasonNone, nil
		}
		return "", "", false, ReasonBadScheme, errNoScheme
	}
	cand := s[:end]
	scheme = asciiLower(cand)
	after := s[end+1:]
	if _, ok := specialScheme(scheme); ok {
		return scheme, after, true, ReasonNone, nil
	}
	// "example.com:8080/x" scans as scheme "example.com"; a dotted
	// "scheme" followed by a port is a schemeless host:port.
	if strings.IndexByte(cand, '.') >= 0 && looksLikePort(after) {
		return "http", s, true, ReasonNone, nil
	}
	switch {
	case strict:
		return "", "", false, ReasonBadScheme, fmt.Errorf("scheme %q is not indexed (want http, https, ws, wss or ftp; without --strict-suffix any scheme with a host is)", scheme)
	case scheme == "file":
		return "", "", false, ReasonBadScheme, errFileScheme
	case noHostScheme(scheme):
		return "", "", false, ReasonNoAuthority, fmt.Errorf("%s: URLs never name a host (the scheme has no authority by its definition), so there is no domain to index", scheme)
	case !strings.HasPrefix(after, "//"):
		// WHATWG: a non-special URL has an authority only when "//"
		// follows the scheme; otherwise it is a path ("mailto:a@b.c").
		return "", "", false, ReasonNoAuthority, fmt.Errorf("%s: URL has no authority (\"//\" and a host after the scheme), so there is no domain to index", scheme)
	}
	return scheme, after[2:], false, ReasonNone, nil
}

var errFileScheme = errors.New("file: URLs name files on the local machine or a local network share, not resources of a domain")

// noHostScheme lists the registered schemes whose URLs never have an
// authority by their own specification, so that a "//" after them is part
// of a path, a script or data, never a host: "javascript://example.com/%0A…"
// is a script whose first line is a comment, "mailto://example.com" is not
// a valid mailto URL (RFC 6068). WHATWG parses these with a host like any
// non-special URL; DHSI does not index them under one.
func noHostScheme(scheme string) bool {
	switch scheme {
	case "about", // RFC 6694
		"blob",       // File API: blob:<origin>/<uuid>
		"data",       // RFC 2397
		"javascript", // HTML
		"mailto",     // RFC 6068
		"tel",        // RFC 3966
		"urn":        // RFC 8141
		return true
	}
	return false
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
