// Package reshard moves a live domain-record index to a new shard width
// (issue 15 §3, design 003 "Shard Resizing").
//
// A resharding is a state recorded in indexes/domains/datapackage.json:
//
//	{"dhsi": {"shard_width": 3, "previous_shard_width": 2}}
//
// Run goes through three steps, each safe to interrupt (SIGKILL) and rerun:
//
//  1. Begin: the package is rewritten with Put(IfMatch) to record the new
//     width and the previous one. From then on every compaction writes the
//     new layout; workers configured before it notice (compiler I7) and
//     reload; readers take the union of both layouts (records R2).
//  2. Move: every shard of another width (a "foreign" shard) is moved into
//     the new layout under its lock (compiler I6), and so is every foreign
//     batch object a writer with the old layout landed. Workers run a few
//     shards at once and report progress.
//  3. Finish: when one listing of indexes/domains/shards/ shows no foreign
//     shard and no foreign lock, the previous width is cleared with
//     Put(IfMatch). Foreign batch objects do not hold it up (see
//     foreignObjects.empty). A foreign lock means a mover (or an old-layout
//     compaction, which checked the package before the resharding began)
//     may still write or delete a foreign shard; it is waited for. After
//     that listing, no foreign shard can appear: a compaction that loaded
//     the old package fails its I7 check before writing.
//
// Invariants:
//
//	S1. At most one resharding at a time: Begin refuses a width other than
//	    the one in progress, and the package's ETag is the condition of
//	    every state change, so concurrent runs agree on one state.
//	S2. No record is lost, duplicated in a view, or served older than
//	    before: records move only by compiler I6, and readers list by R2
//	    while the package records the previous width, which it does until
//	    no foreign shard remains (step 3).
package reshard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/tableschema"
)

// Options configure Run.
type Options struct {
	Width    int           // the new shard width, 1 to shard.MaxWidth
	Workers  int           // foreign shards moved at once (default 4)
	WorkerID string        // names this mover in lock objects
	LockTTL  time.Duration // as compiler.Config.LockTTL
	Log      *slog.Logger
	// Progress, when set, is called after each shard or batch group moved.
	Progress func(Progress)
}

// Progress is the state of a running move, after one foreign shard (or
// one shard's foreign batch objects) moved.
type Progress struct {
	Shard       string // the foreign shard id just moved
	Batch       bool   // it was batch objects of that id, not a shard
	Status      string // compiler status: moved, compacted, nothing-to-do, conflict
	Records     int    // records it held
	Done, Total int    // of this pass's foreign shards and batch groups
	Pass        int
	Report      Report // totals so far
}

// Report is what Run did.
type Report struct {
	From, To     int  // widths
	AlreadyDone  bool // the store had width To and nothing foreign
	Resumed      bool // a resharding to To was in progress
	ShardsMoved  int
	RecordsMoved int
	BatchesMoved int // foreign batch objects moved
	Passes       int
	Duration     time.Duration
	BeganAt      time.Time
}

// Status says in a few words what Run did.
func (r Report) Status() string {
	switch {
	case r.AlreadyDone:
		return fmt.Sprintf("already at width %d", r.To)
	case r.Resumed:
		return "resumed and finished"
	}
	return "resharded"
}

// ErrWidth is returned for a width no layout has.
var ErrWidth = fmt.Errorf("reshard: the width must be 1 to %d hex characters", shard.MaxWidth)

// ErrOtherResharding is returned when a resharding to another width is in
// progress (S1).
var ErrOtherResharding = errors.New("reshard: another resharding is in progress")

