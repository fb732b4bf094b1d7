package httpapi

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/urlnorm"
)

// TestSURT: the cases of the surt package's own tests (internetarchive/surt
// tests/test_surt.py, version 0.3.1: test_surt, test_surt_nonascii,
// test_surt_ipaddress with its defaults, and the canonicalizer tests it
// copies from IAURLCanonicalizerTest.java), each URL normalized by urlnorm
// first, as DHSI's urlkeys are computed from normalized URLs.
func TestSURT(t *testing.T) {
	norm, err := urlnorm.NewNormalizer(urlnorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, url, want string }{
		{"www. is dropped from the host", "http://www.archive.org/", "org,archive)/"},
		{"a host without www. is reversed", "http://archive.org/", "org,archive)/"},
		{"a trailing slash is dropped from a path that is not /", "http://archive.org/goo/", "org,archive)/goo"},
		{"an empty query is dropped", "http://archive.org/goo/?", "org,archive)/goo"},
		{"query arguments are sorted", "http://archive.org/goo/?b&a", "org,archive)/goo?a&b"},
		{"arguments with one name are sorted by value", "http://archive.org/goo/?a=2&b&a=1", "org,archive)/goo?a=1&a=2&b"},
		{"a PHP session id is dropped from the query", "http://archive.org/index.php?PHPSESSID=0123456789abcdefghijklemopqrstuv&action=profile;u=4221", "org,archive)/index.php?action=profile;u=4221"},
		{"escapes are decoded, except those the surt package keeps, and lower-cased", "http://example.com/app?item=Wroc%C5%82aw", "com,example)/app?item=wroc%c5%82aw"},
		{"IPv4 addresses are reversed like names", "http://192.168.1.254/info/", "254,1,168,192)/info"},
		{"the host is lower-cased", "http://ARCHIVE.ORG/", "org,archive)/"},
		{"the default port goes", "http://www.archive.org:80/", "org,archive)/"},
		{"another port stays", "https://www.archive.org:80/", "org,archive:80)/"},
		{"www with digits is dropped too", "http://www12.foo.com/", "com,foo)/"},
		{"a name that merely starts with www keeps it", "http://www2.www2foo.com/", "com,www2foo)/"},
		{"an ASP.NET session id segment is dropped", "http://example.com/(S(4hqa0555fwsecu455xqckv45))/mileg.aspx", "com,example)/mileg.aspx"},
		{"a jsessionid followed by an argument is dropped", "http://example.com/?jsessionid=0123456789abcdefghijklemopqrstuv&x=y", "com,example)/?x=y"},
		{"cfid and cftoken are dropped", "http://example.com/?CFID=12412453&CFTOKEN=15501799&dt=19_08_2006_22_39_28", "com,example)/?dt=19_08_2006_22_39_28"},
		{"the path is lower-cased", "http://www.iana.org/_css/2013.1/fonts/Inconsolata.otf", "org,iana)/_css/2013.1/fonts/inconsolata.otf"},
		{"http and https share a key", "https://www.iana.org/_css/2013.1/fonts/OpenSans-Bold.ttf", "org,iana)/_css/2013.1/fonts/opensans-bold.ttf"},
		{"an escaped slash is decoded", "http://example.com/a%2Fb", "com,example)/a/b"},
		{"a space stays escaped", "http://example.com/a%20b", "com,example)/a%20b"},
		{"a host keeps its other labels", "https://bibliotheque.missiondefrance.fr/index.php?lvl=bulletin_display&id=319", "fr,missiondefrance,bibliotheque)/index.php?id=319&lvl=bulletin_display"},
	} {
		u, err := norm.Parse(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := SURT(u.Normalized); got != c.want {
			t.Errorf("%s: SURT(%q) = %q, want %q", c.name, u.Normalized, got, c.want)
		}
	}
}

// TestSURTDifferences pins where DHSI's urlkey differs from the surt
// package's, because urlkeys are computed from normalized URLs, which drop
// empty query arguments (docs/urlnorm.md step 11).
func TestSURTDifferences(t *testing.T) {
	norm, _ := urlnorm.NewNormalizer(urlnorm.Config{})
	// surt: com,yahoo,webhosting,visit)/visit.gif?&b=netscape%205.0%20(windows;%20en-us)&…
	u, err := norm.Parse("http://visit.webhosting.yahoo.com/visit.gif?&r=http%3A//web.archive.org/web/20090517140029/http%3A//anthonystewarthead.electric-chi.com/&b=Netscape%205.0%20%28Windows%3B%20en-US%29&s=1366x768&o=Win32&c=24&j=true&v=1.2")
	if err != nil {
		t.Fatal(err)
	}
	want := "com,yahoo,webhosting,visit)/visit.gif?b=netscape%205.0%20(windows;%20en-us)&c=24&j=true&o=win32&r=http://web.archive.org/web/20090517140029/http://anthonystewarthead.electric-chi.com/&s=1366x768&v=1.2"
	if got := SURT(u.Normalized); got != want {
		t.Errorf("SURT = %q\nwant   %q", got, want)
	}
}

// TestSURTAgreesWithRealIndexes: every line of two real CDXJ indexes (pywb's
// sample archive and a Common Crawl shard, testdata/shared/cdx) has the
// urlkey DHSI computes from the line's URL, normalized.
func TestSURTAgreesWithRealIndexes(t *testing.T) {
	norm, _ := urlnorm.NewNormalizer(urlnorm.Config{})
	for _, name := range []string{"pywb-iana.cdxj", "cc-main-2024-30-cdx-00187.cdxj"} {
		f, err := os.Open(filepath.Join("..", "testdata", "shared", "cdx", name))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		n, bad := 0, 0
		for sc.Scan() {
			key, rest, _ := strings.Cut(sc.Text(), " ")
			_, js, _ := strings.Cut(rest, " ")
			raw := jsonField(js, "url")
			u, err := norm.Parse(raw)
			if err != nil {
				t.Errorf("%s: %q: %v", name, raw, err)
				continue
			}
			n++
			if got := SURT(u.Normalized); got != key {
				bad++
				t.Errorf("%s: %q: urlkey %q, DHSI computes %q", name, raw, key, got)
			}
		}
		f.Close()
		if n == 0 {
			t.Fatalf("%s: no lines", name)
		}
		t.Logf("%s: %d urlkeys, %d differ", name, n, bad)
	}
}

// jsonField is the string value of a top-level key of a flat JSON object.
func jsonField(js, key string) string {
	i := strings.Index(js, `"`+key+`": "`)
	if i < 0 {
		return ""
	}
	s := js[i+len(key)+5:]
	return s[:strings.IndexByte(s, '"')]
}
