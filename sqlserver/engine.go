package sqlserver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/internal/duckdistance"
	"github.com/dhsi/dhsi/internal/duckpattern"
)

// EngineConfig configures the embedded DuckDB database.
type EngineConfig struct {
	// Path of the DuckDB database file. Empty means in-memory. DuckDB lets one
	// process open a file, so only the server opens it; ingest and compact
	// work on the store, never on this file.
	Path string
	// MemoryLimit is DuckDB's memory_limit, e.g. "4GB". Empty keeps DuckDB's
	// default (80% of physical memory).
	MemoryLimit string
	// Threads is DuckDB's worker thread count; 0 keeps DuckDB's default (the
	// number of cores).
	Threads int
	// TempDir is where DuckDB spills larger-than-memory work. Empty means
	// "<Path>.tmp" for a file database and DuckDB's default otherwise.
	TempDir string
	// TempLimit is the most disk DuckDB may fill in TempDir (its spills and
	// every session's TEMP tables), e.g. "20GiB"; "0KiB" means no spilling.
	// Empty keeps DuckDB's default (90% of the free space). It is SET once
	// the database is open: DuckDB 1.5.5 takes max_temp_directory_size from
	// the connection string and reports it, but does not enforce it
	// (measured: a TEMP table wrote 4.3 GB past a 100 MiB limit given so).
	TempLimit string
	// Sandbox, when set, confines DuckDB after start-up (LockDown): it reads
	// and writes files only under ReadDirs and loads no extension from
	// outside. nil leaves DuckDB as powerful as the server process, which
	// DHSI allows only when every session is an admin (no users).
	Sandbox *Sandbox
}

// Sandbox is what DuckDB may still reach once locked down.
type Sandbox struct {
	// ReadDirs are the directories DuckDB may read (the URL lake, the
	// server's scratch for the urls view). Non-admin sessions cannot name
	// files at all (authorize.go P2, P3); these are for DHSI's own views.
	ReadDirs []string
}

// Engine is the embedded DuckDB database shared by every session.
type Engine struct {
	connector *duckdb.Connector
	db        *sql.DB
	// Name is the DuckDB catalog name of the database ("dhsi" for dhsi.duckdb,
	// "memory" in memory); it is what current_database() returns.
	Name string

	tfNames lazy[map[string]bool]
	// readerProfiling holds the profiling metrics of a non-admin
	// (hostpaths.go)
	readerProfiling lazy[string]
	// reserved holds DuckDB's reserved words (authorize.go, requireTemp)
	reserved lazy[map[string]bool]
	// allKeywords holds all of DuckDB's keywords (keywords)
	allKeywords lazy[map[string]bool]
	// macros holds the built-in macros' costs (P6, macros.go)
	macros  lazy[map[string]macroCost]
	stmts   statementCounter // L1 (stmtcount.go)
	sandbox *Sandbox
	// server is the wire server on this engine, once built: the session
	// functions (activity.go) read it at call time
	server atomic.Pointer[Server]
}

// lockHolder finds the pid in DuckDB's "Conflicting lock is held in ...
// (PID n)" error.
var lockHolder = regexp.MustCompile(`Could not set lock on file .*Conflicting lock is held in .*\(PID (\d+)\)`)

// shimCatalog is the attached in-memory database that holds DHSI's
// pg_catalog shim, and shimSchema its schema. Every session's search_path
// ends with it, so it answers pg_catalog names without ever shadowing a
// user's relation.
const (
	shimCatalog = "dhsi_sys"
	shimSchema  = "pg"
)

