// Package shard owns the mapping from a domain name to its hash shard: the
// first Width hex characters of SHA-256 of the domain's bytes. With the
// default width of 2 there are 256 shards, "00" to "ff".
//
// The width is a recorded parameter of an index, never a constant of the
// code, so an index can be resharded (design 003: writes use the new layout
// while reads take the union of old and new).
//
// Domains are hashed exactly as given; callers normalise them first
// (lower-case, no trailing dot, punycode) so that one domain has one shard.
package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// DefaultWidth is the width of a new index: 2 hex characters, 256 shards.
const DefaultWidth = 2

// MaxWidth is the widest layout: 4 hex characters, 65,536 shards (issue
// 15 §3: at 350M domains, ~5,300 records per shard).
const MaxWidth = 4

// Layout is a sharding scheme.
type Layout struct {
	// Width is the number of leading hex characters of SHA-256 that name a
	// shard (1 to MaxWidth). INVARIANT: Width >= 1.
	Width int
}

// Default is the layout of a new index.
func Default() Layout { return Layout{Width: DefaultWidth} }

// Validate reports whether the layout is usable.
func (l Layout) Validate() error {
	if l.Width < 1 || l.Width > MaxWidth {
		return fmt.Errorf("shard: width %d out of range 1..%d", l.Width, MaxWidth)
	}
	return nil
}

// Count is the number of shards, 16^Width.
func (l Layout) Count() int { return 1 << (4 * l.Width) }

// Of returns the shard id of a domain.
func (l Layout) Of(domain string) string {
	sum := sha256.Sum256([]byte(domain))
	if l.Width <= 2 { // no allocation: ingest asks once per URL
		return byteHex[sum[0]][:l.Width]
	}
	h := hex.EncodeToString(sum[:(l.Width+1)/2])
	return h[:l.Width]
}

// byteHex[b] is the two hex digits of b.
var byteHex = func() (t [256]string) {
	for b := range t {
		t[b] = fmt.Sprintf("%02x", b)
	}
	return t
}()

// ID returns the i-th shard id, zero-padded hex ("00" ... "ff").
func (l Layout) ID(i int) string { return fmt.Sprintf("%0*x", l.Width, i) }

// Valid reports whether id names a shard of this layout.
func (l Layout) Valid(id string) bool {
	if len(id) != l.Width {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidID reports whether id is a shard id of any layout (1 to MaxWidth
// lower-case hex characters): during a resharding, shards of two widths
// exist side by side.
func ValidID(id string) bool {
	l := Layout{Width: len(id)}
	return l.Validate() == nil && l.Valid(id)
}

// LayoutOfID is the layout shard id belongs to (its width); id must be
// ValidID.
func LayoutOfID(id string) Layout { return Layout{Width: len(id)} }
