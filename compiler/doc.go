// Package compiler will merge the domain-record inbox into hash shards on the
// object store (design 002, issue 3): lock a shard with a create-only put,
// merge with latest-updated_at-wins, write the shard with If-Match on the
// ETag read under the lock, and only then delete the merged inbox versions.
//
// Status: empty until issue 3. Its numbered invariants will open this file,
// and every one will have a test.
package compiler
