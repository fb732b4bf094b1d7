// Package metrics exposes what a DHSI process does as Prometheus metrics,
// with the official client library: statements by kind and their latency,
// errors by SQLSTATE, sessions, the index version served and its age, how
// fresh the server's view of the store is, and Go's and the process's own
// collectors. Names follow Prometheus' conventions: a dhsi_ prefix, base
// units (seconds, bytes), _total for counters.
//
// Labels are bounded: statement kinds and SQLSTATEs are fixed sets; no
// label carries a domain, a dataset or a URL (design 001 §8).
package metrics

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds one process's metrics.
type Registry struct {
	reg         *prometheus.Registry
	statements  *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	errors      *prometheus.CounterVec
	store       *storeMetrics // InstrumentStore's, made on first use
	compactions *Compactions  // made on first use
}

// New returns a registry with DHSI's statement metrics and the Go and
// process collectors.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry()}
	r.statements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dhsi_statements_total",
		Help: "Statements run, by kind (native:<function> answered without DuckDB, duckdb, session for SET/SHOW/transaction control, cursor, copy) and outcome (ok, error).",
	}, []string{"kind", "outcome"})
	r.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dhsi_statement_duration_seconds",
		Help:    "Time from a statement's execution to its last row sent, by kind.",
		Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"kind"})
	r.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dhsi_errors_total",
		Help: "Errors sent to clients, by SQLSTATE (42501 refusals, 57014 cancels, XX000 internal errors, ...).",
	}, []string{"sqlstate"})
	r.reg.MustRegister(r.statements, r.duration, r.errors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Statement records one statement (sqlserver.Observer).
func (r *Registry) Statement(kind string, d time.Duration, failed bool) {
	outcome := "ok"
	if failed {
		outcome = "error"
	}
	r.statements.WithLabelValues(kind, outcome).Inc()
	r.duration.WithLabelValues(kind).Observe(d.Seconds())
}

// Error records an error sent to a client (sqlserver.Observer).
func (r *Registry) Error(sqlstate string) { r.errors.WithLabelValues(sqlstate).Inc() }

// GaugeFunc registers a gauge read at scrape time.
func (r *Registry) GaugeFunc(name, help string, fn func() float64) {
	r.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// Info registers a gauge of value 1 whose one label carries a changing
// value read at scrape time (the index version served).
func (r *Registry) Info(name, help, label string, value func() string) {
	r.reg.MustRegister(&infoCollector{desc: prometheus.NewDesc(name, help, []string{label}, nil), value: value})
}

type infoCollector struct {
	desc  *prometheus.Desc
	value func() string
}

func (c *infoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *infoCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, c.value())
}

// Handler serves the registry in Prometheus' text format (GET /metrics).
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// Cache is one cache's counters at scrape time.
type Cache struct {
	Name                    string
	Hits, Misses, Evictions int64
	Used, Limit             int64 // bytes (entries for a cache that counts entries)
}

// Caches registers the caches' metrics, read at scrape time:
// dhsi_cache_hits_total, dhsi_cache_misses_total,
// dhsi_cache_evictions_total, dhsi_cache_used and dhsi_cache_limit, by
// cache (block and row in bytes, reader in open files).
func (r *Registry) Caches(read func() []Cache) {
	r.reg.MustRegister(&cacheCollector{read: read,
		hits:      prometheus.NewDesc("dhsi_cache_hits_total", "Cache lookups that found their entry, by cache (block: remote byte ranges; row: decoded URL rows; reader: open lake files).", []string{"cache"}, nil),
		misses:    prometheus.NewDesc("dhsi_cache_misses_total", "Cache lookups that did not, by cache.", []string{"cache"}, nil),
		evictions: prometheus.NewDesc("dhsi_cache_evictions_total", "Entries evicted to stay within a cache's bound, by cache.", []string{"cache"}, nil),
		used:      prometheus.NewDesc("dhsi_cache_used", "What a cache holds: bytes for block and row, open files for reader.", []string{"cache"}, nil),
		limit:     prometheus.NewDesc("dhsi_cache_limit", "A cache's bound, in the unit of dhsi_cache_used.", []string{"cache"}, nil),
	})
}

type cacheCollector struct {
	read                                 func() []Cache
	hits, misses, evictions, used, limit *prometheus.Desc
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hits, c.misses, c.evictions, c.used, c.limit} {
		ch <- d
	}
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.read() {
		ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.Hits), s.Name)
		ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.Misses), s.Name)
		ch <- prometheus.MustNewConstMetric(c.evictions, prometheus.CounterValue, float64(s.Evictions), s.Name)
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(s.Used), s.Name)
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(s.Limit), s.Name)
	}
}

// Compactions returns the compaction metrics (dhsi compact, CALL
// compact_*), registered on first use.
func (r *Registry) Compactions() *Compactions {
	if r.compactions == nil {
		r.compactions = &Compactions{
			runs: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "dhsi_compactions_total",
				Help: "Shard compactions, by status (compacted, moved, nothing-to-do, locked, conflict, error).",
			}, []string{"status"}),
			merged: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "dhsi_compaction_inbox_objects_merged_total",
				Help: "Inbox and batch objects merged into shards and retired.",
			}),
			kept: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "dhsi_compaction_inbox_objects_kept_total",
				Help: "Inbox and batch objects merged but kept: rewritten meanwhile, or with records the rule refuses.",
			}),
			records: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "dhsi_compaction_records_written_total",
				Help: "Records in the shards compactions wrote.",
			}),
			bytes: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "dhsi_compaction_bytes_written_total",
				Help: "Bytes of the shards compactions wrote.",
			}),
			duration: prometheus.NewHistogram(prometheus.HistogramOpts{
				Name:    "dhsi_compaction_duration_seconds",
				Help:    "Time of one shard compaction.",
				Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
			}),
			last: prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "dhsi_compaction_last_timestamp_seconds",
				Help: "When the last compaction of this process ended (unix time).",
			}),
		}
		c := r.compactions
		r.reg.MustRegister(c.runs, c.merged, c.kept, c.records, c.bytes, c.duration, c.last)
	}
	return r.compactions
}

// Compactions counts shard compactions.
type Compactions struct {
	runs                         *prometheus.CounterVec
	merged, kept, records, bytes prometheus.Counter
	duration                     prometheus.Histogram
	last                         prometheus.Gauge
}

// Observe records one compaction's result: its status, inbox objects
// merged and kept, records and bytes written, and duration.
func (c *Compactions) Observe(status string, merged, kept, records int, bytes int64, d time.Duration) {
	if c == nil {
		return
	}
	c.runs.WithLabelValues(status).Inc()
	c.merged.Add(float64(merged))
	c.kept.Add(float64(kept))
	if bytes > 0 {
		c.records.Add(float64(records))
		c.bytes.Add(float64(bytes))
	}
	c.duration.Observe(d.Seconds())
	c.last.SetToCurrentTime()
}

// Counter registers a counter read at scrape time (progress of a long
// ingest: rows read, written).
func (r *Registry) CounterFunc(name, help string, fn func() float64) {
	r.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn))
}

// Serve serves the registry on addr (GET /metrics) until ctx ends, and
// returns the address it listens on.
func (r *Registry) Serve(ctx context.Context, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", r.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	go func() { <-ctx.Done(); srv.Close() }()
	return ln.Addr().String(), nil
}
