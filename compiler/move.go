package compiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
)

// Moving records between layouts (issue 15 §3, design 003). During a
// resharding the store holds shards and batch objects of two widths; every
// compaction writes the current layout (Config.Layout), and what is of
// another width (a "foreign" shard or batch) is moved into it:
//
//	I6. A foreign object is removed only after every record it holds is
//	    durable in the current layout's shards, each merged under the target
//	    shard's lock with the usual conditional write (I1, I2). A foreign
//	    shard is moved under its own lock, which is held from before it is
//	    read until after it is deleted (Delete(IfMatch: the ETag read)); a
//	    foreign batch object is written once (BatchKey) and deleted with
//	    IfMatch. Merging is idempotent, so a mover killed at any point
//	    leaves a store that the next mover finishes: the records are in the
//	    foreign object, in the targets, or in both.
//	I7. A compiler whose configuration came from a datapackage.json
//	    (Config.PackageETag) checks, just before each shard write and
//	    before each foreign delete, that the package is unchanged, and
//	    fails with ErrLayoutChanged otherwise: a worker that loaded the
//	    layout before a resharding began never writes the old layout after
//	    the store moved on, and a mover never deletes once the resharding's
//	    state changed. The finisher of a resharding (package reshard)
//	    relies on it.

// StatusMoved is the status of a foreign shard moved into the current
// layout.
const StatusMoved = "moved"

// ErrLayoutChanged reports that datapackage.json changed since the
// compiler's configuration was loaded from it (I7): reload and retry.
var ErrLayoutChanged = errors.New("compiler: datapackage.json changed since this worker loaded it (a resharding or a schema change); reload and retry")

// WithCurrentLayout runs work with a compiler newC makes from the store's
// package as it is now; when work fails because the package changed
// meanwhile (a resharding began or ended, I7), it runs again with a new
// one, up to three times in all.
func WithCurrentLayout(newC func() (*Compiler, error), work func(*Compiler) error) error {
	for attempt := 0; ; attempt++ {
		c, err := newC()
		if err != nil {
			return err
		}
		err = work(c)
		c.FlushSignals() // a caller that returns leaves the store quiet
		if attempt < 2 && errors.Is(err, ErrLayoutChanged) {
			c.log.Info("the shard layout changed; running again with the new one")
			continue
		}
		return err
	}
}

// checkPackage enforces I7.
func (c *Compiler) checkPackage(ctx context.Context) error {
	if c.cfg.PackageETag == "" {
		return nil
	}
	a, err := c.st.Head(ctx, SchemaKey)
	if err != nil {
		return fmt.Errorf("check %s: %w", SchemaKey, err)
	}
	if a.ETag != c.cfg.PackageETag {
		return ErrLayoutChanged
	}
	return nil
}

// foreign reports whether id is a shard id of a width other than the
// current layout's.
func (c *Compiler) foreign(id string) bool {
	return shard.ValidID(id) && len(id) != c.cfg.Layout.Width
}

