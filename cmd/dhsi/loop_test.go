package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/store"
)

// TestKilledLoopingWorkerMakesProgress is issue 15 §4: a compact --loop
// worker SIGKILLed at random every 1–3 s on versitygw still drains the
// inbox, because each round lists one bounded page from a random point
// (compiler I5), not the whole inbox.
func TestKilledLoopingWorkerMakesProgress(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	st, bucket := srv.NewStore(t)
	n := 3000
	if testing.Short() {
		n = 600
	}
	c, cfg := storeCompiler(t, st)
	errs := make([]error, n)
	parallel.ForEach(n, 32, func(i int) {
		d := fmt.Sprintf("killed%05d.example", i)
		errs[i] = c.WriteInbox(ctx, d, compiler.Table{Header: compiler.DefaultSchemaFields, Rows: [][]string{{d, "Co", "1", "2024-01-01T00:00:00Z"}}})
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	pending := func() int {
		m := 0
		st.List(ctx, compiler.InboxPrefix, func(a store.Attrs) error {
			if _, ok := compiler.DomainOfInboxKey(a.Key); ok {
				m++
			}
			return nil
		})
		return m
	}
	bin := dhsiBinary(t)
	deadline := time.Now().Add(3 * time.Minute)
	var runs, progressed int
	left := pending()
	for left > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d killed runs (%d made progress) %d of %d objects are still pending", runs, progressed, left, n)
		}
		w := exec.Command(bin, "compact", "--store", "s3://"+bucket, "--loop", "--lock-ttl", "2s")
		w.Env = append(os.Environ(), srv.Env()...)
		var stderr strings.Builder
		w.Stderr = &stderr
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(1000+rand.IntN(2000)) * time.Millisecond)
		w.Process.Signal(syscall.SIGKILL)
		w.Wait()
		runs++
		now := pending()
		if now < left {
			progressed++
		}
		left = now
	}
	t.Logf("%d objects drained by %d runs killed after 1–3 s each; %d made progress", n, runs, progressed)
	if progressed*2 < runs {
		t.Fatalf("only %d of %d killed runs made progress", progressed, runs)
	}
	// the shards hold every record, once
	res, err := c.CompactAll(ctx) // also clears what the kills left (stale locks, tombstones)
	if err != nil {
		t.Fatal(err)
	}
	_ = res
	total := 0
	for i := 0; i < cfg.Layout.Count(); i++ {
		b, _, err := store.ReadAll(ctx, st, compiler.ShardKey(cfg.Layout.ID(i)))
		if err != nil {
			continue
		}
		tb, err := compiler.ParseTable(b)
		if err != nil {
			t.Fatal(err)
		}
		total += len(tb.Rows)
	}
	if total != n {
		t.Fatalf("the shards hold %d records, want %d", total, n)
	}
}
