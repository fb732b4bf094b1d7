package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/dhsi/dhsi/verify"
)

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	deep := fs.Bool("deep", false, "also read every Parquet file of every kept version whole, and check its row groups and rows against files.tsv")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: dhsi verify [--deep] [flags]

Checks the store and changes nothing. For every index version the manifest
keeps: every referenced object exists; the domain dictionary, the
domain→datasets bitmaps and every postings shard pass their checksums and
structure checks; postings point at files and row groups that files.tsv
lists, and the counts add up to the manifest's. Then every domain-record
shard parses under datapackage.json, and grants.json parses.

Each problem is printed as "KEY: what is wrong", and the exit status is 1
if there is any. Inbox objects with records the record rule refuses are
printed as warnings (they are user data, also listed in domain_errors).

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
	log, err := newLogger(stderr, "warn")
	if err != nil {
		return err
	}
	st, err := sf.open(ctx, log, "verify", stderr)
	if err != nil {
		return err
	}
	rep, err := verify.Run(ctx, st, verify.Options{Deep: *deep, Progress: stderr})
	if err != nil {
		return err
	}
	for _, f := range rep.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", f)
	}
	for _, f := range rep.Problems {
		fmt.Fprintf(stdout, "%s\n", f)
	}
	fmt.Fprintf(stdout, "checked %d index versions, %d objects: %d problems, %d warnings\n", rep.Versions, rep.Objects, len(rep.Problems), len(rep.Warnings))
	if len(rep.Problems) > 0 {
		return fmt.Errorf("%d problems found", len(rep.Problems))
	}
	return nil
}
