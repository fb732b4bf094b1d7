package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerBuildSteps is issue 18 §6's proof of the Dockerfile without a
// Docker engine: it runs the build stage's script (scripts/docker-build.sh,
// which the Dockerfile runs), checks that the binary needs no shared
// library beyond what the runtime base (distroless/cc-debian12: glibc and
// the C++ runtime) carries, and runs it as the image's non-root user
// (uid 65532) on a store that user owns.
func TestDockerBuildSteps(t *testing.T) {
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sh scripts/docker-build.sh", "distroless/cc-debian12:nonroot", "USER nonroot"} {
		if !strings.Contains(string(dockerfile), want) {
			t.Fatalf("the Dockerfile no longer says %q: update this test and the script with it", want)
		}
	}
	// not t.TempDir: its parent is private to root, and the image's user
	// must reach the store
	dir, err := os.MkdirTemp("", "dhsi-docker-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dhsi")
	build := exec.Command("sh", "scripts/docker-build.sh")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "VERSION=docker-test", "OUT="+bin)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/docker-build.sh: %v\n%s", err, out)
	}
	fi, _ := os.Stat(bin)
	t.Logf("image binary: %.1f MB", float64(fi.Size())/1e6)

	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("ldd: %v\n%s", err, out)
	}
	carried := regexp.MustCompile(`^(linux-vdso|libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[-\w]*)\.so`)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		lib := strings.Fields(line)[0]
		if !carried.MatchString(filepath.Base(lib)) {
			t.Errorf("the binary needs %s, which distroless/cc-debian12 does not carry", lib)
		}
	}

	if os.Getuid() != 0 {
		t.Skip("running as the image's uid needs root here; the build and library checks passed")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv to run as uid 65532; the build and library checks passed")
	}
	store := filepath.Join(dir, "data")
	if err := os.Mkdir(store, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(store, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	asNonroot := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("setpriv", append([]string{"--reuid=65532", "--regid=65532", "--clear-groups", bin}, args...)...)
		cmd.Env = []string{"HOME=/nonexistent", "TMPDIR=" + store}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dhsi %s as uid 65532: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got := asNonroot("--version"); !strings.HasPrefix(got, "dhsi docker-test ") {
		t.Fatalf("--version = %q", got)
	}
	asNonroot("put", "--store", store, "domain=example.com", "company_name=Image Inc")
	if got := asNonroot("compact", "--store", store, "--all"); !strings.Contains(got, "compacted") {
		t.Fatalf("compact --all = %q", got)
	}
}
