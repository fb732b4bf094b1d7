package sqlserver_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/sqlserver"
)

func TestStartupParameters(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t)
	pc := conn.PgConn()
	if v := pc.ParameterStatus("server_version"); !strings.HasPrefix(v, "16.") {
		t.Errorf("server_version = %q, want 16.x", v)
	}
	for name, want := range map[string]string{
		"standard_conforming_strings": "on",
		"client_encoding":             "UTF8",
		"server_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"integer_datetimes":           "on",
		"TimeZone":                    "UTC",
		"IntervalStyle":               "postgres",
		"session_authorization":       "tester",
	} {
		if got := pc.ParameterStatus(name); got != want {
			t.Errorf("ParameterStatus(%s) = %q, want %q", name, got, want)
		}
	}
	if pc.PID() == 0 {
		t.Error("no BackendKeyData")
	}
}

func TestStartupOptionsSetParameters(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t, func(c *pgx.ConnConfig) {
		c.RuntimeParams["application_name"] = "from-startup"
		c.RuntimeParams["options"] = "-c statement_timeout=5s -c TimeZone=Europe/Paris"
	})
	ctx := ctxT(t)
	for _, c := range []struct{ show, want string }{
		{"application_name", "from-startup"},
		{"statement_timeout", "5s"}, // as PostgreSQL shows it
		{"TimeZone", "Europe/Paris"},
	} {
		var got string
		if err := conn.QueryRow(ctx, "SHOW "+c.show).Scan(&got); err != nil || got != c.want {
			t.Errorf("SHOW %s = %q, %v; want %q", c.show, got, err, c.want)
		}
	}
	if got := conn.PgConn().ParameterStatus("TimeZone"); got != "Europe/Paris" {
		t.Errorf("reported TimeZone = %q", got)
	}
}

func TestAnEmptyStartupTimeZoneIsRefused(t *testing.T) {
	s := startServer(t)
	conn := s.connect(t, func(c *pgx.ConnConfig) { c.RuntimeParams["TimeZone"] = "" }) // what PGTZ= sends
	var tz string
	if err := conn.QueryRow(ctxT(t), "SHOW TimeZone").Scan(&tz); err != nil || tz != "UTC" {
		t.Errorf("SHOW TimeZone = %q, %v; want UTC", tz, err)
	}
	if got := conn.PgConn().ParameterStatus("TimeZone"); got != "UTC" {
		t.Errorf("reported TimeZone = %q, want UTC", got)
	}
}

func TestSessionSettings(t *testing.T) {
	s := startServer(t)
	for _, m := range resultModes {
		t.Run(m.name, func(t *testing.T) {
			conn := s.connect(t, withMode(m.mode))
			ctx := ctxT(t)
			show := func(name string) string {
				t.Helper()
				var v string
				if err := conn.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
					t.Fatalf("SHOW %s: %v", name, err)
				}
				return v
			}
			var version string
			if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(version, "PostgreSQL 16") {
				t.Errorf("version() = %q, want PostgreSQL 16...", version)
			}
			if got := show("search_path"); got != `"$user", public` {
				t.Errorf("search_path = %q", got)
			}
			mustExec(t, conn, "SET search_path TO public")
			if got := show("search_path"); got != "public" {
				t.Errorf("search_path after SET = %q", got)
			}
			mustExec(t, conn, "CREATE TABLE IF NOT EXISTS public.sp (a INTEGER)")
			if _, err := conn.Exec(ctx, "SELECT * FROM sp"); err != nil {
				t.Errorf("a table in public after SET search_path: %v", err)
			}
			mustExec(t, conn, "SET application_name = 'x'")
			if got := show("application_name"); got != "x" {
				t.Errorf("application_name = %q", got)
			}
			if got := conn.PgConn().ParameterStatus("application_name"); got != "x" {
				t.Errorf("reported application_name = %q", got)
			}
			mustExec(t, conn, "SET TIME ZONE 'America/New_York'")
			if got := show("timezone"); got != "America/New_York" {
				t.Errorf("TimeZone = %q", got)
			}
			mustExec(t, conn, "RESET ALL")
			if got := show("application_name"); got != "" {
				t.Errorf("application_name after RESET ALL = %q", got)
			}
			if got := show("TimeZone"); got != "UTC" {
				t.Errorf("TimeZone after RESET ALL = %q", got)
			}
			_, err := conn.Exec(ctx, "SET no_such_parameter = 1")
			wantCode(t, err, "42704")
			_, err = conn.Exec(ctx, "SET server_version = '1'")
			wantCode(t, err, "55P02")
			for _, tz := range []string{"Mars/Olympus", "", "Local"} {
				_, err = conn.Exec(ctx, "SET TimeZone = '"+tz+"'")
				wantCode(t, err, "22023")
				if got := show("TimeZone"); got != "UTC" {
					t.Errorf("TimeZone after a refused SET = %q", got)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  sqlserver.Config
		ok   bool
	}{
		{"loopback without users is allowed", sqlserver.Config{Listen: "127.0.0.1:5433"}, true},
		{"localhost without users is allowed", sqlserver.Config{Listen: "localhost:5433"}, true},
		{"IPv6 loopback without users is allowed", sqlserver.Config{Listen: "[::1]:5433"}, true},
		{"all interfaces without users is refused", sqlserver.Config{Listen: "0.0.0.0:5433"}, false},
		{"an empty host (all interfaces) without users is refused", sqlserver.Config{Listen: ":5433"}, false},
		{"all interfaces with users is allowed", sqlserver.Config{Listen: "0.0.0.0:5433", Users: []sqlserver.User{{Name: "alice", Password: "s3cret"}}}, true},
		{"a certificate without a key is refused", sqlserver.Config{Listen: "127.0.0.1:5433", TLSCert: "c.pem"}, false},
		{"an address without a port is refused", sqlserver.Config{Listen: "127.0.0.1"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
