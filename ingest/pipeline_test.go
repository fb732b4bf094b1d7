package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

// writeList writes n URLs of host into a list file named after the dataset.
func writeList(t *testing.T, dir, dataset, host string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "https://%s/page/%d\n", host, i)
	}
	p := filepath.Join(dir, dataset+".txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// RunAll reads batch i+1 while batch i is written: each dataset still gets
// exactly its own URLs, in batch order, and one version publishes them all.
func TestRunAllPipelinesBatches(t *testing.T) {
	ctx := context.Background()
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	var batches []Batch
	for i, n := range []int{300, 1, 2000, 50} {
		name := fmt.Sprintf("ds%d", i)
		batches = append(batches, Batch{Dataset: name, Files: []string{writeList(t, in, name, fmt.Sprintf("www.site%d.com", i), n)}})
	}
	work := t.TempDir()
	sums, err := RunAll(ctx, Options{Store: st, WorkDir: work, StageBytes: 4 << 10}, batches)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i, n := range []int64{300, 1, 2000, 50} {
		if s := sums[i]; s.Dataset != batches[i].Dataset || s.Written != n || s.Read != n {
			t.Errorf("batch %d: summary %s read %d written %d, want %s %d", i, s.Dataset, s.Read, s.Written, batches[i].Dataset, n)
		}
		total += n
	}
	if sums[0].URLsTotal != total || sums[0].Domains != 4 {
		t.Errorf("version has %d URLs in %d domains, want %d in 4", sums[0].URLsTotal, sums[0].Domains, total)
	}
	leftBatchDirs(t, work)
}

// A batch whose Parquet cannot be stored fails the ingest while the next
// batch is being read: the error names what failed, nothing is published,
// no scratch is left, and the same ingest succeeds once the store can
// take it.
func TestRunAllWriteFailureStopsThePipeline(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := localfs.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	var batches []Batch
	for i := range 3 {
		name := fmt.Sprintf("ds%d", i)
		batches = append(batches, Batch{Dataset: name, Files: []string{writeList(t, in, name, fmt.Sprintf("site%d.org", i), 5000)}})
	}
	// A file where dataset 1's directory would go: every Parquet put of
	// the first batch fails, even for root.
	if err := os.MkdirAll(filepath.Join(dir, "urls"), 0o755); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "urls", "dataset_id=1")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	_, err = RunAll(ctx, Options{Store: st, WorkDir: work}, batches)
	if err == nil || !strings.Contains(err.Error(), "dataset_id=1") {
		t.Fatalf("RunAll with dataset 1 unwritable: %v, want an error naming dataset_id=1", err)
	}
	failedCleanly(t, st, work)

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	sums, err := RunAll(ctx, Options{Store: st, WorkDir: t.TempDir()}, batches)
	if err != nil {
		t.Fatalf("the same ingest once the store takes it: %v", err)
	}
	if sums[0].URLsTotal != 15000 {
		t.Fatalf("version has %d URLs, want 15000", sums[0].URLsTotal)
	}
}

// failedCleanly fails if a failed RunAll published a version or left a
// batch's scratch directory behind.
func failedCleanly(t *testing.T, st store.Store, work string) {
	t.Helper()
	m, err := catalog.ReadManifest(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Current(); ok {
		t.Fatalf("a failed ingest published version %s", m.CurrentVersion)
	}
	leftBatchDirs(t, work)
}

// leftBatchDirs fails if a batch's scratch directory outlived RunAll.
func leftBatchDirs(t *testing.T, work string) {
	t.Helper()
	left, _ := filepath.Glob(filepath.Join(work, "batch-*"))
	if len(left) > 0 {
		t.Errorf("scratch left behind: %v", left)
	}
}

// A batch that cannot be read while the one before it is being written
// fails the ingest with its own error, not with the cancel it sends the
// write (a reviewer found "context canceled" reported instead).
func TestRunAllReadFailureIsReported(t *testing.T) {
	ctx := context.Background()
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	missing := filepath.Join(in, "does-not-exist.txt")
	batches := []Batch{
		{Dataset: "big", Files: []string{writeList(t, in, "big", "www.big.com", 200000)}},
		{Dataset: "missing", Files: []string{missing}},
	}
	work := t.TempDir()
	_, err = RunAll(ctx, Options{Store: st, WorkDir: work}, batches)
	if err == nil || !strings.Contains(err.Error(), "does-not-exist.txt") {
		t.Fatalf("RunAll with a missing second input: %v, want an error naming the file", err)
	}
	failedCleanly(t, st, work)
}
