package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/internal/netwait"
	"github.com/dhsi/dhsi/internal/testenv"
)

// startServe runs `dhsi serve args...` in-process and returns a connection
// string for the address it prints.
func startServe(t testing.TB, args ...string) string {
	t.Helper()
	return startServeLogging(t, io.Discard, args...)
}

// startServeLogging is startServe with the server's log written to stderr.
func startServeLogging(t testing.TB, stderr io.Writer, args ...string) string {
	t.Helper()
	return startServeWithin(t, 60*time.Second, stderr, args...)
}

// startServeWithin is startServeLogging that waits up to within for the
// server to listen (its first refresh reads the whole inbox).
func startServeWithin(t testing.TB, within time.Duration, stderr io.Writer, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), pw, stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("dhsi serve exited %d", code)
			}
		case <-time.After(20 * time.Second):
			t.Error("dhsi serve did not stop within 20s of its context ending")
		}
	})
	port := announcedPort(pr)
	select {
	case p := <-port:
		return "postgres://anyone@127.0.0.1:" + p + "/anydb?sslmode=disable"
	case code := <-done:
		t.Fatalf("dhsi serve exited %d before listening", code)
	case <-time.After(within):
		t.Fatalf("dhsi serve did not print its address within %v", within)
	}
	return ""
}

func query42(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "select 42").Scan(&n); err != nil || n != 42 {
		t.Fatalf("select 42 = %d, %v", n, err)
	}
	var shard string
	if err := conn.QueryRow(ctx, "select shard_id('example.com')").Scan(&shard); err != nil || shard != "a3" {
		t.Fatalf("shard_id = %q, %v", shard, err)
	}
}

func TestServeOnTheEmbeddedDefault(t *testing.T) {
	dir := t.TempDir()
	query42(t, startServe(t, "--store", dir))
}

