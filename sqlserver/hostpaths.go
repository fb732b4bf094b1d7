package sqlserver

// Host paths: where the server keeps its files is the host's business, not
// a session's. A reader who learns the cache directory, the store's root,
// the temp directory and the user the server runs as (DuckDB's
// secret_directory is under its home: /root/.duckdb/stored_secrets) has a
// map of the host to aim at. Measured in stop 40 as a reader on a server
// with users: duckdb_settings(), pg_settings, current_setting(),
// duckdb_databases(), the views pragma_database_list and duckdb_databases,
// and DuckDB's own system.pg_catalog.pg_settings all showed them, and
// duckdb_extensions() failed with the home directory in its message.
//
// Invariants, for every session that is not an admin's:
//
//	H1. No catalog answer holds a host path: the settings of
//	    hostPathSettings are left out of pg_settings and current_setting()
//	    (the dhsi_duck_settings variable they read omits them), and the
//	    table functions and views that show them (duckdb_settings(),
//	    duckdb_databases(), duckdb_extensions(), pragma_database_list),
//	    DuckDB's own catalog (the qualifier system. but as system.main) and
//	    DuckDB's own current_setting() (qualified) are refused (P2,
//	    authorize.go), as PostgreSQL shows data_directory only to those
//	    allowed to read all settings; a pg_catalog. qualifier in any case
//	    names the server's catalog (pgsql rule 3).
//	H2. No error message names a host directory: each of hiddenHostDirs in a
//	    message, detail or hint reads "<server dir>" (sendError), and so in
//	    the rows of a plan (prepared.plan, sendRows). EXPLAIN ANALYZE names
//	    every file a scan read in its operators' extra information, cut
//	    across the lines of its boxes where no replacement finds it, so a
//	    non-admin's profile leaves that information out
//	    (hidePlanFiles: plain EXPLAIN still shows filters and projections,
//	    and names no file). Other rows are not rewritten: a URL may well
//	    contain "/tmp/".

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dhsi/dhsi/access"
)

// hostPathSettings are DuckDB 1.5.5's settings whose values name host
// files or directories (every setting of duckdb_settings() whose value is
// a path on a server, or may be one once set).
var hostPathSettings = []string{
	"allowed_directories", "allowed_paths", "temp_directory", "secret_directory",
	"extension_directory", "extension_directories", "home_directory", "file_search_path",
	"http_logging_output", "log_query_path", "profile_output", "profiling_output",
}

// hostDirPlaceholder stands for a host directory in what a non-admin is
// told (H2).
const hostDirPlaceholder = "<server dir>"

// hostDirsToHide returns the directories H2 hides from the session: none
// for an admin.
func (s *session) hostDirsToHide() []string {
	if s.principal.Role == access.Admin {
		return nil
	}
	return s.srv.hiddenHostDirs()
}

// hiddenHostDirs returns the directories H2 hides, longest first (a
// directory inside another is replaced whole, not its parent's prefix of
// it): the values of hostPathSettings, the files of attached databases and
// the directories holding them, the user's home, and Config.HostDirs.
func (srv *Server) hiddenHostDirs() []string {
	dirs, _ := srv.hostDirs.get(func() ([]string, error) {
		// not a statement's context: a cancelled first caller must not
		// leave the list short for the server's life
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		seen := map[string]bool{}
		add := func(p string) {
			p = strings.TrimSuffix(strings.TrimSpace(p), string(filepath.Separator))
			if p == "" {
				return
			}
			if !filepath.IsAbs(p) {
				// as given (a relative --store), if it cannot be a word
				if strings.ContainsRune(p, filepath.Separator) && !strings.HasPrefix(p, ".."+string(filepath.Separator)) {
					seen[p] = true
				}
				abs, err := filepath.Abs(p)
				if err != nil {
					return
				}
				p = abs
			}
			if filepath.Dir(p) != p { // "/" alone would rewrite every message
				seen[p] = true
			}
		}
		for _, d := range srv.cfg.HostDirs {
			add(d)
		}
		if home, err := os.UserHomeDir(); err == nil {
			add(home)
		}
		// a database's file, and the directory it is in (the cache
		// directory: --cache-dir); lists read "[a, b]"
		q := `SELECT value, name = 'allowed_paths' FROM duckdb_settings() WHERE name IN ('` + strings.Join(hostPathSettings, "', '") + `')
			UNION ALL SELECT path, true FROM duckdb_databases() WHERE path <> ''`
		rows, err := srv.engine.db.QueryContext(ctx, q)
		if err == nil {
			for rows.Next() {
				var v string
				var files bool
				if rows.Scan(&v, &files) == nil {
					for _, p := range strings.Split(strings.Trim(v, "[]"), ",") {
						add(p)
						if files {
							add(filepath.Dir(strings.TrimSpace(p)))
						}
					}
				}
			}
			rows.Close()
		}
		out := make([]string, 0, len(seen))
		for d := range seen {
			out = append(out, d)
		}
		sort.Slice(out, func(i, j int) bool {
			if len(out[i]) != len(out[j]) {
				return len(out[i]) > len(out[j])
			}
			return out[i] < out[j]
		})
		return out, nil
	})
	return dirs
}

