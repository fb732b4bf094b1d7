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

func benchCompaction(b *testing.B, st store.Store, objects int) {
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		byDomain := map[string]compiler.Table{}
		for j := 0; j < objects; j++ {
			d := fmt.Sprintf("n%d-%07d.example", i, j)
			byDomain[d] = compiler.Table{Header: compiler.DefaultSchemaFields, Rows: [][]string{{d, "C", "1", "2024-01-01T00:00:00Z"}}}
		}
		c, err := compiler.New(st, compiler.Config{}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, failed := writeInbox(ctx, c, byDomain, 16, io.Discard); failed > 0 {
			b.Fatalf("%d inbox writes failed", failed)
		}
		b.StartTimer()
		s := time.Now()
		rs, err := c.CompactAll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		merged := 0
		for _, r := range rs {
			merged += r.InboxMerged
		}
		if merged != objects {
			b.Fatalf("merged %d of %d", merged, objects)
		}
		b.ReportMetric(float64(merged)/time.Since(s).Seconds(), "records/s")
	}
}

func BenchmarkCompactionLocal(b *testing.B) {
	st, err := localfs.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	benchCompaction(b, st, 20000)
}

func BenchmarkCompactionS3(b *testing.B) {
	st, _ := s3test.Start(b).NewStore(b)
	benchCompaction(b, st, 20000)
}
