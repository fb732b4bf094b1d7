//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dhsi/dhsi/internal/memlimit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestHardLimitTurnsAMemoryBombIntoAnError: DuckDB builds the list of
// SELECT len(range(1000000000)) outside its memory_limit, 8 GiB in one
// allocation, and before the hard limit a reader who sent it had the
// kernel's OOM killer end the server. Now the statement fails with 53200
// and the session, and every other, goes on. The limit is a property of
// the process, so the test runs the built binary (processLimits).
func TestHardLimitTurnsAMemoryBombIntoAnError(t *testing.T) {
	bin := dhsiBinary(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const budget = 512 << 20
	serve := exec.CommandContext(ctx, bin, "serve", "--store", t.TempDir(), "--listen", "127.0.0.1:0", "--unix-socket-dir", "",
		"--memory-limit", "512MiB", "--user", "reader:pw:reader")
	serve.Stderr = os.Stderr
	proc := startServeProcess(t, serve, 60*time.Second)
	procFile := func(file, field string) int64 {
		t.Helper()
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", serve.Process.Pid, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, field); ok {
				f := strings.Fields(rest)
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err != nil {
					t.Fatalf("%s %q: %v", file, line, err)
				}
				if len(f) > 1 && f[1] == "kB" {
					n <<= 10
				}
				return n
			}
		}
		t.Fatalf("no %q in /proc/%d/%s", field, serve.Process.Pid, file)
		return 0
	}
	if got, want := procFile("limits", "Max data size"), memlimit.Hard(budget); got != want {
		t.Errorf("RLIMIT_DATA = %d, want memlimit.Hard(512MiB) = %d", got, want)
	}

	url := "postgres://reader:pw@127.0.0.1:" + proc.port + "/dhsi"
	c := connect(t, url)
	other := connect(t, url)
	qctx, qcancel := context.WithTimeout(ctx, 60*time.Second)
	defer qcancel()
	var n int64
	err := c.QueryRow(qctx, "SELECT len(range(1000000000))").Scan(&n)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53200" {
		t.Fatalf("SELECT len(range(1000000000)) = %d, %v; want SQLSTATE 53200", n, err)
	}
	for _, s := range []*pgx.Conn{c, other} {
		if err := s.QueryRow(qctx, "SELECT 42").Scan(&n); err != nil || n != 42 {
			t.Fatalf("after the refused statement: SELECT 42 = %d, %v", n, err)
		}
	}
	// a list the limit fits is built, and its memory is given back
	// (jemalloc.go): the limit counts what is in use, not what was
	if err := c.QueryRow(qctx, "SELECT len(range(50000000))").Scan(&n); err != nil || n != 50000000 {
		t.Fatalf("SELECT len(range(50000000)) = %d, %v", n, err)
	}
	if data := procFile("status", "VmData:"); data > budget {
		t.Errorf("after a 50M-element list: VmData %d MiB, want the list's memory given back (under %d MiB)", data>>20, budget>>20)
	}
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.done:
		if proc.err != nil {
			t.Errorf("serve after SIGTERM: %v", proc.err)
		}
	case <-time.After(30 * time.Second):
		t.Error("serve did not exit within 30s of SIGTERM")
	}
}
