package compiler

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dhsi/dhsi/store"
)

// Change signals (docs/format/signals.md): small objects whose ETag changes
// after something a reader lists has changed, so that a server's refresh
// lists them — one request — instead of the whole inbox and every shard.
//
//	indexes/domains/signals/pending     bumped after DHSI writers land inbox or batch objects,
//	                                    and after a compaction retires them
//	indexes/domains/signals/shards-{h}  bumped after a shard whose id starts with hex h is
//	                                    written, or deleted by a move
//
// A signal is a hint, never a condition of correctness: writers other
// than DHSI's (a plain S3 PUT) bump nothing, a crash can lose a bump, so
// readers also list everything at a longer interval. A lost bump costs
// freshness, never a record: records R1 does not depend on signals.
const SignalPrefix = "indexes/domains/signals/"

// PendingSignalKey is the signal of the inbox.
const PendingSignalKey = SignalPrefix + "pending"

// ShardSignalKey is the signal of the shards whose id starts as id does.
func ShardSignalKey(id string) string { return SignalPrefix + "shards-" + id[:1] }

// ShardSignalPrefix returns the hex digit a shard signal key names, or
// false.
func ShardSignalPrefix(key string) (string, bool) {
	h, ok := strings.CutPrefix(key, SignalPrefix+"shards-")
	return h, ok && len(h) == 1
}

// signalInterval is the most often one process bumps one signal: bumps
// within it are folded into one at its end.
const signalInterval = 200 * time.Millisecond

// signaler bumps signals for one compiler: at once when the key was not
// bumped within signalInterval, else once at the end of the interval.
type signaler struct {
	st  store.Store
	log *slog.Logger

	mu      sync.Mutex
	last    map[string]time.Time
	due     map[string]bool // a bump was folded into a later one
	writing int             // puts under way, flush waits for them
	idle    sync.Cond       // on mu: writing fell to 0
}

func newSignaler(st store.Store, log *slog.Logger) *signaler {
	s := &signaler{st: st, log: log, last: map[string]time.Time{}, due: map[string]bool{}}
	s.idle.L = &s.mu
	return s
}

func (s *signaler) bump(key string) {
	s.mu.Lock()
	since := time.Since(s.last[key])
	if since >= signalInterval {
		s.last[key], s.due[key] = time.Now(), false
		s.writing++
		s.mu.Unlock()
		s.write(key)
		return
	}
	if !s.due[key] {
		s.due[key] = true
		time.AfterFunc(signalInterval-since, func() { s.flushKey(key) })
	}
	s.mu.Unlock()
}

func (s *signaler) flushKey(key string) {
	s.mu.Lock()
	if !s.due[key] {
		s.mu.Unlock()
		return
	}
	s.last[key], s.due[key] = time.Now(), false
	s.writing++
	s.mu.Unlock()
	s.write(key)
}

// write puts key, counted in writing (taken under mu by the caller).
func (s *signaler) write(key string) {
	s.put(key)
	s.mu.Lock()
	s.writing--
	if s.writing == 0 {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
}

// flush makes every folded bump now.
func (s *signaler) flush() {
	s.mu.Lock()
	var keys []string
	for k, due := range s.due {
		if due {
			keys = append(keys, k)
		}
	}
	s.mu.Unlock()
	sort.Strings(keys)
	for _, k := range keys {
		s.flushKey(k)
	}
	// and the puts a timer started just before: once flush returns, this
	// signaler writes nothing more unless bumped again, so a caller that
	// returns after it leaves the store quiet (a test removing its
	// directory failed on a signal written during the removal)
	s.mu.Lock()
	for s.writing > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
}

func (s *signaler) put(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := strings.NewReader(time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := s.st.Put(ctx, key, body, store.Cond{}); err != nil {
		s.log.Warn("change signal not written; servers see the change at their next full listing", "key", key, "err", err)
	}
}

// FlushSignals writes the change signals this compiler folded (a process
// about to exit calls it, so servers see its last changes at once).
func (c *Compiler) FlushSignals() { c.signals.flush() }
