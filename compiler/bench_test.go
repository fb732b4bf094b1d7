package compiler

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/store"
)

// BenchmarkCompactAllS3 measures CompactAll of a full inbox on versitygw
// (issue 15 §4: the target is 5,000 inbox records/s on 2 cores). Each
// iteration lands records over 256 shards that (after the first) already
// hold them, untimed, then compacts them all; records/s is the figure to
// compare. inbox-objects: 5,000 one-record per-domain objects; batches:
// 50,000 records through a Batcher with its defaults.
//
//	go test ./compiler -run XXX -bench CompactAllS3 -benchtime 2x
func BenchmarkCompactAllS3(b *testing.B) {
	srv := s3test.Start(b)
	b.Run("inbox-objects", func(b *testing.B) {
		st, _ := srv.NewStore(b)
		benchCompactAll(b, st, 5000, false)
	})
	b.Run("batches", func(b *testing.B) {
		st, _ := srv.NewStore(b)
		benchCompactAll(b, st, 50000, true)
	})
}

// benchCompactAll lands n records (per-domain inbox objects, or batch
// objects of 1,000 records through a Batcher), then times CompactAll.
func benchCompactAll(b *testing.B, st store.Store, n int, batches bool) {
	ctx := context.Background()
	par, _ := strconv.Atoi(os.Getenv("DHSI_BENCH_PARALLEL"))
	c, err := New(st, Config{Parallel: par}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var failed error
		at := time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339)
		if batches {
			bt := c.NewBatcher(fields, BatcherConfig{})
			for j := 0; j < n; j++ {
				d := fmt.Sprintf("bench%07d.example", j)
				bt.Add([]string{d, "Co", fmt.Sprint(i), at})
			}
			rep, err := bt.Flush(ctx)
			if err != nil || rep.Landed != n {
				b.Fatalf("batches: %+v %v", rep, err)
			}
		} else {
			parallel.ForEach(n, 32, func(j int) {
				d := fmt.Sprintf("bench%07d.example", j)
				if err := c.WriteInbox(ctx, d, rec(d, "Co", i, at)); err != nil {
					failed = err
				}
			})
		}
		if failed != nil {
			b.Fatal(failed)
		}
		b.StartTimer()
		start := time.Now()
		res, err := c.CompactAll(ctx)
		total += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		after := 0
		for _, r := range res {
			after += r.RecordsAfter
		}
		if after != n {
			b.Fatalf("shards hold %d records, want %d", after, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "records/s")
}