// hideHostDirs is H2: e with every host directory in its words replaced.
// It returns e itself when nothing needed replacing.
func hideHostDirs(e *Error, dirs []string) *Error {
	if len(dirs) == 0 {
		return e
	}
	msg, detail, hint := hideHostDirsIn(e.Message, dirs), hideHostDirsIn(e.Detail, dirs), hideHostDirsIn(e.Hint, dirs)
	if msg == e.Message && detail == e.Detail && hint == e.Hint {
		return e
	}
	c := *e
	c.Message, c.Detail, c.Hint = msg, detail, hint
	return &c
}

// hideHostDirsIn is s with each of dirs (longest first) replaced where it
// stands as a path of its own.
func hideHostDirsIn(s string, dirs []string) string {
	for _, d := range dirs {
		if strings.Contains(s, d) {
			s = replaceDir(s, d)
		}
	}
	return s
}

// replaceDir replaces dir in s where it stands as a path of its own: not
// inside a longer name (/tmp/x in /tmp/xy) nor a URL's path
// (http://e.com/tmp/x), so that a message about a user's URL keeps its
// words.
func replaceDir(s, dir string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, dir)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(dir)
		before := i == 0 || !pathByte(s[i-1]) || strings.HasSuffix(s[:i], "file://")
		after := end == len(s) || s[end] == filepath.Separator || !pathByte(s[end])
		b.WriteString(s[:i])
		if before && after {
			b.WriteString(hostDirPlaceholder)
		} else {
			b.WriteString(dir)
		}
		s = s[end:]
	}
}

// pathByte reports a byte that can continue a file name or a URL.
func pathByte(c byte) bool {
	return c == '/' || c == '.' || c == '-' || c == '_' || c == '~' || c == '%' ||
		'0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}

// hidePlanFiles sets a non-admin session's profiling metrics to DuckDB's
// defaults without EXTRA_INFO (H2), with profiling itself off. The
// settings are the connection's own, and a non-admin may not set DuckDB
// settings (P1).
func (e *Engine) hidePlanFiles(sessionCtx context.Context, conn driver.ExecerContext) error {
	metrics, err := e.readerProfiling.get(func() (string, error) {
		// not the session's context: a cancelled first caller must not
		// fail every later session
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var v string
		if err := e.db.QueryRowContext(ctx, "SELECT value FROM duckdb_settings() WHERE name = 'custom_profiling_settings'").Scan(&v); err != nil {
			return "", fmt.Errorf("profiling settings: %w", err)
		}
		m := map[string]string{}
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return "", fmt.Errorf("profiling settings %q: %w", v, err)
		}
		delete(m, "EXTRA_INFO")
		b, err := json.Marshal(m)
		return string(b), err
	})
	if err != nil {
		return err
	}
	if _, err = conn.ExecContext(sessionCtx, "SET custom_profiling_settings = "+quoteLiteral(metrics), nil); err != nil {
		return err
	}
	// DuckDB 1.5.5 turns profiling on with custom_profiling_settings
	// (enable_profiling = query_tree) and, with no profiling_output, prints
	// each statement's text and profile to the process's stderr: 2.2 KB of
	// log a statement, a 3 MB statement's 3 MB, raw URLs among them. Off
	// again, EXPLAIN ANALYZE keeps the metrics set above.
	_, err = conn.ExecContext(sessionCtx, "PRAGMA disable_profiling", nil)
	return err
}
