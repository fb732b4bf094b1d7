package compiler

import (
	"strings"
	"testing"

	"github.com/dhsi/dhsi/tableschema"
)

func TestNormalizeDomain(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"example.com", "example.com", ""},
		{"Example.COM.", "example.com", ""},
		{" example.co.uk ", "example.co.uk", ""},
		{"Bücher.de", "xn--bcher-kva.de", ""},
		{"xn--bcher-kva.de", "xn--bcher-kva.de", ""},
		{"com", "", "public suffix"},
		{"co.uk", "", "public suffix"},
		{"www.example.com", "", `its registered domain (eTLD+1) is "example.com"`},
		{"192.0.2.1", "", "IP address"},
		{"https://example.com/", "", "cannot have"},
		{"", "", "empty"},
		{"exa mple.com", "", "cannot have"},
	} {
		got, err := NormalizeDomain(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("NormalizeDomain(%q) = %q, %v; want an error saying %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("NormalizeDomain(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestRecordRule: the cases issue 15 §5 found served by the view but
// refused by compaction, and a partly bad object.
func TestRecordRule(t *testing.T) {
	rule, err := NewRule(tableschema.DefaultDomainPackage().Resources[0].Schema)
	if err != nil {
		t.Fatal(err)
	}
	const h = "domain␟company_name␟scraper_version␟updated_at␞"
	for _, c := range []struct {
		name, key, body string
		accepted        int
		problems        []string
	}{
		{"a valid object", "example.com", h + "example.com␟Ex␟3␟2024-01-01T00:00:00Z␞", 1, nil},
		{"the specification's terminated form", "example.com", "domain␟company_name␟scraper_version␟updated_at␟␞example.com␟Ex␟3␟2024-01-01T00:00:00Z␟␞", 1, nil},
		{"a key that is not a domain key", "UPPER.ORG", h + "UPPER.ORG␟U␟1␟2024-01-01T00:00:00Z␞", 0,
			[]string{`the object's key: domain "UPPER.ORG" is not written as a key: want "upper.org"`}},
		{"a key under a registered domain", "www.example.com", h + "www.example.com␟W␟1␟2024-01-01T00:00:00Z␞", 0,
			[]string{"the object's key: domain \"www.example.com\" is not a registered domain"}},
		{"an empty updated_at", "example.com", h + "example.com␟Ex␟3␟␞", 0,
			[]string{`record 2: updated_at "" is not an RFC 3339 timestamp`}},
		{"a UTF-8 byte-order mark", "example.com", "\ufeff" + h + "example.com␟Ex␟3␟2024-01-01T00:00:00Z␞", 1, nil},
		{"a type the schema refuses", "example.com", h + "example.com␟Ex␟three␟2024-01-01T00:00:00Z␞", 0,
			[]string{"record 2: "}},
		{"one bad record keeps the others, and every problem is listed", "example.com",
			h + "example.com␟A␟1␟2024-01-01T00:00:00Z␞example.com␟B␟x␟never␞other.com␟C␟1␟2024-01-02T00:00:00Z␞example.com␟D␞example.com␟E␟2␟2024-01-03T00:00:00Z␞", 2,
			[]string{`record 3: updated_at "never"`, `record 3: field "scraper_version"`, `record 4: domain "other.com", but the object is for "example.com"`, "record 5: has 2 units"}},
		{"no domain field", "example.com", "name␟updated_at␞x␟2024-01-01T00:00:00Z␞", 0, []string{`header has no "domain" field`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, problems := rule.CheckInbox([]byte(c.body), c.key)
			if len(ok.Rows) != c.accepted || len(problems) != len(c.problems) {
				t.Fatalf("accepted %d, problems %q; want %d accepted, %d problems", len(ok.Rows), JoinProblems(problems), c.accepted, len(c.problems))
			}
			for i, want := range c.problems {
				if got := problems[i].String(); !strings.Contains(got, want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got, want)
				}
			}
		})
	}
}

func TestKeyClassifiers(t *testing.T) {
	for _, c := range []struct {
		key     string
		shard   string // ShardOfKey's id, "" for none
		pending bool
	}{
		{ShardKey("5e"), "5e", false},
		{LockKey("5e"), "", false},
		{clockKeyStem + "w1", "", false},
		{ShardPrefix + "sub/5e.usv", "", false},
		{InboxKey("example.com"), "", true},
		{BatchKey("5e", "0001-ab"), "", true},
		{SchemaKey, "", false},
	} {
		id, ok := ShardOfKey(c.key)
		if id != c.shard || ok != (c.shard != "") || IsPendingKey(c.key) != c.pending {
			t.Errorf("%s: ShardOfKey = %q %v, IsPendingKey = %v; want %q, pending %v", c.key, id, ok, IsPendingKey(c.key), c.shard, c.pending)
		}
	}
}
