package sqlserver_test

import (
	"bufio"
	"context"
	"errors"
	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/internal/testclients"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/sqlserver"
)

// The tests in this file drive real client programs (clients/ at the
// repository root) against a server of their own. Each program prints one
// line per check, "PASS name" or "FAIL name: detail", then "DONE"; every
// line becomes a subtest here, so a failure names the client feature that
// broke. A missing client skips the test loudly on a developer's machine
// and fails it in CI (internal/testclients).

// clientsDir is the directory of the client programs.
func clientsDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "clients"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// needClient skips (on a developer's machine) or fails (in CI) the test
// when a client prerequisite is missing.
func needClient(t *testing.T, what string, err error) {
	t.Helper()
	testclients.Need(t, what, "apt-get install default-jdk-headless libpostgresql-jdbc-java python3-psycopg2 python3-psycopg python3-sqlalchemy nodejs npm; (cd clients/node && npm ci)", err)
}

// debianPython is Debian's interpreter: python3-psycopg2, python3-psycopg and
// python3-sqlalchemy load only there, not in a python3 earlier on PATH.
const debianPython = "/usr/bin/python3"

// needPythonModules checks that Debian's python can import the modules.
func needPythonModules(t *testing.T, modules ...string) {
	t.Helper()
	_, err := os.Stat(debianPython)
	if err == nil {
		var out []byte
		out, err = exec.Command(debianPython, "-c", "import "+strings.Join(modules, ", ")).CombinedOutput()
		if err != nil {
			err = errors.New(strings.TrimSpace(string(out)))
		}
	}
	needClient(t, "Python modules "+strings.Join(modules, ", "), err)
}

// runChecks runs a client program and reports each of its check lines as a
// subtest.
func runChecks(t *testing.T, timeout time.Duration, dir string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() { // the caller's PG* settings are not the test's
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PYTHONDONTWRITEBYTECODE=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	checks, done := 0, false
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "PASS "):
			checks++
			t.Run(strings.TrimPrefix(line, "PASS "), func(t *testing.T) {})
		case strings.HasPrefix(line, "FAIL "):
			checks++
			name, detail, _ := strings.Cut(strings.TrimPrefix(line, "FAIL "), ": ")
			t.Run(name, func(t *testing.T) { t.Error(detail) })
		case strings.HasPrefix(line, "DONE"):
			done = true
		}
	}
	if !done || checks == 0 {
		t.Fatalf("%s ended before reporting its checks (%v)\nstdout:\n%s\nstderr:\n%s", name, err, out, stderr.String())
	}
	if err != nil && !t.Failed() {
		t.Errorf("%s: %v\nstderr:\n%s", name, err, stderr.String())
	}
}

func portOf(s *testServer) string { return strconv.Itoa(s.port) }

func TestJDBCDriverWorksThroughOneJVM(t *testing.T) {
	t.Parallel()
	jar := "/usr/share/java/postgresql.jar"
	_, err := os.Stat(jar)
	needClient(t, "PostgreSQL JDBC (Debian libpostgresql-jdbc-java)", err)
	javac, err := exec.LookPath("javac")
	needClient(t, "javac", err)
	java, err := exec.LookPath("java")
	needClient(t, "java", err)
	caFile, certFile, keyFile := writeTestPKI(t)
	s := startServer(t, func(c *sqlserver.Config) {
		c.Users = []sqlserver.User{{Name: "jdbc", Password: "jdbc-secret", Role: access.Admin}}
		c.TLSCert, c.TLSKey = certFile, keyFile
	})
	classes := t.TempDir()
	src := filepath.Join(clientsDir(t), "jdbc", "JdbcCheck.java")
	if out, err := exec.Command(javac, "-d", classes, "-cp", jar, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	runChecks(t, 90*time.Second, classes, java, "-cp", jar+string(os.PathListSeparator)+classes,
		"JdbcCheck", s.host, portOf(s), "jdbc-secret", caFile)
}

func TestPsycopg2(t *testing.T) {
	t.Parallel()
	needPythonModules(t, "psycopg2")
	s := startServer(t)
	runChecks(t, 60*time.Second, filepath.Join(clientsDir(t), "python"), debianPython, "check_psycopg2.py", s.host, portOf(s))
}

func TestPsycopg3(t *testing.T) {
	t.Parallel()
	needPythonModules(t, "psycopg")
	s := startServer(t)
	runChecks(t, 60*time.Second, filepath.Join(clientsDir(t), "python"), debianPython, "check_psycopg3.py", s.host, portOf(s))
}

func TestSQLAlchemyInspectsDHSIViews(t *testing.T) {
	t.Parallel()
	needPythonModules(t, "sqlalchemy", "psycopg2")
	s := startServer(t)
	runChecks(t, 60*time.Second, filepath.Join(clientsDir(t), "python"), debianPython, "check_sqlalchemy.py", s.host, portOf(s))
}

func TestNodePostgres(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	needClient(t, "node", err)
	dir := filepath.Join(clientsDir(t), "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "pg")); err != nil {
		// .ci/run installs the locked packages; a fresh checkout run by hand
		// installs them here
		npm, lerr := exec.LookPath("npm")
		needClient(t, "npm", lerr)
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		needClient(t, "node-postgres (npm ci in clients/node)", func() error {
			if err != nil {
				return errors.New(err.Error() + ": " + string(out))
			}
			return nil
		}())
	}
	s := startServer(t)
	runChecks(t, 60*time.Second, dir, node, "check.js", s.host, portOf(s))
}