// MoveShard moves foreign shard id (a width other than the layout's) into
// the current layout and deletes it (I6). A shard that is gone is
// nothing to do.
func (c *Compiler) MoveShard(ctx context.Context, id string) (res Result, err error) {
	start := time.Now()
	res.Shard = id
	defer func() { res.Duration = time.Since(start) }()
	if !c.foreign(id) {
		return res, fmt.Errorf("compiler: %q is not a shard id of another width than the current %d", id, c.cfg.Layout.Width)
	}
	lk, err := c.acquireWait(ctx, id)
	if err != nil {
		return res, err
	}
	defer c.release(lk)
	t, _, read, err := c.readShard(ctx, id)
	if err != nil {
		return res, err
	}
	if read.IfNoneMatch { // gone: moved by an earlier run
		res.Status = StatusNothingToDo
		return res, nil
	}
	res.RecordsBefore = len(t.Rows)
	parts := c.split(t)
	if err := c.mergeAll(ctx, parts); err != nil {
		return res, err
	}
	// I6: every record is durable in the current layout; the lock is
	// still ours and the resharding unchanged (I7), so the shard may go
	if !c.stillHeld(ctx, lk) {
		return res, fmt.Errorf("compiler: lost the lock of shard %s while moving it (a worker took it over as stale); its records are merged, run the move again to delete it", id)
	}
	if err := c.checkPackage(ctx); err != nil {
		return res, err
	}
	if err := c.st.Delete(ctx, ShardKey(id), read); err != nil { // IfMatch: the version moved
		if errors.Is(err, store.ErrPreconditionFailed) || errors.Is(err, store.ErrNotFound) {
			res.Status = StatusConflict // written meanwhile: the next move merges it again
			return res, nil
		}
		return res, fmt.Errorf("delete moved shard: %w", err)
	}
	c.signals.bump(ShardSignalKey(id))
	res.Status = StatusMoved
	res.RecordsAfter = len(parts)
	return res, nil
}

// moveObjects moves foreign batch objects of shard id into the current
// layout (I6): their valid records are merged into the layout's shards,
// and each object the rule fully accepts is deleted. Partly bad objects
// are reported and kept (I4), like any pending object.
func (c *Compiler) moveObjects(ctx context.Context, id string, objs []store.Attrs) (res Result, err error) {
	start := time.Now()
	res.Shard = id
	defer func() { res.Duration = time.Since(start) }()
	got := c.readPending(ctx, objs)
	parts := map[string][]Table{}
	var done []int
	for i, f := range got {
		switch {
		case f.err != nil:
			return res, f.err
		case f.skip:
			continue // moved by another worker meanwhile
		case f.tomb:
			// no writer empties a batch object: an empty one is refused by
			// the rule like any file without a header, and kept (I4)
			f.bad = c.rule.checkEmpty(objs[i].Key)
			fallthrough
		case len(f.bad) > 0:
			res.Errors = append(res.Errors, InboxError{Key: objs[i].Key, Reason: JoinProblems(f.bad)})
			res.InboxPartial++
		default:
			done = append(done, i)
		}
		for target, t := range c.split(f.t) {
			parts[target] = append(parts[target], t)
			res.RecordsAfter += len(t.Rows)
		}
	}
	if len(parts) == 0 && len(done) == 0 {
		res.Status = StatusNothingToDo
		return res, nil
	}
	merged := map[string]Table{}
	for target, ts := range parts {
		all := Table{Header: OutputHeader(c.cfg.SchemaFields, ts...)}
		m, err := Merge(all.Header, len(c.cfg.SchemaFields), ts...)
		if err != nil {
			return res, err
		}
		merged[target] = m
	}
	if err := c.mergeAll(ctx, merged); err != nil {
		return res, err
	}
	if err := c.checkPackage(ctx); err != nil { // I7
		return res, err
	}
	for _, i := range done {
		// a batch key is written once (BatchKey): its delete races with no put
		err := c.st.Delete(ctx, objs[i].Key, store.Cond{IfMatch: got[i].etag})
		switch {
		case err == nil:
			res.InboxMerged++
		case errors.Is(err, store.ErrPreconditionFailed), errors.Is(err, store.ErrNotFound):
			res.InboxKept++
		default:
			c.log.Warn("delete moved batch object", "key", objs[i].Key, "err", err)
			res.InboxKept++
		}
	}
	if res.InboxMerged > 0 {
		c.signals.bump(PendingSignalKey)
	}
	res.Status = StatusCompacted
	return res, nil
}

// split groups t's records by their shard in the current layout. A record
// without a domain (carried by Merge, never merged) goes with the shard of
// the empty name, so nothing is dropped.
func (c *Compiler) split(t Table) map[string]Table {
	di := indexOf(t.Header, DomainField)
	out := map[string]Table{}
	for _, r := range t.Rows {
		id := c.cfg.Layout.Of(unit(r, di))
		p := out[id]
		p.Header = t.Header
		p.Rows = append(p.Rows, r)
		out[id] = p
	}
	return out
}

