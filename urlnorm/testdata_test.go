package urlnorm

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

// testdataDir is the real-world test data, kept in the repository at
// testdata/shared (its README.md gives each file's origin). A missing copy
// is a broken checkout, not a reason to skip.
func testdataDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "testdata", "shared")
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Fatalf("test data not found at %s (part of the repository): %v", dir, err)
	}
	return dir
}

func openTestdata(t testing.TB, rel string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(testdataDir(t), rel))
	if err != nil {
		t.Fatalf("open test data: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readTestdata(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir(t), rel))
	if err != nil {
		t.Fatalf("read test data: %v", err)
	}
	return b
}

// urlFile is one dataset of raw URLs, one per line, as stored.
type urlFile struct {
	name  string
	lines []string
}

func loadURLFiles(t testing.TB) []urlFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(testdataDir(t), "urls", "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no URL files under %s/urls (err %v)", testdataDir(t), err)
	}
	var files []urlFile
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		uf := urlFile{name: filepath.Base(p)}
		for sc.Scan() {
			uf.lines = append(uf.lines, sc.Text())
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		files = append(files, uf)
	}
	return files
}

func newTestNormalizer(t testing.TB, cfg Config) *Normalizer {
	t.Helper()
	n, err := NewNormalizer(cfg)
	if err != nil {
		t.Fatalf("NewNormalizer: %v", err)
	}
	return n
}
