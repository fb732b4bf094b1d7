package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/internal/memlimit"
	"github.com/dhsi/dhsi/metrics"
	"github.com/dhsi/dhsi/urlnorm"
)

func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var (
		dataset    = fs.String("dataset", "", "dataset name (created on first ingest; letters, digits, . _ -)")
		perFile    = fs.Bool("dataset-per-file", false, "each FILE is its own dataset, named after the file without directory and extensions (a/cc-2024.txt.gz: cc-2024); all are published as one version, with one index build")
		source     = fs.String("source", "", "free-text provenance recorded in the dataset registry")
		format     = fs.String("format", "", "input format: list, csv, tsv, jsonl, cdx, cdxj, parquet (default: from each file's extension)")
		pslFile    = fs.String("psl", "", "a public_suffix_list.dat to use instead of the embedded list")
		icann      = fs.Bool("icann-only", false, "registered domains from the PSL's ICANN section only (as Common Crawl's url_host_registered_domain)")
		strict     = fs.Bool("strict-suffix", false, "the rule before issue 17: index only http, https, ws, wss and ftp URLs (others: bad-scheme) and reject a host that is itself a public suffix (host-is-public-suffix); by default any scheme with a host is indexed, and a dotted public-suffix host such as freedesktop.org under itself, counted as flagged (docs/urlnorm.md)")
		workDir    = fs.String("work-dir", "", "local scratch directory (default: a temporary directory)")
		rowGroups  = fs.Int("row-group-rows", ingest.DefaultRowGroupRows, "rows per Parquet row group")
		pageRows   = fs.Int("page-rows", ingest.DefaultPageRows, "rows per Parquet data page (the unit a first page of domain_urls decompresses and decodes)")
		zstdLevel  = fs.Int("zstd-level", ingest.DefaultZstdLevel, "zstd level of the Parquet pages: 1-2 fastest, 3-5 default, 6-9 better (a 2% smaller lake than 3 for 13% more ingest time), 10+ best (about 3% smaller again for half again the time)")
		width      = fs.Int("prefix-width", 0, "hex digits of the lake's domain_prefix partition, 1 (16 files per dataset and ingest) or 2 (256); 0 chooses 2 only when a batch fills a row group per prefix")
		shards     = fs.Int("postings-shards", ingest.DefaultPostingsShards, "postings shards of a new index (an existing index keeps its own)")
		keep       = fs.Int("keep", 10, "index versions the manifest lists")
		allowEmpty = fs.Bool("allow-empty", false, "publish a dataset even when its inputs yield no URL (without it such an ingest fails and publishes nothing)")
		force      = fs.Bool("force", false, "ingest files even if this dataset already ingested identical ones (counts would double)")
		quiet      = fs.Bool("quiet", false, "no progress on a terminal")
		memLimitMB = fs.Int("memory-limit-mb", 0, "deprecated: the Go heap's soft limit in MiB alone (--memory-limit bounds the whole ingest)")
		metricsAt  = fs.String("metrics", "", "serve Prometheus metrics (GET /metrics) on this address while the ingest runs, e.g. 127.0.0.1:9188: URLs read, normalized and rejected, the phase, store requests and bytes")
		cpuProf    = fs.String("cpu-profile", "", "write a Go CPU profile of the whole ingest to this file (go tool pprof)")
		keepCols   = fs.String("keep-columns", "", "columns of CSV, TSV, JSON-lines, Parquet or CDXJ inputs to keep for each URL, as name[:type],... with type int64, double, bool, timestamp or string (omitted: inferred from every value; a column the dataset already has keeps its type). CDX and CDXJ inputs always keep status, mime, digest, length, offset and filename (docs/format/lake.md)")
	)
	mem := registerMemoryFlag(fs, "the ingest (the Go heap, the rows staged before they spill to --work-dir, DuckDB reading Parquet inputs)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dhsi ingest --dataset NAME [flags] FILE...\n       dhsi ingest --dataset-per-file [flags] FILE...\n\nNormalizes the URLs in FILEs (plain lists, CSV/TSV with a url column, JSON\nlines, CDX, CDXJ, Parquet; .gz and .zst are read), writes them to the Parquet\nlake and publishes a new index version. It may run while a server serves the\nsame store: the server picks up the new version without a restart. Every line\nthat is not ingested is counted by reason and kept in a rejects file.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*dataset == "") == !*perFile || fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("%w: give --dataset NAME or --dataset-per-file, and at least one file", errUsage)
	}
	// every number in range before anything is read or written
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{
		{"keep", *keep, 1, 1000}, {"zstd-level", *zstdLevel, 1, 22}, {"page-rows", *pageRows, 1, 1 << 20},
		{"row-group-rows", *rowGroups, 1, 1 << 26}, {"prefix-width", *width, 0, 2},
		{"postings-shards", *shards, 1, 4096}, {"memory-limit-mb", *memLimitMB, 0, 1 << 22},
	} {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%w: --%s %d: want %d to %d", errUsage, c.name, c.v, c.lo, c.hi)
		}
	}
	var keepColumns []ingest.KeepColumn
	if *keepCols != "" {
		var err error
		if keepColumns, err = ingest.ParseKeepColumns(*keepCols); err != nil {
			return fmt.Errorf("%w: --keep-columns: %v", errUsage, err)
		}
	}
	if *pageRows > *rowGroups {
		return fmt.Errorf("%w: --page-rows %d is more than --row-group-rows %d", errUsage, *pageRows, *rowGroups)
	}
	if *workDir != "" {
		if fi, err := os.Stat(*workDir); err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: --work-dir %s: not an existing directory (it is not created for you)", errUsage, *workDir)
		}
	}
	total, _, err := mem.total()
	if err != nil {
		return err
	}
	budget, err := memlimit.SplitIngest(total)
	if err != nil {
		return fmt.Errorf("%w: --memory-limit: %v", errUsage, err)
	}
	if *memLimitMB > 0 {
		budget.GoHeap = int64(*memLimitMB) << 20
	}
	// without a limit the heap grows to twice what is live before a
	// collection: 2.1 GB peak for a 15M-URL build whose live set is far
	// smaller
	defer limitGoHeap(budget.GoHeap)()
	defer tuneGC()()
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	batches := []ingest.Batch{{Dataset: *dataset, Source: *source, Files: fs.Args()}}
	if *perFile {
		batches = batches[:0]
		for _, f := range fs.Args() {
			batches = append(batches, ingest.Batch{Dataset: datasetNameOf(f), Source: *source, Files: []string{f}})
		}
	}
	log, err := newLogger(stderr, "warn")
	if err != nil {
		return err
	}
	cfg := urlnorm.Config{ICANNOnly: *icann, StrictSuffix: *strict, CacheHosts: true} // one owner: the cache is safe here
	if *pslFile != "" {
		f, err := os.Open(*pslFile)
		if err != nil {
			return err
		}
		l, err := urlnorm.LoadDat(f)
		f.Close()
		if err == nil {
			err = l.Validate() // refused before anything is written
		}
		if err != nil {
			return fmt.Errorf("--psl %s: %w", *pslFile, err)
		}
		cfg.List = l
	}
	norm, err := urlnorm.NewNormalizer(cfg)
	if err != nil {
		return err
	}
	st, err := sf.open(ctx, log, "ingest", stderr)
	if err != nil {
		return err
	}
	var progressMetrics func(ingest.Progress)
	if *metricsAt != "" {
		reg := metrics.New()
		st = reg.InstrumentStore(st)
		var read, normalized, rejected atomic.Int64
		var phase atomic.Value
		phase.Store("start")
		reg.CounterFunc("dhsi_ingest_urls_read_total", "URLs (input records) read by this ingest.", func() float64 { return float64(read.Load()) })
		reg.CounterFunc("dhsi_ingest_urls_normalized_total", "URLs normalized and kept.", func() float64 { return float64(normalized.Load()) })
		reg.CounterFunc("dhsi_ingest_urls_rejected_total", "Input records rejected (listed in the version's rejects object).", func() float64 { return float64(rejected.Load()) })
		reg.Info("dhsi_ingest_phase_info", "The phase the ingest is in (value 1).", "phase", func() string { return phase.Load().(string) })
		progressMetrics = func(p ingest.Progress) {
			if p.Read > 0 || p.Phase == "read" {
				read.Store(p.Read)
				normalized.Store(p.Normalized)
				rejected.Store(p.Rejected)
			}
			if p.Phase != "" {
				phase.Store(p.Phase)
			}
		}
		addr, err := reg.Serve(ctx, *metricsAt)
		if err != nil {
			return fmt.Errorf("%w: --metrics: %v", errUsage, err)
		}
		fmt.Fprintf(stderr, "ingest: metrics at http://%s/metrics\n", addr)
	}
	opts := ingest.Options{
		KeepColumns: keepColumns,
		Store:       st, Dataset: *dataset, Source: *source, Files: fs.Args(), Format: ingest.Format(*format),
		Normalizer: norm, WorkDir: *workDir, RowGroupRows: *rowGroups, PageRows: *pageRows, PrefixWidth: *width, ZstdLevel: *zstdLevel, PostingsShards: *shards,
		Keep: *keep, Force: *force, AllowEmpty: *allowEmpty, Log: log,
		StageBytes: budget.Stage, ParquetMemory: memlimit.Format(budget.DuckDB),
	}
	if !*quiet && isTerminal(stderr) {
		start := time.Now()
		opts.Progress = func(p ingest.Progress) {
			rate := float64(p.Read) / time.Since(start).Seconds()
			fmt.Fprintf(stderr, "\r%-14s %12d read  %12d normalized  %10d rejected  %8.0f/s ", p.Phase, p.Read, p.Normalized, p.Rejected, rate)
		}
	}
	if progressMetrics != nil {
		terminal := opts.Progress
		opts.Progress = func(p ingest.Progress) {
			progressMetrics(p)
			if terminal != nil {
				terminal(p)
			}
		}
	}
	sums, err := ingest.RunAll(ctx, opts, batches)
	if opts.Progress != nil && !*quiet && isTerminal(stderr) {
		fmt.Fprintln(stderr)
	}
	for _, sum := range sums {
		for _, s := range sum.Skipped {
			fmt.Fprintf(stderr, "skipped %s: already ingested into %s (use --force)\n", s, sum.Dataset)
		}
	}
	if err != nil {
		return err
	}
	for _, sum := range sums {
		if sum.Version != "" && sum.Read+int64(sum.Files) > 0 {
			printSummary(stdout, sum)
		}
	}
	return nil
}