// OpenEngine opens (or creates) the DuckDB database and installs the
// PostgreSQL catalog shim.
func OpenEngine(ctx context.Context, cfg EngineConfig, shimSQL []string) (*Engine, error) {
	q := url.Values{}
	if cfg.MemoryLimit != "" {
		q.Set("memory_limit", cfg.MemoryLimit)
	}
	if cfg.Threads > 0 {
		q.Set("threads", strconv.Itoa(cfg.Threads))
	}
	tmp := cfg.TempDir
	if tmp == "" && cfg.Path != "" {
		tmp = cfg.Path + ".tmp"
	}
	if tmp != "" {
		q.Set("temp_directory", tmp)
	}
	name := "memory"
	dsn := ""
	if cfg.Path != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o755); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
		dsn = (&url.URL{Path: cfg.Path}).String()
		name = strings.TrimSuffix(filepath.Base(cfg.Path), filepath.Ext(cfg.Path))
	}
	if enc := q.Encode(); enc != "" {
		dsn += "?" + enc
	}
	connector, err := duckdb.NewConnector(dsn, nil)
	if err != nil {
		if m := lockHolder.FindStringSubmatch(err.Error()); m != nil {
			// one sentence, not DuckDB's: another server has this store
			return nil, fmt.Errorf("another dhsi serve (pid %s) already serves from %s: stop it, or give this one its own --cache-dir (two servers may share a store, not a cache directory)", m[1], filepath.Dir(cfg.Path))
		}
		return nil, fmt.Errorf("open duckdb %q: %w", cfg.Path, err)
	}
	e := &Engine{connector: connector, db: sql.OpenDB(connector), Name: name, sandbox: cfg.Sandbox}
	e.db.SetMaxIdleConns(1)
	if cfg.TempLimit != "" {
		if _, err := e.db.ExecContext(ctx, "SET GLOBAL max_temp_directory_size = "+quoteLiteral(cfg.TempLimit)); err != nil {
			e.Close()
			return nil, fmt.Errorf("max_temp_directory_size: %w", err)
		}
	}
	if err := e.setup(ctx, shimSQL); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// sharedExpressionDepth is DuckDB's max_expression_depth for every
// connection but an admin's session (duckExpressionDepth). DuckDB's binder
// takes time that grows with the cube of an expression's depth or worse,
// and neither statement_timeout nor a cancel reaches it: 900 levels of
// row( took a reader 76 s of a core, of || 37 s, of + 18 s, of abs( 11 s,
// 3 KB of text each. DuckDB's parser refuses a deeper expression at once
// (under a millisecond); at 200 levels the slowest of those shapes takes
// 0.5 s. No tool writes expressions that deep: an OR or AND chain and an
// IN list are flat to DuckDB (5,000 ORs bind in 0.6 s).
const (
	sharedExpressionDepth = 200
	duckExpressionDepth   = 1000 // DuckDB's default
)

func (e *Engine) setup(ctx context.Context, shimSQL []string) error {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// the default of every connection opened from here on; an admin's
	// session raises its own (server.go)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET GLOBAL max_expression_depth = %d", sharedExpressionDepth)); err != nil {
		return fmt.Errorf("max_expression_depth: %w", err)
	}
	if err := e.registerActivity(ctx, conn); err != nil {
		return fmt.Errorf("register session functions: %w", err)
	}
	// LIKE, ILIKE and GLOB in linear time, before any session and for
	// every one, an admin's too: DuckDB's own backtrack past every cancel
	// (internal/patmatch)
	if err := duckpattern.Register(conn); err != nil {
		return fmt.Errorf("register pattern functions: %w", err)
	}
	// edit distances bounded, for the same reason (internal/duckdistance)
	if err := duckdistance.Register(conn); err != nil {
		return fmt.Errorf("register edit distances: %w", err)
	}
	stmts := []string{
		fmt.Sprintf("ATTACH IF NOT EXISTS ':memory:' AS %s", shimCatalog),
		fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %s.%s", shimCatalog, shimSchema),
		fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %s.public", quoteIdent(e.Name)),
		fmt.Sprintf("USE %s.%s", shimCatalog, shimSchema),
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("prepare catalog shim: %w", err)
		}
	}
	// DuckDB binds macros and views when they are created, so a shim object
	// must follow the ones it uses. Rather than keep the file in dependency
	// order by hand, install in rounds until every statement has run.
	pending := shimSQL
	for len(pending) > 0 {
		var next []string
		var errs []error
		for _, s := range pending {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				next = append(next, s)
				errs = append(errs, fmt.Errorf("%w\n%s", err, s))
			}
		}
		if len(next) == len(pending) {
			// every error is reported: the first is often only a statement
			// waiting for one that failed on its own
			return fmt.Errorf("install catalog shim: %w", errors.Join(errs...))
		}
		pending = next
	}
	// the pool may hand this connection to Init hooks: give it back the
	// database's own default schema
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("USE %s.main", quoteIdent(e.Name))); err != nil {
		return err
	}
	return nil
}

