package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/internal/testclients"
)

// TestArm64UnderEmulation is issue 18 §6's build for the Raspberry Pis:
// dhsi cross-compiled for linux/arm64 (Debian's gcc-aarch64-linux-gnu; the
// DuckDB bindings ship a linux-arm64 library) and run under
// qemu-aarch64-static: put and compact --all on a local store, a small
// ingest, serve answering psql with select 42 and a domain_datasets
// lookup. It logs the binary's size and serve's peak RSS under emulation.
func TestArm64UnderEmulation(t *testing.T) {
	const install = "apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static"
	for _, tool := range []string{"aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", "qemu-aarch64-static"} {
		_, err := exec.LookPath(tool)
		testclients.Need(t, tool, install, err)
	}
	_, err := exec.LookPath("psql")
	testclients.Need(t, "psql", "apt-get install postgresql-client", err)

	bin := filepath.Join(t.TempDir(), "dhsi-arm64")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".") // as the Dockerfile builds
	build.Env = append(os.Environ(), "CGO_ENABLED=1", "GOOS=linux", "GOARCH=arm64", "CC=aarch64-linux-gnu-gcc", "CXX=aarch64-linux-gnu-g++")
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cross-compile for linux/arm64: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("linux/arm64 binary: %.1f MB, built in %v", float64(fi.Size())/1e6, time.Since(start).Round(time.Second))

	emulate := func(args ...string) *exec.Cmd {
		return exec.Command("qemu-aarch64-static", append([]string{"-L", "/usr/aarch64-linux-gnu", bin}, args...)...)
	}
	ok := func(args ...string) string {
		t.Helper()
		out, err := emulate(args...).CombinedOutput()
		if err != nil {
			t.Fatalf("dhsi %s under qemu: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := ok("--version"); !strings.Contains(out, "DuckDB") {
		t.Fatalf("--version: %q", out)
	}
	store := t.TempDir()
	ok("put", "--store", store, "domain=example.com", "company_name=Pi Inc", "updated_at=2024-01-01T00:00:00Z")
	if out := ok("compact", "--store", store, "--all"); !strings.Contains(out, "compacted") {
		t.Fatalf("compact --all: %q", out)
	}
	list := filepath.Join("..", "..", "testdata", "shared", "urls", "pywb_sample_archive.txt")
	ok("ingest", "--store", store, "--dataset", "pywb", list)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serve := exec.CommandContext(ctx, "qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu", bin, "serve", "--store", store, "--listen", "127.0.0.1:0", "--unix-socket-dir", "")
	p := startServeProcess(t, serve, 120*time.Second).port
	psql := func(sql string) string {
		t.Helper()
		out, err := exec.Command("psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", p, "-U", "pi", "-d", "dhsi", "-c", sql).CombinedOutput()
		if err != nil {
			t.Fatalf("psql %q: %v\n%s", sql, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := psql("select 42"); got != "42" {
		t.Fatalf("select 42 = %q", got)
	}
	if got := psql("SELECT company_name FROM domains WHERE domain = 'example.com'"); got != "Pi Inc" {
		t.Fatalf("domain record = %q", got)
	}
	domain := psql("SELECT domain FROM urls LIMIT 1")
	if got := psql(fmt.Sprintf("SELECT dataset || '=' || url_count FROM domain_datasets('%s')", domain)); !strings.HasPrefix(got, "pywb=") {
		t.Fatalf("domain_datasets(%s) = %q", domain, got)
	}
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", serve.Process.Pid)); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				t.Logf("serve under qemu-aarch64, peak RSS (emulator included): %s", strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")))
			}
		}
	}
}
