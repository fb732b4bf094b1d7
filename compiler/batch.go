package compiler

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/store"
)

// Batches (issue 15 §4). A per-domain inbox object costs a read, a write and,
// at compaction, a read and a delete or two for every record: on versitygw
// that bounds compaction near 600 records/s on 2 cores (cmd/dhsi BenchmarkCompactionS3).
// A batch object holds the records of many domains of one shard and is
// written once under a unique key (BatchKey) with IfNoneMatch, never read
// first and never rewritten; compaction merges it like an inbox object and
// deletes it once the shard holding its records is durable (I3). Because no
// writer ever puts that key again, the delete races with nothing on any
// store, atomic conditional delete or not.

// BatchReport says what a batch write landed.
type BatchReport struct {
	Landed  int      // records durable in batch objects
	Objects int      // batch objects written
	Failed  int      // records refused by the rule or not written
	Errors  []string // one line per refused record or failed object, capped at 100
}

func (r *BatchReport) add(o BatchReport) {
	r.Landed += o.Landed
	r.Objects += o.Objects
	r.Failed += o.Failed
	for _, e := range o.Errors {
		if len(r.Errors) < 100 {
			r.Errors = append(r.Errors, e)
		}
	}
}

// WriteBatch lands t's records (any domains) as one batch object per shard,
// Parallel objects at a time. Records the rule refuses are reported and not
// written; the others are durable when it returns. The error is for a store
// failure; the report says which records it cost.
func (c *Compiler) WriteBatch(ctx context.Context, t Table) (BatchReport, error) {
	var rep BatchReport
	di := t.column(DomainField)
	if di < 0 {
		return rep, fmt.Errorf("batch: header has no %q field", DomainField)
	}
	// grouped by the shard each domain hashes to; writeShardBatch refuses
	// what is no domain key. Each group keeps the records' numbers in t.
	byShard := map[string]*Table{}
	for i, row := range t.Rows {
		if len(row) != len(t.Header) {
			rep.Failed++
			rep.Errors = append(rep.Errors, fmt.Sprintf("record %d: has %d units, header has %d", t.RecordNo(i), len(row), len(t.Header)))
			continue
		}
		id := c.cfg.Layout.Of(row[di])
		g := byShard[id]
		if g == nil {
			g = &Table{Header: t.Header}
			byShard[id] = g
		}
		g.Rows = append(g.Rows, row)
		g.recordNo = append(g.recordNo, t.RecordNo(i))
	}
	ids := make([]string, 0, len(byShard))
	for id := range byShard {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	reports := make([]BatchReport, len(ids))
	errs := make([]error, len(ids))
	parallel.ForEach(len(ids), c.cfg.Parallel, func(i int) {
		reports[i], errs[i] = c.writeShardBatch(ctx, ids[i], *byShard[ids[i]])
	})
	var firstErr error
	for i := range ids {
		rep.add(reports[i])
		if errs[i] != nil && firstErr == nil {
			firstErr = errs[i]
		}
	}
	if rep.Objects > 0 {
		c.signals.bump(PendingSignalKey)
	}
	return rep, firstErr
}

// writeShardBatch writes the records of shard id that the rule accepts:
// the check compaction applies to the batch object (CheckBatch).
func (c *Compiler) writeShardBatch(ctx context.Context, id string, t Table) (BatchReport, error) {
	var rep BatchReport
	ok, problems := c.rule.check(t, nil, inShard(id))
	for _, p := range problems {
		if len(rep.Errors) < 100 {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %s", domainOfProblem(t, p), p.Reason))
		}
	}
	rep.Failed = len(t.Rows) - len(ok.Rows)
	if len(ok.Rows) == 0 {
		return rep, nil
	}
	var buf bytes.Buffer
	if err := ok.Encode(&buf); err != nil {
		return rep, err
	}
	key := BatchKey(id, batchName())
	if _, err := c.st.Put(ctx, key, &buf, store.Cond{IfNoneMatch: true}); err != nil {
		rep.Failed += len(ok.Rows)
		rep.Errors = append(rep.Errors, fmt.Sprintf("batch of %d records for shard %s: %v", len(ok.Rows), id, err))
		return rep, fmt.Errorf("write %s: %w", key, err)
	}
	rep.Landed, rep.Objects = len(ok.Rows), 1
	return rep, nil
}

// domainOfProblem names a problem's record by its number and domain.
func domainOfProblem(t Table, p Problem) string {
	if di := t.column(DomainField); di >= 0 {
		for i := range t.Rows {
			if t.RecordNo(i) == p.Record {
				return fmt.Sprintf("record %d (%q)", p.Record, t.Rows[i][di])
			}
		}
	}
	return fmt.Sprintf("record %d", p.Record)
}

// batchName is unique per batch and sorts by time: the writer's clock in
// nanoseconds, then 64 random bits.
func batchName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return fmt.Sprintf("%016x-%s", time.Now().UnixNano(), hex.EncodeToString(b))
}

