package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/records"
)

func runMigrateKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate-keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var lf lockFlags
	lf.register(fs)
	var (
		workers  = fs.Int("workers", 4, "shards migrated at once")
		logLevel = fs.String("log-level", "warn", "log level: debug, info, warn, error")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: dhsi migrate-keys [flags]

Moves domain records that releases before key normalization stored under a
key that is not a domain key (docs/format/usv.md, K1): "bücher.de" goes to
"xn--bcher-kva.de", "Example.COM." to "example.com", each into the shard of
its domain key, merged there with any record written since (the latest
updated_at wins). A record whose key names no registered domain ("com", a
host such as "www.example.com" whose registered domain holds its own
record, an IP address, an empty key) is not guessed at: it is moved to
indexes/quarantine/domains/keys/ and listed here. A store written by this
release has nothing to move; every shard is still read once.

Each record is written to its new place before it leaves the old one, so
readers never miss it; writers, compactors and servers keep working
throughout, and an interrupted run is finished by running it again.

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
	st, err := sf.open(ctx, log, "migrate-keys", stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	var (
		mu      sync.Mutex
		results []compiler.KeysResult
		shards  int
	)
	err = compiler.WithCurrentLayout(func() (*compiler.Compiler, error) {
		pkg, etag, err := records.LoadPackageVersion(ctx, st)
		if err != nil {
			return nil, err
		}
		if l, err := records.LayoutsOf(pkg); err != nil {
			return nil, err
		} else if l.Resharding() {
			return nil, fmt.Errorf("a resharding from width %d to %d is in progress; finish it first with dhsi reshard --width %d", l.Previous.Width, l.Current.Width, l.Current.Width)
		}
		cfg, err := records.CompilerConfig(pkg)
		if err != nil {
			return nil, err
		}
		cfg.PackageETag, cfg.WorkerID, cfg.LockTTL = etag, lf.workerID, lf.ttl
		return compiler.New(st, cfg, log)
	}, func(c *compiler.Compiler) error {
		ids, err := c.ShardIDs(ctx)
		if err != nil {
			return err
		}
		results, shards = results[:0], len(ids)
		errs := make([]error, len(ids))
		last, done := time.Now(), 0
		parallel.ForEach(len(ids), *workers, func(i int) {
			r, err := c.MigrateKeys(ctx, ids[i])
			mu.Lock()
			defer mu.Unlock()
			errs[i] = err
			if r.Renamed+r.Quarantined > 0 {
				results = append(results, r)
			}
			if done++; time.Since(last) >= 2*time.Second {
				last = time.Now()
				fmt.Fprintf(stderr, "migrate-keys: %d of %d shards read (%s)\n", done, len(ids), time.Since(start).Round(time.Millisecond))
			}
		})
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	renamed, quarantined := 0, 0
	for _, r := range results {
		renamed += r.Renamed
		quarantined += r.Quarantined
		for _, e := range r.Refused {
			fmt.Fprintf(stdout, "quarantined %q from shard %s to %s: %s\n", e.Key, r.Shard, r.Quarantine, e.Reason)
		}
	}
	fmt.Fprintf(stdout, "%d shards read; %d records moved under their domain keys, %d quarantined (no registered domain), in %s\n",
		shards, renamed, quarantined, time.Since(start).Round(time.Millisecond))
	return nil
}
