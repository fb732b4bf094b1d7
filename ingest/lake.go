package ingest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// DefaultRowGroupRows is the Parquet row-group size of the lake. A first
// page of domain_urls reads the row groups its domain spans; smaller groups
// mean less decoded per page, larger ones better compression. See
// docs/format/lake.md for the measurement behind the choice.
const DefaultRowGroupRows = 16384

// lakeWriter stages normalized rows in an in-process DuckDB (file-backed in
// the work directory, so a large batch spills to disk instead of growing the
// heap) and writes them as sorted, zstd-compressed Parquet.
type lakeWriter struct {
	db   *sql.DB
	conn *sql.Conn
	app  *duckdb.Appender
	rows int64
}

func newLakeWriter(ctx context.Context, workDir, memoryLimit string) (*lakeWriter, error) {
	if memoryLimit == "" {
		memoryLimit = "1GB"
	}
	dsn := filepath.Join(workDir, "staging.duckdb") + "?memory_limit=" + memoryLimit + "&temp_directory=" + filepath.Join(workDir, "spill")
	db, err := sql.Open("duckdb", dsn)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `CREATE OR REPLACE TABLE staging (
		domain VARCHAR, domain_prefix VARCHAR, url_id UBIGINT, url VARCHAR, raw VARCHAR, ts TIMESTAMP)`); err != nil {
		conn.Close()
		db.Close()
		return nil, err
	}
	w := &lakeWriter{db: db, conn: conn}
	err = conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", "staging")
		w.app = a
		return err
	})
	if err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// add stages one URL. raw is stored only when it differs from the
// normalized url (provenance at almost no cost: most raw URLs are already
// canonical).
func (w *lakeWriter) add(domain, prefix string, urlID uint64, url, raw string, ts time.Time) error {
	var rawV, tsV driver.Value
	if raw != url {
		rawV = raw
	}
	if !ts.IsZero() {
		tsV = ts
	}
	w.rows++
	return w.app.AppendRow(domain, prefix, urlID, url, rawV, tsV)
}

// lakeFile is one Parquet file written for the batch.
type lakeFile struct {
	LocalPath string
	Prefix    string // domain_prefix partition
	Name      string // part-....parquet
	Key       string // store key once uploaded
	Rows      int64
	RowGroups int
	Bytes     int64
	// Spans: per domain, the row groups holding its URLs with row counts,
	// in row order.
	Spans map[string][]groupRows
}

type groupRows struct {
	RowGroup uint32
	Rows     uint32
}

// collision is two different URLs of one batch with the same url_id.
type collision struct {
	URLID uint64
	A, B  string
}