func TestServeOnS3(t *testing.T) {
	endpoint, key, secret := testenv.StartVersityGW(t)
	bucket := testenv.CreateBucket(t, endpoint, key, secret)
	t.Setenv("AWS_ENDPOINT_URL", endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_REGION", "us-east-1")
	query42(t, startServe(t, "--store", "s3://"+bucket+"/idx", "--cache-dir", t.TempDir()))
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"no command prints usage and exits 2", nil, 2, ""},
		{"an unknown command exits 2", []string{"frobnicate"}, 2, "unknown command"},
		{"a non-loopback address without users is refused", []string{"serve", "--listen", "0.0.0.0:0", "--store", "DIR"}, 1, "refusing to listen"},
		{"a malformed --user exits 2", []string{"serve", "--user", "nopassword", "--store", "DIR"}, 2, "name:password"},
		{"an unknown store scheme exits 2", []string{"serve", "--store", "gs://b/p"}, 2, "s3://bucket/prefix"},
		{"ingest --keep -1", []string{"ingest", "--store", "DIR", "--dataset", "d", "--keep", "-1", "x.txt"}, 2, "--keep -1: want 1 to 1000"},
		{"ingest --zstd-level 99", []string{"ingest", "--store", "DIR", "--dataset", "d", "--zstd-level", "99", "x.txt"}, 2, "--zstd-level 99"},
		{"ingest --page-rows 0", []string{"ingest", "--store", "DIR", "--dataset", "d", "--page-rows", "0", "x.txt"}, 2, "--page-rows 0"},
		{"ingest --postings-shards 100000", []string{"ingest", "--store", "DIR", "--dataset", "d", "--postings-shards", "100000", "x.txt"}, 2, "--postings-shards 100000"},
		{"ingest --work-dir that does not exist", []string{"ingest", "--store", "DIR", "--dataset", "d", "--work-dir", "/nonexistent/dhsi", "x.txt"}, 2, "not an existing directory"},
		{"gc --keep 0", []string{"gc", "--store", "DIR", "--keep", "0"}, 2, "--keep 0"},
		{"the JSON API on a non-loopback address without users is refused", []string{"serve", "--store", "DIR", "--http", "0.0.0.0:0"}, 1, "refusing to serve the JSON API"},
		{"serve --memory-limit that is not a size", []string{"serve", "--store", "DIR", "--memory-limit", "lots"}, 2, `--memory-limit: size "lots"`},
		{"serve --memory-limit below a server's minimum", []string{"serve", "--store", "DIR", "--memory-limit", "100MB"}, 2, "less than the 256MiB a server needs"},
		{"serve --memory-limit that the given parts overfill", []string{"serve", "--store", "DIR", "--memory-limit", "1GiB", "--duckdb-memory-limit", "900MiB"}, 2, "do not fit in 1GiB"},
		{"serve --memory-hard-limit not above --memory-limit", []string{"serve", "--store", "DIR", "--memory-limit", "1GiB", "--memory-hard-limit", "1GiB"}, 2, "is not above --memory-limit 1GiB"},
		{"serve --memory-hard-limit that is not a size", []string{"serve", "--store", "DIR", "--memory-hard-limit", "lots"}, 2, `--memory-hard-limit: size "lots"`},
		{"serve --row-cache-mb -1", []string{"serve", "--store", "DIR", "--row-cache-mb", "-1"}, 2, "whole number of MiB"},
		{"ingest --memory-limit 0%", []string{"ingest", "--store", "DIR", "--dataset", "d", "--memory-limit", "0%", "x.txt"}, 2, "percentage is more than 0"},
		{"serve --max-sessions for admins", []string{"serve", "--store", "DIR", "--max-sessions", "admin=3"}, 2, "admins are not limited"},
		{"serve --max-sessions 0", []string{"serve", "--store", "DIR", "--max-sessions", "reader=0"}, 2, "want a count from 1"},
		{"serve --max-connections 0", []string{"serve", "--store", "DIR", "--max-connections", "0"}, 2, "--max-connections 0"},
		{"serve --duckdb-temp-limit that is not a size", []string{"serve", "--store", "DIR", "--duckdb-temp-limit", "lots"}, 2, `--duckdb-temp-limit: size "lots"`},
		{"serve --duckdb-temp-limit as a percentage", []string{"serve", "--store", "DIR", "--duckdb-temp-limit", "10%"}, 2, "give a size"},
		{"serve --statement-timeout for admins", []string{"serve", "--store", "DIR", "--statement-timeout", "admin=1s"}, 2, "admins are not limited"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			args := append([]string(nil), c.args...)
			for i, a := range args {
				if a == "DIR" {
					args[i] = t.TempDir()
				}
			}
			code := run(context.Background(), args, &out, &out)
			if code != c.code || !strings.Contains(out.String(), c.says) {
				t.Fatalf("exit %d, output %q; want exit %d mentioning %q", code, out.String(), c.code, c.says)
			}
		})
	}
}

