// Package bench measures DHSI over the wire against the peers a user would
// pick instead (PostgreSQL 15 with its best schema, DuckDB scanning the same
// Parquet), on a deterministic Zipf-distributed corpus. `dhsi bench` runs it.
package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/store/s3store"
)

// Options configure a run.
type Options struct {
	URLs, Domains, Datasets int
	Clients                 []int
	Duration                time.Duration // per (system, query, client count)
	Warmup                  time.Duration // before each measurement (default min(2s, Duration/4))
	ColdQueries             int           // distinct-domain queries per cold measurement (default 300)
	SkipPG, SkipCold        bool
	SkipDuckDB              bool
	// Grants also measures DHSI with users and grants in force: the same
	// cells as a reader to whom every dataset is granted (so the answers
	// are unchanged and every row passes the grants check), alternated
	// with the plain server as A B B A.
	Grants bool
	// Shape is the corpus's URL shape (default ShapeSimple).
	Shape Shape
	// Client is the load client of the warm cells (default ClientPGX).
	// ClientWirebench measures DHSI against PostgreSQL with wirebench in
	// Rounds rounds (default 2), the cells of wbSpecs, and not the DuckDB
	// peer.
	Client Client
	Rounds int
	// Cells, when not empty, are the keys of the wirebench cells to
	// measure (WirebenchCells lists them); the others are skipped.
	Cells []string
	// UnixSockets: wirebench reaches both servers over unix-domain sockets
	// (each server's .s.PGSQL.<port>) instead of TCP on 127.0.0.1.
	UnixSockets bool
	// NoNative serves DHSI with --no-native: every statement through
	// DuckDB, as before the native path answered it (a "before" column)
	NoNative bool
	// Wirebench is a built wirebench binary (default: build the embedded
	// source with cc into the work directory).
	Wirebench string
	// Queries is the size of the warm cells' Zipf query set (default 20000).
	Queries int
	// MemoryLimit is the --memory-limit of every dhsi serve and ingest
	// child ("": theirs, a quarter of memory).
	MemoryLimit string
	WorkDir     string // kept if given; a removed temp dir otherwise
	Bin         string // the dhsi binary (children: ingest, serve, gc)
	Log         io.Writer
}

// warmQueries is the size of the Zipf query set of the warm cells.
const warmQueries = 20000

// Result is everything the table prints.
type Result struct {
	Opts                  Options
	URLs                  int64
	DatasetIDs            []int32
	BuildWall             time.Duration
	BuildFirst, BuildLast time.Duration
	BuildRSS              int64
	LakeBytes, IndexBytes int64
	ServeRSS              int64
	DHSI, PG, Duck        map[string]cell // key "dd/1", "fp/16", "cold-dd", "cold-fp"
	// with Options.Grants: each configuration's two rounds (A B B A)
	GrantsRounds [2][2]map[string]cell // [without, with][round]
	PGBuild      time.Duration
	PGBytes      int64
	Check        string
	// WB holds the wirebench cells (Options.Client == ClientWirebench).
	WB      []wbCell
	corp    *Corpus
	queries []Query
}

func (o *Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "bench: "+format+"\n", args...)
	}
}

// memoryLimit is the children's --memory-limit flag, if one was chosen.
func (o Options) memoryLimit() []string {
	if o.MemoryLimit == "" {
		return nil
	}
	return []string{"--memory-limit", o.MemoryLimit}
}

// serveFlags are what every dhsi serve the benchmark starts is given
// beyond its store and cache.
func (o Options) serveFlags() []string {
	if o.NoNative {
		return append(o.memoryLimit(), "--no-native")
	}
	return o.memoryLimit()
}

