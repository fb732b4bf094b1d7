package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/httpapi"
	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/internal/memlimit"
	"github.com/dhsi/dhsi/internal/redact"
	"github.com/dhsi/dhsi/metrics"
	"github.com/dhsi/dhsi/migrations"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/reshard"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/sqlserver"
	"github.com/dhsi/dhsi/sqlserver/pgsql"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/udf"
	"github.com/dhsi/dhsi/urlnorm"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// duckTempLimit resolves --duckdb-temp-limit: the size given, or a quarter
// of the space free on dir's disk now. DuckDB's own default, 90% of that
// space, would let one session's TEMP tables fill the disk the cache and a
// local store live on (docs/security.md, "Disk").
func duckTempLimit(flagValue, dir string) (int64, error) {
	if flagValue != "" {
		if strings.HasSuffix(strings.TrimSpace(flagValue), "%") {
			return 0, fmt.Errorf("%w: --duckdb-temp-limit %q: give a size, e.g. 20GiB", errUsage, flagValue)
		}
		n, err := memlimit.Parse(flagValue, 0)
		if err != nil {
			return 0, fmt.Errorf("%w: --duckdb-temp-limit: %v", errUsage, err)
		}
		return n, nil
	}
	free, err := diskFree(dir)
	if err != nil {
		return 0, fmt.Errorf("--duckdb-temp-limit: the space free for %s: %w (give --duckdb-temp-limit)", dir, err)
	}
	return free / 4, nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var (
		listen          = fs.String("listen", "127.0.0.1:5433", "PostgreSQL protocol address; a non-loopback address requires --user or --users-file")
		duckMemory      = fs.String("duckdb-memory-limit", "", "DuckDB's memory_limit, e.g. 4GB; past it DuckDB spills to --duckdb-temp-dir (default: 40% of --memory-limit after a 96 MiB reserve)")
		threads         = fs.Int("duckdb-threads", 0, "DuckDB worker threads (default: one per core)")
		tempDir         = fs.String("duckdb-temp-dir", "", "where DuckDB spills larger-than-memory work (default: <cache-dir>/dhsi.duckdb.tmp)")
		tempLimit       = fs.String("duckdb-temp-limit", "", "the most disk DuckDB may fill in --duckdb-temp-dir, its spills and every session's TEMP tables together, e.g. 20GiB; past it the statement that needs more fails with SQLSTATE 53100 and nothing else is lost; 0: never spill (default: a quarter of the space free on that disk when the server starts)")
		usersFile       = fs.String("users-file", "", "file of name:password[:role] lines (role admin, writer or reader; default reader; the password may be a SCRAM-SHA-256 verifier, see 'dhsi passwd'); enables SCRAM-SHA-256 authentication, the DuckDB sandbox and dataset grants")
		unixDir         = fs.String("unix-socket-dir", defaultSocketDir(), "also listen on the unix-domain socket DIR/.s.PGSQL.<port>, as PostgreSQL does, so psql -p <port> connects without -h; empty: no socket (the default is /var/run/postgresql where it exists)")
		ingestDir       = fs.String("ingest-dir", "", "a directory whose files writers may CALL ingest (admins may ingest any file the server can read; without it writers ingest none)")
		tlsCert         = fs.String("tls-cert", "", "TLS certificate (PEM) for sslmode=require and stronger")
		tlsKey          = fs.String("tls-key", "", "TLS private key (PEM)")
		logLevel        = fs.String("log-level", "info", "log level: debug, info, warn, error")
		noNative        = fs.Bool("no-native", false, "send every query through DuckDB, even the prepared lookups the server can answer from the index itself (for comparison)")
		httpAddr        = fs.String("http", "", "also serve the JSON API (GET /v1/domain/{d}, .../datasets/{id}/urls) and the CDX server API (GET /cdx, /{dataset}/cdx, /cdx/search/cdx) on this address, e.g. 127.0.0.1:8080")
		metricsAddr     = fs.String("metrics", "", "serve Prometheus metrics (GET /metrics) on this address, e.g. 127.0.0.1:9187: statements by kind and latency, errors by SQLSTATE, sessions, the index version and its age, refresh age, Go and process metrics; no label carries a domain, dataset or URL")
		pprofAddr       = fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this address, e.g. 127.0.0.1:6060; loopback only")
		nativeRowLimit  = fs.Int("native-row-limit", 0, "the rows a statement the server answers without DuckDB may hold in memory: the keys it sorts or groups, a join's side, the rows its WHERE keeps (8 times as many of those); one that would hold more runs through DuckDB, whose operators stream within --memory-limit. 0: --memory-limit / 4096 bytes, from 65,536 to 4,194,304 rows; -1: no limit")
		maxMessage      = fs.String("max-message-bytes", "", "the largest message a client may send once authenticated (a statement's text, a Bind's values), e.g. 4MiB; a larger one ends its session with SQLSTATE 54000. A statement's tokens cost the server 80-225 times its text (default: --memory-limit / 256, from 1MiB to 16MiB)")
		maxConns        = fs.Int("max-connections", 100, "the most sessions the server holds at once, of which the last 3 (all but one, for fewer than 4) only an admin may open (PostgreSQL's superuser_reserved_connections); as many connections again may be in start-up, and one past that is refused unread")
		fairAbove       = fs.Int("fair-above", 0, "when more sessions than this sent a query in the last 10-20 ms or are running one, they take turns on the server's threads: every connection gets an even share and a short p99, for 10-15% of the throughput at 16 clients on 2 cores; below it a session keeps its thread while its client answers (faster, less even). 0: 4 per core; -1: never")
		shutdownTimeout = fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM or SIGINT, how long running statements may take to finish before they are cancelled")
		refresh         = fs.Duration("refresh-interval", 2*time.Second, "how often the server checks the store for records written by other processes (the views are at most this stale for DHSI's writers; CALLs refresh at once); a refresh that takes longer is followed by a pause as long as it took, so refreshing takes at most half of one core")
		fullRefresh     = fs.Duration("full-refresh-interval", records.DefaultFullRefresh, "how often a refresh lists the whole domain-record inbox and every shard; the refreshes between list the change signals DHSI's writers and compactors bump, and only what they name. Records landed by plain S3 PUTs appear within this")
		users           multiFlag
	)
	var blockCache, recordCache, rowCache optionalMB
	fs.Var(&blockCache, "block-cache-mb", "memory for byte ranges of remote Parquet files (S3 stores); 0 turns it off (default: 10% of --memory-limit after the reserve, at most 256)")
	fs.Var(&recordCache, "record-cache-mb", fmt.Sprintf("memory for parsed domain-record shards (domain lookups read the one shard a domain hashes to; a full scan reads every shard through it); 0 turns it off (default: 10%% of --memory-limit after the reserve, at most %d)", records.DefaultCacheBytes>>20))
	fs.Var(&rowCache, "row-cache-mb", fmt.Sprintf("memory for hot domains: their decoded URL rows (domain_urls pages) and, in a sixteenth of it, their domain_datasets answers; 0 turns it off (default: 15%% of --memory-limit after the reserve, at most %d)", catalog.DefaultRowCacheBytes>>20))
	mem := registerMemoryFlag(fs, "the server (DuckDB, the row, block and record caches, sessions' buffers)")
	hardMemory := fs.String("memory-hard-limit", "", "the most memory the server's process may map (Linux RLIMIT_DATA): a statement whose allocation would pass it fails with SQLSTATE 53200, where the kernel's OOM killer would end the server (DuckDB builds some values, such as a list from range(), outside --duckdb-memory-limit); a size above --memory-limit, or off (default: twice --memory-limit, at least 1GiB above it; a stricter ulimit -d is kept)")
	var roleTimeouts, roleQueries multiFlag
	fs.Var(&roleTimeouts, "statement-timeout", "ROLE=DURATION: the default and ceiling of statement_timeout for users of a role, e.g. reader=30s (repeatable; admins are never limited)")
	var roleSessions multiFlag
	fs.Var(&roleSessions, "max-sessions", "ROLE=N: how many sessions one user of a role may hold at once; one more is refused at connect (53300), e.g. reader=20 (repeatable; admins are not limited)")
	fs.Var(&roleQueries, "max-concurrent-queries", "ROLE=N: how many statements one user of a role may run at once over all their sessions; more wait their turn, e.g. reader=4 (repeatable)")
	fs.Var(&users, "user", "name:password[:role] of a user (repeatable; role admin, writer or reader, default reader); enables SCRAM-SHA-256 authentication")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dhsi serve [flags]\n\nServes the index over the PostgreSQL protocol. With no flags it uses ./dhsi-data\nand listens on 127.0.0.1:5433 accepting any user without a password (loopback only).\n\nSignals: SIGTERM or SIGINT stops accepting, lets running statements finish (up to\n--shutdown-timeout), answers every session's next message with FATAL 57P01 and exits 0;\nSIGHUP reloads the users file and the grants without dropping a session.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *maxConns < 1 || *maxConns > 100000 {
		return fmt.Errorf("%w: --max-connections %d: want 1 to 100000", errUsage, *maxConns)
	}
	if *fullRefresh <= 0 {
		return fmt.Errorf("%w: --full-refresh-interval must be positive", errUsage)
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	budget, err := serveBudget(mem, *duckMemory, memlimit.Parts{RowCache: rowCache.bytes(), BlockCache: blockCache.bytes(), RecordCache: recordCache.bytes()})
	if err != nil {
		return err
	}
	maxMessageBytes := min(max(budget.Total/256, 1<<20), sqlserver.DefaultMaxMessageBytes)
	if *maxMessage != "" {
		if maxMessageBytes, err = memlimit.Parse(*maxMessage, 0); err != nil || maxMessageBytes < 1<<10 || maxMessageBytes > 1<<30 {
			return fmt.Errorf("%w: --max-message-bytes %q: want a size from 1KiB to 1GiB, e.g. 16MiB", errUsage, *maxMessage)
		}
	}
	rowLimit := *nativeRowLimit
	switch {
	case rowLimit == 0:
		rowLimit = int(min(max(budget.Total/4096, 1<<16), 1<<22))
	case rowLimit < -1:
		return fmt.Errorf("%w: --native-row-limit %d: want a count of rows, 0 for the default or -1 for none", errUsage, rowLimit)
	}
	hard, err := hardLimit(*hardMemory, budget.Total)
	if err != nil {
		return err
	}
	hardText := "off"
	if hard > 0 {
		hardText = memlimit.Format(hard)
	}
	log.Info("memory", "max_message", memlimit.Format(maxMessageBytes), "limit", memlimit.Format(budget.Total), "hard_limit", hardText, "duckdb", memlimit.Format(budget.DuckDB), "go_heap", memlimit.Format(budget.GoHeap),
		"row_cache", memlimit.Format(budget.RowCache), "block_cache", memlimit.Format(budget.BlockCache), "record_cache", memlimit.Format(budget.RecordCache))
	liftHard, err := applyHardLimit(hard)
	if err != nil {
		return err
	}
	defer liftHard()
	defer limitGoHeap(budget.GoHeap)()
	defer tuneGC()()
	userList, err := loadUsers(*usersFile, users)
	if err != nil {
		return err
	}
	limits, err := parseRoleLimits(roleTimeouts, roleQueries, roleSessions)
	if err != nil {
		return err
	}
	checkIngest, err := ingestDirCheck(*ingestDir)
	if err != nil {
		return err
	}

	st, err := sf.open(ctx, log, "serve", stderr)
	if err != nil {
		return err
	}
	cache, err := sf.cachePath()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return fmt.Errorf("create cache dir: %w", err)
	}
	if *tempDir == "" {
		*tempDir = filepath.Join(cache, "dhsi.duckdb.tmp")
	}
	tempBytes, err := duckTempLimit(*tempLimit, *tempDir)
	if err != nil {
		return err
	}
	log.Info("duckdb temp", "limit", memlimit.Format(tempBytes))
	native := map[string]sqlserver.NativeFunction{} // filled by the Init hook below
	if *noNative {
		native = nil
	}
	var domains *records.Domains
	var urls *urlService
	var urlFuncs udf.URLIndexFuncs
	grants, err := access.OpenBook(ctx, st, log)
	if err != nil {
		return err
	}
	grants.ValidateDataset = catalog.ValidateDatasetName
	// where the server keeps its files, which no non-admin is told of
	// (sqlserver H2): the cache, the temp directory, a local store's root
	hostDirs := []string{cache, *tempDir}
	if lp, ok := st.(catalog.LocalPather); ok {
		if dir, err := lp.LocalPath("urls"); err == nil {
			hostDirs = append(hostDirs, filepath.Dir(dir))
		}
	}
	var sandbox *sqlserver.Sandbox
	if len(userList) > 0 {
		// users configured: sessions are strangers to each other and to the
		// host, so DuckDB may read only the lake (docs/security.md)
		sandbox = &sqlserver.Sandbox{ReadDirs: []string{filepath.Join(cache, "lake-empty")}}
		if lp, ok := st.(catalog.LocalPather); ok {
			dir, err := lp.LocalPath("urls")
			if err != nil {
				return err
			}
			sandbox.ReadDirs = append(sandbox.ReadDirs, dir)
		}
	}
	// when this server's view of the store (records, index, grants) was last
	// complete (unix nanoseconds): refreshLoop keeps it, the metric reads it
	var lastRefresh atomic.Int64
	var reg *metrics.Registry
	var observer sqlserver.Observer
	if *metricsAddr != "" {
		reg = metrics.New()
		observer = reg
		// every request of this server to the store, counted (it keeps the
		// store's local paths, so a local lake is still read in place)
		st = reg.InstrumentStore(st)
	}
	srv, engine, err := sqlserver.Open(ctx, sqlserver.Options{
		Server: sqlserver.Config{Listen: *listen, UnixSocketDir: *unixDir, MaxConnections: *maxConns, FairAbove: *fairAbove, MaxMessageBytes: int(maxMessageBytes), NativeRowLimit: rowLimit, Users: userList, TLSCert: *tlsCert, TLSKey: *tlsKey, NullUnsafeFunctions: append(slices.Clone(udf.TableFunctions), records.TableFunctions...), NativeFunctions: native,
			Procedures: udf.ProcedureRoles,
			// urls is set by the Init hook below, before any session
			ReadEpoch: func() uint64 {
				if urls == nil {
					return 0
				}
				return urls.readEpoch.Load()
			},
			RoleLimits:      limits,
			HostDirs:        hostDirs,
			Observer:        observer,
			ReaderFunctions: append([]string{records.LookupFunction}, udf.ReaderTableFunctions...),
			// "FROM datasets" in a native statement is dhsi_datasets()
			NativeViews: map[string]string{"datasets": "dhsi_datasets"},
			PointLookups: map[string]pgsql.Lookup{
				"domains": {Column: "domain", Function: records.LookupFunction},
				"urls": {Column: "domain", Function: udf.URLsByDomainFunction,
					Narrow: &pgsql.Lookup{Column: "dataset_id", Function: udf.URLsByDomainDatasetFunction}},
			},
			TableFunctionArgs: map[string][]uint32{
				"domain_datasets":               {sqlserver.OIDText},
				udf.URLsByDomainFunction:        {sqlserver.OIDText},
				udf.URLsByDomainDatasetFunction: {sqlserver.OIDText, sqlserver.OIDInt4},
				records.LookupFunction:          {sqlserver.OIDText},
				"domain_urls":                   {sqlserver.OIDText, sqlserver.OIDInt4, sqlserver.OIDInt8, sqlserver.OIDInt8},
				"domain_url_fields":             {sqlserver.OIDText, sqlserver.OIDInt4, sqlserver.OIDInt8, sqlserver.OIDInt8},
				"dataset_domains":               {sqlserver.OIDInt4},
				"dataset_domains_set":           {sqlserver.OIDInt4, sqlserver.OIDText, sqlserver.OIDInt4},
				"compact_shard":                 {sqlserver.OIDText},
				"reshard":                       {sqlserver.OIDInt4},
				"inbox_put":                     {sqlserver.OIDText, sqlserver.OIDText},
				"ingest":                        {sqlserver.OIDText, sqlserver.OIDText},
				"grant_dataset":                 {sqlserver.OIDText, sqlserver.OIDText},
				"revoke_dataset":                {sqlserver.OIDText, sqlserver.OIDText},
			}},
		Engine: sqlserver.EngineConfig{
			Path:        filepath.Join(cache, "dhsi.duckdb"),
			MemoryLimit: memlimit.Format(budget.DuckDB),
			Threads:     *threads,
			TempDir:     *tempDir,
			TempLimit:   fmt.Sprintf("%dKiB", tempBytes>>10),
			Sandbox:     sandbox,
		},
		Init: []func(context.Context, *sql.DB) error{
			func(ctx context.Context, db *sql.DB) error { return migrations.Apply(ctx, db) },
			func(ctx context.Context, db *sql.DB) error {
				cacheBytes := budget.RecordCache
				if cacheBytes == 0 {
					cacheBytes = -1 // off: every statement reads its shards
				}
				d, err := records.Open(ctx, st, db, records.Options{Log: log, CacheBytes: cacheBytes, FullRefreshEvery: *fullRefresh})
				if err != nil {
					return fmt.Errorf("domain records: %w", err)
				}
				domains = d
				// shard_id answers under the layout the store records now:
				// a resharding changes it while the server runs
				if err := udf.Register(ctx, db, func() shard.Layout { return d.Layouts().Current }); err != nil {
					return err
				}
				norm, err := urlnorm.NewNormalizer(urlnorm.Config{})
				if err != nil {
					return err
				}
				if err := udf.RegisterURLFuncs(ctx, db, norm); err != nil {
					return err
				}
				u, err := newURLService(ctx, st, db, filepath.Join(cache, "lake-empty"), catalog.URLIndexOptions{BlockCacheBytes: budget.BlockCache, RowCacheBytes: budget.RowCache, Log: log})
				if err != nil {
					return err
				}
				urls = u
				u.grants = grants.Current // before any urls view: its columns depend on the grants
				procs := domainProcedures(st, d, log)
				if reg != nil {
					procs.Observe = observeCompactions(reg.Compactions())
				}
				procs.Grants = grants
				procs.CheckIngestFiles = checkIngest
				procs.Ingest = func(ctx context.Context, dataset string, files []string, o udf.IngestOptions) (udf.IngestResult, error) {
					var keep []ingest.KeepColumn
					if o.KeepColumns != "" {
						var err error
						if keep, err = ingest.ParseKeepColumns(o.KeepColumns); err != nil {
							return udf.IngestResult{}, &udf.InvalidArgument{Err: fmt.Errorf("ingest: keep_columns: %v", err)}
						}
					}
					sum, err := ingest.Run(ctx, ingest.Options{Store: st, Dataset: dataset, Files: files, KeepColumns: keep, KeepColumnsName: "keep_columns", Log: log})
					if err != nil {
						return udf.IngestResult{}, err
					}
					var rejected int64
					for _, n := range sum.Rejected {
						rejected += n
					}
					if err := u.refresh(ctx); err != nil {
						return udf.IngestResult{}, fmt.Errorf("ingested %s, but the server did not load it: %w", sum.Version, err)
					}
					return udf.IngestResult{Version: sum.Version, Dataset: sum.Dataset, DatasetID: sum.DatasetID, Read: sum.Read,
						Normalized: sum.Normalized, Written: sum.Written, Rejected: rejected, RejectsKey: sum.RejectsKey}, nil
				}
				if err := udf.RegisterProcedures(ctx, db, procs); err != nil {
					return err
				}
				grants.OnChange = func() {
					// prepared statements folded the old grants into their
					// file list: replacing the view makes DuckDB bind those
					// over it again, and the read epoch it moves makes the
					// server prepare all others again (sqlserver E1)
					if err := u.updateURLsView(context.Background()); err != nil {
						log.Warn("re-create the urls view after a grants change", "err", err)
					}
				}
				funcs := udf.URLIndexFuncs{Snapshot: u.x.Current, Domain: u.domain, Grants: grants.Current, LakePaths: u.lakePaths, URLsViewExtra: u.urlsViewExtra}
				urlFuncs = funcs
				// the hot path: SELECT * FROM domain_datasets($1) and
				// domain_urls($1, ...) answered without DuckDB, by the same code
				if native != nil {
					for name, nf := range funcs.Native() {
						native[name] = nf
					}
					// and domains WHERE domain = $1, rewritten into
					// domain_record($1) (pgsql.PointLookups)
					if nf, ok := nativeDomainLookup(d); ok {
						native[records.LookupFunction] = nf
					}
				}
				if err := udf.RegisterURLIndex(ctx, db, funcs); err != nil {
					return err
				}
				if err := u.updateURLsView(ctx); err != nil {
					return err
				}
				// and urls WHERE domain = $1 [AND dataset_id = $2],
				// rewritten into urls_by_domain[_dataset](…), with the
				// view's columns (replaced when they change, below)
				if nfs, ok := u.nativeURLsByDomain(funcs); ok && native != nil {
					maps.Copy(native, nfs)
				}
				return nil
			},
			// last: psql's \df and \sf describe every function registered above
			func(ctx context.Context, db *sql.DB) error { return udf.InstallFunctionDocs(ctx, db) },
		},
		Log: log,
	})
	if err != nil {
		return err
	}
	defer engine.Close()
	log.Info("dhsi serving", "store", st.String(), "postgres", srv.Addr().String(), "duckdb", filepath.Join(cache, "dhsi.duckdb"))
	fmt.Fprintf(stdout, "dhsi %s: serving %s\n  psql -h %s -p %s\n", version, st.String(), hostOf(srv.Addr().String()), portOf(srv.Addr().String()))
	if sock := srv.SocketPath(); sock != "" {
		if filepath.Dir(sock) == "/var/run/postgresql" {
			fmt.Fprintf(stdout, "  psql -p %s\n", portOf(srv.Addr().String()))
		} else {
			fmt.Fprintf(stdout, "  psql -h %s -p %s\n", filepath.Dir(sock), portOf(srv.Addr().String()))
		}
	}

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ctx) }()
	if *httpAddr != "" {
		host, _, err := net.SplitHostPort(*httpAddr)
		if err != nil {
			return fmt.Errorf("%w: --http %q: %v", errUsage, *httpAddr, err)
		}
		if len(userList) == 0 && host != "127.0.0.1" && host != "localhost" && host != "::1" {
			return fmt.Errorf("refusing to serve the JSON API on %q without users: configure users (--user or --users-file), or listen on 127.0.0.1", *httpAddr)
		}
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return fmt.Errorf("--http: %w", err)
		}
		api := httpapi.Config{Snapshot: urls.x.Current, Domain: urls.domainNote, URL: urls.parseURL, Log: log, Visible: urlFuncs.VisibleDatasetIDs,
			Ready: func(ctx context.Context) error {
				// the store answers: a Head of the manifest (a missing
				// manifest is a new store, which is ready too)
				if _, err := st.Head(ctx, catalog.ManifestKey); err != nil && !errors.Is(err, store.ErrNotFound) {
					err = fmt.Errorf("store %s: %w", st.String(), err)
					if len(userList) > 0 {
						// /readyz asks for no password: with users, a
						// stranger may call it, and the store's name and
						// error name host paths (docs/security.md, "Host
						// paths"); the log keeps them
						log.Warn("not ready", "err", err)
						return errors.New("the store does not answer; the server's log has the cause")
					}
					return err
				}
				return nil
			}}
		if len(userList) > 0 {
			api.Authenticate = srv.CheckPassword
		}
		hs := &http.Server{Handler: httpapi.New(api), ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- hs.Serve(ln) }()
		defer hs.Close()
		fmt.Fprintf(stdout, "  curl http://%s/v1/domain/example.com\n", ln.Addr())
	}
	if reg != nil {
		reg.GaugeFunc("dhsi_sessions", "Open client sessions.", func() float64 { return float64(len(srv.Sessions())) })
		reg.Info("dhsi_index_version_info", "The URL index version served (value 1).", "version", func() string { return urls.x.Current().Version.Version })
		reg.GaugeFunc("dhsi_index_version_age_seconds", "Age of the URL index version served (since it was created).", func() float64 {
			if c := urls.x.Current().Version.CreatedAt; !c.IsZero() {
				return time.Since(c).Seconds()
			}
			return 0
		})
		reg.GaugeFunc("dhsi_refresh_age_seconds", "Time since the server's view of the store (records, index, grants) was last refreshed completely.", func() float64 {
			return time.Since(time.Unix(0, lastRefresh.Load())).Seconds()
		})
		reg.GaugeFunc("dhsi_grants_version", "Version of the dataset grants enforced.", func() float64 { return float64(grants.Current().Version()) })
		reg.Caches(func() []metrics.Cache {
			var out []metrics.Cache
			for _, c := range append(urls.x.CacheStats(), domains.CacheStats()) {
				out = append(out, metrics.Cache{Name: c.Name, Hits: c.Hits, Misses: c.Misses, Evictions: c.Evictions, Used: c.Used, Limit: c.Limit})
			}
			return out
		})
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", reg.Handler())
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go ms.Serve(ln)
		defer ms.Close()
		fmt.Fprintf(stdout, "  curl http://%s/metrics\n", ln.Addr())
	}
	if *pprofAddr != "" {
		if host, _, err := net.SplitHostPort(*pprofAddr); err != nil || (host != "127.0.0.1" && host != "localhost" && host != "::1") {
			return fmt.Errorf("--pprof %q: give a loopback address (the profiler has no authentication)", *pprofAddr)
		}
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fmt.Errorf("--pprof: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		ps := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go ps.Serve(ln)
		defer ps.Close()
	}
	if native != nil {
		// after datapackage.json's fields change, statements prepared from
		// then on are answered natively under the new schema (until the
		// new lookup is in place, a stale one sends them to DuckDB)
		domains.OnSchemaChange(func() {
			if nf, ok := nativeDomainLookup(domains); ok {
				srv.SetNativeFunction(records.LookupFunction, nf)
			} else {
				srv.SetNativeFunction(records.LookupFunction, sqlserver.NativeFunction{Stale: func() bool { return true }})
			}
		})
	}
	if native != nil {
		// a new version or grant may change the urls view's columns: the
		// native urls_by_domain functions follow them (stale until then)
		install := func() {
			nfs, ok := urls.nativeURLsByDomain(urlFuncs)
			for _, name := range []string{udf.URLsByDomainFunction, udf.URLsByDomainDatasetFunction} {
				nf, found := nfs[name]
				if !ok || !found {
					nf = sqlserver.NativeFunction{Stale: func() bool { return true }}
				}
				srv.SetNativeFunction(name, nf)
			}
		}
		urls.onViewColumns.Store(&install)
		install() // a change before the hook was in place
	}
	go refreshLoop(ctx, *refresh, log, &lastRefresh, domains.Refresh, urls.refresh, func(ctx context.Context) error {
		_, err := grants.Refresh(ctx)
		return err
	})
	// SIGHUP reloads the users file (and --user flags) and re-reads the
	// grants, without dropping a session
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := func() {
		if *usersFile != "" {
			l, err := loadUsers(*usersFile, users)
			if err == nil {
				err = srv.SetUsers(l)
			}
			if err != nil {
				log.Error("SIGHUP: users not reloaded; the previous users stay in force", "err", err)
			}
		}
		if _, err := grants.Refresh(ctx); err != nil {
			log.Error("SIGHUP: grants not re-read", "err", redact.Error(err))
		}
		log.Info("SIGHUP: reloaded")
	}
	for {
		select {
		case <-hup:
			reload()
			continue
		case <-ctx.Done():
			// SIGTERM or SIGINT: running statements finish (up to
			// --shutdown-timeout), every session's next message gets FATAL
			// 57P01, and the process exits 0
			log.Info("shutting down", "timeout", shutdownTimeout.String())
			sctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				log.Warn("statements still running at the shutdown timeout were cancelled", "timeout", shutdownTimeout.String())
			}
			return nil
		case err := <-errc:
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
	}
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q", errUsage, level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

func hostOf(addr string) string {
	i := strings.LastIndex(addr, ":")
	return strings.Trim(addr[:i], "[]")
}

func portOf(addr string) string { return addr[strings.LastIndex(addr, ":")+1:] }

// domainProcedures wires CALL compact_shard / compact_all / inbox_put to the
// store, with the schema the server loaded.
func domainProcedures(st store.Store, d *records.Domains, log *slog.Logger) udf.Procedures {
	// one way to make a compiler for every procedure: schema and layout
	// from the store's package as it is at the time of the call, with its
	// ETag, so a resharding that begins meanwhile is noticed (compiler I7)
	newCompiler := func(ctx context.Context) (*compiler.Compiler, error) {
		cfg, err := records.LoadCompilerConfig(ctx, st)
		if err != nil {
			return nil, err
		}
		return compiler.New(st, cfg, log)
	}
	return udf.Procedures{
		Compiler: newCompiler,
		PutInbox: func(ctx context.Context, domain string, fields map[string]string) (string, error) {
			if _, ok := fields[compiler.DomainField]; !ok {
				fields[compiler.DomainField] = domain
			}
			if fields[compiler.DomainField] != domain {
				return "", fmt.Errorf("inbox_put: the record's domain %q differs from %q", fields[compiler.DomainField], domain)
			}
			if _, ok := fields[compiler.UpdatedAtField]; !ok {
				fields[compiler.UpdatedAtField] = time.Now().UTC().Format(time.RFC3339Nano)
			}
			t := compiler.Table{}
			for k := range fields {
				t.Header = append(t.Header, k)
			}
			sort.Strings(t.Header)
			row := make([]string, len(t.Header))
			for i, k := range t.Header {
				row[i] = fields[k]
			}
			t.Rows = [][]string{row}
			c, err := newCompiler(ctx)
			if err != nil {
				return "", err
			}
			if err := c.WriteInbox(ctx, domain, t); err != nil {
				return "", err
			}
			return compiler.InboxKey(domain), nil
		},
		Changed: d.RefreshAll,
		Reshard: func(ctx context.Context, width int) (udf.ReshardResult, error) {
			r, err := reshard.Run(ctx, st, reshard.Options{Width: width, Log: log})
			if err != nil {
				switch {
				case errors.Is(err, reshard.ErrWidth):
					err = &udf.InvalidArgument{Err: err}
				case errors.Is(err, reshard.ErrOtherResharding):
					err = &udf.NotInPrerequisiteState{Err: err}
				}
				return udf.ReshardResult{}, err
			}
			return udf.ReshardResult{From: r.From, To: r.To, Status: r.Status(), ShardsMoved: r.ShardsMoved, RecordsMoved: r.RecordsMoved,
				BatchesMoved: r.BatchesMoved, Passes: r.Passes, Duration: r.Duration}, nil
		},
	}
}

// refreshLoop keeps the server's views in step with what other processes
// write to the store: domain records and new URL-index versions.
// lastRefresh is when the view was last complete (unix nanoseconds), for
// dhsi_refresh_age_seconds.
func refreshLoop(ctx context.Context, every time.Duration, log *slog.Logger, lastRefresh *atomic.Int64, fns ...func(context.Context) error) {
	lastRefresh.Store(time.Now().UnixNano()) // start-up read the store
	if every <= 0 {
		return
	}
	wait := every
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
			start := time.Now()
			ok := true
			for _, fn := range fns {
				if err := fn(ctx); err != nil && ctx.Err() == nil {
					ok = false
					log.Warn("refresh from the store", "err", redact.Error(err))
				}
			}
			if ok {
				lastRefresh.Store(time.Now().UnixNano())
			}
			// a refresh that took longer than the interval (a large inbox
			// listed on a busy store) is followed by as long a pause: back
			// to back, refreshes of two servers took most of a 2-core
			// machine from the compactors they wait for (the 100,000-domain
			// chaos run)
			wait = max(every, time.Since(start))
		}
	}
}

