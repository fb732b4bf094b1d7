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

// BatchPrefix holds batch objects: records of many domains of one shard,
// landed in one write (docs/format/usv.md, "Batch objects").
const BatchPrefix = "indexes/domains/batches/"

// BatchKey is a batch object of shard id; name is unique per batch (the
// writer's clock and randomness), so a batch key is written once and never
// again.
func BatchKey(id, name string) string { return BatchPrefix + id + "/" + name + inboxSuffix }

// ShardOfBatchKey returns the shard a batch key names, or false when key is
// no batch object.
func ShardOfBatchKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, BatchPrefix)
	if !ok {
		return "", false
	}
	id, name, ok := strings.Cut(rest, "/")
	if !ok || id == "" || strings.Contains(name, "/") || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, inboxSuffix) {
		return "", false
	}
	return id, true
}

// IsPendingKey reports whether key is a pending object: a domain's inbox
// object or a batch object.
func IsPendingKey(key string) bool {
	if _, ok := ShardOfBatchKey(key); ok {
		return true
	}
	_, ok := DomainOfInboxKey(key)
	return ok
}

// InboxKey is where a worker lands records for domain.
func InboxKey(domain string) string { return InboxPrefix + domain + inboxSuffix }

// ShardKey is the object holding shard id.
func ShardKey(id string) string { return ShardPrefix + id + shardSuffix }

// ShardOfKey returns the shard id a shard object's key names (the inverse
// of ShardKey), or false for any other key: locks, clock objects, batches.
// The id is not checked against a layout.
func ShardOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, ShardPrefix)
	if !ok || strings.Contains(rest, "/") || strings.HasPrefix(rest, ".") {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, shardSuffix)
	if !ok || id == "" {
		return "", false
	}
	return id, true
}

// LockKey is the lock object of shard id.
func LockKey(id string) string { return ShardPrefix + id + lockSuffix }

// ShardOfLockKey returns the shard id a lock object's key names (the
// inverse of LockKey), or false for any other key. The id is not checked
// against a layout.
func ShardOfLockKey(key string) (string, bool) {
	id, ok := strings.CutSuffix(strings.TrimPrefix(key, ShardPrefix), lockSuffix)
	return id, ok && strings.HasPrefix(key, ShardPrefix) && id != "" && !strings.Contains(id, "/")
}

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
