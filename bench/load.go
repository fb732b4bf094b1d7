package bench

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// client runs the two benchmark queries; one per simulated user.
type client interface {
	domainDatasets(ctx context.Context, domain string) (int, error)
	firstPage(ctx context.Context, domain string, datasetID int32) (int, error)
	one(ctx context.Context) (int, error) // SELECT 1: the floor of a round trip
	close()
}

// pgwireClient is one pgx connection with the two queries prepared (used
// for DHSI and for PostgreSQL alike).
type pgwireClient struct{ conn *pgx.Conn }

func newPGWireClient(ctx context.Context, url, ddSQL, fpSQL string) (*pgwireClient, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Prepare(ctx, "dd", ddSQL); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("prepare %s: %w", ddSQL, err)
	}
	if _, err := conn.Prepare(ctx, "one", "SELECT 1"); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	if _, err := conn.Prepare(ctx, "fp", fpSQL); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("prepare %s: %w", fpSQL, err)
	}
	return &pgwireClient{conn: conn}, nil
}

func drain(rows pgx.Rows) (int, error) {
	n := 0
	for rows.Next() {
		_ = rows.RawValues()
		n++
	}
	rows.Close()
	return n, rows.Err()
}

func (c *pgwireClient) domainDatasets(ctx context.Context, domain string) (int, error) {
	rows, err := c.conn.Query(ctx, "dd", domain)
	if err != nil {
		return 0, err
	}
	return drain(rows)
}

func (c *pgwireClient) firstPage(ctx context.Context, domain string, ds int32) (int, error) {
	rows, err := c.conn.Query(ctx, "fp", domain, ds)
	if err != nil {
		return 0, err
	}
	return drain(rows)
}

func (c *pgwireClient) one(ctx context.Context) (int, error) {
	rows, err := c.conn.Query(ctx, "one")
	if err != nil {
		return 0, err
	}
	return drain(rows)
}

func (c *pgwireClient) close() { c.conn.Close(context.Background()) }

// duckClient queries Parquet through a shared in-process DuckDB.
type duckClient struct{ dd, fp *sql.Stmt }

func sqlDrain(rows *sql.Rows, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

func (c *duckClient) domainDatasets(ctx context.Context, domain string) (int, error) {
	return sqlDrain(c.dd.QueryContext(ctx, domain))
}
func (c *duckClient) firstPage(ctx context.Context, domain string, ds int32) (int, error) {
	return sqlDrain(c.fp.QueryContext(ctx, domain, int64(ds)))
}
func (c *duckClient) one(ctx context.Context) (int, error) { return 0, fmt.Errorf("not measured") }
func (c *duckClient) close()                               {}

// cell is one measured (query, client count): latencies and throughput.
type cell struct {
	p50, p99 time.Duration
	qps      float64
	n        int
	empty    int // queries that returned no rows
}

func (c cell) ok() bool { return c.n > 0 }

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(float64(len(d)-1) * p)
	return d[i]
}

// measure runs query q ("dd" or "fp") from n clients for warm+dur, and
// reports the latencies and throughput of the last dur.
func measure(ctx context.Context, newClient func(context.Context) (client, error), n int, warm, dur time.Duration,
	queries []Query, dsID []int32, q string) (cell, error) {
	clients := make([]client, n)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.close()
			}
		}
	}()
	for i := range clients {
		c, err := newClient(ctx)
		if err != nil {
			return cell{}, err
		}
		clients[i] = c
	}
	lat := make([][]time.Duration, n)
	empties := make([]int, n)
	errs := make([]error, n)
	lastEnd := make([]time.Time, n)
	start := time.Now()
	measureFrom := start.Add(warm)
	end := measureFrom.Add(dur)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			j := i * len(queries) / n
			for ctx.Err() == nil {
				qq := queries[j%len(queries)]
				j++
				t0 := time.Now()
				rows, err := runQuery(ctx, c, q, qq, dsID)
				t1 := time.Now()
				if err != nil {
					errs[i] = fmt.Errorf("%s(%q): %w", q, qq.Domain, err)
					return
				}
				if !t0.Before(measureFrom) {
					lat[i] = append(lat[i], t1.Sub(t0))
					if rows == 0 {
						empties[i]++
					}
					if t1.After(lastEnd[i]) {
						lastEnd[i] = t1
					}
				}
				if !t1.Before(end) {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return cell{}, err
		}
	}
	var all []time.Duration
	var empty int
	for i := range lat {
		all = append(all, lat[i]...)
		empty += empties[i]
	}
	// queries started in the window count, even if they end after it
	span := dur
	for _, t := range lastEnd {
		if d := t.Sub(measureFrom); d > span {
			span = d
		}
	}
	return cell{p50: percentile(all, 0.5), p99: percentile(all, 0.99), qps: float64(len(all)) / span.Seconds(), n: len(all), empty: empty}, nil
}

// runQuery runs query q of the benchmark ("dd", "fp" or "one") for qq on c
// and returns the rows it got.
func runQuery(ctx context.Context, c client, q string, qq Query, dsID []int32) (int, error) {
	switch q {
	case "dd":
		return c.domainDatasets(ctx, qq.Domain)
	case "one":
		return c.one(ctx)
	default:
		return c.firstPage(ctx, qq.Domain, dsID[qq.Dataset])
	}
}

// prime runs each query of the set once, in order, on one client, for at
// most limit: what "warm" means in the report. Without it a warm cell's
// cache state depended on the system's own speed (a faster system saw
// more of the set twice within the warm-up), and for DHSI's row cache a
// 1-client cell measured mostly first touches.
func prime(ctx context.Context, newClient func(context.Context) (client, error), queries []Query, dsID []int32, q string, limit time.Duration) (int, error) {
	c, err := newClient(ctx)
	if err != nil {
		return 0, err
	}
	defer c.close()
	end := time.Now().Add(limit)
	for i, qq := range queries {
		if time.Now().After(end) {
			return i, nil
		}
		if _, err := runQuery(ctx, c, q, qq, dsID); err != nil {
			return i, fmt.Errorf("prime %s(%q): %w", q, qq.Domain, err)
		}
	}
	return len(queries), nil
}

// coldLatencies runs each query once, in order, on one client.
func coldLatencies(ctx context.Context, c client, queries []Query, dsID []int32, q string) (cell, error) {
	var all []time.Duration
	var empty int
	start := time.Now()
	for _, qq := range queries {
		t0 := time.Now()
		rows, err := runQuery(ctx, c, q, qq, dsID)
		if err != nil {
			return cell{}, fmt.Errorf("cold %s(%q): %w", q, qq.Domain, err)
		}
		all = append(all, time.Since(t0))
		if rows == 0 {
			empty++
		}
	}
	return cell{p50: percentile(all, 0.5), p99: percentile(all, 0.99), qps: float64(len(all)) / time.Since(start).Seconds(), n: len(all), empty: empty}, nil
}
