package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

// TestConcurrentPublishers is issue 17 §5: eight dhsi ingest at once into
// one versitygw bucket, six adding new datasets and two adding URLs to an
// existing one, all publish without a rerun (losers rebuild on the
// winner's version, M3; dataset ids are reserved, M8), and the result is
// what the same ingests run one after another give.
func TestConcurrentPublishers(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	s3, bucket := srv.NewStore(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	// eight inputs: slices of a real crawl's URL list
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "shared", "urls", "cc_main_2024_30_cdx00187.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	dir := t.TempDir()
	var inputs []string
	for i := 0; i < 9; i++ {
		p := filepath.Join(dir, fmt.Sprintf("part%d.txt", i))
		var b strings.Builder
		for j := i; j < len(lines); j += 9 {
			b.WriteString(lines[j] + "\n")
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, p)
	}
	dataset := func(i int) string {
		if i >= 6 {
			return "base" // more URLs to an existing dataset
		}
		return fmt.Sprintf("pub%d", i)
	}
	reference := t.TempDir()
	for _, d := range []string{reference, "s3://" + bucket} {
		if code := run(ctx, []string{"ingest", "--store", d, "--dataset", "base", inputs[8]}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("first ingest into %s: exit %d", d, code)
		}
	}
	for i := 0; i < 8; i++ {
		if code := run(ctx, []string{"ingest", "--store", reference, "--dataset", dataset(i), inputs[i]}, io.Discard, io.Discard); code != 0 {
			t.Fatalf("reference ingest %d: exit %d", i, code)
		}
	}

	var wg sync.WaitGroup
	codes := make([]int, 8)
	errs := make([]strings.Builder, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = run(ctx, []string{"ingest", "--store", "s3://" + bucket, "--dataset", dataset(i), inputs[i]}, io.Discard, &errs[i])
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Errorf("concurrent ingest %d (%s): exit %d\n%s", i, dataset(i), c, errs[i].String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	counts := func(st store.Store) map[string]string {
		t.Helper()
		m, err := catalog.ReadManifest(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		cur, _ := m.Current()
		b, _, err := store.ReadAll(ctx, st, cur.DatasetsJSON)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := catalog.ParseDatasets(b)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{"": fmt.Sprintf("%d urls, %d domains", cur.URLs, cur.Domains)}
		ids := map[uint32]bool{}
		for _, d := range ds.Datasets {
			out[d.Name] = fmt.Sprintf("%d urls, %d domains", d.URLs, d.Domains)
			if ids[d.ID] {
				t.Fatalf("id %d twice", d.ID)
			}
			ids[d.ID] = true
		}
		return out
	}
	ref, err := localfs.Open(reference)
	if err != nil {
		t.Fatal(err)
	}
	want, got := counts(ref), counts(s3)
	if len(got) != 8 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after 8 concurrent publishers:\n got %v\nwant %v (the same ingests one after another)", got, want)
	}
	var out strings.Builder
	if code := run(ctx, []string{"verify", "--store", "s3://" + bucket, "--deep"}, &out, io.Discard); code != 0 {
		t.Fatalf("verify: exit %d\n%s", code, out.String())
	}
}
