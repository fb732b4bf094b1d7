package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

// Benchmarks of issue 3. Run:
//
//	go test ./cmd/dhsi -run '^$' -bench . -benchtime 1x      (compaction)
//	go test ./cmd/dhsi -run '^$' -bench DomainLookup -benchtime 20000x
//
// Each reports its own metrics (records/s, p50/p99 in µs).

// writeShards lays n domains directly into shard files (a bulk load), so a
// lookup benchmark over a million domains does not first need a million
// inbox puts.
func writeShards(b *testing.B, st store.Store, n int) []string {
	ctx := context.Background()
	layout := shard.Default()
	byShard := map[string][][]string{}
	domains := make([]string, n)
	for i := 0; i < n; i++ {
		d := fmt.Sprintf("site%07d.example", i)
		domains[i] = d
		id := layout.Of(d)
		byShard[id] = append(byShard[id], []string{d, fmt.Sprintf("Company %d", i), fmt.Sprint(i % 7), "2024-01-01T00:00:00Z"})
	}
	for id, rows := range byShard {
		sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
		var buf bytes.Buffer
		if err := (compiler.Table{Header: compiler.DefaultSchemaFields, Rows: rows}).Encode(&buf); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Put(ctx, compiler.ShardKey(id), &buf, store.Cond{}); err != nil {
			b.Fatal(err)
		}
	}
	return domains
}

func BenchmarkDomainLookup(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	st, err := localfs.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	domains := writeShards(b, st, n)
	start := time.Now()
	url := startServe(b, "--store", dir, "--refresh-interval", "0")
	b.Logf("server up with %d domains mirrored in %v", n, time.Since(start).Round(time.Millisecond))
	c := connect(b, url)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := domains[rand.IntN(n)]
		s := time.Now()
		var got string
		if err := c.QueryRow(ctx, "SELECT domain FROM domains WHERE domain = $1", d).Scan(&got); err != nil || got != d {
			b.Fatalf("lookup %s: %q %v", d, got, err)
		}
		lat = append(lat, time.Since(s))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// benchCompaction lands records, untimed, then times CompactAll (issue 15
// §4: the target is 5,000 records/s on 2 cores against versitygw). Per
// domain: one inbox object per record; batched: through a compiler.Batcher
// with its defaults (one batch object per shard per 25,000 records).
func benchCompaction(b *testing.B, st store.Store, records int, batched bool) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, err := compiler.New(st, compiler.Config{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		row := func(j int) []string {
			d := fmt.Sprintf("n%d-%07d.example", i, j)
			return []string{d, "C", "1", "2024-01-01T00:00:00Z"}
		}
		if batched {
			bt := c.NewBatcher(compiler.DefaultSchemaFields, compiler.BatcherConfig{})
			for j := 0; j < records; j++ {
				bt.Add(row(j))
			}
			if rep, err := bt.Flush(ctx); err != nil || rep.Landed != records {
				b.Fatalf("batches: %+v %v", rep, err)
			}
		} else {
			byDomain := map[string]compiler.Table{}
			for j := 0; j < records; j++ {
				r := row(j)
				byDomain[r[0]] = compiler.Table{Header: compiler.DefaultSchemaFields, Rows: [][]string{r}}
			}
			if _, failed := writeInbox(ctx, c, byDomain, 16, io.Discard); failed > 0 {
				b.Fatalf("%d inbox writes failed", failed)
			}
		}
		b.StartTimer()
		s := time.Now()
		rs, err := c.CompactAll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		merged := 0
		for _, r := range rs {
			merged += r.RecordsAfter - r.RecordsBefore
		}
		if merged != records {
			b.Fatalf("the shards gained %d records, want %d", merged, records)
		}
		b.ReportMetric(float64(merged)/time.Since(s).Seconds(), "records/s")
	}
}

func BenchmarkCompactionLocal(b *testing.B) {
	st, err := localfs.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	benchCompaction(b, st, 20000, false)
}

// BenchmarkCompactionS3 compacts per-domain inbox objects, then batch
// objects, on versitygw:
//
//	go test ./cmd/dhsi -run XXX -bench CompactionS3 -benchtime 2x
func BenchmarkCompactionS3(b *testing.B) {
	srv := s3test.Start(b)
	b.Run("inbox-objects", func(b *testing.B) {
		st, _ := srv.NewStore(b)
		benchCompaction(b, st, 5000, false)
	})
	b.Run("batches", func(b *testing.B) {
		st, _ := srv.NewStore(b)
		benchCompaction(b, st, 50000, true)
	})
}
