package records

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/store"
)

// BenchmarkRefreshS3 is what a server's refresh costs against versitygw
// when nothing changed, with a large inbox (a compaction backlog) and
// every shard of width 2 present: listing everything (full) against
// listing the change signals (signals). DHSI_BENCH_PENDING sets the
// number of pending objects (default 20,000).
//
//	go test ./records -run XXX -bench RefreshS3 -benchtime 20x
func BenchmarkRefreshS3(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("DHSI_BENCH_PENDING")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	srv := s3test.Start(b)
	st, _ := srv.NewStore(b)
	cfg, err := LoadCompilerConfig(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	c, err := compiler.New(st, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	// one record in every shard, compacted; then n pending objects
	for i := 0; i < cfg.Layout.Count(); i++ {
		id := cfg.Layout.ID(i)
		var d string
		for j := 0; ; j++ {
			if d = fmt.Sprintf("s%d-%d.example", i, j); cfg.Layout.Of(d) == id {
				break
			}
		}
		if err := c.WriteInbox(ctx, d, compiler.Table{Header: cfg.SchemaFields, Rows: [][]string{{d, "S", "1", "2024-01-01T00:00:00Z"}}}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := c.CompactAll(ctx); err != nil {
		b.Fatal(err)
	}
	header := strings.Join(cfg.SchemaFields, "␟") + "␟␞"
	parallel.ForEach(n, 32, func(i int) {
		d := fmt.Sprintf("p%d.example", i)
		body := header + d + "␟P␟1␟2024-01-01T00:00:00Z␟␞"
		if _, err := st.Put(ctx, compiler.InboxKey(d), strings.NewReader(body), store.Cond{}); err != nil {
			b.Error(err)
		}
	})
	c.FlushSignals()
	for _, mode := range []struct {
		name string
		full time.Duration
	}{{"full", time.Nanosecond}, {"signals", time.Hour}} {
		b.Run(mode.name, func(b *testing.B) {
			db := openTestDB(b)
			d, err := Open(ctx, st, db, Options{FullRefreshEvery: mode.full, FullRefreshShare: -1})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := d.Refresh(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			var rows int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM public.domains").Scan(&rows); err != nil || rows != n+cfg.Layout.Count() {
				b.Fatalf("%d domains served, want %d (%v)", rows, n+cfg.Layout.Count(), err)
			}
		})
	}
}
