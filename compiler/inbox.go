package compiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
)

// maxInboxRetries bounds WriteInbox's compare-and-swap loop; each retry
// re-reads, so it never overwrites blindly.
const maxInboxRetries = 20

// tombstoneWait is how long a writer waits for a compaction to delete the
// tombstone it left (normally milliseconds) before clearing it itself under
// the shard's lock. A variable so tests can shorten it.
var tombstoneWait = 2 * time.Second

// WriteInbox lands records for one domain in its inbox object, the way DHSI's
// own writers do: it reads the current object, merges (latest updated_at
// wins, so an older record arriving late never replaces a newer one), and
// writes with IfMatch / IfNoneMatch, retrying on a race. A record is
// acknowledged when WriteInbox returns nil; from then on I3 keeps it.
//
// An empty inbox object is a tombstone: a compaction merged the domain's
// records and is about to delete it (I3). A writer never writes over one
// (that is what makes the delete safe on stores whose conditional delete is
// not atomic); it waits until the tombstone is gone, and clears a tombstone
// that outlived its compaction under the shard's lock, as a compaction would.
//
// Any plain S3 client may also PUT an inbox object; such a writer replaces
// what was there, by its own choice, and relies on the store's conditional
// delete being atomic (docs/format/usv.md, "Inbox protocol").
func (c *Compiler) WriteInbox(ctx context.Context, domain string, t Table) error {
	if _, problems := c.rule.CheckTable(t, domain); len(problems) > 0 {
		// the record rule (rule.go): what compaction would refuse is never
		// written
		return fmt.Errorf("inbox record for %s: %s", domain, JoinProblems(problems))
	}
	key := InboxKey(domain)
	var tombSince time.Time
	backoff := 5 * time.Millisecond
	for attempt := 0; attempt < maxInboxRetries; {
		cond := store.Cond{IfNoneMatch: true}
		inputs := []Table{t}
		b, a, err := store.ReadAll(ctx, c.st, key)
		switch {
		case err == nil && len(b) == 0:
			// a tombstone: wait for its compaction to delete it
			if tombSince.IsZero() {
				tombSince = time.Now()
			}
			if time.Since(tombSince) >= tombstoneWait {
				if err := c.clearTombstone(ctx, key, a.ETag); err != nil {
					return err
				}
				tombSince = time.Time{}
				continue
			}
			if err := sleepCtx(ctx, backoff); err != nil {
				return fmt.Errorf("write inbox %s: %w", key, err)
			}
			backoff = min(2*backoff, 200*time.Millisecond)
			continue
		case err == nil:
			cur, problems := c.rule.CheckInbox(b, domain)
			if len(cur.Rows) > 0 {
				inputs = append(inputs, cur)
			}
			if len(problems) > 0 {
				// what the rule refuses is never dropped silently (I4): the
				// object is copied to quarantine before this write replaces it
				if err := quarantine(ctx, c.st, domain, a.ETag, b); err != nil {
					return err
				}
			}
			cond = store.Cond{IfMatch: a.ETag}
		case errors.Is(err, store.ErrNotFound):
		default:
			return fmt.Errorf("read inbox %s: %w", key, err)
		}
		tombSince = time.Time{}
		out, err := Merge(OutputHeader(c.cfg.SchemaFields, inputs...), len(c.cfg.SchemaFields), inputs...)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := out.Encode(&buf); err != nil {
			return err
		}
		_, err = c.st.Put(ctx, key, &buf, cond)
		if err == nil {
			c.signals.bump(PendingSignalKey)
			return nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return fmt.Errorf("write inbox %s: %w", key, err)
		}
		attempt++
	}
	return fmt.Errorf("write inbox %s: still contended after %d attempts", key, maxInboxRetries)
}

// clearTombstone deletes a tombstone whose compaction stopped before
// deleting it. Deleting needs the shard's lock (I3: only one deleter at a
// time), so it waits while a live compaction holds the lock; that
// compaction deletes the tombstone itself. Which shard's: during a
// resharding, a compaction of either layout may be retiring the object,
// and this writer's layout may be stale (I7), so it takes the domain's
// shard lock at every width, all or none (no lock is held while waiting,
// so it cannot deadlock with a mover, which holds one lock while it waits
// for another).
func (c *Compiler) clearTombstone(ctx context.Context, key string, etag store.ETag) error {
	domain, _ := DomainOfInboxKey(key)
	var ids []string
	for w := 1; w <= shard.MaxWidth; w++ {
		ids = append(ids, shard.Layout{Width: w}.Of(domain))
	}
	start := time.Now()
	deadline := start.Add(2*c.cfg.LockTTL + time.Minute)
	for {
		var locks []lock
		held := false
		for _, id := range ids {
			lk, h, err := c.acquire(ctx, id)
			if err != nil {
				for _, l := range locks {
					c.release(l)
				}
				return fmt.Errorf("write inbox %s: clear a tombstone: %w", key, err)
			}
			if h {
				held = true
				break
			}
			locks = append(locks, lk)
		}
		if !held {
			c.deleteTombstone(ctx, key, etag)
		}
		for _, l := range locks {
			c.release(l)
		}
		if !held {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("write inbox %s: a compaction left a tombstone and the shards of %s stayed locked for %v; retry later", key, domain, time.Since(start).Round(time.Second))
		}
		if err := sleepCtx(ctx, 250*time.Millisecond); err != nil {
			return fmt.Errorf("write inbox %s: %w", key, err)
		}
		// the holder may have deleted it meanwhile
		if a, err := c.st.Head(ctx, key); errors.Is(err, store.ErrNotFound) || (err == nil && (a.Size > 0 || a.ETag != etag)) {
			return nil
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// QuarantinePrefix holds malformed inbox objects that a writer replaced.
const QuarantinePrefix = "indexes/quarantine/domains/"

func quarantine(ctx context.Context, st store.Store, domain string, etag store.ETag, b []byte) error {
	tag := string(etag)
	if len(tag) > 16 {
		tag = tag[:16]
	}
	key := QuarantinePrefix + domain + "." + sanitizeTag(tag) + ".usv"
	_, err := st.Put(ctx, key, bytes.NewReader(b), store.Cond{IfNoneMatch: true})
	if err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("quarantine malformed inbox object for %s: %w", domain, err)
	}
	return nil
}

func sanitizeTag(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			out = append(out, c)
		}
	}
	return string(out)
}
