package urlnorm

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// List is a Public Suffix List. Domains passed in are ASCII (punycode),
// lower-case, without a root dot and without empty labels; the suffix
// returned is a suffix of domain on a label boundary (the default rule "*"
// yields the last label). icann reports whether the prevailing rule is in
// the ICANN section; an unlisted TLD reports false.
type List interface {
	PublicSuffix(domain string) (suffix string, icann bool)
	// Version identifies the list's content; ingest records it in the
	// manifest so a registered domain can be recomputed exactly.
	Version() string
}

// ICANNLister is implemented by lists that can answer from their ICANN
// section alone. Normalizer uses it in ICANN-only mode; for other lists it
// derives the answer from PublicSuffix (see icannSuffix).
type ICANNLister interface {
	ICANNPublicSuffix(domain string) string
}

// Embedded returns the list compiled into golang.org/x/net/publicsuffix.
// It is stateless; its Version is the revision string that package reports.
func Embedded() List { return embeddedList{} }

type embeddedList struct{}

func (embeddedList) PublicSuffix(domain string) (string, bool) {
	return publicsuffix.PublicSuffix(domain)
}

// Version is x/net's own description of its copy, e.g.
// "publicsuffix.org's public_suffix_list.dat, git revision d6c92f1b… (2026-02-06T07:36:33Z)".
func (embeddedList) Version() string {
	return fmt.Sprint(publicsuffix.List)
}

// Rule flags of a DatList entry: one entry per rule text ("co.uk"), with
// which kinds of rule exist for it and in which section.
const (
	ruleNormal         uint8 = 1 << iota // "co.uk"
	ruleNormalICANN                      // … in the ICANN section
	ruleWildcard                         // "*.ck" (stored under "ck")
	ruleWildcardICANN                    // … in the ICANN section
	ruleException                        // "!www.ck" (stored under "www.ck")
	ruleExceptionICANN                   // … in the ICANN section
)

// DatList is a Public Suffix List parsed from the official
// public_suffix_list.dat format. It is immutable after LoadDat.
type DatList struct {
	rules   map[string]uint8
	version string
	nICANN  int
	nPriv   int
	// sections saw the list's ===BEGIN ICANN DOMAINS=== and ===BEGIN
	// PRIVATE DOMAINS=== markers (Validate)
	sawICANN, sawPrivate bool
}

// Version is "VERSION <v> COMMIT <c>" from the file's header comments when
// present (the published file has them), else "sha256:<hex>" of the bytes.
func (l *DatList) Version() string { return l.version }

// Len reports the number of ICANN and private rules read.
func (l *DatList) Len() (icann, private int) { return l.nICANN, l.nPriv }

// LoadDat parses public_suffix_list.dat: one rule per line (the first
// whitespace-separated token), "//" comments, "*." wildcards, "!"
// exceptions, and the ===BEGIN ICANN DOMAINS=== / ===BEGIN PRIVATE
// DOMAINS=== sections (a rule outside both counts as ICANN). Unicode rules
// are converted with the same IDNA profile as hosts, so they match punycode
// hosts.
func LoadDat(r io.Reader) (*DatList, error) {
	l := &DatList{rules: make(map[string]uint8)}
	h := sha256.New()
	sc := bufio.NewScanner(io.TeeReader(r, h))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	profile := newWHATWGProfile()
	const (
		secNone = iota
		secICANN
		secPrivate
	)
	sec := secNone
	var version, commit string
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "//"); ok {
			c := strings.TrimSpace(rest)
			switch {
			case strings.HasPrefix(c, "===BEGIN ICANN DOMAINS==="):
				sec, l.sawICANN = secICANN, true
			case strings.HasPrefix(c, "===BEGIN PRIVATE DOMAINS==="):
				sec, l.sawPrivate = secPrivate, true
			case strings.HasPrefix(c, "===END "):
				sec = secNone
			case strings.HasPrefix(c, "VERSION:") && version == "":
				version = strings.TrimSpace(strings.TrimPrefix(c, "VERSION:"))
			case strings.HasPrefix(c, "COMMIT:") && commit == "":
				commit = strings.TrimSpace(strings.TrimPrefix(c, "COMMIT:"))
			}
			continue
		}
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			line = line[:i]
		}
		icann := sec != secPrivate
		kindBit, icannBit := ruleNormal, ruleNormalICANN
		text := line
		switch {
		case strings.HasPrefix(text, "!"):
			text = text[1:]
			kindBit, icannBit = ruleException, ruleExceptionICANN
		case text == "*":
			text = ""
			kindBit, icannBit = ruleWildcard, ruleWildcardICANN
		case strings.HasPrefix(text, "*."):
			text = text[2:]
			kindBit, icannBit = ruleWildcard, ruleWildcardICANN
		}
		if text != "" {
			a, err := ruleToASCII(profile, text)
			if err != nil {
				return nil, fmt.Errorf("public suffix list line %d: rule %q: %w", lineNo, line, err)
			}
			text = a
		}
		f := l.rules[text] | kindBit
		if icann {
			f |= icannBit
			l.nICANN++
		} else {
			l.nPriv++
		}
		l.rules[text] = f
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read public suffix list: %w", err)
	}
	if l.nICANN+l.nPriv == 0 {
		return nil, errors.New("public suffix list: no rules")
	}
	switch {
	case version != "" || commit != "":
		l.version = strings.TrimSpace("VERSION " + version + " COMMIT " + commit)
	default:
		l.version = "sha256:" + hex.EncodeToString(h.Sum(nil))
	}
	return l, nil
}

