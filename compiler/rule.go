package compiler

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/tableschema"
	"github.com/dhsi/dhsi/urlnorm"
)

// The record rule (issue 15 §5). One rule decides what a domain record is,
// and every path applies this code, never a copy of it:
//
//	writers   WriteInbox (dhsi put, CALL inbox_put, the Go API) refuse what
//	          it refuses;
//	compiler  merges what it accepts and keeps, reports and never deletes
//	          an object with a problem (I4);
//	views     domains and domains_inbox serve exactly what it accepts, and
//	          domain_errors lists every problem it finds.
//
// So what compaction would refuse is never served as a record, and what is
// served will survive compaction. The rule for an inbox object:
//
//	K1. Its key names a domain key (NormalizeDomain(d) == d).
//	K2. It parses as USV, its header names the domain and updated_at fields,
//	    and it has at least one record. Otherwise every record is refused.
//	K3. A record is accepted when its domain is the key's, its updated_at is
//	    an RFC 3339 timestamp, and its units cast to the schema's types and
//	    meet the schema's constraints (unique and primary-key constraints
//	    excepted: an inbox object may hold several versions of its domain;
//	    the merge keeps the latest). A refused record does not refuse the
//	    others: the valid records of a partly bad object are merged.

// keyNormalizer is the URL index's default normalizer (the embedded Public
// Suffix List, both sections): domain keys are what etld1() answers.
var keyNormalizer = sync.OnceValue(func() *urlnorm.Normalizer {
	// StrictSuffix: a domain key is a registered domain (K1), so a host that
	// is itself a public suffix ("co.uk", "github.io") is refused here even
	// though the URL index keys such a host's URLs under the host.
	n, err := urlnorm.NewNormalizer(urlnorm.Config{StrictSuffix: true})
	if err != nil {
		panic(err) // the zero config is valid
	}
	return n
})

// NormalizeDomain returns the key of a domain record: the registered domain
// (eTLD+1) s spells, in lower case and punycode, without the root dot, as
// etld1() and norm_url() write it ("Bücher.DE." → "xn--bcher-kva.de"). It
// refuses what is not a registered domain: a public suffix alone ("com"),
// a host under a registered domain ("www.example.com": the record belongs
// to "example.com"), an IP address, a URL.
func NormalizeDomain(s string) (string, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return "", errors.New("domain is empty: want a registered domain such as example.com")
	}
	if i := strings.IndexAny(in, "/?#@:[]\\ \t\r\n\x00"); i >= 0 {
		return "", fmt.Errorf("domain %q has %q, which a domain name cannot have: want a registered domain such as example.com", s, in[i])
	}
	u, err := keyNormalizer().Parse("http://" + in)
	if err != nil {
		if urlnorm.ReasonOf(err) == urlnorm.ReasonHostIsPublicSuffix {
			return "", fmt.Errorf("domain %q is a public suffix, not a registered domain: want a name registered under it, such as example.%s", s, strings.TrimSuffix(u.Host, "."))
		}
		return "", fmt.Errorf("domain %q is not a domain name: %w", s, err)
	}
	if u.HostKind != urlnorm.HostDomain {
		return "", fmt.Errorf("domain %q is an IP address, not a registered domain", s)
	}
	if host := strings.TrimSuffix(u.Host, "."); host != u.Domain {
		return "", fmt.Errorf("domain %q is not a registered domain: its registered domain (eTLD+1) is %q, which holds its record", s, u.Domain)
	}
	return u.Domain, nil
}

// Problem is one reason the rule refuses an inbox object or a record of it.
type Problem struct {
	Record int    // the record's number in the file, the header being 1; 0: the whole object
	Field  string // the field at fault; "" when none
	Reason string
}

func (p Problem) String() string {
	if p.Record == 0 {
		return p.Reason
	}
	return fmt.Sprintf("record %d: %s", p.Record, p.Reason)
}

// Rule is the record rule under one schema. It is immutable and safe for
// concurrent use.
type Rule struct {
	schema *tableschema.Schema // nil: only K1, K2 and K3's domain and updated_at
}

// NewRule returns the rule for schema; nil checks no field types.
func NewRule(schema *tableschema.Schema) (Rule, error) {
	if schema != nil {
		if _, err := schema.NewRowChecker(); err != nil {
			return Rule{}, err
		}
	}
	return Rule{schema: schema}, nil
}

// CheckKey applies K1 to the domain an inbox key names.
func CheckKey(domain string) error {
	norm, err := NormalizeDomain(domain)
	if err != nil {
		return err
	}
	if norm != domain {
		return fmt.Errorf("domain %q is not written as a key: want %q", domain, norm)
	}
	return nil
}

// CheckInbox applies the rule to the body of the inbox object of keyDomain.
// It returns the accepted records (under the file's header) and every
// problem found, in record order.
func (r Rule) CheckInbox(b []byte, keyDomain string) (Table, []Problem) {
	if err := CheckKey(keyDomain); err != nil {
		return Table{}, []Problem{{Reason: "the object's key: " + err.Error()}}
	}
	t, shape, err := parseRecords(b)
	if err != nil {
		return Table{}, []Problem{{Reason: err.Error()}}
	}
	return r.check(t, shape, sameDomain(keyDomain))
}

