package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/store"
)

func runCompact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var (
		shardID  = fs.String("shard", "", "compact one shard, e.g. 5e")
		all      = fs.Bool("all", false, "compact every shard with pending inbox objects (lists the inbox once)")
		loop     = fs.Bool("loop", false, "run as a stochastic worker: pick a random pending shard, skip locked ones, repeat until stopped")
		workers  = fs.Int("workers", 1, "with --loop: concurrent workers in this process")
		idleExit = fs.Duration("idle-exit", 0, "with --loop: exit after the inbox has had nothing to do for this long (0: never)")
		lockTTL  = fs.Duration("lock-ttl", compiler.DefaultLockTTL, "how long a lock of a crashed worker blocks its shard")
		workerID = fs.String("worker-id", "", "name in lock objects (default host-pid-random)")
		logLevel = fs.String("log-level", "warn", "log level: debug, info, warn, error")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dhsi compact (--shard HH | --all | --loop [--workers N]) [flags]\n\nMerges the domain-record inbox (indexes/domains/{domain}.usv) into shards\n(indexes/domains/shards/{hh}.usv) under a lock, writing with If-Match so that\nconcurrent compactors on many machines never lose an update.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
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
	// the store's datapackage.json decides the fields and the shard layout
	pkg, err := records.LoadPackage(ctx, st)
	if err != nil {
		return err
	}
	base, err := records.CompilerConfig(pkg)
	if err != nil {
		return err
	}
	newC := func(id string) (*compiler.Compiler, error) {
		cfg := base
		cfg.WorkerID, cfg.LockTTL = id, *lockTTL
		return compiler.New(st, cfg, log)
	}
	switch {
	case *shardID != "":
		c, err := newC(*workerID)
		if err != nil {
			return err
		}
		r, err := c.CompactShard(ctx, *shardID)
		if err != nil {
			return err
		}
		printResults(stdout, []compiler.Result{r})
	case *all:
		c, err := newC(*workerID)
		if err != nil {
			return err
		}
		rs, err := c.CompactAll(ctx)
		printResults(stdout, rs)
		return err
	default:
		if *workers < 1 {
			return fmt.Errorf("%w: --workers must be at least 1", errUsage)
		}
		return compactLoop(ctx, st, newC, *workerID, *workers, *idleExit, log, stdout)
	}
	return nil
}

// compactLoop is the stochastic worker of design 002: each round it lists
// the inbox, picks a random pending shard, and moves on when it is locked.
func compactLoop(ctx context.Context, st store.Store, newC func(string) (*compiler.Compiler, error), baseID string, workers int, idleExit time.Duration, log *slog.Logger, stdout io.Writer) error {
	var mu sync.Mutex
	var firstErr error
	totals := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		id := ""
		if baseID != "" {
			id = fmt.Sprintf("%s-%d", baseID, w)
		}
		c, err := newC(id)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			idleSince := time.Now()
			// stuck: shards whose pending objects, as listed (keys and
			// ETags), merged nothing: malformed objects, reported once.
			// Such a shard is skipped until its pending objects change, so
			// a worker with nothing mergeable left is idle, not spinning.
			stuck := map[string]string{}
			for ctx.Err() == nil {
				pending, err := c.Pending(ctx)
				if err != nil {
					if ctx.Err() == nil {
						log.Warn("list inbox", "err", err)
					}
					sleep(ctx, time.Second)
					continue
				}
				var ids []string
				for id, objs := range pending {
					if id != "" && stuck[id] != fingerprint(objs) {
						ids = append(ids, id)
					}
				}
				if len(ids) == 0 {
					if idleExit > 0 && time.Since(idleSince) > idleExit {
						return
					}
					sleep(ctx, time.Duration(100+rand.IntN(400))*time.Millisecond)
					continue
				}
				idleSince = time.Now()
				rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				for _, id := range ids {
					r, err := c.CompactShard(ctx, id)
					if err != nil {
						if errors.Is(err, context.Canceled) {
							return
						}
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						log.Warn("compact", "shard", id, "err", err)
						continue
					}
					mu.Lock()
					totals[r.Status]++
					totals["merged"] += r.InboxMerged
					mu.Unlock()
					if r.Status != compiler.StatusLocked && r.InboxMerged == 0 && r.InboxKept == 0 && len(r.Errors) > 0 {
						stuck[id] = fingerprint(pending[id])
						for _, e := range r.Errors {
							log.Warn("inbox object not mergeable; skipped until it changes", "key", e.Key, "reason", e.Reason)
						}
					} else {
						delete(stuck, id)
					}
					if r.Status != compiler.StatusLocked {
						break // one shard per round: the next round re-lists
					}
				}
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(stdout, "compacted %d, locked %d, conflict %d, nothing-to-do %d; inbox objects merged %d\n",
		totals[compiler.StatusCompacted], totals[compiler.StatusLocked], totals[compiler.StatusConflict], totals[compiler.StatusNothingToDo], totals["merged"])
	if ctx.Err() != nil {
		return nil
	}
	return firstErr
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

// fingerprint identifies a shard's pending inbox objects as listed: their
// keys and ETags, so any rewrite or new object changes it.
func fingerprint(objs []store.Attrs) string {
	parts := make([]string, len(objs))
	for i, a := range objs {
		parts[i] = a.Key + "\x00" + string(a.ETag)
	}
	sort.Strings(parts)
	return strings.Join(parts, "\x01")
}