// BatcherConfig configures a Batcher.
type BatcherConfig struct {
	MaxRecords int           // records per landing; default 25,000 (~100 per shard of width 2)
	MaxDelay   time.Duration // longest a record waits to be landed; default 1 s
	InFlight   int           // landings at once; Add blocks beyond (backpressure); default 4
}

// Batcher accepts records at memory speed and lands them in batches in the
// background (design 003's waitUntil): Add returns at once unless InFlight
// landings are already running; Flush waits until everything added is
// durable and says what landed and what failed.
type Batcher struct {
	c      *Compiler
	header []string
	cfg    BatcherConfig
	sem    chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	pending [][]string
	timer   *time.Timer
	report  BatchReport
	err     error
}

// NewBatcher returns a batcher for records with the given header.
func (c *Compiler) NewBatcher(header []string, cfg BatcherConfig) *Batcher {
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = 25000
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = time.Second
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = 4
	}
	return &Batcher{c: c, header: append([]string(nil), header...), cfg: cfg, sem: make(chan struct{}, cfg.InFlight)}
}

// Add queues one record (units in the batcher's header order). A record of
// the wrong width is an error at once; what the record rule refuses is
// counted and named in Flush's report.
func (b *Batcher) Add(row []string) error {
	if len(row) != len(b.header) {
		return fmt.Errorf("record has %d units, header has %d", len(row), len(b.header))
	}
	b.mu.Lock()
	b.pending = append(b.pending, append([]string(nil), row...))
	if len(b.pending) >= b.cfg.MaxRecords {
		rows := b.takeLocked()
		b.mu.Unlock()
		b.land(rows)
		return nil
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(b.cfg.MaxDelay, func() {
			b.mu.Lock()
			rows := b.takeLocked()
			b.mu.Unlock()
			b.land(rows)
		})
	}
	b.mu.Unlock()
	return nil
}

// takeLocked takes the pending rows for land. Rows taken are counted in
// wg here, under mu, not when land starts writing them: the timer's land
// may wait for a slot (sem) while Flush, finding nothing pending, waits on
// wg, which must not return before those rows are written (nor see wg
// grow under its Wait).
func (b *Batcher) takeLocked() [][]string {
	rows := b.pending
	b.pending = nil
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(rows) > 0 {
		b.wg.Add(1)
	}
	return rows
}

// land writes rows taken by takeLocked in the background, at most InFlight
// at once.
func (b *Batcher) land(rows [][]string) {
	if len(rows) == 0 {
		return
	}
	b.sem <- struct{}{}
	go func() {
		defer func() { <-b.sem; b.wg.Done() }()
		rep, err := b.c.WriteBatch(context.Background(), Table{Header: b.header, Rows: rows})
		b.mu.Lock()
		b.report.add(rep)
		if err != nil && b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}()
}

// Flush lands what is queued and waits until every record added so far is
// durable or failed; it returns the running totals and the first store
// error.
func (b *Batcher) Flush(ctx context.Context) (BatchReport, error) {
	b.mu.Lock()
	rows := b.takeLocked()
	b.mu.Unlock()
	b.land(rows)
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-ctx.Done():
		return BatchReport{}, ctx.Err()
	case <-done:
	}
	b.c.FlushSignals()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.report, b.err
}
