package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeURLs writes urls, one a line, to a file of the test's and returns
// its path.
func writeURLs(t *testing.T, urls ...string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(f, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// A reader's or a writer's statements leave nothing in the server's log:
// the profiling settings that hide host paths from their plans (sqlserver
// H2) once made DuckDB print every such statement, text and profile, to
// the process's stderr (2.2 KB a statement, a 3 MB statement's 3 MB, raw
// URLs among them).
func TestStatementsLeaveNothingInTheLog(t *testing.T) {
	bin := dhsiBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	ingestOK(t, "--store", dir, "--dataset", "d", writeURLs(t, "https://www.private.example/a", "https://www.private.example/b"))
	serve := exec.CommandContext(ctx, bin, "serve", "--store", dir, "--listen", "127.0.0.1:0", "--unix-socket-dir", "",
		"--user", "rita:pw:reader", "--user", "will:pw:writer", "--memory-limit", "512MiB")
	var stderr syncBuffer
	serve.Stderr = &stderr
	proc := startServeProcess(t, serve, 60*time.Second)
	for _, user := range []string{"rita", "will"} {
		c := connect(t, "postgres://"+user+":pw@127.0.0.1:"+proc.port+"/dhsi")
		for _, q := range []string{
			"SELECT count(*) FROM urls WHERE url = 'https://www.private.example/token=abc123'",
			"SELECT length(url) FROM urls ORDER BY 1",
			"EXPLAIN ANALYZE SELECT count(*) FROM urls",
			"SELECT 42",
		} {
			rows, err := c.Query(ctx, q)
			if err != nil {
				t.Fatalf("%s: %s: %v", user, q, err)
			}
			rows.Close()
		}
	}
	time.Sleep(200 * time.Millisecond) // what DuckDB prints, it prints at once
	log := stderr.String()
	if strings.Contains(log, "private.example") || strings.Contains(log, "Query Profiling") || strings.Contains(log, "count(*)") {
		t.Fatalf("the server's stderr holds statements (%d bytes):\n%.2000s", len(log), log)
	}
}

// C3: a server out of file descriptors pauses accepting and serves again
// once connections close; it used to exit (accept4: too many open files),
// ending every session, when ~20,000 idle TCP connections were opened,
// no password needed.
func TestServerOutlivesRunningOutOfFileDescriptors(t *testing.T) {
	bin := dhsiBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// 256 descriptors, and room for 2,000 connections: the descriptors run
	// out first
	serve := exec.CommandContext(ctx, "sh", "-c", `ulimit -n 256 && exec "$0" "$@"`, bin, "serve", "--store", t.TempDir(),
		"--listen", "127.0.0.1:0", "--unix-socket-dir", "", "--max-connections", "1000", "--memory-limit", "512MiB")
	var stderr syncBuffer
	serve.Stderr = &stderr
	proc := startServeProcess(t, serve, 60*time.Second)
	url := "postgres://x@127.0.0.1:" + proc.port + "/dhsi"
	c := connect(t, url)
	var idle []net.Conn
	for range 400 {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+proc.port, 2*time.Second)
		if err != nil {
			break
		}
		idle = append(idle, conn)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "accept failed; pausing") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "too many open files") {
		t.Fatalf("%d idle connections did not run the server out of descriptors:\n%s", len(idle), stderr.String())
	}
	select {
	case <-proc.done:
		t.Fatalf("the server exited out of descriptors: %v\n%s", proc.err, stderr.String())
	default:
	}
	// the session that was open still answers
	var n int
	if err := c.QueryRow(ctx, "SELECT 41 + 1").Scan(&n); err != nil || n != 42 {
		t.Fatalf("an open session while out of descriptors: %d %v", n, err)
	}
	for _, conn := range idle {
		conn.Close()
	}
	for {
		qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
		var m int
		err := connect(t, url).QueryRow(qctx, "SELECT 7").Scan(&m)
		qcancel()
		if err == nil && m == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new session once the idle connections closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