// nativeDomainLookup is domain_record for sqlserver's native path: the
// domains view's point lookup (pgsql.PointLookups) answered without DuckDB.
func nativeDomainLookup(d *records.Domains) (sqlserver.NativeFunction, bool) {
	n, ok := d.NativeLookup()
	if !ok {
		return sqlserver.NativeFunction{}, false
	}
	nf := sqlserver.NativeFunction{Args: []duckdb.Type{duckdb.TYPE_VARCHAR}, NullMeansNoRows: true, Stale: n.Stale,
		Run: func(ctx context.Context, args []any) ([][]any, error) { return n.Run(ctx, args[0].(string)) }}
	for _, c := range n.Columns {
		// one row at most: every column is unique (a join's key)
		nf.Columns = append(nf.Columns, sqlserver.NativeColumn{Name: c.Name, Type: c.Type, Unique: true})
	}
	return nf, true
}

// ingestDirCheck returns the check CALL ingest applies to a writer's files:
// each must resolve, through any symlink, to a regular file inside dir.
func ingestDirCheck(dir string) (func([]string) error, error) {
	if dir == "" {
		return nil, nil
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("--ingest-dir: %w", err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, fmt.Errorf("--ingest-dir: %w", err)
	}
	return func(files []string) error {
		for _, f := range files {
			if !filepath.IsAbs(f) {
				f = filepath.Join(root, f)
			}
			real, err := filepath.EvalSymlinks(f)
			if err == nil {
				real, err = filepath.Abs(real)
			}
			rel, rerr := filepath.Rel(root, real)
			if err != nil || rerr != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				// one answer for missing and outside: the caller learns
				// nothing about the server's files
				return &access.Denied{Principal: access.Principal{Role: access.Writer}, What: fmt.Sprintf("ingest %q", f), Needs: "a file inside the server's --ingest-dir"}
			}
		}
		return nil
	}, nil
}

