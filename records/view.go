package records

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/store"
)

// view is what one refresh observed (R1, R2), immutable once published:
// statements read it, the next refresh replaces it.
type view struct {
	fields   []string
	schema   string // the schema's JSON (Domains.sig)
	layouts  Layouts
	pending  []*pendingObject           // by key
	byDomain map[string][]pendingRecord // pending records by domain
	shards   map[string]listedShard     // the shards listed, with their ETags
	cache    *shardCache
}

// listedShard is a shard as a listing saw it: its ETag, and when that
// listing ended (shardCache S2).
type listedShard struct {
	etag store.ETag
	at   time.Time
}

func newView(fields []string, schema string, layouts Layouts, pending map[string]*pendingObject, shards map[string]listedShard, cache *shardCache) *view {
	v := &view{fields: fields, schema: schema, layouts: layouts, byDomain: map[string][]pendingRecord{}, shards: shards, cache: cache}
	for _, o := range pending {
		v.pending = append(v.pending, o)
		for _, r := range o.records {
			v.byDomain[r.domain] = append(v.byDomain[r.domain], r)
		}
	}
	sort.Slice(v.pending, func(i, j int) bool { return v.pending[i].key < v.pending[j].key })
	return v
}

// errLayoutMoved is a current-width shard gone since the view listed it:
// a new resharding moved it. The statement cannot be answered from this
// view.
var errLayoutMoved = errors.New("the store's shard layout changed while the statement ran; run it again")

// lookup returns domain's rows: its pending records, then its records in
// the shard it hashes to — during a resharding, in the foreign shard
// first, then the current one (R2).
func (v *view) lookup(ctx context.Context, domain string) ([][]driver.Value, error) {
	var out [][]driver.Value
	for _, r := range v.byDomain[domain] {
		out = append(out, r.row)
	}
	ids := []string{v.layouts.Current.Of(domain)}
	if v.layouts.Resharding() {
		ids = []string{v.layouts.Previous.Of(domain), ids[0]}
	}
	var forcedAt time.Time // when a foreign shard was found gone (R2)
	for i, id := range ids {
		key := compiler.ShardKey(id)
		ls, ok := v.shards[key]
		forced := !forcedAt.IsZero()
		if !ok && !forced {
			continue // no such shard when the view listed them
		}
		if forced {
			ls = listedShard{at: forcedAt}
		}
		p, err := v.cache.get(ctx, key, ls.etag, ls.at)
		if errors.Is(err, errShardGone) {
			if i < len(ids)-1 {
				// R2: a foreign shard deleted since the listing; its
				// records are in the current shard as it is from now on
				forcedAt = time.Now()
				continue
			}
			if forced {
				continue
			}
			return nil, errLayoutMoved
		}
		if err != nil {
			return nil, err
		}
		for _, r := range p.recordsOf(domain) {
			out = append(out, p.row(r))
		}
	}
	return out, nil
}

// shardKeys returns the listed shards in the order a scan reads them:
// foreign ones first (R2), each group by key.
func (v *view) shardKeys() (foreign, current []string) {
	for k := range v.shards {
		if id, _ := compiler.ShardOfKey(k); len(id) != v.layouts.Current.Width {
			foreign = append(foreign, k)
		} else {
			current = append(current, k)
		}
	}
	sort.Strings(foreign)
	sort.Strings(current)
	return foreign, current
}

// rowSource names what a scan returns.
type rowSource int

const (
	sourceAll    rowSource = iota // pending and shard records
	sourceInbox                   // pending records
	sourceShards                  // shard records
)

// scanner streams the rows of a view, one shard in memory at a time.
type scanner struct {
	ctx    context.Context
	st     store.Store
	v      *view
	source rowSource

	pendingAt, recordAt int
	foreign, current    []string
	shards              map[string]listedShard // what keys are read at: the view's listing, then newer ones
	layouts             Layouts                // the layouts current keys are of
	relist              bool                   // a foreign shard was gone: list the current ones again (R2)
	relisted            bool                   // the layouts changed once during the scan
	shard               *parsedShard
	shardAt             int
}

