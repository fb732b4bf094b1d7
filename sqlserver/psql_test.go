package sqlserver_test

import (
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

// psqlPath finds the real psql client (internal/testclients says what a
// missing one does).
func psqlPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("psql")
	testclients.Need(t, "psql", "apt-get install postgresql-client", err)
	return p
}

// psql runs psql against s with args and stdin, returning its output and
// exit code.
func (s *testServer) psql(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{"-h", s.host, "-p", strconv.Itoa(s.port), "-U", "someone", "-d", "dhsi", "-X"}
	cmd := exec.CommandContext(ctx, psqlPath(t), append(base, args...)...)
	for _, kv := range os.Environ() { // the caller's PG* settings are not the test's
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "PSQL") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PGCONNECT_TIMEOUT=10", "PGSSLMODE=disable", "PAGER=")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("psql: %v\n%s", err, out)
	return "", -1
}

func TestPsql(t *testing.T) {
	psqlPath(t)
	s := startServer(t)

	t.Run("a single query prints its value", func(t *testing.T) {
		out, code := s.psql(t, "", "-A", "-t", "-c", "select 42")
		if code != 0 || out != "42\n" {
			t.Errorf("psql -c 'select 42' = %q, exit %d", out, code)
		}
	})
	t.Run("describe commands list tables, views and columns", func(t *testing.T) {
		out, code := s.psql(t, "",
			"-c", "CREATE TABLE items (id INTEGER, name VARCHAR, price DECIMAL(10,2), tags VARCHAR[], meta JSON)",
			"-c", "CREATE VIEW cheap AS SELECT id, name, price FROM items WHERE price < 10")
		if code != 0 {
			t.Fatalf("create: exit %d\n%s", code, out)
		}
		out, code = s.psql(t, "", "-c", `\dt`)
		if code != 0 || !strings.Contains(out, "items") || !strings.Contains(out, "table") || strings.Contains(out, "cheap") {
			t.Errorf(`\dt (exit %d):\n%s`, code, out)
		}
		out, code = s.psql(t, "", "-c", `\dv`)
		if code != 0 || !strings.Contains(out, "cheap") || !strings.Contains(out, "view") || strings.Contains(out, "items") {
			t.Errorf(`\dv (exit %d):\n%s`, code, out)
		}
		out, code = s.psql(t, "", "-A", "-c", `\d cheap`)
		for _, want := range []string{`View "public.cheap"`, "id|integer", "name|text", "price|numeric(10,2)"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf(`\d cheap lacks %q (exit %d):\n%s`, want, code, out)
			}
		}
		out, code = s.psql(t, "", "-A", "-c", `\d items`)
		for _, want := range []string{"tags|text[]", "meta|json"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf(`\d items lacks %q (exit %d):\n%s`, want, code, out)
			}
		}
	})
	t.Run("DHSI's own views are listed and described as views", func(t *testing.T) {
		out, code := s.psql(t, "",
			"-c", "CREATE VIEW domains AS SELECT 'example.com' AS domain, 3::BIGINT AS scraper_version",
			"-c", "COMMENT ON VIEW domains IS 'dhsi: one row per registered domain'")
		if code != 0 {
			t.Fatalf("create: exit %d\n%s", code, out)
		}
		out, code = s.psql(t, "", "-A", "-c", `\dv`)
		if code != 0 || !strings.Contains(out, "public|domains|view") {
			t.Errorf(`\dv does not list domains as a view (exit %d):\n%s`, code, out)
		}
		out, code = s.psql(t, "", "-A", "-c", `\d domains`)
		for _, want := range []string{`View "public.domains"`, "domain|text", "scraper_version|bigint"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf(`\d domains lacks %q (exit %d):\n%s`, want, code, out)
			}
		}
	})
	t.Run("a table's primary key is listed under Indexes", func(t *testing.T) {
		out, code := s.psql(t, "", "-c", "CREATE TABLE keyed (id INTEGER PRIMARY KEY, code VARCHAR UNIQUE)")
		if code != 0 {
			t.Fatalf("create: exit %d\n%s", code, out)
		}
		out, code = s.psql(t, "", "-c", `\d keyed`)
		for _, want := range []string{"Indexes:", "PRIMARY KEY, btree (id)", "UNIQUE CONSTRAINT, btree (code)", "not null"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf(`\d keyed lacks %q (exit %d):\n%s`, want, code, out)
			}
		}
	})
	t.Run("databases, schemas and functions are listed, DHSI's internal schemas are not", func(t *testing.T) {
		out, code := s.psql(t, "",
			"-c", "CREATE SCHEMA dhsi_cache", "-c", "CREATE TABLE dhsi_cache.secret (x INTEGER)",
			"-c", "CREATE SCHEMA sales", "-c", "CREATE MACRO add_one(x) AS x + 1")
		if code != 0 {
			t.Fatalf("create: exit %d\n%s", code, out)
		}
		out, code = s.psql(t, "", "-A", "-c", `\l`)
		if code != 0 || !strings.Contains(out, "dhsi|dhsi|UTF8") {
			t.Errorf(`\l (exit %d):\n%s`, code, out)
		}
		out, code = s.psql(t, "", "-A", "-c", `\dn`)
		if code != 0 || !strings.Contains(out, "public|") || !strings.Contains(out, "sales|") || strings.Contains(out, "dhsi_") {
			t.Errorf(`\dn (exit %d):\n%s`, code, out)
		}
		out, code = s.psql(t, "", "-A", "-c", `\dt *.*`)
		if code != 0 || strings.Contains(out, "secret") {
			t.Errorf(`\dt *.* shows an internal table (exit %d):\n%s`, code, out)
		}
		out, code = s.psql(t, "", "-A", "-c", `\df`)
		if code != 0 || !strings.Contains(out, "public|add_one|") {
			t.Errorf(`\df (exit %d):\n%s`, code, out)
		}
	})
	t.Run("expanded display, timing and conninfo", func(t *testing.T) {
		out, code := s.psql(t, "\\x\n\\timing on\nselect 1 as a, 2 as b;\n\\conninfo\n")
		for _, want := range []string{"Expanded display is on.", "-[ RECORD 1 ]", "a | 1", "b | 2", "Time: ",
			`You are connected to database "dhsi" as user "someone" on host "127.0.0.1"`} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("output lacks %q (exit %d):\n%s", want, code, out)
			}
		}
	})
	t.Run("copy of a query to a local CSV file goes through COPY TO STDOUT", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "out.csv")
		out, code := s.psql(t, "", "-c", `\copy (select 1 as id, 'a,b' as name, NULL as nothing union all select 2, 'say "hi"', 'x') to '`+file+`' csv header`)
		if code != 0 || !strings.Contains(out, "COPY 2") {
			t.Fatalf("\\copy (exit %d):\n%s", code, out)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if want := "id,name,nothing\n1,\"a,b\",\n2,\"say \"\"hi\"\"\",x\n"; string(got) != want {
			t.Errorf("file = %q, want %q", got, want)
		}
	})
	script := "\\set VERBOSITY verbose\nselect * from no_such_table;\nselect 7 as good;\n"
	t.Run("a script goes on after an error", func(t *testing.T) {
		out, code := s.psql(t, script, "-A", "-t")
		if code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		if !strings.Contains(out, "ERROR:  42P01:") {
			t.Errorf("no verbose error with SQLSTATE:\n%s", out)
		}
		if !strings.Contains(out, "\n7\n") && !strings.HasPrefix(out, "7\n") {
			t.Errorf("the good query did not run:\n%s", out)
		}
	})
	t.Run("ON_ERROR_STOP makes psql exit 3 at the error", func(t *testing.T) {
		out, code := s.psql(t, script, "-A", "-t", "-v", "ON_ERROR_STOP=1")
		if code != 3 {
			t.Errorf("exit %d, want 3", code)
		}
		if strings.Contains(out, "7") {
			t.Errorf("psql ran past the error:\n%s", out)
		}
	})
	t.Run("PostgreSQL literals psql users type", func(t *testing.T) {
		out, code := s.psql(t, "", "-A", "-t", "-c", `select '{1,2}'::int[], '\xdead'::bytea, '{"a":1}'::json, interval '1 day'`)
		if code != 0 || out != "{1,2}|\\xdead|{\"a\":1}|1 day\n" {
			t.Errorf("out = %q, exit %d", out, code)
		}
	})
}

