package compiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dhsi/dhsi/store"
)

// Keys written before the record rule's K1 (rule.go, docs/format/usv.md).
// Earlier releases kept a record under the key its writer gave, lower-cased:
// "bücher.de" where K1 writes "xn--bcher-kva.de", a host under a registered
// domain, a public suffix alone ("com"). Such a record sits in the shard its
// spelling hashes to, so a lookup of its domain key misses it, and a record
// written since under the domain key is a second record of one domain.
// MigrateKeys moves each one under its domain key, or to quarantine when no
// domain key names it:
//
//	I8. A renamed record is merged into its domain key's shard under that
//	    shard's lock (I1, I2) before it is removed from the shard that held
//	    it; a refused record is written to quarantine (IfNoneMatch) before
//	    it is removed. The holding shard is rewritten under its own lock
//	    with IfMatch, and only records identical to those moved leave it. So
//	    a migration killed or raced at any point leaves a record in both
//	    places (merging is idempotent: the next run removes the old one),
//	    never in neither, and a reader never sees it vanish. The holding
//	    shard's lock is not held while the targets' are taken, so two
//	    migrations never wait on each other.

// KeyQuarantinePrefix holds shard records whose key names no registered
// domain, moved out of their shard by MigrateKeys (one object per shard
// version).
const KeyQuarantinePrefix = QuarantinePrefix + "keys/"

// KeysResult reports MigrateKeys on one shard.
type KeysResult struct {
	Shard       string
	Records     int          // records the shard held when read
	Renamed     int          // moved under their domain key (I8)
	Quarantined int          // moved to Quarantine: no domain key names them
	Quarantine  string       // the object they went to; "" when none
	Refused     []InboxError // each quarantined record: its key and why
}

// MigrateKeys moves the records of shard id whose key is not a domain key
// (K1), or whose domain key belongs in another shard, under their domain
// key; records no domain key names go to quarantine (I8). A shard of
// domain keys only is read and left as it is. The shard must be of the
// current layout, and the store must not be resharding (the caller
// checks: MoveShard renames nothing).
func (c *Compiler) MigrateKeys(ctx context.Context, id string) (res KeysResult, err error) {
	res.Shard = id
	if !c.cfg.Layout.Valid(id) {
		return res, fmt.Errorf("compiler: %q is not a shard of the current width %d", id, c.cfg.Layout.Width)
	}
	t, _, read, err := c.readShard(ctx, id) // no lock: I8 rechecks under it
	if err != nil || read.IfNoneMatch {
		return res, err
	}
	res.Records = len(t.Rows)
	di := indexOf(t.Header, DomainField)
	if di < 0 {
		return res, fmt.Errorf("compiler: shard %s has no %s field", ShardKey(id), DomainField)
	}
	var (
		leaving = map[string]bool{} // the units of each record that leaves, joined
		renamed = Table{Header: t.Header}
		refused = Table{Header: t.Header}
	)
	for _, r := range t.Rows {
		key := unit(r, di)
		domain, nerr := NormalizeDomain(key)
		if nerr == nil && domain == key && c.cfg.Layout.Of(domain) == id {
			continue
		}
		leaving[TieBreakKey(r)] = true
		if nerr != nil {
			refused.Rows = append(refused.Rows, r)
			res.Refused = append(res.Refused, InboxError{Key: key, Reason: nerr.Error()})
			continue
		}
		r = slices.Clone(r)
		r[di] = domain
		renamed.Rows = append(renamed.Rows, r)
	}
	res.Renamed = len(renamed.Rows)
	if len(leaving) == 0 {
		return res, nil
	}
	if len(refused.Rows) > 0 {
		tag := sanitizeTag(string(read.IfMatch))
		res.Quarantine = KeyQuarantinePrefix + id + "." + tag[:min(len(tag), 16)] + ".usv"
		var buf bytes.Buffer
		if err := refused.Encode(&buf); err != nil {
			return res, err
		}
		// a rerun on the same shard version writes the same object
		if _, err := c.st.Put(ctx, res.Quarantine, &buf, store.Cond{IfNoneMatch: true}); err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
			return res, fmt.Errorf("quarantine the records of shard %s that name no registered domain: %w", id, err)
		}
		res.Quarantined = len(refused.Rows)
	}
	moved := c.split(renamed) // by their domain key's shard
	home := moved[id]         // renamed records whose domain key is in this shard
	delete(moved, id)
	if err := c.mergeAll(ctx, moved); err != nil { // I8: durable first
		return res, err
	}
	return res, c.rewriteLocked(ctx, id, "its old keys were moved out", func() (bool, error) {
		return c.removeMoved(ctx, id, leaving, home)
	})
}

// removeMoved rewrites shard id, which the caller has locked, without the
// records in leaving and with home merged in (I8).
func (c *Compiler) removeMoved(ctx context.Context, id string, leaving map[string]bool, home Table) (conflict bool, err error) {
	cur, body, cond, err := c.readShard(ctx, id)
	if err != nil || cond.IfNoneMatch {
		return false, err // gone: nothing left to remove
	}
	kept := Table{Header: cur.Header}
	for _, r := range cur.Rows {
		if !leaving[TieBreakKey(r)] {
			kept.Rows = append(kept.Rows, r)
		}
	}
	out, err := Merge(OutputHeader(c.cfg.SchemaFields, kept, home), len(c.cfg.SchemaFields), kept, home)
	if err != nil {
		return false, err
	}
	return c.writeShard(ctx, id, out, body, cond)
}

// unit is r's unit i, or "" when r has none (i < 0: no such column).
func unit(r []string, i int) string {
	if i >= 0 && i < len(r) {
		return r[i]
	}
	return ""
}

// ShardIDs lists the ids of the shards of the current layout that exist.
func (c *Compiler) ShardIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := store.ListFrom(ctx, c.st, ShardPrefix, "", func(a store.Attrs) error {
		name, ok := strings.CutSuffix(strings.TrimPrefix(a.Key, ShardPrefix), shardSuffix)
		if ok && c.cfg.Layout.Valid(name) {
			ids = append(ids, name)
		}
		return nil
	})
	return ids, err
}
