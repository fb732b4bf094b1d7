package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestOf(t *testing.T) {
	cases := []struct {
		name   string
		domain string
		width  int
	}{
		{"the design's example domain hashes like Python's hashlib", "example.com", 2},
		{"a one-character layout uses the first hex digit", "example.com", 1},
		{"an odd width takes half a byte", "example.org", 3},
		{"the empty string has a shard too", "", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sum := sha256.Sum256([]byte(c.domain))
			want := hex.EncodeToString(sum[:])[:c.width]
			if got := (Layout{Width: c.width}).Of(c.domain); got != want {
				t.Fatalf("Of(%q) = %q, want %q", c.domain, got, want)
			}
		})
	}
	// hashlib.sha256(b"example.com").hexdigest()[:2] == "a3"
	if got := Default().Of("example.com"); got != "a3" {
		t.Fatalf("example.com is in shard %q, want a3", got)
	}
}

func TestLayout(t *testing.T) {
	l := Default()
	if l.Count() != 256 || l.ID(0) != "00" || l.ID(255) != "ff" || !l.Valid("5e") || l.Valid("5E") || l.Valid("5") {
		t.Fatalf("default layout: count %d, ids %q..%q", l.Count(), l.ID(0), l.ID(255))
	}
	if (Layout{Width: 0}).Validate() == nil || (Layout{Width: 5}).Validate() == nil {
		t.Fatal("out-of-range widths must be rejected")
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{"5": true, "5e": true, "5e0": true, "5e0f": true, "5e0f1": false, "": false, "5E": false, "5g": false} {
		if got := ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, got, want)
		}
	}
}