// LockDown applies the sandbox, if any, after start-up has created
// everything DHSI needs. Measured on DuckDB 1.5.5 (docs/security.md): once
// enable_external_access is false, DuckDB itself refuses to turn it back on,
// to change allowed_directories or allowed_paths, to load an extension from
// disk or to install one, and to move temp_directory — for every session,
// admins included. lock_configuration is not used: it would also lock
// TimeZone, which every PostgreSQL client sets for its own session; the
// server refuses non-admins every other DuckDB setting instead
// (authorize.go).
func (e *Engine) LockDown(ctx context.Context) error {
	if e.sandbox == nil {
		return nil
	}
	var dirs []string
	for _, d := range e.sandbox.ReadDirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return err
		}
		// a prefix to DuckDB: the separator keeps /lake from admitting /lake-other
		dirs = append(dirs, quoteLiteral(strings.TrimSuffix(abs, string(filepath.Separator))+string(filepath.Separator)))
	}
	stmts := []string{
		"SET autoinstall_known_extensions = false",
		"SET autoload_known_extensions = false",
		"SET allow_community_extensions = false",
		"SET allowed_directories = [" + strings.Join(dirs, ", ") + "]",
		"SET enable_external_access = false",
	}
	for _, s := range stmts {
		if _, err := e.db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("lock down DuckDB (%s): %w", s, err)
		}
	}
	return nil
}

// DB is a database/sql handle on the engine, for start-up work (UDFs, views)
// and tests. Sessions use their own raw connections.
func (e *Engine) DB() *sql.DB { return e.db }

// connect opens a raw DuckDB connection for one client session, with the
// session defaults applied.
func (e *Engine) connect(ctx context.Context) (*duckdb.Conn, error) {
	c, err := e.connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	dc, ok := c.(*duckdb.Conn)
	if !ok {
		c.Close()
		return nil, errors.New("duckdb connector returned an unexpected connection type")
	}
	for _, s := range []string{
		fmt.Sprintf("USE %s.public", quoteIdent(e.Name)),
		"SET search_path = " + quoteLiteral(e.searchPath(nil)),
	} {
		if _, err := dc.ExecContext(ctx, s, nil); err != nil {
			dc.Close()
			return nil, fmt.Errorf("initialise session: %w", err)
		}
	}
	return dc, nil
}

// searchPath renders a client's search_path for DuckDB: the client's schemas
// (public when it names none), then the catalog shim.
func (e *Engine) searchPath(schemas []string) string {
	var parts []string
	for _, s := range clientSchemas(schemas) {
		parts = append(parts, quoteIdent(s))
	}
	parts = append(parts, shimCatalog+"."+shimSchema)
	return strings.Join(parts, ",")
}

// clientSchemas are the schemas of a search_path that name user relations:
// "$user" and pg_catalog are left out (the shim answers pg_catalog), and an
// empty path means public. This is also what current_schemas(false) shows.
func clientSchemas(schemas []string) []string {
	var out []string
	for _, s := range schemas {
		switch s {
		case "", "$user", "pg_catalog":
			continue
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		out = append(out, "public")
	}
	return out
}

// Close closes the database.
func (e *Engine) Close() error {
	e.stmts.close()
	err := e.db.Close()
	if cerr := e.connector.Close(); err == nil {
		err = cerr
	}
	return err
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

var _ driver.Conn = (*duckdb.Conn)(nil)