// loadUsers reads the users of --users-file and then the --user flags, at
// start-up and again on SIGHUP.
func loadUsers(file string, flags []string) ([]sqlserver.User, error) {
	var out []sqlserver.User
	if file != "" {
		l, err := sqlserver.LoadUsersFile(file)
		if err != nil {
			return nil, fmt.Errorf("--users-file: %w", err)
		}
		out = l
	}
	for _, u := range flags {
		usr, err := sqlserver.ParseUser(u)
		if err != nil {
			// never echo the value: it holds a password
			return nil, fmt.Errorf("%w: --user: %v", errUsage, err)
		}
		out = append(out, usr)
	}
	return out, nil
}

// parseRoleLimits reads --statement-timeout, --max-concurrent-queries and
// --max-sessions.
func parseRoleLimits(timeouts, queries, sessions []string) (map[access.Role]sqlserver.RoleLimits, error) {
	out := map[access.Role]sqlserver.RoleLimits{}
	parse := func(flagName, v string) (access.Role, string, error) {
		name, val, ok := strings.Cut(v, "=")
		role, err := access.ParseRole(name)
		if !ok || err != nil || role == access.Admin {
			return 0, "", fmt.Errorf("%w: --%s %q: want ROLE=VALUE with ROLE reader or writer (admins are not limited)", errUsage, flagName, v)
		}
		return role, val, nil
	}
	for _, v := range timeouts {
		role, val, err := parse("statement-timeout", v)
		if err != nil {
			return nil, err
		}
		d, err := time.ParseDuration(val)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w: --statement-timeout %q: want a positive duration such as 30s", errUsage, v)
		}
		l := out[role]
		l.StatementTimeout = d
		out[role] = l
	}
	// counts sets a count per role from a flag's ROLE=N values, 1 to most
	counts := func(flagName string, values []string, most int, set func(*sqlserver.RoleLimits, int)) error {
		for _, v := range values {
			role, val, err := parse(flagName, v)
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > most {
				return fmt.Errorf("%w: --%s %q: want a count from 1 to %d", errUsage, flagName, v, most)
			}
			l := out[role]
			set(&l, n)
			out[role] = l
		}
		return nil
	}
	if err := counts("max-concurrent-queries", queries, 10000, func(l *sqlserver.RoleLimits, n int) { l.MaxConcurrentQueries = n }); err != nil {
		return nil, err
	}
	if err := counts("max-sessions", sessions, 100000, func(l *sqlserver.RoleLimits, n int) { l.MaxSessions = n }); err != nil {
		return nil, err
	}
	return out, nil
}

// defaultSocketDir is PostgreSQL's socket directory on Debian and most
// Linux distributions when it exists here (psql looks there), else none.
func defaultSocketDir() string {
	const dir = "/var/run/postgresql"
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir
	}
	return ""
}
