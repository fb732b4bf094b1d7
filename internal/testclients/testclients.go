// Package testclients decides what a test does when a real client program
// it drives (psql, JDBC, psycopg, node-postgres) is not installed.
//
// On a developer's fresh machine the test skips with a loud line that says
// how to install the client, so `go test ./...` works from a bare clone. In
// CI (CI=true, as CI runs .ci/run, which installs every client) or with
// DHSI_REQUIRE_CLIENTS=1 it fails: there a missing client is a broken
// set-up, not a reason to test less.
package testclients

import (
	"os"
	"testing"
)

// Required reports whether missing clients fail tests rather than skip them.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("DHSI_REQUIRE_CLIENTS") == "1"
}

// Need fails or skips t when err says a client is missing; install says
// how to get it.
func Need(t testing.TB, what, install string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if Required() {
		t.Fatalf("%s is not available (%s; bash .ci/run installs every client): %v", what, install, err)
	}
	t.Skipf("SKIPPED, NOT TESTED: %s is not installed (%s, or run bash .ci/run, which installs every client and runs the suite): %v", what, install, err)
}