// CheckPending applies the rule to a pending object by its key: a batch
// object (CheckBatch, its shard from the key) or a domain's inbox object
// (CheckInbox). Compaction, the views and dhsi verify all read pending
// objects through it; ok is false for a key that is neither.
func (r Rule) CheckPending(key string, b []byte) (t Table, problems []Problem, ok bool) {
	if id, batch := ShardOfBatchKey(key); batch {
		t, problems = r.CheckBatch(b, id)
		return t, problems, true
	}
	if d, inbox := DomainOfInboxKey(key); inbox {
		t, problems = r.CheckInbox(b, d)
		return t, problems, true
	}
	return Table{}, nil, false
}

// checkEmpty is what the rule says of an empty pending object.
func (r Rule) checkEmpty(key string) []Problem {
	_, problems, _ := r.CheckPending(key, nil)
	return problems
}

// CheckBatch applies the rule to the body of a batch object of shard id
// (K3 with the batch's own K1: every record's domain is a domain key of
// shard id in the layout of id's width). The width is the batch's own, not
// the store's: a writer that loaded the layout before a resharding lands
// batches of the previous width, and their records are as good as any
// (compaction moves them into the current layout, compiler I6).
func (r Rule) CheckBatch(b []byte, id string) (Table, []Problem) {
	if !shard.ValidID(id) {
		return Table{}, []Problem{{Reason: fmt.Sprintf("the batch's shard %q is not a shard id (1 to %d lower-case hex characters)", id, shard.MaxWidth)}}
	}
	t, shape, err := parseRecords(b)
	if err != nil {
		return Table{}, []Problem{{Reason: err.Error()}}
	}
	return r.check(t, shape, inShard(id))
}

// sameDomain accepts the domain of an inbox object's key.
func sameDomain(keyDomain string) func(string) string {
	return func(d string) string {
		if d != keyDomain {
			return fmt.Sprintf("domain %q, but the object is for %q", d, keyDomain)
		}
		return ""
	}
}

// inShard accepts domain keys of shard id, at the width of id (a
// ValidID).
func inShard(id string) func(string) string {
	shardOf := shard.LayoutOfID(id).Of
	return func(d string) string {
		if err := CheckKey(d); err != nil {
			return err.Error()
		}
		if s := shardOf(d); s != id {
			return fmt.Sprintf("domain %q belongs to shard %s, not to the batch's shard %s", d, s, id)
		}
		return ""
	}
}

// CheckTable applies the rule to records a writer hands over (K3; the key
// is keyDomain's).
func (r Rule) CheckTable(t Table, keyDomain string) (Table, []Problem) {
	if err := CheckKey(keyDomain); err != nil {
		return Table{}, []Problem{{Reason: err.Error()}}
	}
	for i, row := range t.Rows {
		if len(row) != len(t.Header) {
			return Table{}, []Problem{{Record: i + 2, Reason: fmt.Sprintf("%d units, header has %d", len(row), len(t.Header))}}
		}
	}
	return r.check(t, nil, sameDomain(keyDomain))
}

// check applies K2 and K3; domainProblem says what is wrong with a
// record's domain, "" when nothing is.
func (r Rule) check(t Table, shape []Problem, domainProblem func(string) string) (Table, []Problem) {
	var problems []Problem
	di, ui := t.column(DomainField), t.column(UpdatedAtField)
	if di < 0 {
		problems = append(problems, Problem{Field: DomainField, Reason: fmt.Sprintf("header has no %q field", DomainField)})
	}
	if ui < 0 {
		problems = append(problems, Problem{Field: UpdatedAtField, Reason: fmt.Sprintf("header has no %q field", UpdatedAtField)})
	}
	if len(t.Rows) == 0 && len(shape) == 0 {
		problems = append(problems, Problem{Reason: "no records after the header"})
	}
	var checker *tableschema.RowChecker
	if r.schema != nil && len(problems) == 0 {
		// a checker keeps per-file state (unique values): one per object;
		// NewRule proved the schema compiles
		checker, _ = r.schema.NewRowChecker()
		if _, err := checker.SetHeader(t.Header); err != nil {
			problems = append(problems, Problem{Reason: "header: " + err.Error()})
		}
	}
	if len(problems) > 0 {
		return Table{}, problems
	}
	ok := Table{Header: t.Header}
	problems = append(problems, shape...) // records that fit no reading; t holds the others
	for i, row := range t.Rows {
		n := t.RecordNo(i)
		bad := false
		badDomain := domainProblem(row[di])
		if badDomain != "" {
			problems = append(problems, Problem{n, DomainField, badDomain})
			bad = true
		}
		if _, valid := ParseTimestamp(row[ui]); !valid {
			problems = append(problems, Problem{n, UpdatedAtField, fmt.Sprintf("updated_at %q is not an RFC 3339 timestamp", row[ui])})
			bad = true
		}
		if checker != nil {
			_, ferrs := checker.Check(row)
			for _, fe := range ferrs {
				var ce *tableschema.ConstraintError
				if errors.As(fe.Err, &ce) && (ce.Constraint == "unique" || ce.Constraint == "primaryKey") {
					continue // several versions of one domain: the merge keeps the latest
				}
				if fe.Field == UpdatedAtField || (fe.Field == DomainField && badDomain != "") {
					continue // already said above, in the rule's own words
				}
				problems = append(problems, Problem{n, fe.Field, fe.Error()})
				bad = true
			}
		}
		if !bad {
			ok.Rows = append(ok.Rows, row)
			ok.recordNo = append(ok.recordNo, n)
		}
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Record < problems[j].Record })
	return ok, problems
}

// JoinProblems is the one-line report of an object's problems (results of
// CALL compact_shard, logs): every problem, not only the first.
func JoinProblems(ps []Problem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "; ")
}
