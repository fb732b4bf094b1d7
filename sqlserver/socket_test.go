package sqlserver_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/sqlserver"
)

// TestUnixSocket: psql connects over <dir>/.s.PGSQL.<port> as it does to
// PostgreSQL, and the socket goes with the server.
func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *sqlserver.Config) { c.UnixSocketDir = dir })
	sock := filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", s.port))
	if got := s.srv.SocketPath(); got != sock {
		t.Fatalf("SocketPath = %q, want %q", got, sock)
	}
	out, err := exec.Command(psqlPath(t), "-X", "-At", "-h", dir, "-p", strconv.Itoa(s.port), "-U", "someone", "-d", "dhsi",
		"-c", "SELECT 42, coalesce(client_addr, '') FROM pg_stat_activity WHERE pid = pg_backend_pid()").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "42|" {
		t.Fatalf("psql over the socket: %v %q", err, out)
	}
}
