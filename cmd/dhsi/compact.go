package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/metrics"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/store"
)

func runCompact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var lf lockFlags
	lf.register(fs)
	var (
		shardID   = fs.String("shard", "", "compact one shard, e.g. 5e")
		all       = fs.Bool("all", false, "compact every shard with pending inbox objects (lists the inbox once)")
		loop      = fs.Bool("loop", false, "run as a stochastic worker: each round list one bounded page of the inbox (5,000 objects) from a random point and compact its shards, fullest first, skipping locked ones; repeat until stopped")
		workers   = fs.Int("workers", 1, "with --loop: concurrent workers in this process")
		idleExit  = fs.Duration("idle-exit", 0, "with --loop: exit after the inbox has had nothing to do for this long (0: never)")
		logLevel  = fs.String("log-level", "warn", "log level: debug, info, warn, error")
		metricsAt = fs.String("metrics", "", "serve Prometheus metrics (GET /metrics) on this address, e.g. 127.0.0.1:9189: compactions by status, inbox objects merged, records and bytes written, durations, store requests and bytes")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dhsi compact (--shard HH | --all | --loop [--workers N]) [flags]\n\nMerges the domain-record inbox (indexes/domains/{domain}.usv and batch\nobjects under indexes/domains/batches/) into shards\n(indexes/domains/shards/{hh}.usv) under a lock, writing with If-Match so that\nconcurrent compactors on many machines never lose an update.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{*shardID != "", *all, *loop} {
		if on {
			modes++
		}
	}
	if modes != 1 || fs.NArg() > 0 {
		return fmt.Errorf("%w: give exactly one of --shard HH, --all, --loop", errUsage)
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	st, err := sf.open(ctx, log, "compact", stderr)
	if err != nil {
		return err
	}
	var observed *metrics.Compactions // nil without --metrics: Observe does nothing
	if *metricsAt != "" {
		reg := metrics.New()
		st = reg.InstrumentStore(st)
		observed = reg.Compactions()
		addr, err := reg.Serve(ctx, *metricsAt)
		if err != nil {
			return fmt.Errorf("%w: --metrics: %v", errUsage, err)
		}
		fmt.Fprintf(stderr, "compact: metrics at http://%s/metrics\n", addr)
	}
	observe := observeCompactions(observed)
	// the store's datapackage.json decides the fields and the shard
	// layout; its ETag lets the compiler notice a resharding that begins
	// while it works (compiler I7), and the work is redone with the new one
	newC := func(id string) (*compiler.Compiler, error) {
		cfg, err := records.LoadCompilerConfig(ctx, st)
		if err != nil {
			return nil, err
		}
		cfg.WorkerID, cfg.LockTTL = id, lf.ttl
		return compiler.New(st, cfg, log)
	}
	once := func(work func(c *compiler.Compiler) error) error {
		return compiler.WithCurrentLayout(func() (*compiler.Compiler, error) { return newC(lf.workerID) }, work)
	}
	switch {
	case *shardID != "":
		var r compiler.Result
		if err := once(func(c *compiler.Compiler) (err error) { r, err = c.CompactShard(ctx, *shardID); return err }); err != nil {
			return err
		}
		observe(r)
		printResults(stdout, []compiler.Result{r})
	case *all:
		var rs []compiler.Result
		err := once(func(c *compiler.Compiler) (err error) { rs, err = c.CompactAll(ctx); return err })
		for _, r := range rs {
			observe(r)
		}
		printResults(stdout, rs)
		return err
	default:
		if *workers < 1 {
			return fmt.Errorf("%w: --workers must be at least 1", errUsage)
		}
		return compactLoop(ctx, st, newC, lf.workerID, *workers, *idleExit, log, stdout, observe)
	}
	return nil
}

// observeCompactions records each compaction's result in c (nil: none).
func observeCompactions(c *metrics.Compactions) func(compiler.Result) {
	return func(r compiler.Result) {
		c.Observe(r.Status, r.InboxMerged, r.InboxKept, r.RecordsAfter, r.BytesWritten, r.Duration)
	}
}

// compactLoop is the stochastic worker of design 002: each round one
// lister lists one bounded page of the inbox from a random point (compiler
// I5) and hands the page's shards, fullest first, to the workers one at a
// time; a shard being compacted is not handed out again until its
// compaction ends, and shards another process holds come back "locked".
// (Each worker used to list its own page, and the workers of one process
// compacted the same shards: in the sustained benchmark 588 of 1,024
// compactions found nothing to do, 37 ms each.)
func compactLoop(ctx context.Context, st store.Store, newC func(string) (*compiler.Compiler, error), baseID string, workers int, idleExit time.Duration, log *slog.Logger, stdout io.Writer, observe func(compiler.Result)) error {
	type job struct {
		id   string
		objs []store.Attrs
	}
	var (
		mu       sync.Mutex // guards the four below
		firstErr error
		totals   = map[string]int{}
		// bad: objects (key → ETag) a compaction reported and did not
		// retire: malformed or partly bad (rule.go), reported once. They
		// are left out until they change, so a worker with nothing
		// mergeable left is idle, not spinning.
		bad      = map[string]store.ETag{}
		inFlight = map[string]bool{} // shards handed to a worker and not done
		// a worker found the shard layout changed (compiler I7): the
		// lister takes the new layout before its next page
		relayout atomic.Bool
	)
	lister, err := newC(baseID)
	if err != nil {
		return err
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wid := ""
		if baseID != "" {
			wid = fmt.Sprintf("%s-%d", baseID, w)
		}
		c, err := newC(wid)
		if err != nil {
			close(jobs)
			wg.Wait()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// the signals it folded, before the command returns: a timer's
			// write would otherwise land after it (compiler's flush)
			defer func() { c.FlushSignals() }()
			for j := range jobs {
				r, err := c.CompactObjects(ctx, j.id, j.objs)
				mu.Lock()
				delete(inFlight, j.id)
				switch {
				case errors.Is(err, compiler.ErrLayoutChanged):
					mu.Unlock()
					// a resharding began or ended: take the new layout
					log.Info("the shard layout changed; reloading it")
					if nc, err := newC(wid); err == nil {
						c.FlushSignals()
						c = nc
					} else {
						log.Warn("reload the shard layout", "err", err)
						sleep(ctx, time.Second)
					}
					relayout.Store(true)
					continue
				case errors.Is(err, context.Canceled):
					mu.Unlock()
					continue
				case err != nil:
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					observe(compiler.Result{Status: "error"})
					log.Warn("compact", "shard", j.id, "err", err)
					continue
				}
				totals[r.Status]++
				totals["merged"] += r.InboxMerged
				if r.Status != compiler.StatusLocked {
					etags := map[string]store.ETag{}
					for _, a := range j.objs {
						etags[a.Key] = a.ETag
					}
					for _, e := range r.Errors {
						if old, seen := bad[e.Key]; !seen || old != etags[e.Key] {
							log.Warn("inbox object not mergeable; skipped until it changes", "key", e.Key, "reason", e.Reason)
						}
						bad[e.Key] = etags[e.Key]
					}
				}
				mu.Unlock()
				observe(r)
			}
		}()
	}
	idleSince := time.Now()
list:
	for ctx.Err() == nil {
		if relayout.Swap(false) {
			if nc, err := newC(baseID); err == nil {
				lister = nc
			} else {
				log.Warn("reload the shard layout", "err", err)
			}
		}
		// one bounded page from a random point (compiler I5)
		pending, err := lister.PendingPage(ctx, compiler.InboxPrefix+randomKeyTail(), pageSize)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("list inbox", "err", err)
			}
			sleep(ctx, time.Second)
			continue
		}
		work := map[string][]store.Attrs{}
		mu.Lock()
		for id, objs := range pending {
			if id == "" || inFlight[id] {
				continue
			}
			for _, a := range objs {
				if e, ok := bad[a.Key]; !ok || e != a.ETag {
					work[id] = append(work[id], a)
				}
			}
		}
		busy := len(inFlight) > 0
		mu.Unlock()
		if len(work) == 0 {
			if busy {
				idleSince = time.Now() // idle: nothing to list and nothing running
			} else if idleExit > 0 && time.Since(idleSince) > idleExit {
				break
			}
			sleep(ctx, time.Duration(100+rand.IntN(400))*time.Millisecond)
			continue
		}
		idleSince = time.Now()
		// the fullest shards of the page first (each compaction rewrites a
		// whole shard: merge as much as a page offers), ties in random
		// order so the workers of other processes spread out; each
		// compaction is durable on its own, so a process killed mid-page
		// keeps what it finished
		ids := make([]string, 0, len(work))
		for id := range work {
			ids = append(ids, id)
		}
		rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		slices.SortStableFunc(ids, func(a, b string) int { return len(work[b]) - len(work[a]) })
		for _, id := range ids {
			if relayout.Load() {
				continue list // the page was grouped under the old layout
			}
			mu.Lock()
			inFlight[id] = true
			mu.Unlock()
			select {
			case jobs <- job{id, work[id]}:
			case <-ctx.Done():
				break list
			}
		}
	}
	close(jobs)
	wg.Wait()
	fmt.Fprintf(stdout, "compacted %d, locked %d, conflict %d, nothing-to-do %d; inbox objects merged %d\n",
		totals[compiler.StatusCompacted], totals[compiler.StatusLocked], totals[compiler.StatusConflict], totals[compiler.StatusNothingToDo], totals["merged"])
	if ctx.Err() != nil {
		return nil
	}
	return firstErr
}

// pageSize bounds the inbox objects a looping worker lists per round: five
// S3 list pages, about 20 objects per shard of width 2 when the inbox is
// large.
const pageSize = 5000

// randomKeyTail is a random point in the inbox's key order: two
// characters of the alphabet domain names and batch keys start with.
func randomKeyTail() string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	return string([]byte{alphabet[rand.IntN(len(alphabet))], alphabet[rand.IntN(len(alphabet))]})
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func printResults(w io.Writer, rs []compiler.Result) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "shard\tstatus\tinbox_merged\tinbox_kept\trecords_before\trecords_after\tbytes_written\tduration\terrors")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\n", r.Shard, r.Status, r.InboxMerged, r.InboxKept,
			r.RecordsBefore, r.RecordsAfter, r.BytesWritten, r.Duration.Round(time.Millisecond), len(r.Errors))
	}
	tw.Flush()
	for _, r := range rs {
		for _, e := range r.Errors {
			fmt.Fprintf(w, "kept malformed inbox object %s: %s\n", e.Key, e.Reason)
		}
	}
}
