package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/dhsi/dhsi/catalog"
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
		fmt.Fprintf(stderr, "Usage: dhsi gc [--keep N] [--grace 1h] [--dry-run] [flags]\n\nKeeps the newest N index versions in the manifest and deletes every object\nunder index/, urls/ and ingest/ that none of them references and that is older\nthan the grace period.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
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
	return nil
}
