package metrics

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dhsi/dhsi/store"
)

// storeMetrics are the object-store request metrics of one process.
type storeMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	bytes    *prometheus.CounterVec
}

// InstrumentStore returns st with its requests counted: by operation
// (get, get_range, head, put, delete, delete_many, list) and outcome (ok, not_found,
// precondition_failed, canceled, error), their latency, and the bytes read
// and written. Retries happen inside the store's client (the AWS SDK's
// retryer) and are part of one request's latency here. The optional
// capabilities of st (store.ListerFrom, store.AtomicDeleter,
// store.MultiDeleter, store.TempSweeper) are kept.
func (r *Registry) InstrumentStore(st store.Store) store.Store {
	if r.store == nil {
		r.store = &storeMetrics{
			requests: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "dhsi_store_requests_total",
				Help: "Object-store requests, by operation (get, get_range, head, put, delete, delete_many, list) and outcome (ok, not_found, precondition_failed, canceled, error).",
			}, []string{"op", "outcome"}),
			duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    "dhsi_store_request_duration_seconds",
				Help:    "Object-store request latency by operation (a get until its body is read or closed; a list until its last page).",
				Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
			}, []string{"op"}),
			bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "dhsi_store_bytes_total",
				Help: "Object bytes read from and written to the store, by direction (read, written).",
			}, []string{"direction"}),
		}
		r.reg.MustRegister(r.store.requests, r.store.duration, r.store.bytes)
		if rs, ok := st.(interface{ Retries() int64 }); ok {
			// the S3 client's own retries (s3store), which one request's
			// latency above includes
			r.CounterFunc("dhsi_store_retries_total", "Requests the S3 client sent again after a retryable error (throttling, 5xx, a dropped connection).", func() float64 { return float64(rs.Retries()) })
		}
	}
	in := &instrumented{Store: st, m: r.store}
	if lp, ok := st.(localPather); ok {
		// a local store's files are read in place (catalog.LocalPather):
		// only a store that has local paths may say it does
		return &instrumentedLocal{instrumented: in, lp: lp}
	}
	return in
}

// localPather is catalog.LocalPather (not imported: catalog is above this
// package).
type localPather interface {
	LocalPath(key string) (string, error)
}

type instrumentedLocal struct {
	*instrumented
	lp localPather
}

func (s *instrumentedLocal) LocalPath(key string) (string, error) { return s.lp.LocalPath(key) }

type instrumented struct {
	store.Store
	m *storeMetrics
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, store.ErrNotFound):
		return "not_found"
	case errors.Is(err, store.ErrPreconditionFailed):
		return "precondition_failed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}

func (s *instrumented) done(op string, start time.Time, err error) {
	s.m.requests.WithLabelValues(op, outcomeOf(err)).Inc()
	s.m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

// countingBody counts what a caller reads of an object's body and records
// the request when the body is closed.
type countingBody struct {
	io.ReadCloser
	s      *instrumented
	op     string
	start  time.Time
	n      int64
	closed atomic.Bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *countingBody) Close() error {
	err := b.ReadCloser.Close()
	if b.closed.CompareAndSwap(false, true) {
		b.s.m.bytes.WithLabelValues("read").Add(float64(b.n))
		b.s.done(b.op, b.start, nil)
	}
	return err
}

func (s *instrumented) Get(ctx context.Context, key string) (io.ReadCloser, store.Attrs, error) {
	start := time.Now()
	rc, a, err := s.Store.Get(ctx, key)
	if err != nil {
		s.done("get", start, err)
		return nil, a, err
	}
	return &countingBody{ReadCloser: rc, s: s, op: "get", start: start}, a, nil
}

func (s *instrumented) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := s.Store.GetRange(ctx, key, off, n)
	if err != nil {
		s.done("get_range", start, err)
		return nil, err
	}
	return &countingBody{ReadCloser: rc, s: s, op: "get_range", start: start}, nil
}