func TestPsqlWithPasswordAndTLS(t *testing.T) {
	psql := psqlPath(t)
	caFile, certFile, keyFile := writeTestPKI(t)
	s := startServer(t, func(c *sqlserver.Config) {
		c.Users = []sqlserver.User{{Name: "alice", Password: "s3cret", Role: access.Admin}}
		c.TLSCert, c.TLSKey = certFile, keyFile
	})
	run := func(t *testing.T, password, sslmode string, args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		base := []string{"-h", s.host, "-p", strconv.Itoa(s.port), "-U", "alice", "-d", "dhsi", "-X", "-w"}
		cmd := exec.CommandContext(ctx, psql, append(base, args...)...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "PSQL") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "PGCONNECT_TIMEOUT=10", "PGPASSWORD="+password, "PGSSLMODE="+sslmode,
			"PGSSLROOTCERT="+caFile, "PGSSLCERT=/nonexistent", "PAGER=")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatalf("psql: %v\n%s", err, out)
		}
		return string(out), 0
	}
	for _, mode := range []string{"require", "verify-full"} {
		t.Run("sslmode="+mode+" with the right password connects over TLS", func(t *testing.T) {
			out, code := run(t, "s3cret", mode, "-c", `\conninfo`)
			if code != 0 || !strings.Contains(out, `as user "alice"`) || !strings.Contains(out, "SSL connection (protocol: TLSv1.3") {
				t.Errorf("exit %d:\n%s", code, out)
			}
		})
	}
	t.Run("a wrong password fails with a clear FATAL message", func(t *testing.T) {
		out, code := run(t, "wrong", "verify-full", "-c", "select 1")
		if code != 2 || !strings.Contains(out, `FATAL:  password authentication failed for user "alice"`) {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
}