// TestCommandsNameTheirStore: every command says which store it works on;
// a put run where there is no store does not create one; a second server
// on the same local store gets a sentence, not DuckDB's lock error.
func TestCommandsNameTheirStore(t *testing.T) {
	ctx := context.Background()
	bin := dhsiBinary(t) // before Chdir: it builds from this package's directory
	dir := t.TempDir()
	t.Chdir(dir)
	var errb strings.Builder
	if code := run(ctx, []string{"put", "domain=example.com", "company_name=x"}, io.Discard, &errb); code != 2 || !strings.Contains(errb.String(), "there is no store at") {
		t.Errorf("put without a store: exit %d, %q", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "dhsi-data")); err == nil {
		t.Error("put created ./dhsi-data")
	}
	errb.Reset()
	if code := run(ctx, []string{"put", "--store", "mine", "domain=example.com", "company_name=x"}, io.Discard, &errb); code != 0 || !strings.Contains(errb.String(), "store "+filepath.Join(dir, "mine")+" (new: created)") {
		t.Errorf("put --store mine: exit %d, %q", code, errb.String())
	}
	startServe(t, "--store", "mine")
	// DuckDB's file lock is per process: the second server is another one
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out2, err := exec.CommandContext(cctx, bin, "serve", "--store", filepath.Join(dir, "mine"), "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out2), "another dhsi serve (pid ") {
		t.Errorf("a second server on the store: %v, %q", err, out2)
	}
	var out strings.Builder
	if code := run(ctx, []string{"--version"}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "DuckDB v1.5.5") {
		t.Errorf("dhsi --version: exit %d, %q", code, out.String())
	}
}

// TestMetricsEndpoint: serve --metrics exposes Prometheus metrics under
// their conventional names, and they move with what clients do (issue 18).
func TestMetricsEndpoint(t *testing.T) {
	ctx := context.Background()
	port, err := netwait.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := connect(t, startServe(t, "--store", t.TempDir(), "--metrics", addr))
	_ = one[int64](t, c, "SELECT 42")
	_ = one[int64](t, c, "SELECT count(*) FROM domain_datasets('example.com') WHERE true")
	if _, err := c.Exec(ctx, "SELECT * FROM domain_urls($1, $2, $3, $4)", "example.com", 1, -1, 10); err == nil {
		t.Fatal("a negative offset was accepted")
	}
	for _, q := range []string{`CALL inbox_put('example.com', '{"company_name": "X"}')`, "CALL compact_all()"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`dhsi_statements_total{kind="duckdb",outcome="ok"}`,
		`dhsi_statements_total{kind="native:domain_urls",outcome="error"} 1`,
		`dhsi_statement_duration_seconds_bucket{kind="duckdb",le="0.0001"}`,
		`dhsi_errors_total{sqlstate="22023"} 1`,
		"dhsi_sessions 1",
		`dhsi_index_version_info{version=""} 1`,
		"dhsi_index_version_age_seconds",
		"dhsi_refresh_age_seconds",
		"dhsi_grants_version 0",
		`dhsi_store_requests_total{op="list",outcome="ok"}`,
		`dhsi_store_requests_total{op="put",outcome="ok"}`,
		`dhsi_store_request_duration_seconds_bucket{op="get",le="0.01"}`,
		`dhsi_store_bytes_total{direction="written"}`,
		`dhsi_cache_hits_total{cache="block"} 0`,
		`dhsi_cache_limit{cache="block"}`,
		`dhsi_cache_used{cache="reader"} 0`,
		`dhsi_compactions_total{status="compacted"} 1`,
		"dhsi_compaction_inbox_objects_merged_total 1",
		"dhsi_compaction_records_written_total 1",
		"go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
}

// TestCompactMetrics: a looping compactor started with --metrics exposes
// its compactions and store requests (issue 18 §3).
func TestCompactMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	for _, d := range []string{"example.com", "example.org"} {
		if code := run(ctx, []string{"put", "--store", dir, "domain=" + d, "company_name=X"}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("put exit %d", code)
		}
	}
	port, err := netwait.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"compact", "--store", dir, "--loop", "--metrics", addr}, io.Discard, io.Discard)
	}()
	want := []string{
		`dhsi_compactions_total{status="compacted"} 2`,
		"dhsi_compaction_inbox_objects_merged_total 2",
		`dhsi_compaction_duration_seconds_count 2`,
		`dhsi_store_requests_total{op="list",outcome="ok"}`,
		`dhsi_store_requests_total{op="delete",outcome="ok"}`,
		"dhsi_compaction_last_timestamp_seconds",
	}
	var text string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text = string(b)
		all := true
		for _, w := range want {
			all = all && strings.Contains(text, w)
		}
		if all {
			cancel()
			if code := <-done; code != 0 {
				t.Fatalf("compact --loop exited %d", code)
			}
			return
		}
	}
	t.Fatalf("/metrics of compact --loop lacks one of %q after 30s:\n%s", want, text)
}

// announcedPort reads a server's stdout and sends the port of the psql
// line it prints once it listens.
func announcedPort(stdout io.Reader) <-chan string {
	port := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`psql -h 127\.0\.0\.1 -p (\d+)`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
	}()
	return port
}

// serveProcess is a dhsi serve in a process of its own: the built binary,
// or it under an emulator.
type serveProcess struct {
	*exec.Cmd
	port string
	done chan struct{} // closed once it has exited; err is then its status
	err  error
}

// startServeProcess starts cmd, a dhsi serve, and waits up to within for
// the port it announces. The process is killed when the test ends.
func startServeProcess(t *testing.T, cmd *exec.Cmd, within time.Duration) *serveProcess {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	select {
	case p.port = <-announcedPort(stdout):
	case <-time.After(within):
		t.Fatalf("%s did not listen within %v", strings.Join(cmd.Args, " "), within)
	}
	return p
}
