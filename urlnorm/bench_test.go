package urlnorm

import (
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkParse parses the real URL lists (60k lines, all five files) in
// order; one op is one URL. The ingest budget is 300k URLs/s on 2 cores,
// i.e. at most ~6.6 µs per URL per core. Besides wall-clock ns/op it
// reports cpu-ns/op (process CPU time, GC included, per URL), which stays
// meaningful on a shared, overloaded machine, and urls/s/core from it.
func BenchmarkParse(b *testing.B) {
	var lines []string
	for _, f := range loadURLFiles(b) {
		lines = append(lines, f.lines...)
	}
	for _, bc := range []struct {
		name string
		cfg  Config
	}{
		{"embedded", Config{}},
		{"embedded-cached", Config{CacheHosts: true}},
		{"embedded-icann", Config{ICANNOnly: true}},
		{"dat", Config{List: loadDatList(b)}},
	} {
		n := newTestNormalizer(b, bc.cfg)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			cpu0 := processCPU()
			for b.Loop() {
				_, _ = n.Parse(lines[i])
				if i++; i == len(lines) {
					i = 0
				}
			}
			reportCPU(b, cpu0)
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(7919)) % len(lines)
				for pb.Next() {
					_, _ = n.Parse(lines[i])
					if i++; i == len(lines) {
						i = 0
					}
				}
			})
			reportCPU(b, cpu0)
		})
	}
}

func BenchmarkURLID(b *testing.B) {
	raw := "https://bibliotheque.missiondefrance.fr/index.php?lvl=bulletin_display&id=319"
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		_ = URLID(raw)
	}
}

// reportCPU adds the CPU-time metrics for the ops since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	cpu := processCPU() - cpu0
	if cpu <= 0 {
		return // no process CPU clock on this platform
	}
	perOp := float64(cpu.Nanoseconds()) / float64(b.N)
	b.ReportMetric(perOp, "cpu-ns/op")
	b.ReportMetric(1e9/perOp, "urls/s/core")
}