// finish deduplicates (one row per domain and normalized URL, keeping the
// latest timestamp), writes Parquet partitioned by domain_prefix, and maps
// every domain to its row groups.
func (w *lakeWriter) finish(ctx context.Context, outDir, filePrefix string, rowGroupRows int) ([]lakeFile, []collision, int64, error) {
	if err := w.app.Close(); err != nil {
		return nil, nil, 0, fmt.Errorf("stage rows: %w", err)
	}
	w.app = nil
	if rowGroupRows <= 0 {
		rowGroupRows = DefaultRowGroupRows
	}
	stmts := []string{
		// physically sorted, so each prefix below is a zone-map-pruned range
		`CREATE OR REPLACE TABLE dedup AS
		 SELECT domain, domain_prefix, url,
		        min_by(url_id, raw_key) AS url_id, min_by(raw, raw_key) AS raw, max(ts) AS ts
		 FROM (SELECT *, coalesce(raw, url) AS raw_key FROM staging)
		 GROUP BY domain, domain_prefix, url
		 ORDER BY domain_prefix, domain, url`,
		`DROP TABLE staging`,
	}
	for _, s := range stmts {
		if _, err := w.conn.ExecContext(ctx, s); err != nil {
			return nil, nil, 0, fmt.Errorf("deduplicate: %w", err)
		}
	}
	var written int64
	if err := w.conn.QueryRowContext(ctx, "SELECT count(*) FROM dedup").Scan(&written); err != nil {
		return nil, nil, 0, err
	}
	// url_id collisions: different URLs, one id (design §1.2 collision guard)
	var cols []collision
	rows, err := w.conn.QueryContext(ctx, `SELECT url_id, min(url), max(url) FROM dedup GROUP BY url_id HAVING count(DISTINCT url) > 1`)
	if err != nil {
		return nil, nil, 0, err
	}
	for rows.Next() {
		var c collision
		if err := rows.Scan(&c.URLID, &c.A, &c.B); err != nil {
			rows.Close()
			return nil, nil, 0, err
		}
		cols = append(cols, c)
	}
	rows.Close()

	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, nil, 0, err
	}
	// One COPY per prefix rather than PARTITION_BY: DuckDB's partitioned
	// writer interleaves its threads' output, and the lake's promise is that
	// one domain's URLs are contiguous and sorted within a file.
	var prefixes []string
	prows, err := w.conn.QueryContext(ctx, "SELECT DISTINCT domain_prefix FROM dedup ORDER BY 1")
	if err != nil {
		return nil, nil, 0, err
	}
	for prows.Next() {
		var p string
		if err := prows.Scan(&p); err != nil {
			prows.Close()
			return nil, nil, 0, err
		}
		prefixes = append(prefixes, p)
	}
	prows.Close()
	var paths []string
	for _, p := range prefixes {
		dir := filepath.Join(outDir, "domain_prefix="+p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, 0, err
		}
		path := filepath.Join(dir, filePrefix+".parquet")
		// url_id is not stored: it is xxh3(raw, or url where raw is NULL),
		// recomputed in nanoseconds on read, and as random 64-bit values it
		// would cost 8 incompressible bytes per URL
		copySQL := fmt.Sprintf(`COPY (SELECT domain, url, raw, ts FROM dedup WHERE domain_prefix = %s ORDER BY domain, url)
			TO %s (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 6, ROW_GROUP_SIZE %d)`,
			quoteLiteral(p), quoteLiteral(path), rowGroupRows)
		if _, err := w.conn.ExecContext(ctx, copySQL); err != nil {
			return nil, nil, 0, fmt.Errorf("write parquet for prefix %s: %w", p, err)
		}
		paths = append(paths, path)
	}
	sort.Strings(paths)
	var files []lakeFile
	for _, p := range paths {
		f, err := w.describe(ctx, p)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("describe %s: %w", p, err)
		}
		files = append(files, f)
	}
	return files, cols, written, nil
}

// describe reads a written file's row groups and which domains they hold.
func (w *lakeWriter) describe(ctx context.Context, path string) (lakeFile, error) {
	f := lakeFile{LocalPath: path, Name: filepath.Base(path), Spans: map[string][]groupRows{}}
	f.Prefix = strings.TrimPrefix(filepath.Base(filepath.Dir(path)), "domain_prefix=")
	fi, err := os.Stat(path)
	if err != nil {
		return f, err
	}
	f.Bytes = fi.Size()
	q := `WITH groups AS (
		  SELECT row_group_id, row_group_num_rows AS n,
		         sum(row_group_num_rows) OVER (ORDER BY row_group_id ROWS UNBOUNDED PRECEDING) - row_group_num_rows AS start
		  FROM (SELECT DISTINCT row_group_id, row_group_num_rows FROM parquet_metadata(?))),
		r AS (SELECT domain, file_row_number FROM read_parquet(?, file_row_number = true))
		SELECT r.domain, g.row_group_id, count(*) AS n, min(r.file_row_number) AS first
		FROM r ASOF JOIN groups g ON r.file_row_number >= g.start
		GROUP BY ALL ORDER BY first`
	rows, err := w.conn.QueryContext(ctx, q, path, path)
	if err != nil {
		return f, err
	}
	defer rows.Close()
	groups := map[int64]bool{}
	for rows.Next() {
		var d string
		var rg, n, first int64
		if err := rows.Scan(&d, &rg, &n, &first); err != nil {
			return f, err
		}
		f.Spans[d] = append(f.Spans[d], groupRows{RowGroup: uint32(rg), Rows: uint32(n)})
		f.Rows += n
		groups[rg] = true
	}
	f.RowGroups = len(groups)
	return f, rows.Err()
}

func (w *lakeWriter) close() {
	if w.app != nil {
		w.app.Close()
	}
	if w.conn != nil {
		w.conn.Close()
	}
	if w.db != nil {
		w.db.Close()
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
