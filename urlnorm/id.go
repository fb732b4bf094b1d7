package urlnorm

import "github.com/zeebo/xxh3"

// URLID is the url_id of design §1.2: xxh3-64 of the raw URL's bytes,
// exactly as they appear in the dataset (not the normalized form, so two
// spellings of one URL keep their provenance apart).
func URLID(raw string) uint64 { return xxh3.HashString(raw) }

// Tag is the 16-bit tag of design §1.2 (the id's top bits) that a reader
// compares first to reject a mismatching side-table entry cheaply.
func Tag(id uint64) uint16 { return uint16(id >> 48) }

// HashFunc computes a url_id from a raw URL. URLID is the only production
// choice; the type exists so tests can inject a weak hash and force
// collisions through the guard.
type HashFunc func(raw string) uint64

// Collision is two different raw URLs with one id.
type Collision struct {
	ID     uint64
	First  string // the raw URL that got the id first
	Second string // a different raw URL with the same id
}

// IDSet is the collision guard of design §1.2. Ingest adds every raw URL of
// a batch; Add reports whether the URL's id already belongs to a different
// raw URL. Ingest writes each such row's (url_id → raw URL) pair, and the
// first holder's, to the collision side table (Collisions lists them), so a
// reader that finds an id in the side table resolves it by the full URL
// instead of trusting the id. Expected use: one IDSet per ingest partition
// (rows partitioned by id prefix), since it keeps every distinct raw URL
// of the partition in memory; with xxh3-64 a collision is expected about
// once per 6·10^9 URLs in one partition, so the side table stays tiny.
//
// An IDSet is not safe for concurrent use.
type IDSet struct {
	hash       HashFunc
	first      map[uint64]string
	extra      map[string]struct{} // colliding raw URLs already reported
	collisions []Collision
}

// NewIDSet returns an empty guard using hash; nil means URLID.
func NewIDSet(hash HashFunc) *IDSet {
	if hash == nil {
		hash = URLID
	}
	return &IDSet{hash: hash, first: make(map[uint64]string)}
}

// Add records raw and returns its id. collided is true when raw is not the
// first raw URL seen with this id; adding the same raw URL again is not a
// collision.
func (s *IDSet) Add(raw string) (id uint64, collided bool) {
	id = s.hash(raw)
	return id, s.AddID(id, raw)
}

// AddID records an (id, raw) pair computed elsewhere, e.g. read back from a
// shard. It reports whether raw collides with an earlier raw URL.
func (s *IDSet) AddID(id uint64, raw string) (collided bool) {
	prev, ok := s.first[id]
	if !ok {
		s.first[id] = raw
		return false
	}
	if prev == raw {
		return false
	}
	if s.extra == nil {
		s.extra = make(map[string]struct{})
	}
	if _, seen := s.extra[raw]; !seen {
		s.extra[raw] = struct{}{}
		s.collisions = append(s.collisions, Collision{ID: id, First: prev, Second: raw})
	}
	return true
}

// Len is the number of distinct ids seen.
func (s *IDSet) Len() int { return len(s.first) }

// Collisions lists each colliding raw URL once, in the order found.
func (s *IDSet) Collisions() []Collision { return s.collisions }
