// Command dhsi is the DHSI domain index: one binary with subcommands that
// serve the index over the PostgreSQL protocol and maintain it on object
// storage.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

type command struct {
	name  string
	short string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "serve the index over the PostgreSQL protocol", runServe},
		{"put", "land domain records in the inbox (from flags or files)", runPut},
		{"compact", "merge the inbox into shards (one, all, or as a looping worker)", runCompact},
		{"reshard", "move a live domain-record index to a new shard width", runReshard},
		{"migrate-keys", "move domain records stored under keys of earlier releases to their domain keys", runMigrateKeys},
		{"ingest", "add URL files to a dataset and publish a new index version", runIngest},
		{"bench", "benchmark DHSI against PostgreSQL and a DuckDB scan on a generated corpus", runBench},
		{"gc", "drop old index versions and delete what no kept version references", runGC},
		{"verify", "check every object the index and the domain records reference; change nothing", runVerify},
		{"passwd", "print a users-file line with a SCRAM-SHA-256 verifier for a password", runPasswd},
		{"version", "print the version (also: dhsi --version)", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			fmt.Fprintf(stdout, "dhsi %s (%s, DuckDB %s)\n", buildVersion(), runtime.Version(), duckdbVersion())
			return nil
		}},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "dhsi — a domain index served over the PostgreSQL protocol\n\nUsage:\n  dhsi <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.short)
	}
	fmt.Fprintf(w, "\nRun 'dhsi <command> --help' for the flags of a command.\n")
}

// errUsage marks an error the user made on the command line (exit 2).
var errUsage = errors.New("usage")

// parseFlags parses a command's flags. A value the flag package refuses is
// the user's mistake (exit 2, as Go's flag.ExitOnError has it); the package
// has already printed it above the usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w: %v", errUsage, err)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "-v") {
		args = []string{"version"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				fmt.Fprintln(stderr, "dhsi "+c.name+":", err)
				return 2
			default:
				fmt.Fprintln(stderr, "dhsi "+c.name+":", err)
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "dhsi: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

// duckdbVersion asks the linked DuckDB library for its version.
func duckdbVersion() string {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return "unknown"
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SELECT library_version FROM pragma_version()").Scan(&v); err != nil {
		return "unknown"
	}
	return v
}

// buildVersion is -ldflags' main.version, else the module version and VCS
// revision Go recorded, else "dev".
func buildVersion() string {
	if version != "dev" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}
