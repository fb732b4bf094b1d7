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

// Layout is a sharding scheme.
type Layout struct {
	// Width is the number of leading hex characters of SHA-256 that name a
	// shard (1 to 8). INVARIANT: Width >= 1.
	Width int
}

// Default is the layout of a new index.
func Default() Layout { return Layout{Width: DefaultWidth} }

// Validate reports whether the layout is usable.
func (l Layout) Validate() error {
	if l.Width < 1 || l.Width > 8 {
		return fmt.Errorf("shard: width %d out of range 1..8", l.Width)
	}
	return nil
}

// Count is the number of shards, 16^Width.
func (l Layout) Count() int { return 1 << (4 * l.Width) }

// Of returns the shard id of a domain.
func (l Layout) Of(domain string) string {
	sum := sha256.Sum256([]byte(domain))
	h := hex.EncodeToString(sum[:(l.Width+1)/2])
	return h[:l.Width]
}

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