// Run reshards st to opts.Width: begins (or resumes) a resharding, moves
// every foreign shard, and finishes. It returns once the store records only
// the new width.
func Run(ctx context.Context, st store.Store, opts Options) (rep Report, err error) {
	start := time.Now()
	rep = Report{To: opts.Width, BeganAt: start}
	if err := (shard.Layout{Width: opts.Width}).Validate(); err != nil {
		return rep, fmt.Errorf("%w, not %d", ErrWidth, opts.Width)
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defer func() { rep.Duration = time.Since(start) }()
	// foreign batch objects the record rule refuses (key → ETag): kept and
	// reported (compiler I4) once; they never hold a resharding up
	bad := map[string]store.ETag{}
	changed := false // this run recorded or found a resharding
	for {
		pkg, etag, err := records.LoadPackageVersion(ctx, st)
		if err != nil {
			return rep, err
		}
		l, err := records.LayoutsOf(pkg)
		if err != nil {
			return rep, err
		}
		if rep.From == 0 {
			rep.From = l.Current.Width
			if l.Resharding() {
				rep.From = l.Previous.Width
			}
		}
		// step 1: begin, or resume
		switch {
		case l.Resharding() && l.Current.Width != opts.Width:
			return rep, fmt.Errorf("%w: from width %d to %d; finish it first with dhsi reshard --width %d", ErrOtherResharding, l.Previous.Width, l.Current.Width, l.Current.Width)
		case l.Resharding():
			rep.Resumed = rep.Resumed || !changed
			changed = true
		case l.Current.Width != opts.Width:
			next := records.Layouts{Current: shard.Layout{Width: opts.Width}, Previous: l.Current}
			if err := writeLayouts(ctx, st, pkg, etag, next); err != nil {
				if errors.Is(err, store.ErrPreconditionFailed) {
					continue // S1: another run changed the state first
				}
				return rep, err
			}
			changed = true
			log.Info("resharding began", "from", l.Current.Width, "to", opts.Width)
			continue // reload: the compiler is configured from the new version
		}
		cfg, err := records.CompilerConfig(pkg)
		if err != nil {
			return rep, err
		}
		cfg.PackageETag, cfg.WorkerID, cfg.LockTTL = etag, opts.WorkerID, opts.LockTTL
		c, err := compiler.New(st, cfg, log)
		if err != nil {
			return rep, err
		}
		// its folded change signals are written before Run returns, so
		// a caller that returns leaves the store quiet
		defer c.FlushSignals()
		// step 2: move what is foreign, until a listing finds nothing
		found, err := scan(ctx, st, opts.Width, bad)
		if err != nil {
			return rep, err
		}
		if found.empty() {
			if !l.Resharding() {
				rep.AlreadyDone = !changed
				return rep, nil
			}
			// step 3: finish (S2: nothing foreign in one listing)
			next := records.Layouts{Current: l.Current}
			if err := writeLayouts(ctx, st, pkg, etag, next); err != nil {
				if errors.Is(err, store.ErrPreconditionFailed) {
					continue
				}
				return rep, err
			}
			log.Info("resharding finished", "width", opts.Width)
			continue // one more look, then done
		}
		if !l.Resharding() {
			// a foreign shard in a store that records no resharding (one a
			// killed run left behind before step 1 of a later one, or a
			// store edited by hand): record the resharding again so readers
			// list by R2 while it is moved
			next := records.Layouts{Current: l.Current, Previous: shard.Layout{Width: found.someWidth()}}
			if err := writeLayouts(ctx, st, pkg, etag, next); err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
				return rep, err
			}
			continue
		}
		rep.Passes++
		if err := move(ctx, c, found, opts, &rep, bad, log); err != nil {
			if errors.Is(err, compiler.ErrLayoutChanged) {
				continue // the package changed (a schema edit): reload
			}
			return rep, err
		}
	}
}

// foreignObjects is what one listing found of another width than the
// current one.
type foreignObjects struct {
	shards  []string                 // shard ids
	locks   []string                 // lock ids without a shard
	batches map[string][]store.Attrs // batch objects by shard id
}

// empty reports whether no foreign shard or lock remains. Foreign batch
// objects do not count: a writer that loaded the old layout may land them
// for as long as it runs, they are pending objects that readers observe
// with the inbox (records R1), and every compaction moves them (compiler
// I6); the mover moves those it meets along the way.
func (f foreignObjects) empty() bool {
	return len(f.shards) == 0 && len(f.locks) == 0
}

func (f foreignObjects) someWidth() int {
	for _, id := range f.shards {
		return len(id)
	}
	for _, id := range f.locks {
		return len(id)
	}
	return 0
}

