package localfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/storetest"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := open(t)
		t.Cleanup(func() { checkHiddenDirsEmpty(t, s) })
		return s
	})
}

// checkHiddenDirsEmpty asserts that no staged file or lock file outlives
// the operation that made it, whatever the operation's outcome.
func checkHiddenDirsEmpty(t *testing.T, s *Store) {
	t.Helper()
	for _, d := range []string{s.tmp, s.locks} {
		ents, err := os.ReadDir(d)
		if err != nil {
			t.Errorf("read %s: %v", d, err)
			continue
		}
		for _, e := range ents {
			t.Errorf("%s left behind %s", filepath.Base(d), e.Name())
		}
	}
}

func put(t *testing.T, s *Store, key, content string) store.Attrs {
	t.Helper()
	a, err := s.Put(t.Context(), key, strings.NewReader(content), store.Cond{})
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return a
}

func TestOpenCreatesTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("Open did not create %s: %v", dir, err)
	}
	if got, want := s.String(), "file://"+dir; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestObjectsArePlainFilesAtTheirKey(t *testing.T) {
	s := open(t)
	put(t, s, "tables/t1/part-0.parquet", "PAR1")
	p, err := s.LocalPath("tables/t1/part-0.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.root, "tables", "t1", "part-0.parquet"); p != want {
		t.Errorf("LocalPath = %q, want %q", p, want)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "PAR1" {
		t.Errorf("ReadFile(%s) = %q, %v", p, b, err)
	}
	if _, err := s.LocalPath("../escape"); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("LocalPath(../escape) = %v, want ErrInvalidKey", err)
	}
}

func TestReservedNamesAreInvalidKeysAndNeverListed(t *testing.T) {
	s := open(t)
	put(t, s, "visible", "x")
	for _, key := range []string{".dhsi-tmp/x", ".dhsi-locks/x", ".dhsi-tmp", ".dhsi-other"} {
		if _, err := s.Put(t.Context(), key, strings.NewReader("x"), store.Cond{}); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Head(t.Context(), key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Head(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	// Deeper segments with the same name are ordinary keys.
	put(t, s, "a/.dhsi-tmp", "y")
	// Leave something in both hidden directories, as a crashed put would.
	for _, d := range []string{s.tmp, s.locks} {
		if err := os.WriteFile(filepath.Join(d, "stray"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for _, prefix := range []string{"", ".dhsi-", ".dhsi-tmp/"} {
		err := s.List(t.Context(), prefix, func(a store.Attrs) error { keys = append(keys, a.Key); return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"a/.dhsi-tmp", "visible"}; !slices.Equal(keys, want) {
		t.Errorf("List = %q, want %q", keys, want)
	}
}

func TestDeleteRemovesEmptyParentDirectories(t *testing.T) {
	s := open(t)
	put(t, s, "a/b/c/d", "x")
	put(t, s, "a/keep", "y")
	if err := s.Delete(t.Context(), "a/b/c/d", store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.root, "a", "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a/b survived the delete of its last object: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.root, "a", "keep")); err != nil {
		t.Errorf("a/keep: %v", err)
	}
	if err := s.Delete(t.Context(), "a/keep", store.Cond{}); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(s.root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{".dhsi-locks", ".dhsi-tmp"}; !slices.Equal(names, want) {
		t.Errorf("root holds %q after deleting everything, want %q", names, want)
	}
}

func TestNestingPutsAreRejected(t *testing.T) {
	s := open(t)
	put(t, s, "n/a", "file")
	if _, err := s.Put(t.Context(), "n/a/b", strings.NewReader("x"), store.Cond{}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Put(n/a/b) over the file n/a = %v, want ErrInvalidKey", err)
	}
	put(t, s, "m/a/b", "file")
	if _, err := s.Put(t.Context(), "m/a", strings.NewReader("x"), store.Cond{}); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Put(m/a) over the directory m/a = %v, want ErrInvalidKey", err)
	}
	checkHiddenDirsEmpty(t, s)
}

func TestFilesWrittenByHandGetContentETags(t *testing.T) {
	s := open(t)
	a := put(t, s, "k", "hello")
	p, _ := s.LocalPath("k")

	// Replaced by hand: a new file without the cached ETag.
	if err := os.WriteFile(p+".new", []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	h, err := s.Head(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if h.ETag != a.ETag {
		t.Errorf("same content by hand: ETag %q, want %q", h.ETag, a.ETag)
	}

	// Edited in place with the same size: the cached ETag is stale, and the
	// changed mtime gives it away.
	if err := os.WriteFile(p, []byte("jello"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, future, future); err != nil {
		t.Fatal(err)
	}
	h2, err := s.Head(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if h2.ETag == a.ETag {
		t.Errorf("edited in place: ETag stayed %q", h2.ETag)
	}
	// The stale-ETag check is the CAS check too.
	if _, err := s.Put(t.Context(), "k", strings.NewReader("x"), store.Cond{IfMatch: a.ETag}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Errorf("Put(IfMatch: the pre-edit ETag) = %v, want ErrPreconditionFailed", err)
	}
}

func TestETagIsTheHexSHA256OfTheContent(t *testing.T) {
	s := open(t)
	a := put(t, s, "k", "hello")
	const want = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	if a.ETag != want {
		t.Errorf("ETag = %q, want %q", a.ETag, want)
	}
}
