package compiler

import (
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

// ValidateDomain checks that a domain can name an inbox object: it is a
// domain key, the registered domain written as NormalizeDomain writes it
// (the record rule's K1, rule.go).
func ValidateDomain(d string) error { return CheckKey(d) }
