package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dhsi/dhsi/bench"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		urls     = fs.Int("urls", 10_000_000, "URLs to generate")
		domains  = fs.Int("domains", 200_000, "registered domains")
		datasets = fs.Int("datasets", 64, "datasets (all but the last loaded by one dhsi ingest --dataset-per-file, the last by its own ingest)")
		clients  = fs.String("clients", "1,4,16", "comma-separated client counts")
		duration = fs.Duration("duration", 10*time.Second, "measurement time per (system, query, client count); also the most a priming pass may take")
		cold     = fs.Int("cold-queries", 300, "distinct-domain queries per cold measurement")
		skipPG   = fs.Bool("skip-pg", false, "do not measure PostgreSQL 15")
		skipCold = fs.Bool("skip-cold", false, "do not measure DHSI cold from versitygw")
		skipDuck = fs.Bool("skip-duckdb", false, "do not measure DuckDB scanning the Parquet")
		memLimit = fs.String("memory-limit", "", "the --memory-limit of every dhsi serve and ingest the benchmark starts (default: theirs, a quarter of memory; 512MB is what they take on a 2 GB Raspberry Pi); the report's peak RSS shows whether they kept to it")
		grants   = fs.Bool("grants", false, "also measure DHSI with users and grants in force (a reader granted every dataset), alternating without/with/with/without on fresh servers")
		corpus   = fs.String("corpus", "simple", "URL shape of the generated corpus: simple (short paths; earlier numbers) or realistic (paths of 1-4 words, ~40% with 1-3 query keys in random order, extensions, subdomains, http and https; ~70 bytes)")
		workDir  = fs.String("work-dir", "", "keep the generated lists and store here (default: a temporary directory, removed)")
		client   = fs.String("client", "wirebench", "load client of the warm cells: wirebench (bench/wirebench/wirebench.c, a lean libpq client built with cc; DHSI and PostgreSQL side by side, A B | B A over --rounds, ratios per cell) or pgx (the Go client of earlier tables, which costs more per query than DHSI's server work; also measures the DuckDB scan)")
		rounds   = fs.Int("rounds", 2, "with --client wirebench: rounds per cell, the order of the systems reversed each round")
		wbBin    = fs.String("wirebench", "", "with --client wirebench: a built wirebench binary (default: build the embedded source with cc; needs libpq-dev)")
		unixSock = fs.Bool("unix-sockets", false, "with --client wirebench: reach both servers over their unix-domain sockets (.s.PGSQL.<port>) instead of TCP on 127.0.0.1")
		noNative = fs.Bool("no-native", false, "serve DHSI with --no-native: every statement through DuckDB, as before the server answered lookups itself (a before column)")
		cells    = fs.String("cells", "", "with --client wirebench: comma-separated cells to measure, of "+strings.Join(bench.WirebenchCells(), ", ")+" (default: all)")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dhsi bench [flags]\n\nGenerates a deterministic Zipf-distributed corpus, builds it with dhsi ingest,\nand measures DHSI over the wire against PostgreSQL 15 (and, with --client pgx,\na DuckDB Parquet scan). Warm cells run after each system has run the\n20,000-query set once; with --client wirebench both servers run side by side\nand each cell reports tps DHSI / PostgreSQL per round and their mean. Cold\ncells query DHSI on versitygw with empty caches, each domain once.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var cs []int
	for _, s := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("%w: --clients %q", errUsage, *clients)
		}
		cs = append(cs, n)
	}
	if *client != string(bench.ClientWirebench) && *client != string(bench.ClientPGX) {
		return fmt.Errorf("%w: --client %q: want wirebench or pgx", errUsage, *client)
	}
	if *grants && *client != string(bench.ClientPGX) {
		return fmt.Errorf("%w: --grants is measured with --client pgx", errUsage)
	}
	if *rounds < 1 {
		return fmt.Errorf("%w: --rounds %d", errUsage, *rounds)
	}
	var cellKeys []string
	if *cells != "" {
		for _, k := range strings.Split(*cells, ",") {
			k = strings.TrimSpace(k)
			if !slices.Contains(bench.WirebenchCells(), k) {
				return fmt.Errorf("%w: --cells: no cell %q (cells: %s)", errUsage, k, strings.Join(bench.WirebenchCells(), ", "))
			}
			cellKeys = append(cellKeys, k)
		}
		if *client != string(bench.ClientWirebench) {
			return fmt.Errorf("%w: --cells chooses among the wirebench cells", errUsage)
		}
	}
	if *unixSock && *client != string(bench.ClientWirebench) {
		return fmt.Errorf("%w: --unix-sockets is for the wirebench client", errUsage)
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	res, err := bench.Run(ctx, bench.Options{URLs: *urls, Domains: *domains, Datasets: *datasets, Clients: cs, Duration: *duration,
		ColdQueries: *cold, Grants: *grants, Shape: bench.Shape(*corpus), Client: bench.Client(*client), Rounds: *rounds, Cells: cellKeys, UnixSockets: *unixSock, NoNative: *noNative, Wirebench: *wbBin, SkipPG: *skipPG, SkipCold: *skipCold, SkipDuckDB: *skipDuck, WorkDir: *workDir, MemoryLimit: *memLimit, Bin: bin, Log: stderr})
	if err != nil {
		return err
	}
	res.Print(stdout)
	return nil
}