// mergeAll merges each table into its shard of the current layout, a few
// shards at a time.
func (c *Compiler) mergeAll(ctx context.Context, parts map[string]Table) error {
	ids := make([]string, 0, len(parts))
	for id := range parts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	errs := make([]error, len(ids))
	parallel.ForEach(len(ids), max(1, c.cfg.Parallel/2), func(i int) {
		errs[i] = c.mergeInto(ctx, ids[i], parts[ids[i]])
	})
	return errors.Join(errs...)
}

// mergeInto merges t into shard id under its lock (I1, I2).
func (c *Compiler) mergeInto(ctx context.Context, id string, t Table) error {
	return c.rewriteLocked(ctx, id, "records were moved into it", func() (bool, error) {
		return c.mergeLocked(ctx, id, t)
	})
}

// rewriteLocked runs rewrite, which reads shard id and writes it with
// writeShard, under the shard's lock (I1, I2), waiting while another worker
// holds it. A lost write condition (a worker that took the lock over as
// stale wrote meanwhile) is retried: the shard is read again under a new
// lock, so nothing is overwritten blindly. doing says what the rewrite
// does, for the error after 10 lost conditions.
func (c *Compiler) rewriteLocked(ctx context.Context, id, doing string, rewrite func() (conflict bool, err error)) error {
	for attempt := 0; ; attempt++ {
		lk, err := c.acquireWait(ctx, id)
		if err != nil {
			return err
		}
		conflict, err := rewrite()
		c.release(lk)
		if err != nil || !conflict {
			return err
		}
		if attempt >= 10 {
			return fmt.Errorf("compiler: shard %s changed under its lock 10 times while %s", id, doing)
		}
	}
}

func (c *Compiler) mergeLocked(ctx context.Context, id string, t Table) (conflict bool, err error) {
	cur, body, cond, err := c.readShard(ctx, id)
	if err != nil {
		return false, err
	}
	out, err := Merge(OutputHeader(c.cfg.SchemaFields, cur, t), len(c.cfg.SchemaFields), cur, t)
	if err != nil {
		return false, err
	}
	return c.writeShard(ctx, id, out, body, cond)
}

// writeShard writes out as shard id, which the caller has locked and read
// as body, with cond (I2), unless out encodes to body (a rerun of a move).
// conflict reports a failed condition: another worker wrote the shard.
func (c *Compiler) writeShard(ctx context.Context, id string, out Table, body []byte, cond store.Cond) (conflict bool, err error) {
	var buf bytes.Buffer
	if err := out.Encode(&buf); err != nil {
		return false, err
	}
	if cond.IfMatch != "" && bytes.Equal(buf.Bytes(), body) {
		return false, nil
	}
	if err := c.checkPackage(ctx); err != nil { // I7
		return false, err
	}
	if _, err := c.st.Put(ctx, ShardKey(id), &buf, cond); err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) {
			return true, nil
		}
		return false, fmt.Errorf("write shard: %w", err)
	}
	c.signals.bump(ShardSignalKey(id))
	return false, nil
}

// acquireWait takes shard id's lock, waiting (with jittered backoff) while
// a live worker holds it; a stale lock is taken over after its TTL (I1).
func (c *Compiler) acquireWait(ctx context.Context, id string) (lock, error) {
	wait := 50 * time.Millisecond
	for {
		lk, held, err := c.acquire(ctx, id)
		if err != nil {
			return lock{}, err
		}
		if !held {
			return lk, nil
		}
		if err := sleepCtx(ctx, wait/2+time.Duration(rand.Int64N(int64(wait)))); err != nil {
			return lock{}, err
		}
		wait = min(2*wait, time.Second)
	}
}