// Run runs the whole benchmark.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.URLs <= 0 || o.Domains <= 1 || o.Datasets <= 0 || len(o.Clients) == 0 || o.Duration <= 0 {
		return nil, fmt.Errorf("bench: need positive --urls, --domains > 1, --datasets, --clients and --duration")
	}
	if o.Warmup == 0 {
		o.Warmup = min(2*time.Second, o.Duration/4)
	}
	if o.ColdQueries == 0 {
		o.ColdQueries = 300
	}
	if o.Client == "" {
		o.Client = ClientPGX
	}
	if o.Client != ClientPGX && o.Client != ClientWirebench {
		return nil, fmt.Errorf("bench: client %q: want %s or %s", o.Client, ClientPGX, ClientWirebench)
	}
	if o.Rounds <= 0 {
		o.Rounds = 2
	}
	if o.Queries <= 0 {
		o.Queries = warmQueries
	}
	if o.Bin == "" {
		return nil, fmt.Errorf("bench: no dhsi binary")
	}
	work := o.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "dhsi-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		work = d
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	storeDir := filepath.Join(work, "store")
	if _, err := os.Stat(storeDir); err == nil {
		return nil, fmt.Errorf("bench: %s exists; give an empty --work-dir", storeDir)
	}
	for _, d := range []string{"lists", "store", "ingest-work", "cache"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			return nil, err
		}
	}
	r := &Result{Opts: o, DHSI: map[string]cell{}, PG: map[string]cell{}, Duck: map[string]cell{}}

	// 1. generate
	t0 := time.Now()
	shape := o.Shape
	if shape == "" {
		shape = ShapeSimple
	}
	corp, err := GenerateShaped(filepath.Join(work, "lists"), o.URLs, o.Domains, o.Datasets, shape)
	if err != nil {
		return nil, err
	}
	r.URLs, r.corp = corp.URLs, corp
	o.logf("generated %d URLs over %d domains in %d datasets in %v", corp.URLs, o.Domains, o.Datasets, time.Since(t0).Round(time.Millisecond))

	// 2. build: one `dhsi ingest --dataset-per-file` child loads every
	// dataset but the last as one version; the last is then ingested on its
	// own, the incremental case (a new dataset into a full index)
	bulk, last := corp.Files[:len(corp.Files)-1], corp.Files[len(corp.Files)-1:]
	for i, files := range [][]string{bulk, last} {
		if len(files) == 0 {
			continue
		}
		name := ""
		if i == 1 {
			name = fmt.Sprintf("ds-%03d", len(corp.Files)-1)
		}
		res, err := runIngest(ctx, o.Bin, storeDir, name, filepath.Join(work, "ingest-work"), o.memoryLimit(), files...)
		if err != nil {
			return nil, err
		}
		for _, id := range res.datasetIDs {
			r.DatasetIDs = append(r.DatasetIDs, int32(id))
		}
		r.BuildWall += res.wall
		r.BuildRSS = max(r.BuildRSS, res.maxRSS)
		if i == 0 {
			r.BuildFirst = res.wall
		} else {
			r.BuildLast = res.wall
		}
		o.logf("ingested %d datasets in %v, maxrss %d MiB", len(files), res.wall.Round(time.Millisecond), res.maxRSS>>20)
	}
	os.RemoveAll(filepath.Join(work, "ingest-work"))
	// drop superseded index versions so bytes/URL counts one version
	if out, err := exec.CommandContext(ctx, o.Bin, "gc", "--store", storeDir, "--keep", "1", "--grace", "0s").CombinedOutput(); err != nil {
		o.logf("gc failed (bytes/URL includes old versions): %v %s", err, out)
	}
	r.LakeBytes = dirSize(filepath.Join(storeDir, "urls"))
	r.IndexBytes = dirSize(filepath.Join(storeDir, "index"))

	queries := corp.Queries(o.Queries, 1)
	r.queries = queries

	if o.Client == ClientWirebench {
		// 3-5. DHSI and PostgreSQL side by side, the same client driving both
		if err := r.runWirebenchCells(ctx, o, work, storeDir, queries); err != nil {
			return nil, err
		}
		if !o.SkipCold {
			if err := r.runDHSICold(ctx, o, work, storeDir, corp, queries); err != nil {
				return nil, err
			}
		}
		return r, nil
	}

	// 3. DHSI warm
	if err := r.runDHSIWarm(ctx, o, work, storeDir, queries); err != nil {
		return nil, err
	}
	// 4. DHSI cold from versitygw
	if !o.SkipCold {
		if err := r.runDHSICold(ctx, o, work, storeDir, corp, queries); err != nil {
			return nil, err
		}
	}
	// 5. PostgreSQL
	if !o.SkipPG {
		if err := r.runPG(ctx, o, storeDir, queries); err != nil {
			return nil, err
		}
	}
	// 6. DuckDB scanning the Parquet
	if !o.SkipDuckDB {
		if err := r.runDuck(ctx, o, storeDir, queries); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

const (
	dhsiDD = "SELECT * FROM domain_datasets($1)"
	dhsiFP = "SELECT url FROM domain_urls($1, $2, 0, 1000)"
	pgDD   = "SELECT dataset_id, url_count FROM domain_counts WHERE domain = $1"
	pgFP   = "SELECT url FROM urls WHERE domain = $1 AND dataset_id = $2 ORDER BY url LIMIT 1000"
)

func (r *Result) cells(ctx context.Context, o Options, name string, into map[string]cell, queries []Query, nc func(context.Context) (client, error)) error {
	for _, q := range []string{"one", "dd", "fp"} {
		if q == "one" && name == "DuckDB" {
			continue
		}
		if q != "one" {
			t0 := time.Now()
			done, err := prime(ctx, nc, queries, r.DatasetIDs, q, o.Duration)
			if err != nil {
				return fmt.Errorf("%s %s: %w", name, q, err)
			}
			o.logf("%-6s %s primed: %d of %d queries in %v", name, q, done, len(queries), time.Since(t0).Round(time.Millisecond))
		}
		for _, n := range o.Clients {
			if q == "one" && n != 1 {
				continue
			}
			c, err := measure(ctx, nc, n, o.Warmup, o.Duration, queries, r.DatasetIDs, q)
			if err != nil {
				return fmt.Errorf("%s %s/%d: %w", name, q, n, err)
			}
			into[fmt.Sprintf("%s/%d", q, n)] = c
			o.logf("%-6s %s x%-3d p50 %v p99 %v %.0f q/s (%d queries, %d empty)", name, q, n, c.p50, c.p99, c.qps, c.n, c.empty)
		}
	}
	return nil
}

func (r *Result) runDHSIWarm(ctx context.Context, o Options, work, storeDir string, queries []Query) error {
	if o.Grants {
		return r.runDHSIGrants(ctx, o, work, storeDir, queries)
	}
	srv, url, err := startServe(ctx, o.Bin, filepath.Join(work, "serve.log"), nil,
		append([]string{"--store", storeDir, "--cache-dir", filepath.Join(work, "cache"), "--refresh-interval", "0"}, o.serveFlags()...)...)
	if err != nil {
		return err
	}
	defer srv.stop()
	nc := func(ctx context.Context) (client, error) { return newPGWireClient(ctx, url, dhsiDD, dhsiFP) }
	if err := r.cells(ctx, o, "DHSI", r.DHSI, queries, nc); err != nil {
		return err
	}
	r.ServeRSS = srv.peakRSS()
	r.Check = r.check(ctx, url, queries)
	return nil
}

// runDHSIGrants measures the warm cells without and with grants in force,
// A B B A, each round on a fresh server. With grants the server has users
// (so the DuckDB sandbox and statement checks are on too) and the cells run
// as a reader to whom every dataset is granted.
func (r *Result) runDHSIGrants(ctx context.Context, o Options, work, storeDir string, queries []Query) error {
	users := filepath.Join(work, "bench-users")
	if err := os.WriteFile(users, []byte("bench:bench-pw:reader\nroot:root-pw:admin\n"), 0o600); err != nil {
		return err
	}
	granted := false
	for i, withGrants := range []bool{false, true, true, false} {
		args := append([]string{"--store", storeDir, "--cache-dir", filepath.Join(work, "cache"), "--refresh-interval", "0"}, o.serveFlags()...)
		if withGrants {
			args = append(args, "--users-file", users)
		}
		srv, url, err := startServe(ctx, o.Bin, filepath.Join(work, fmt.Sprintf("serve-%d.log", i)), nil, args...)
		if err != nil {
			return err
		}
		if withGrants {
			url = strings.Replace(url, "bench@", "bench:bench-pw@", 1)
			if !granted {
				if err := grantAll(ctx, strings.Replace(url, "bench:bench-pw@", "root:root-pw@", 1), "bench", true); err != nil {
					srv.stop()
					return err
				}
				granted = true
			}
		}
		into := map[string]cell{}
		cfg := 0
		if withGrants {
			cfg = 1
		}
		round := 0
		if r.GrantsRounds[cfg][0] != nil {
			round = 1
		}
		r.GrantsRounds[cfg][round] = into
		nc := func(ctx context.Context) (client, error) { return newPGWireClient(ctx, url, dhsiDD, dhsiFP) }
		name := "DHSI"
		if withGrants {
			name = "DHSI with grants"
		}
		err = r.cells(ctx, o, name, into, queries, nc)
		if err == nil && i == 0 {
			r.DHSI = into
			r.ServeRSS = srv.peakRSS()
			r.Check = r.check(ctx, url, queries)
		}
		if err == nil && i == 2 {
			if c := r.check(ctx, url, queries); !strings.HasPrefix(c, "ok") {
				err = fmt.Errorf("with grants, a reader granted every dataset answers differently: %s", c)
			}
			// leave the store as it was
			if gerr := grantAll(ctx, strings.Replace(url, "bench:bench-pw@", "root:root-pw@", 1), "bench", false); err == nil {
				err = gerr
			}
		}
		srv.stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// grantAll grants (or revokes) every dataset to user, as an admin.
func grantAll(ctx context.Context, adminURL, user string, grant bool) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT dataset FROM datasets")
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	proc := "grant_dataset"
	if !grant {
		proc = "revoke_dataset"
	}
	for _, n := range names {
		if _, err := conn.Exec(ctx, "CALL "+proc+"($1, $2)", n, user); err != nil {
			return fmt.Errorf("%s %s: %w", proc, n, err)
		}
	}
	return nil
}

// check compares DHSI's domain_datasets with the generator's counts.
func (r *Result) check(ctx context.Context, url string, queries []Query) string {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "check: " + err.Error()
	}
	defer conn.Close(ctx)
	total, total2 := 0, 0
	for _, q := range queries[:min(200, len(queries))] {
		rows, err := conn.Query(ctx, "SELECT dataset_id::BIGINT, url_count::BIGINT FROM domain_datasets($1)", q.Domain)
		if err != nil {
			return "check: " + err.Error()
		}
		for rows.Next() {
			var id, n int64
			rows.Scan(&id, &n)
			total += int(n)
		}
		rows.Close()
		for d := range r.DatasetIDs {
			total2 += int(corpusCount(r, d, q.Domain))
		}
	}
	if total != total2 {
		return fmt.Sprintf("MISMATCH: DHSI counts %d URLs for 200 query domains, the generator %d", total, total2)
	}
	return fmt.Sprintf("ok: DHSI domain_datasets counts equal the generator's for 200 query domains (%d URLs)", total)
}

func corpusCount(r *Result, d int, domain string) int32 {
	c := r.corp
	if c.index == nil {
		c.index = map[string]int{}
		for i, s := range c.Domains {
			c.index[s] = i
		}
	}
	return c.Counts[d][c.index[domain]]
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (r *Result) runDHSICold(ctx context.Context, o Options, work, storeDir string, corp *Corpus, queries []Query) error {
	gwDir := filepath.Join(work, "versitygw")
	defer os.RemoveAll(gwDir)
	key, secret := "dhsi-bench", randomHex(16)
	gw, endpoint, err := startVersityGW(ctx, gwDir, key, secret)
	if err != nil {
		return err
	}
	defer gw.stop()
	bucket := "dhsi-bench-" + randomHex(4)
	cl := s3.New(s3.Options{BaseEndpoint: aws.String(endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key, secret, "")})
	if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	src, err := localfs.Open(storeDir)
	if err != nil {
		return err
	}
	on := true
	dst, err := s3store.Open(ctx, s3store.Config{Bucket: bucket, Endpoint: endpoint, Region: "us-east-1", PathStyle: &on,
		AccessKeyID: key, SecretAccessKey: secret}.Defaults(), nil)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var objs int
	err = src.List(ctx, "", func(a store.Attrs) error {
		rc, _, err := src.Get(ctx, a.Key)
		if err != nil {
			return err
		}
		defer rc.Close()
		objs++
		_, err = dst.Put(ctx, a.Key, rc, store.Cond{})
		return err
	})
	if err != nil {
		return fmt.Errorf("copy the store to S3: %w", err)
	}
	o.logf("copied %d objects to s3://%s in %v", objs, bucket, time.Since(t0).Round(time.Millisecond))

	cache := filepath.Join(work, "cold-cache")
	defer os.RemoveAll(cache)
	env := []string{"AWS_ENDPOINT_URL=" + endpoint, "AWS_ACCESS_KEY_ID=" + key, "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_REGION=us-east-1"}
	srv, url, err := startServe(ctx, o.Bin, filepath.Join(work, "serve-s3.log"), env,
		append([]string{"--store", "s3://" + bucket, "--cache-dir", cache, "--refresh-interval", "0"}, o.serveFlags()...)...)
	if err != nil {
		return err
	}
	defer srv.stop()
	c, err := newPGWireClient(ctx, url, dhsiDD, dhsiFP)
	if err != nil {
		return err
	}
	defer c.close()
	// distinct domains, none of them queried before on this server
	skip := map[string]bool{}
	a := corp.ColdQueries(o.ColdQueries, 7, skip)
	for _, q := range a {
		skip[q.Domain] = true
	}
	b := corp.ColdQueries(o.ColdQueries, 8, skip)
	ca, err := coldLatencies(ctx, c, a, r.DatasetIDs, "dd")
	if err != nil {
		return err
	}
	cb, err := coldLatencies(ctx, c, b, r.DatasetIDs, "fp")
	if err != nil {
		return err
	}
	r.DHSI["cold-dd"], r.DHSI["cold-fp"] = ca, cb
	o.logf("DHSI cold dd p50 %v p99 %v (%d); fp p50 %v p99 %v (%d)", ca.p50, ca.p99, ca.n, cb.p50, cb.p99, cb.n)
	return nil
}

const lakeGlob = "/urls/*/*/*.parquet"

func (r *Result) runPG(ctx context.Context, o Options, storeDir string, queries []Query) error {
	pg, err := r.loadPG(ctx, o, storeDir)
	if err != nil {
		return err
	}
	defer pg.stop()
	nc := func(ctx context.Context) (client, error) { return newPGWireClient(ctx, pg.url, pgDD, pgFP) }
	return r.cells(ctx, o, "PG", r.PG, queries, nc)
}

// loadPG starts a PostgreSQL 15 cluster and loads the lake's rows into it
// with PostgreSQL's best schema for the two lookups: a B-tree on (domain,
// dataset_id, url) and a precomputed (domain, dataset_id, url_count) table.
func (r *Result) loadPG(ctx context.Context, o Options, storeDir string) (*pgCluster, error) {
	pg, err := startPG(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.loadPGRows(ctx, o, storeDir, pg.url); err != nil {
		pg.stop()
		return nil, err
	}
	return pg, nil
}

func (r *Result) loadPGRows(ctx context.Context, o Options, storeDir, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer duck.Close()
	t0 := time.Now()
	if _, err := conn.Exec(ctx, "CREATE TABLE urls (domain text NOT NULL, dataset_id int NOT NULL, url text NOT NULL)"); err != nil {
		return err
	}
	rows, err := duck.QueryContext(ctx, fmt.Sprintf("SELECT %s, dataset_id::INTEGER, url FROM read_parquet('%s', hive_partitioning = true)", ingest.LakeDomainSQL, storeDir+lakeGlob))
	if err != nil {
		return err
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"urls"}, []string{"domain", "dataset_id", "url"}, &sqlRowsSource{rows: rows})
	rows.Close()
	if err != nil {
		return fmt.Errorf("COPY urls: %w", err)
	}
	load := time.Since(t0)
	for _, s := range []string{
		"CREATE INDEX urls_domain_dataset_url ON urls (domain, dataset_id, url)",
		// stored in key order and covered by its key, so a domain's counts
		// are an index-only scan of adjacent entries: without them each
		// of a domain's rows cost a heap page (a bitmap heap scan), which
		// made PostgreSQL look slower at domain_datasets than it is
		"CREATE TABLE domain_counts AS SELECT domain, dataset_id, count(*)::bigint AS url_count FROM urls GROUP BY 1, 2 ORDER BY 1, 2",
		"ALTER TABLE domain_counts ADD PRIMARY KEY (domain, dataset_id) INCLUDE (url_count)",
		"VACUUM ANALYZE urls",
		"VACUUM ANALYZE domain_counts",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	r.PGBuild = time.Since(t0)
	if err := conn.QueryRow(ctx, "SELECT pg_total_relation_size('urls') + pg_total_relation_size('domain_counts')").Scan(&r.PGBytes); err != nil {
		return err
	}
	// the dataset registry the join cell reads, as DHSI's datasets view
	// counts it; outside the build's time and bytes, which compare the
	// URL index alone
	for _, s := range []string{
		"CREATE TABLE datasets AS SELECT dataset_id, count(*)::bigint AS urls, count(DISTINCT domain)::bigint AS domains FROM urls GROUP BY 1",
		"ALTER TABLE datasets ADD PRIMARY KEY (dataset_id)",
		"VACUUM ANALYZE datasets",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	o.logf("PostgreSQL: COPY %d rows in %v, built in %v, %d MiB", n, load.Round(time.Millisecond), r.PGBuild.Round(time.Millisecond), r.PGBytes>>20)
	if n != r.URLs {
		o.logf("PostgreSQL holds %d rows, the generator made %d URLs", n, r.URLs)
	}
	return nil
}

// sqlRowsSource feeds DuckDB rows to pgx CopyFrom.
type sqlRowsSource struct {
	rows *sql.Rows
	dom  string
	ds   int32
	url  string
	err  error
}

func (s *sqlRowsSource) Next() bool {
	if !s.rows.Next() {
		return false
	}
	s.err = s.rows.Scan(&s.dom, &s.ds, &s.url)
	return s.err == nil
}
func (s *sqlRowsSource) Values() ([]any, error) { return []any{s.dom, s.ds, s.url}, s.err }
func (s *sqlRowsSource) Err() error {
	if s.err != nil {
		return s.err
	}
	return s.rows.Err()
}

func (r *Result) runDuck(ctx context.Context, o Options, storeDir string, queries []Query) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	// the lake stores a row's domain as an offset into its URL: DuckDB
	// derives it for every row it scans (no min/max pruning by domain)
	src := fmt.Sprintf("(SELECT dataset_id, url, %s AS domain FROM read_parquet('%s', hive_partitioning = true))", ingest.LakeDomainSQL, storeDir+lakeGlob)
	dd, err := db.PrepareContext(ctx, "SELECT dataset_id, count(*) FROM "+src+" WHERE domain = ? GROUP BY 1")
	if err != nil {
		return err
	}
	defer dd.Close()
	fp, err := db.PrepareContext(ctx, "SELECT url FROM "+src+" WHERE domain = ? AND dataset_id = ? ORDER BY url LIMIT 1000")
	if err != nil {
		return err
	}
	defer fp.Close()
	c := &duckClient{dd: dd, fp: fp}
	nc := func(context.Context) (client, error) { return c, nil }
	return r.cells(ctx, o, "DuckDB", r.Duck, queries, nc)
}