// scan lists the shards (with their locks) and the batch objects and
// returns what is foreign to width.
func scan(ctx context.Context, st store.Store, width int, bad map[string]store.ETag) (foreignObjects, error) {
	f := foreignObjects{batches: map[string][]store.Attrs{}}
	shardIDs := map[string]bool{}
	var lockIDs []string
	err := st.List(ctx, compiler.ShardPrefix, func(a store.Attrs) error {
		if id, ok := compiler.ShardOfKey(a.Key); ok && shard.ValidID(id) && len(id) != width {
			shardIDs[id] = true
			f.shards = append(f.shards, id)
		}
		if id, ok := compiler.ShardOfLockKey(a.Key); ok && shard.ValidID(id) && len(id) != width {
			lockIDs = append(lockIDs, id)
		}
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("list shards: %w", err)
	}
	for _, id := range lockIDs {
		if !shardIDs[id] {
			f.locks = append(f.locks, id)
		}
	}
	err = st.List(ctx, compiler.BatchPrefix, func(a store.Attrs) error {
		if e, seen := bad[a.Key]; seen && e == a.ETag {
			return nil
		}
		if id, ok := compiler.ShardOfBatchKey(a.Key); ok && shard.ValidID(id) && len(id) != width {
			f.batches[id] = append(f.batches[id], a)
		}
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("list batch objects: %w", err)
	}
	return f, nil
}

// move moves one listing's foreign shards and batch groups, Workers at a
// time, and waits for foreign locks without a shard to go (a mover's,
// live or left by a kill: taken over once stale, compiler I1).
func move(ctx context.Context, c *compiler.Compiler, f foreignObjects, opts Options, rep *Report, bad map[string]store.ETag, log *slog.Logger) error {
	type job struct {
		id    string
		batch []store.Attrs
		lock  bool
	}
	var jobs []job
	sort.Strings(f.shards)
	for _, id := range f.shards {
		jobs = append(jobs, job{id: id})
	}
	var ids []string
	for id := range f.batches {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		jobs = append(jobs, job{id: id, batch: f.batches[id]})
	}
	for _, id := range f.locks {
		jobs = append(jobs, job{id: id, lock: true})
	}
	var mu sync.Mutex
	done := 0
	errs := make([]error, len(jobs))
	parallel.ForEach(len(jobs), opts.Workers, func(i int) {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			return
		}
		j := jobs[i]
		var r compiler.Result
		var err error
		switch {
		case j.lock:
			// MoveShard of a gone shard takes the lock (waiting while it is
			// live, taking it over once stale) and releases it
			r, err = c.MoveShard(ctx, j.id)
		case j.batch != nil:
			r, err = c.CompactObjects(ctx, j.id, j.batch)
		default:
			r, err = c.MoveShard(ctx, j.id)
		}
		if err != nil {
			errs[i] = fmt.Errorf("move %s: %w", j.id, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		n := r.RecordsBefore
		switch {
		case j.batch != nil:
			rep.BatchesMoved += r.InboxMerged
			n = r.RecordsAfter
		case r.Status == compiler.StatusMoved:
			rep.ShardsMoved++
		}
		rep.RecordsMoved += n
		if opts.Progress != nil {
			p := Progress{Shard: j.id, Batch: j.batch != nil, Status: r.Status, Records: n, Done: done, Total: len(jobs), Pass: rep.Passes, Report: *rep}
			p.Report.Duration = time.Since(rep.BeganAt)
			opts.Progress(p)
		}
		etags := map[string]store.ETag{}
		for _, a := range j.batch {
			etags[a.Key] = a.ETag
		}
		for _, e := range r.Errors {
			log.Warn("foreign batch object not mergeable; kept, listed in domain_errors", "key", e.Key, "reason", e.Reason)
			bad[e.Key] = etags[e.Key]
		}
	})
	return errors.Join(errs...)
}

// writeLayouts records l in the package, conditional on the version read
// (S1).
func writeLayouts(ctx context.Context, st store.Store, pkg *tableschema.Package, etag store.ETag, l records.Layouts) error {
	body, err := records.WithLayouts(pkg, l)
	if err != nil {
		return err
	}
	if _, err := st.Put(ctx, compiler.SchemaKey, bytes.NewReader(body), store.Cond{IfMatch: etag}); err != nil {
		return fmt.Errorf("record the shard layout in %s: %w", compiler.SchemaKey, err)
	}
	return nil
}
