package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dhsi/dhsi/reshard"
	"github.com/dhsi/dhsi/shard"
)

func runReshard(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reshard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var lf lockFlags
	lf.register(fs)
	var (
		width    = fs.Int("width", 0, fmt.Sprintf("the new shard width in hex characters, 1 to %d (2: 256 shards, 3: 4,096, 4: 65,536)", shard.MaxWidth))
		workers  = fs.Int("workers", 4, "shards moved at once")
		logLevel = fs.String("log-level", "warn", "log level: debug, info, warn, error")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: dhsi reshard --width N [flags]

Moves the domain-record index to shards of N hex characters while it stays
in use. The new width is recorded in indexes/domains/datapackage.json
first; from then on compactions write the new layout and readers take the
union of both. Each old shard is merged into the new ones under their locks
and deleted only once its records are durable there; then the previous
width is cleared. Writers, compactors and servers keep working throughout.

Safe to interrupt at any point: run the same command again to resume.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *width < 1 || *width > shard.MaxWidth {
		return fmt.Errorf("%w: --width must be 1 to %d, not %d", errUsage, shard.MaxWidth, *width)
	}
	if *workers < 1 {
		return fmt.Errorf("%w: --workers must be at least 1", errUsage)
	}
	if err := lf.checkTTL(); err != nil {
		return err
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	st, err := sf.open(ctx, log, "reshard", stderr)
	if err != nil {
		return err
	}
	// progress: a line at most every 2 s, and the last one of each pass
	var mu sync.Mutex
	last := time.Time{}
	progress := func(p reshard.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 2*time.Second && p.Done != p.Total {
			return
		}
		last = time.Now()
		fmt.Fprintf(stderr, "reshard: pass %d: %d of %d old shards and batch groups moved; %d records so far (%s)\n",
			p.Pass, p.Done, p.Total, p.Report.RecordsMoved, p.Report.Duration.Round(time.Millisecond))
	}
	r, err := reshard.Run(ctx, st, reshard.Options{Width: *width, Workers: *workers, WorkerID: lf.workerID, LockTTL: lf.ttl, Log: log, Progress: progress})
	if err != nil {
		return err
	}
	if r.AlreadyDone {
		fmt.Fprintf(stdout, "the store already has shard width %d; nothing to move\n", r.To)
		return nil
	}
	fmt.Fprintf(stdout, "%s: width %d → %d; %d shards moved (%d records), %d batch objects moved, in %s\n",
		r.Status(), r.From, r.To, r.ShardsMoved, r.RecordsMoved, r.BatchesMoved, r.Duration.Round(time.Millisecond))
	return nil
}
