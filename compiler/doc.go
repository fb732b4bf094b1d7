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
//	I3. No acknowledged record is lost. An inbox object is retired only
//	    after the shard holding its content is durable (I2), and only the
//	    version that was merged: Put(object, empty, IfMatch: the merged
//	    ETag) turns it into a tombstone, then Delete(IfMatch: the
//	    tombstone's ETag) removes it, both under the shard's lock, checked
//	    just before; a compaction deletes the tombstones it made together,
//	    in bulk (store.DeleteMany), and where the store's bulk delete would
//	    send conditional deletes one by one (versitygw) without the
//	    IfMatch, which then guards only against writers outside this
//	    protocol (raceFreeCond); a tombstone it found keeps its IfMatch. A version rewritten meanwhile fails the IfMatch of
//	    the tombstone's put and survives for the next compaction. DHSI writers (WriteInbox) never
//	    write over a tombstone: they wait for it to go, or delete one that
//	    outlived its compaction under the domain's shard lock at every width
//	    (a resharding has two layouts, I6). So every delete of an
//	    inbox object races with nothing, and the guarantee holds on stores
//	    whose conditional delete is not atomic with a concurrent put
//	    (versitygw v1.8.0's posix backend checks If-Match, then removes the
//	    file outside the lock its PutObject takes: measured 4 of 300 racing
//	    delete/put pairs both acknowledged). Only a conditional put must be
//	    atomic. On a store that promises an atomic conditional delete
//	    (store.AtomicDeleter: the local directory) the merged version is
//	    deleted directly with Delete(IfMatch: the merged ETag). A plain S3 client that PUTs without a condition relies on
//	    the store's conditional delete (AWS S3 and the local store).
//	    A crash at any point leaves inbox objects or tombstones that the
//	    next compaction merges again or deletes; merging is idempotent
//	    (latest updated_at wins, ties broken deterministically).
//	I4. A malformed inbox object never blocks its shard and is never deleted:
//	    it is reported (result and domain_errors) and kept.
//	I5. Listing is paginated by the store; compacting all shards lists the
//	    inbox once and groups it by shard. A looping worker lists one bounded
//	    page per round from a random point (PendingPage) and compacts one
//	    shard's objects of that page: compacting any subset of a shard's
//	    pending objects is safe (I2, I3 hold per object).
//	I6, I7. Moving records between shard layouts during a resharding, and
//	    noticing a layout change: stated in move.go.
//	I8. Moving records stored under keys of earlier releases to their
//	    domain keys (MigrateKeys): stated in keys.go.
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
