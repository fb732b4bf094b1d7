// Package compiler merges the domain-record inbox into hash shards on the
// object store (design 000 and 002, issue 3).
//
// Objects (docs/format/usv.md, docs/format/lock.md):
//
//	indexes/domains/{domain}.usv         inbox: one object per domain, any writer
//	indexes/domains/shards/{hh}.usv      shard: every domain whose shard is hh
//	indexes/domains/shards/{hh}.lock     advisory lock of one compaction
//	indexes/domains/datapackage.json     schema sidecar (Frictionless)
//
// Invariants. Code that relies on one cites it as [In].
//
//	I1. Lock acquisition is atomic: Put(lock, IfNoneMatch). A lock records
//	    worker id, created_at and expires_at (TTL, default 5 min). A stale
//	    lock is taken over only with Put(lock, IfMatch: its ETag). Staleness
//	    is judged by the store's clock: the lock's LastModified plus the TTL
//	    against the LastModified of an object the worker writes now.
//	I2. The shard is written with Put(shard, IfMatch: the ETag read under the
//	    lock), or IfNoneMatch for a new shard. Losing that condition means
//	    another compiler wrote the shard: the merge is abandoned, the lock
//	    released, the result is "conflict". Never retried blindly.
//	I3. No acknowledged record is lost. An inbox object is deleted only after
//	    the shard holding its content is durable (I2 succeeded), and only with
//	    Delete(IfMatch: the ETag of the version that was merged); a version
//	    rewritten meanwhile survives for the next compaction. A crash at any
//	    point leaves inbox objects that the next compaction merges again;
//	    merging is idempotent (latest updated_at wins, ties broken
//	    deterministically), so a repeat changes nothing.
//	    This needs the store's conditional delete to be atomic with a
//	    concurrent conditional put, as the Store contract says. versitygw
//	    v1.8.0 (the test S3 server) breaks it: its posix backend checks
//	    If-Match and removes the file outside its publish lock, so a put
//	    landing in between is deleted (measured 4 of 300 racing pairs).
//	    The local-directory store keeps it (flock).
//	I4. A malformed inbox object never blocks its shard and is never deleted:
//	    it is reported (result and domain_errors) and kept.
//	I5. Listing is paginated by the store; compacting all shards lists the
//	    inbox once and groups it by shard.
//
// Merge rule (shared with the SQL view "domains", so readers and compilers
// agree): for one domain the record with the latest updated_at wins; on equal
// updated_at the record whose schema-field units, in schema order, joined by
// U+241F (TieBreakKey) are greater in byte order wins. A record without a
// valid updated_at loses to any with one.
//
// Plan (pure) is kept apart from Execute (I/O): Merge computes a shard from
// its inputs and has no side effects.
package compiler
