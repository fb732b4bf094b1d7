package records

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/internal/lru"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/tableschema"
)

// shardCache keeps parsed shards in memory, one version per shard key,
// within a bound in bytes (internal/lru). A server reads a shard when a
// statement first needs it, not at start-up, so neither start-up time nor
// local disk grows with the number of domains (issue 15 §3).
//
// Invariants:
//   - S1, a key's version only advances: GETs of one key never overlap
//     (one runs, callers that want the key meanwhile wait for it), and an
//     entry is replaced only by the result of a later GET. A read that used
//     a version of a shard never later gets an older one from the cache.
//   - S2, fresh enough for a view: an entry serves a view that listed the
//     key at ETag e (records R1, R2) when its ETag is e, or when the GET
//     that read it began after the view's listing ended: the store answers
//     a GET with the newest version (read-after-write), so that version is
//     at least as new as e. A shard version never loses a record a former
//     version held, only replaces it with a newer one of the same domain
//     (compiler I2: a shard is rewritten only as the merge of the version
//     read under its lock with pending records, or, during a resharding,
//     with the records of a foreign shard, I6), so a newer version than
//     listed serves the view.
type shardCache struct {
	st    store.Store
	c     *lru.Cache[string, *parsedShard]
	parse func(key string, etag store.ETag, b []byte) *parsedShard

	mu       sync.Mutex
	inflight map[string]*shardFetch // S1: one GET per key at a time
}

type shardFetch struct {
	done chan struct{}
	p    *parsedShard
	err  error
}

// parsedShard is one version of one shard object, its records sorted by
// domain for lookups.
type parsedShard struct {
	key     string
	etag    store.ETag
	fetched time.Time // when the GET that read it began (S2)
	table   compiler.Table
	domain  int // the domain unit's index in table.Header (-1: none)
	maker   rowMaker
	order   []int32 // record indexes in domain order
	cost    int64

	// what the schema finds at fault, computed when domain_errors asks:
	// checking every record took as long as parsing it
	sch        *tableschema.Schema
	errorsOnce sync.Once
	errs       [][]driver.Value
}

func newShardCache(st store.Store, limit int64, parse func(string, store.ETag, []byte) *parsedShard) *shardCache {
	return &shardCache{
		st:       st,
		c:        lru.New(limit, func(_ string, p *parsedShard) int64 { return p.cost }, nil),
		parse:    parse,
		inflight: map[string]*shardFetch{},
	}
}

// errShardGone is a shard a view listed that the store no longer has.
var errShardGone = errors.New("shard gone")

// get returns key's shard, fresh enough for a view that listed it at etag
// when its listing ended at listed (S2), or errShardGone.
func (c *shardCache) get(ctx context.Context, key string, etag store.ETag, listed time.Time) (*parsedShard, error) {
	fresh := func(p *parsedShard) bool {
		return p != nil && (p.etag == etag && etag != "" || !p.fetched.Before(listed))
	}
	for {
		if p, ok := c.c.Get(key); ok && fresh(p) {
			return p, nil
		}
		c.mu.Lock()
		if f := c.inflight[key]; f != nil {
			c.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if f.err != nil {
				return nil, f.err
			}
			if fresh(f.p) {
				return f.p, nil
			}
			continue // that GET began too early for this view: another
		}
		f := &shardFetch{done: make(chan struct{})}
		c.inflight[key] = f
		c.mu.Unlock()
		f.p, f.err = c.fetch(ctx, key)
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		close(f.done)
		return f.p, f.err
	}
}

// fetch reads key and replaces its entry (S1: the caller is the only GET
// of key in flight).
func (c *shardCache) fetch(ctx context.Context, key string) (*parsedShard, error) {
	began := time.Now()
	b, a, err := store.ReadAll(ctx, c.st, key)
	if errors.Is(err, store.ErrNotFound) {
		c.c.Remove(key)
		return nil, errShardGone
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	p := c.parse(key, a.ETag, b)
	p.fetched = began
	c.c.Remove(key)
	c.c.Put(key, p)
	return p, nil
}

// stats reports the cache as "record".
func (c *shardCache) stats() lru.Stats { return c.c.Stats("record") }

// parseShard turns one shard version into a parsedShard. A file that does
// not parse is one error and no record.
func parseShard(key string, etag store.ETag, b []byte, sch *tableschema.Schema) *parsedShard {
	p := &parsedShard{key: key, etag: etag, domain: -1, cost: int64(len(b)) + 256, sch: sch}
	t, err := compiler.ParseTable(b)
	if err != nil {
		p.errorsOnce.Do(func() { p.errs = [][]driver.Value{{key, int32(0), "", err.Error()}} })
		return p
	}
	p.table = t
	p.domain = slices.Index(t.Header, compiler.DomainField)
	p.maker = newRowMaker(sch.FieldNames(), t.Header)
	p.order = make([]int32, len(t.Rows))
	for i := range p.order {
		p.order[i] = int32(i)
	}
	if p.domain >= 0 {
		// compaction writes shards sorted by domain (compiler.Merge); a
		// shard written otherwise is sorted here, not refused
		sort.SliceStable(p.order, func(i, j int) bool {
			return t.Rows[p.order[i]][p.domain] < t.Rows[p.order[j]][p.domain]
		})
	}
	// what the parsed form holds besides the text: a string header per
	// unit, a slice header per record, the order
	p.cost += int64(len(t.Rows)) * (24 + 4 + int64(len(t.Header))*16)
	return p
}

// errors returns what the schema finds at fault in the shard. A shard holds
// what compaction accepted; a schema changed since may find fault with
// it: its records are served, the faults listed (domain_errors).
func (p *parsedShard) errors() [][]driver.Value {
	p.errorsOnce.Do(func() {
		checker, err := p.sch.NewRowChecker()
		if err == nil {
			_, err = checker.SetHeader(p.table.Header)
		}
		if err != nil {
			p.errs = [][]driver.Value{{p.key, int32(0), "", err.Error()}}
			return
		}
		for i, r := range p.table.Rows {
			_, ferrs := checker.Check(r)
			for _, fe := range ferrs {
				p.errs = append(p.errs, []driver.Value{p.key, int32(p.table.RecordNo(i)), fe.Field, fe.Error()})
			}
		}
	})
	return p.errs
}

// recordsOf returns the indexes of domain's records (at most one in a shard
// compaction wrote).
func (p *parsedShard) recordsOf(domain string) []int {
	if p.domain < 0 {
		return nil
	}
	rows := p.table.Rows
	i := sort.Search(len(p.order), func(i int) bool { return rows[p.order[i]][p.domain] >= domain })
	var out []int
	for ; i < len(p.order) && rows[p.order[i]][p.domain] == domain; i++ {
		out = append(out, int(p.order[i]))
	}
	return out
}

// row is record i as a row of the views' table functions.
func (p *parsedShard) row(i int) []driver.Value { return p.maker.row("shard", p.key, p.table, i) }
