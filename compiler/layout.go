package compiler

import (
	"fmt"
	"strings"
)

// Key layout of the domain-record index (see the package comment).
const (
	InboxPrefix  = "indexes/domains/"
	ShardPrefix  = "indexes/domains/shards/"
	SchemaKey    = "indexes/domains/datapackage.json"
	inboxSuffix  = ".usv"
	shardSuffix  = ".usv"
	lockSuffix   = ".lock"
	clockKeyStem = "indexes/domains/shards/.clock-"
)

// InboxKey is where a worker lands records for domain.
func InboxKey(domain string) string { return InboxPrefix + domain + inboxSuffix }

// ShardKey is the object holding shard id.
func ShardKey(id string) string { return ShardPrefix + id + shardSuffix }

// LockKey is the lock object of shard id.
func LockKey(id string) string { return ShardPrefix + id + lockSuffix }

// DomainOfInboxKey returns the domain an inbox key names, or false when the
// key is not an inbox object (shards, locks, the schema).
func DomainOfInboxKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, InboxPrefix)
	if !ok || strings.Contains(rest, "/") {
		return "", false
	}
	d, ok := strings.CutSuffix(rest, inboxSuffix)
	return d, ok && d != ""
}

// ValidateDomain checks that a domain can name an inbox object: lower-case,
// no trailing dot, no slash, at most 253 bytes, dot-separated labels of 1 to
// 63 characters.
func ValidateDomain(d string) error {
	if d == "" || len(d) > 253 {
		return fmt.Errorf("domain %q: want 1 to 253 bytes", d)
	}
	if strings.ToLower(d) != d {
		return fmt.Errorf("domain %q: want lower case", d)
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("domain %q: empty or over-long label", d)
		}
		if strings.ContainsAny(label, "/\\ \t\r\n\x00") {
			return fmt.Errorf("domain %q: label %q has a character a domain cannot have", d, label)
		}
	}
	return nil
}