// ruleToASCII lower-cases a rule and converts Unicode labels to punycode.
// Wildcards and exceptions are stripped before this, so the rest must be a
// name Parse could produce; a rule that is not could never match.
func ruleToASCII(p *idna.Profile, rule string) (string, error) {
	a := strings.ToLower(rule)
	if !plainASCIIHost(rule) {
		var err error
		if a, err = p.ToASCII(rule); err != nil {
			return "", err
		}
	}
	if err := checkDNSName(a); err != nil {
		return "", err
	}
	return a, nil
}

// PublicSuffix implements the PSL algorithm: the longest matching rule
// prevails, an exception rule prevails over all others, and with no match
// the default rule "*" applies.
func (l *DatList) PublicSuffix(domain string) (string, bool) {
	return l.lookup(domain, false)
}

// ICANNPublicSuffix is PublicSuffix with the PRIVATE section ignored, the
// mode of Common Crawl's url_host_registered_domain.
func (l *DatList) ICANNPublicSuffix(domain string) string {
	s, _ := l.lookup(domain, true)
	return s
}

func (l *DatList) lookup(domain string, icannOnly bool) (string, bool) {
	normal, wild, exc := ruleNormal, ruleWildcard, ruleException
	if icannOnly {
		normal, wild, exc = ruleNormalICANN, ruleWildcardICANN, ruleExceptionICANN
	}
	// Walk suffixes from the last label outwards; start is where the suffix
	// of k labels begins. parent holds the flags of the suffix of k-1
	// labels, whose wildcard rule matches k labels.
	parent := l.rules[""]
	best, bestICANN := -1, false // start offset of the prevailing suffix
	excStart, excICANN := -1, false
	end := len(domain)
	for {
		dot := strings.LastIndexByte(domain[:end], '.')
		start := dot + 1
		f := l.rules[domain[start:]]
		if parent&wild != 0 {
			best, bestICANN = start, parent&ruleWildcardICANN != 0
		}
		if f&normal != 0 {
			best, bestICANN = start, f&ruleNormalICANN != 0
		}
		if f&exc != 0 {
			// The public suffix of an exception rule is the rule minus its
			// leftmost label: the suffix that started at end+1.
			excStart, excICANN = min(end+1, len(domain)), f&ruleExceptionICANN != 0
		}
		parent = f
		if dot < 0 {
			break
		}
		end = dot
	}
	switch {
	case excStart >= 0:
		return domain[excStart:], excICANN
	case best >= 0:
		return domain[best:], bestICANN
	}
	return domain[strings.LastIndexByte(domain, '.')+1:], false
}

// icannSuffix finds the ICANN-only public suffix with a list that only
// answers for all rules. Rules that match a parent of domain are exactly
// the rules that match domain and are no longer than that parent, so while
// the prevailing rule is private, asking again for the private suffix's
// parent yields the longest remaining match. (It would miss an ICANN
// wildcard exactly as long as a private rule; TestICANNFallback checks the
// .dat list has none.)
func icannSuffix(l List, domain string) string {
	if il, ok := l.(ICANNLister); ok {
		return il.ICANNPublicSuffix(domain)
	}
	s, icann := l.PublicSuffix(domain)
	for !icann {
		dot := strings.IndexByte(s, '.')
		if dot < 0 {
			return s // the default rule "*": the TLD itself
		}
		s, icann = l.PublicSuffix(s[dot+1:])
	}
	return s
}

// Validate says whether l is plausibly the Public Suffix List, before an
// ingest computes a single registered domain with it: both sections, a sane
// number of rules, and the list's own test cases that have held for every
// published version (checkPublicSuffix in the list's tests). A file that is
// not a list (--psl /etc/hostname) would otherwise index example.co.uk's
// URLs under co.uk, where no lookup finds them.
func (l *DatList) Validate() error {
	var problems []string
	if !l.sawICANN || !l.sawPrivate {
		problems = append(problems, "it lacks the ===BEGIN ICANN DOMAINS=== or ===BEGIN PRIVATE DOMAINS=== section")
	}
	if l.nICANN < minICANNRules {
		problems = append(problems, fmt.Sprintf("it has %d ICANN rules, where the published list has thousands (at least %d expected)", l.nICANN, minICANNRules))
	}
	for _, c := range []struct{ domain, suffix string }{
		{"com", "com"}, {"example.com", "com"}, {"www.example.co.uk", "co.uk"},
		{"www.ck", "ck"}, {"test.ck", "test.ck"}, {"example.github.io", "github.io"},
	} {
		if got, _ := l.PublicSuffix(c.domain); got != c.suffix {
			problems = append(problems, fmt.Sprintf("the public suffix of %s is %q, not %q", c.domain, got, c.suffix))
			break
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("not a public suffix list: %s", strings.Join(problems, "; "))
	}
	return nil
}

// minICANNRules is far below the ~7,000 ICANN rules of 2026's list and far
// above what a file that is not the list yields.
const minICANNRules = 1000