func (s *instrumented) Head(ctx context.Context, key string) (store.Attrs, error) {
	start := time.Now()
	a, err := s.Store.Head(ctx, key)
	s.done("head", start, err)
	return a, err
}

// countingReader counts the bytes a put sends.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (s *instrumented) Put(ctx context.Context, key string, r io.Reader, cond store.Cond) (store.Attrs, error) {
	start := time.Now()
	cr := &countingReader{r: r}
	a, err := s.Store.Put(ctx, key, cr, cond)
	s.done("put", start, err)
	if err == nil {
		s.m.bytes.WithLabelValues("written").Add(float64(cr.n))
	}
	return a, err
}

func (s *instrumented) Delete(ctx context.Context, key string, cond store.Cond) error {
	start := time.Now()
	err := s.Store.Delete(ctx, key, cond)
	s.done("delete", start, err)
	return err
}

func (s *instrumented) List(ctx context.Context, prefix string, fn func(store.Attrs) error) error {
	start := time.Now()
	fn, stopped := stopsOK(fn)
	err := s.Store.List(ctx, prefix, fn)
	s.listDone(start, err, stopped)
	return err
}

// ListFrom keeps the store's own StartAfter listing (store.ListerFrom).
func (s *instrumented) ListFrom(ctx context.Context, prefix, startAfter string, fn func(store.Attrs) error) error {
	start := time.Now()
	fn, stopped := stopsOK(fn)
	err := store.ListFrom(ctx, s.Store, prefix, startAfter, fn)
	s.listDone(start, err, stopped)
	return err
}

// stopsOK wraps a listing's callback to remember the error it returned: a
// caller that stops a listing early (a bounded page) is no failed request.
func stopsOK(fn func(store.Attrs) error) (func(store.Attrs) error, *error) {
	var stop error
	return func(a store.Attrs) error {
		err := fn(a)
		if err != nil {
			stop = err
		}
		return err
	}, &stop
}

func (s *instrumented) listDone(start time.Time, err error, stopped *error) {
	if err != nil && *stopped != nil && errors.Is(err, *stopped) {
		err = nil
	}
	s.done("list", start, err)
}

// DeleteMany is the wrapped store's own (store.MultiDeleter), counted as
// one "delete_many" whatever the number of its requests, or else one
// counted Delete per item.
func (s *instrumented) DeleteMany(ctx context.Context, items []store.DeleteItem) []error {
	md, ok := s.Store.(store.MultiDeleter)
	if !ok {
		return store.DeleteEach(ctx, s, items)
	}
	start := time.Now()
	errs := md.DeleteMany(ctx, items)
	// the outcome of the worst item: an error before a failed condition
	var worst error
	for _, err := range errs {
		if worst == nil || outcomeOf(err) == "error" && outcomeOf(worst) != "error" {
			worst = err
		}
	}
	s.done("delete_many", start, worst)
	return errs
}

// BulkDelete reports the wrapped store's (store.MultiDeleter).
func (s *instrumented) BulkDelete(ctx context.Context) (bulk, conditional bool) {
	return store.BulkDelete(ctx, s.Store)
}

// AtomicConditionalDelete reports the wrapped store's (store.AtomicDeleter).
func (s *instrumented) AtomicConditionalDelete() bool {
	ad, ok := s.Store.(store.AtomicDeleter)
	return ok && ad.AtomicConditionalDelete()
}

// SweepTemp forwards to the wrapped store (store.TempSweeper); a store
// without staged files has nothing to sweep.
func (s *instrumented) SweepTemp(cutoff time.Time, dryRun bool) (int, int64, error) {
	if sw, ok := s.Store.(store.TempSweeper); ok {
		return sw.SweepTemp(cutoff, dryRun)
	}
	return 0, 0, nil
}

// Unwrap returns the wrapped store.
func (s *instrumented) Unwrap() store.Store { return s.Store }
