package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store"
)

func runGC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	keep := fs.Int("keep", 3, "index versions to keep (the newest; at least 1)")
	grace := fs.Duration("grace", time.Hour, "never delete an object younger than this (protects readers of a just-replaced version and ingests in flight)")
	dry := fs.Bool("dry-run", false, "report what would be deleted, delete nothing")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dhsi gc [--keep N] [--grace 1h] [--dry-run] [flags]\n\nKeeps the newest N index versions in the manifest and deletes every object\nunder index/, urls/ and ingest/ that none of them references and that is older\nthan the grace period (the Parquet of an ingest that never published among\nthem). It also removes what crashed processes left and the grace period has\npassed: a local store's staged puts (.dhsi-tmp/put-*) and ingest scratch\ndirectories (dhsi-ingest-* in the temporary directory).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, "warn")
	if err != nil {
		return err
	}
	if *keep < 1 || *keep > 1000 {
		return fmt.Errorf("%w: --keep %d: want 1 to 1000", errUsage, *keep)
	}
	if *grace < 0 {
		return fmt.Errorf("%w: --grace %v: want a duration of 0 or more", errUsage, *grace)
	}
	st, err := sf.open(ctx, log, "gc", stderr)
	if err != nil {
		return err
	}
	res, err := catalog.GC(ctx, st, *keep, *grace, *dry)
	if err != nil {
		return err
	}
	keepVerb, dropVerb, verb := "kept", "dropped", "deleted"
	if *dry {
		keepVerb, dropVerb, verb = "would keep", "would drop", "would delete"
	}
	fmt.Fprintf(stdout, "%s %d versions, %s %d; %s %d objects (%d bytes); %d unreferenced objects younger than %v kept\n",
		keepVerb, len(res.KeptVersions), dropVerb, len(res.DroppedVersions), verb, res.Deleted, res.DeletedBytes, res.Young, *grace)
	cutoff := time.Now().Add(-*grace)
	if sw, ok := st.(store.TempSweeper); ok {
		n, b, err := sw.SweepTemp(cutoff, *dry)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %d staged puts a crashed process left (%d bytes)\n", verb, n, b)
	}
	n, b, err := sweepScratch(os.TempDir(), cutoff, *dry)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %d ingest scratch directories in %s (%d bytes)\n", verb, n, os.TempDir(), b)
	return nil
}

// sweepScratch removes the dhsi-ingest-* scratch directories in dir that a
// killed ingest left: those in which nothing changed since cutoff (a live
// ingest writes into its directory all the time).
func sweepScratch(dir string, cutoff time.Time, dryRun bool) (dirs int, bytes int64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, nil // no temporary directory: nothing to sweep
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "dhsi-ingest-") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		stale, size := true, int64(0)
		_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, ierr := d.Info(); ierr == nil {
				if !fi.ModTime().Before(cutoff) {
					stale = false
					return filepath.SkipAll
				}
				if !d.IsDir() {
					size += fi.Size()
				}
			}
			return nil
		})
		if !stale {
			continue
		}
		if !dryRun {
			if err := os.RemoveAll(path); err != nil {
				return dirs, bytes, fmt.Errorf("remove %s: %w", path, err)
			}
		}
		dirs++
		bytes += size
	}
	return dirs, bytes, nil
}