func (v *view) scan(ctx context.Context, st store.Store, source rowSource) *scanner {
	s := &scanner{ctx: ctx, st: st, v: v, source: source, shards: v.shards, layouts: v.layouts}
	if source != sourceInbox {
		s.foreign, s.current = v.shardKeys()
	}
	if source == sourceShards {
		s.pendingAt = len(v.pending)
	}
	return s
}

// next returns the next row, or nil at the end.
func (s *scanner) next() ([]driver.Value, error) {
	for s.pendingAt < len(s.v.pending) {
		o := s.v.pending[s.pendingAt]
		if s.recordAt < len(o.records) {
			s.recordAt++
			return o.records[s.recordAt-1].row, nil
		}
		s.pendingAt, s.recordAt = s.pendingAt+1, 0
	}
	for {
		if s.shard != nil && s.shardAt < len(s.shard.table.Rows) {
			s.shardAt++
			return s.shard.row(s.shardAt - 1), nil
		}
		if err := s.nextShard(); err != nil || s.shard == nil {
			return nil, err
		}
	}
}

// read takes the first key of keys and reads its shard, as the scan's
// listing of it requires (shardCache S2).
func (s *scanner) read(keys *[]string) (*parsedShard, error) {
	key := (*keys)[0]
	*keys = (*keys)[1:]
	ls := s.shards[key]
	return s.v.cache.get(s.ctx, key, ls.etag, ls.at)
}

// nextShard reads the next shard into s.shard (nil at the end).
func (s *scanner) nextShard() error {
	s.shard, s.shardAt = nil, 0
	for len(s.foreign) > 0 {
		p, err := s.read(&s.foreign)
		if errors.Is(err, errShardGone) {
			s.relist = true // R2: its records are in current-width shards
			continue
		}
		if err != nil {
			return err
		}
		s.shard = p
		return nil
	}
	if s.relist {
		// R2: the current-width shards as they are now, after the moves
		// that deleted the foreign shards this scan found gone
		s.relist = false
		cur, err := listShards(s.ctx, s.st, s.layouts, true)
		if err != nil {
			return err
		}
		merged := maps.Clone(s.shards)
		s.current = nil
		for k, ls := range cur {
			merged[k] = ls
			s.current = append(s.current, k)
		}
		s.shards = merged
		sort.Strings(s.current)
	}
	for len(s.current) > 0 {
		p, err := s.read(&s.current)
		if errors.Is(err, errShardGone) {
			// a resharding that began after the view was listed moved
			// it: the rest of this width are foreign now (R2), then the
			// new width's shards as they are after this
			if err := s.layoutMoved(); err != nil {
				return err
			}
			return s.nextShard()
		}
		if err != nil {
			return err
		}
		s.shard = p
		return nil
	}
	return nil
}

// layoutMoved follows a resharding that began during the scan, once a
// current-width shard was found gone: the store's layouts are read again,
// and must show the scan's current width as the previous one (else the
// shard went for no reason DHSI knows, and the scan fails).
func (s *scanner) layoutMoved() error {
	if s.relisted {
		return errLayoutMoved // a second change in one statement: run it again
	}
	pkg, err := ReadPackage(s.ctx, s.st)
	if err != nil {
		return err
	}
	now, err := LayoutsOf(pkg)
	if err != nil {
		return err
	}
	if now.Current == s.layouts.Current || now.Previous != s.layouts.Current {
		return errLayoutMoved
	}
	s.foreign, s.current, s.layouts = s.current, nil, now
	s.relist, s.relisted = true, true
	return nil
}

// errorRows returns domain_errors' rows: every pending object's problems,
// then every shard's (reading every shard).
func (v *view) errorRows(ctx context.Context, st store.Store) ([][]driver.Value, error) {
	var out [][]driver.Value
	for _, o := range v.pending {
		out = append(out, o.errors...)
	}
	s := v.scan(ctx, st, sourceShards)
	for {
		if err := s.nextShard(); err != nil {
			return nil, fmt.Errorf("domain_errors: %w", err)
		}
		if s.shard == nil {
			return out, nil
		}
		out = append(out, s.shard.errors()...)
	}
}
