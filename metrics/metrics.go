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
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds one process's metrics.
type Registry struct {
	reg        *prometheus.Registry
	statements *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	errors     *prometheus.CounterVec
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