// datasetNameOf names a dataset after its file: the base name up to the
// first dot, with characters a dataset name cannot hold replaced by "_".
func datasetNameOf(path string) string {
	name := filepath.Base(path)
	if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, name)
}

func printSummary(w io.Writer, s ingest.Summary) {
	state := "existing"
	if s.NewDataset {
		state = "new"
	}
	fmt.Fprintf(w, "dataset %q (id %d, %s)\n", s.Dataset, s.DatasetID, state)
	fmt.Fprintf(w, "  read        %d\n  normalized  %d\n  written     %d distinct URLs in %d Parquet files (%d bytes)\n", s.Read, s.Normalized, s.Written, s.Files, s.Bytes)
	if len(s.Columns) > 0 {
		fmt.Fprintf(w, "  kept fields (bytes per URL written)\n")
		for _, c := range s.Columns {
			per := 0.0
			if s.Written > 0 {
				per = float64(s.FieldBytes[c.Name]) / float64(s.Written)
			}
			fmt.Fprintf(w, "    %-24s %-10s %6.2f\n", c.Name, c.Type, per)
		}
	}
	var reasons []string
	var rejected int64
	for r, n := range s.Rejected {
		reasons = append(reasons, r)
		rejected += n
	}
	sort.Strings(reasons)
	fmt.Fprintf(w, "  rejected    %d\n", rejected)
	for _, r := range reasons {
		fmt.Fprintf(w, "    %-24s %d\n", r, s.Rejected[r])
	}
	if rejected > 0 {
		fmt.Fprintf(w, "  rejects kept in %s\n", s.RejectsKey)
	}
	var flags []string
	var flagged int64
	for f, n := range s.Flagged {
		flags = append(flags, f)
		flagged += n
	}
	if flagged > 0 {
		// indexed, but not under a registered domain: say so beside the
		// rejects, which --strict-suffix would count them as
		sort.Strings(flags)
		fmt.Fprintf(w, "  flagged     %d (indexed, not rejected)\n", flagged)
		for _, f := range flags {
			fmt.Fprintf(w, "    %-24s %d\n", f, s.Flagged[f])
		}
	}
	if s.Collisions > 0 {
		fmt.Fprintf(w, "  url_id collisions: %d (recorded in index/%s/url_id_collisions.tsv)\n", s.Collisions, s.Version)
	}
	fmt.Fprintf(w, "published version %s: %d domains, %d URLs, in %v\n", s.Version, s.Domains, s.URLsTotal, s.Duration.Round(time.Millisecond))
	for _, p := range s.Phases {
		fmt.Fprintf(w, "  %-32s %v\n", p.Name, p.Duration.Round(time.Millisecond))
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
