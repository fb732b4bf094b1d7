package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dhsi/dhsi/httpapi/cdxtest"
	"github.com/dhsi/dhsi/internal/netwait"
)

// TestCDXServeHTTP: the CDX server API's fixtures (testdata/cdx), paging
// and oracle checks, end to end: the corpus ingested by `dhsi ingest`, the
// grant that hides a dataset made over SQL, the answers from `dhsi serve
// --http` with users.
func TestCDXServeHTTP(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	testdata := filepath.Join("..", "..", "testdata")
	err := cdxtest.Ingest(testdata, filepath.Join(dir, "corpus"), func(rank int, files map[string][]string, order []string) error {
		args := []string{"ingest", "--store", store, "--dataset-per-file"}
		for _, name := range order {
			args = append(args, files[name]...)
		}
		var stderr strings.Builder
		if code := run(ctx, args, io.Discard, &stderr); code != 0 {
			return fmt.Errorf("dhsi %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	admin, _, httpAddr := serveAliceAndRita(t, store, dir)
	if _, err := admin.Exec(ctx, "CALL grant_dataset($1, 'alice')", cdxtest.HiddenDataset); err != nil {
		t.Fatal(err)
	}
	get := cdxtest.HTTPGetter("http://" + httpAddr)
	// the grant reaches the JSON API within the refresh interval
	for deadline := time.Now().Add(15 * time.Second); ; {
		code, _, _, err := get("rita", "/"+cdxtest.HiddenDataset+"/cdx?url=archive.org")
		if err == nil && code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the grant of %s to alice did not hide it from rita within 15s (last answer %d %v)", cdxtest.HiddenDataset, code, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Run("the fixtures of testdata/cdx answer as written", func(t *testing.T) {
		cdxtest.Run(t, filepath.Join(testdata, "cdx"), get)
	})
	t.Run("all pages joined by their resume keys equal the unpaged answer", func(t *testing.T) {
		cdxtest.CheckPaging(t, get, []string{
			"url=*.archive.org",
			"url=iana.org/_css/*&collapse=timestamp:10",
			"url=iana.org&matchType=domain&filter=!original:.*\\.(ttf|otf)&from=20140126200700&to=201401262010",
		})
	})
	t.Run("pywb's own index of its sample archive is the oracle of the match types", func(t *testing.T) {
		cdxtest.CheckIanaOracle(t, get, testdata)
	})
}

// serveAliceAndRita serves store with the SQL listener, the JSON and CDX
// API at httpAddr, and two users in a users file under dir: alice, an
// admin, and rita, a reader; it returns a connection as each.
func serveAliceAndRita(t *testing.T, store, dir string) (admin, rita *pgx.Conn, httpAddr string) {
	t.Helper()
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("alice:alice-pw:admin\nrita:rita-pw:reader\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hp, err := netwait.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	httpAddr = "127.0.0.1:" + strconv.Itoa(hp)
	conn := startServe(t, "--store", store, "--users-file", users, "--http", httpAddr, "--refresh-interval", "200ms")
	port := regexp.MustCompile(`:(\d+)/`).FindStringSubmatch(conn)[1]
	admin = connect(t, "postgres://alice:alice-pw@127.0.0.1:"+port+"/dhsi?sslmode=disable")
	rita = connect(t, "postgres://rita:rita-pw@127.0.0.1:"+port+"/dhsi?sslmode=disable")
	return admin, rita, httpAddr
}
