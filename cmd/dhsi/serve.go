package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/httpapi"
	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/migrations"
	"github.com/dhsi/dhsi/sqlserver"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/udf"
	"github.com/dhsi/dhsi/urlnorm"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	var (
		listen      = fs.String("listen", "127.0.0.1:5433", "PostgreSQL protocol address; a non-loopback address requires --user or --users-file")
		memoryLimit = fs.String("duckdb-memory-limit", "", "DuckDB memory_limit, e.g. 4GB (default: DuckDB's, 80% of RAM)")
		threads     = fs.Int("duckdb-threads", 0, "DuckDB worker threads (default: one per core)")
		tempDir     = fs.String("duckdb-temp-dir", "", "where DuckDB spills larger-than-memory work (default: <cache-dir>/duckdb.tmp)")
		usersFile   = fs.String("users-file", "", "file of name:password lines; enables SCRAM-SHA-256 authentication")
		tlsCert     = fs.String("tls-cert", "", "TLS certificate (PEM) for sslmode=require and stronger")
		tlsKey      = fs.String("tls-key", "", "TLS private key (PEM)")
		logLevel    = fs.String("log-level", "info", "log level: debug, info, warn, error")
		noNative    = fs.Bool("no-native", false, "send every query through DuckDB, even the prepared lookups the server can answer from the index itself (for comparison)")
		httpAddr    = fs.String("http", "", "also serve the JSON API (GET /v1/domain/{d}, .../datasets/{id}/urls) on this address, e.g. 127.0.0.1:8080")
		blockCache  = fs.Int64("block-cache-mb", 256, "memory for byte ranges of remote Parquet files (S3 stores)")
		rowCache    = fs.Int64("row-cache-mb", catalog.DefaultRowCacheBytes>>20, "memory for decoded URL rows of hot domains (domain_urls pages); 0 turns it off")
		pprofAddr   = fs.String("pprof", "", "serve Go's profiler (net/http/pprof) on this address, e.g. 127.0.0.1:6060; loopback only")
		refresh     = fs.Duration("refresh-interval", 2*time.Second, "how often the server re-lists the store to pick up records written by other processes (the views are at most this stale; CALLs refresh at once)")
		users       multiFlag
	)
	fs.Var(&users, "user", "name:password of a user (repeatable); enables SCRAM-SHA-256 authentication")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dhsi serve [flags]\n\nServes the index over the PostgreSQL protocol. With no flags it uses ./dhsi-data\nand listens on 127.0.0.1:5433 accepting any user without a password (loopback only).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	log, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	passwords := map[string]string{}
	if *usersFile != "" {
		m, err := sqlserver.LoadUsersFile(*usersFile)
		if err != nil {
			return fmt.Errorf("--users-file: %w", err)
		}
		passwords = m
	}
	for _, u := range users {
		name, pw, ok := strings.Cut(u, ":")
		if !ok {
			return fmt.Errorf("%w: --user %q: want name:password", errUsage, u)
		}
		passwords[name] = pw
	}

	st, err := sf.open(ctx, log)
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
	native := map[string]sqlserver.NativeFunction{} // filled by the Init hook below
	if *noNative {
		native = nil
	}
	var domains *catalog.Domains
	var urls *urlService
	srv, engine, err := sqlserver.Open(ctx, sqlserver.Options{
		Server: sqlserver.Config{Listen: *listen, Users: passwords, TLSCert: *tlsCert, TLSKey: *tlsKey, NullUnsafeFunctions: udf.TableFunctions, NativeFunctions: native,
			TableFunctionArgs: map[string][]uint32{
				"domain_datasets": {sqlserver.OIDText},
				"domain_urls":     {sqlserver.OIDText, sqlserver.OIDInt4, sqlserver.OIDInt8, sqlserver.OIDInt8},
				"compact_shard":   {sqlserver.OIDText},
				"inbox_put":       {sqlserver.OIDText, sqlserver.OIDText},
				"ingest":          {sqlserver.OIDText, sqlserver.OIDText},
			}},
		Engine: sqlserver.EngineConfig{
			Path:        filepath.Join(cache, "dhsi.duckdb"),
			MemoryLimit: *memoryLimit,
			Threads:     *threads,
			TempDir:     *tempDir,
		},
		Init: []func(context.Context, *sql.DB) error{
			func(ctx context.Context, db *sql.DB) error { return migrations.Apply(ctx, db) },
			func(ctx context.Context, db *sql.DB) error {
				d, err := catalog.OpenDomains(ctx, st, db, log)
				if err != nil {
					return fmt.Errorf("domain records: %w", err)
				}
				domains = d
				layout, err := catalog.LayoutOf(d.Package())
				if err != nil {
					return err
				}
				if err := udf.Register(ctx, db, layout); err != nil {
					return err
				}
				norm, err := urlnorm.NewNormalizer(urlnorm.Config{})
				if err != nil {
					return err
				}
				if err := udf.RegisterURLFuncs(ctx, db, norm); err != nil {
					return err
				}
				u, err := newURLService(ctx, st, db, catalog.URLIndexOptions{BlockCacheBytes: *blockCache << 20, RowCacheBytes: *rowCache << 20, Log: log})
				if err != nil {
					return err
				}
				urls = u
				procs := domainProcedures(st, d, log)
				procs.Ingest = func(ctx context.Context, dataset string, files []string) (udf.IngestResult, error) {
					sum, err := ingest.Run(ctx, ingest.Options{Store: st, Dataset: dataset, Files: files, Log: log})
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
				funcs := udf.URLIndexFuncs{Snapshot: u.x.Current, Domain: u.domain}
				// the hot path: SELECT * FROM domain_datasets($1) and
				// domain_urls($1, ...) answered without DuckDB, by the same code
				if native == nil {
					return udf.RegisterURLIndex(ctx, db, funcs)
				}
				for name, nf := range funcs.Native() {
					native[name] = nf
				}
				return udf.RegisterURLIndex(ctx, db, funcs)
			},
		},
		Log: log,
	})
	if err != nil {
		return err
	}
	defer engine.Close()
	log.Info("dhsi serving", "store", st.String(), "postgres", srv.Addr().String(), "duckdb", filepath.Join(cache, "dhsi.duckdb"))
	fmt.Fprintf(stdout, "dhsi %s: serving %s\n  psql -h %s -p %s\n", version, st.String(), hostOf(srv.Addr().String()), portOf(srv.Addr().String()))

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ctx) }()
	if *httpAddr != "" {
		if host, _, err := net.SplitHostPort(*httpAddr); err == nil && host != "127.0.0.1" && host != "localhost" && host != "::1" {
			log.Warn("the HTTP API has no authentication and listens beyond loopback", "addr", *httpAddr)
		}
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return fmt.Errorf("--http: %w", err)
		}
		hs := &http.Server{Handler: httpapi.New(httpapi.Config{Snapshot: urls.x.Current, Domain: urls.domainNote, Log: log}), ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- hs.Serve(ln) }()
		defer hs.Close()
		fmt.Fprintf(stdout, "  curl http://%s/v1/domain/example.com\n", ln.Addr())
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
	go refreshLoop(ctx, *refresh, log, domains.Refresh, urls.refresh)
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		done := make(chan struct{})
		go func() { srv.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			log.Warn("sessions did not end within 10s")
		}
		return nil
	case err := <-errc:
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
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
func domainProcedures(st store.Store, d *catalog.Domains, log *slog.Logger) udf.Procedures {
	// one way to make a compiler for every procedure: schema and layout
	// from the package the server holds at the time of the call
	newCompiler := func() (*compiler.Compiler, error) {
		cfg, err := catalog.CompilerConfig(d.Package())
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
			c, err := newCompiler()
			if err != nil {
				return "", err
			}
			if err := c.WriteInbox(ctx, domain, t); err != nil {
				return "", err
			}
			return compiler.InboxKey(domain), nil
		},
		Changed: d.Refresh,
	}
}

// refreshLoop keeps the server's views in step with what other processes
// write to the store: domain records and new URL-index versions.
func refreshLoop(ctx context.Context, every time.Duration, log *slog.Logger, fns ...func(context.Context) error) {
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, fn := range fns {
				if err := fn(ctx); err != nil && ctx.Err() == nil {
					log.Warn("refresh from the store", "err", err)
				}
			}
		}
	}
}
