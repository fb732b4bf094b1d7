package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store/localfs"
)

// TestDomainKeyCollisionIsRefused: the postings key a domain by its
// 64-bit xxh3, and two domains can be made to share one (this pair was
// found by a review with a distinguished-point search in ~90 s on 2
// cores). An ingest that would put the second beside the first refuses
// and publishes nothing, in one batch as across two (an ingest before
// stop 42 published the second batch, and lookups of either domain read
// the other's URLs).
func TestDomainKeyCollisionIsRefused(t *testing.T) {
	const a, b = "5d8c065663c2055b.com", "9c4d7a17c25d7bee.com"
	if catalog.DomainKey(a) != catalog.DomainKey(b) {
		t.Fatalf("%s and %s no longer share a key", a, b)
	}
	ctx := context.Background()
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fileA := file("a.txt", "http://"+a+"/a1\nhttp://"+a+"/a2\nhttp://example.org/x\n")
	fileB := file("b.txt", "http://"+b+"/b1\nhttp://example.org/y\n")
	both := file("both.txt", "http://"+a+"/a1\nhttp://"+b+"/b1\n")
	store := filepath.Join(dir, "store")
	current := func() string { return localManifest(t, store).CurrentVersion }
	refused := func(what string, args ...string) {
		t.Helper()
		before := current()
		var errOut strings.Builder
		if code := run(ctx, append([]string{"ingest", "--store", store}, args...), io.Discard, &errOut); code == 0 || !strings.Contains(errOut.String(), "domain key collision") {
			t.Fatalf("%s: exit %d\n%s", what, code, errOut.String())
		}
		if after := current(); after != before {
			t.Fatalf("%s published version %s", what, after)
		}
	}
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	refused("one batch with both", "--dataset", "both", both)
	if code := run(ctx, []string{"ingest", "--store", store, "--dataset", "a", fileA}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("ingest of a: exit %d", code)
	}
	refused("a second batch with the other", "--dataset", "b", fileB)

	c := connect(t, startServe(t, "--store", store, "--cache-dir", t.TempDir()))
	if n := one[int64](t, c, "SELECT count(*) FROM urls WHERE domain = $1", a); n != 2 {
		t.Fatalf("%s has %d URLs, want its 2", a, n)
	}
	if n := one[int64](t, c, "SELECT count(*) FROM urls WHERE domain = $1", b); n != 0 {
		t.Fatalf("%s has %d URLs, want none", b, n)
	}
}

// localManifest reads the manifest of the local store in dir.
func localManifest(t *testing.T, dir string) *catalog.Manifest {
	t.Helper()
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := catalog.ReadManifest(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
