package urlnorm

import (
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// hostCache remembers what Parse computed for recently seen hosts: the
// canonical host, its kind, and its registered domain. Real URL lists
// repeat hosts heavily, and the host steps — the WHATWG host parser, the
// DNS-name checks and the Public Suffix List lookup — cost about a third of
// Parse on a typical URL; a hit skips them. Only a Normalizer with
// Config.CacheHosts has one: ingest's, never a server's (a shared cache is
// a timing channel between sessions).
//
// Invariants:
//   - An entry is a pure function of its key and the Normalizer's Config,
//     which never changes, so a hit returns exactly what recomputing would
//     (FuzzParse compares a cached Normalizer with an uncached one).
//   - Only hosts that parsed without error are cached (a public-suffix host
//     Parse flags counts as parsed), so every error path runs as before and
//     reports the same reason and text.
//   - The table is direct-mapped with atomic slots: readers never lock, a
//     store replaces whatever was in its slot, and an entry is never
//     mutated after it is published. A slot's tag is only a hint that
//     saves reading the entry on a miss; a hit always compares the whole
//     key. Memory is bounded by hostCacheSlots entries of at most
//     2×hostCacheMaxKey bytes each.
//   - A miss replaces an occupied slot only one time in hostCacheAdmit, so
//     a host seen once rarely evicts one seen often, and a corpus whose
//     hosts rarely repeat pays a lookup per URL and few inserts.
type hostCache struct {
	seed  maphash.Seed
	tags  [hostCacheSlots]atomic.Uint32
	slots [hostCacheSlots]atomic.Pointer[hostEntry]
}

const (
	// hostCacheSlots: 32,768 slots, ~3 MiB at most.
	hostCacheSlots  = 1 << 15
	hostCacheMaxKey = 128
	hostCacheAdmit  = 8
)

// hostEntry is one cached host: data is the input host followed by the
// canonical one (what Parse appends after "scheme://"), and URL.Domain is
// canon[domainAt:domainEnd].
type hostEntry struct {
	data                        string
	keyLen, domainAt, domainEnd int
	kind                        HostKind
	psuffix                     bool // URL.PublicSuffixHost
}

func (e *hostEntry) key() string    { return e.data[:e.keyLen] }
func (e *hostEntry) canon() string  { return e.data[e.keyLen:] }
func (e *hostEntry) domain() string { return e.canon()[e.domainAt:e.domainEnd] }

func newHostCache() *hostCache { return &hostCache{seed: maphash.MakeSeed()} }

// lookup returns the entry for host, or nil, and the hash remember takes.
func (c *hostCache) lookup(host string) (*hostEntry, uint64) {
	if c == nil || len(host) > hostCacheMaxKey {
		return nil, 0
	}
	h := maphash.String(c.seed, host)
	i := h & (hostCacheSlots - 1)
	if c.tags[i].Load() != tagOf(h) {
		return nil, h
	}
	if e := c.slots[i].Load(); e != nil && e.key() == host {
		return e, h
	}
	return nil, h
}

func tagOf(h uint64) uint32 { return uint32(h>>32) | 1 } // 0 is an empty slot

// remember caches what Parse found for host (hashed to h by lookup) in u,
// and points u.Domain at the cached copy, so that a host's URLs share one
// domain string.
func (c *hostCache) remember(h uint64, host string, u *URL) {
	if c == nil || len(host) > hostCacheMaxKey {
		return
	}
	i := h & (hostCacheSlots - 1)
	if c.slots[i].Load() != nil && rand.N(hostCacheAdmit) != 0 {
		return
	}
	at := strings.LastIndex(u.Host, u.Domain)
	if at < 0 {
		return // Domain is always within Host; cache nothing if not
	}
	e := &hostEntry{
		data:      host + u.Host,
		keyLen:    len(host),
		domainAt:  at,
		domainEnd: at + len(u.Domain),
		kind:      u.HostKind,
		psuffix:   u.PublicSuffixHost,
	}
	c.slots[i].Store(e)
	c.tags[i].Store(tagOf(h))
	u.Domain = e.domain()
}
