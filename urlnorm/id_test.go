package urlnorm

import (
	"fmt"
	"testing"

	"github.com/zeebo/xxh3"
)

func TestURLID(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
	}{
		{"the id of a URL is xxh3-64 of its raw bytes", "http://example.com/"},
		{"the id of the empty string is xxh3-64 of no bytes", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := URLID(tc.raw), xxh3.Hash([]byte(tc.raw)); got != want {
				t.Fatalf("URLID(%q) = %#x, want %#x", tc.raw, got, want)
			}
		})
	}
	// Raw, not normalized: two spellings of one URL keep distinct ids.
	if URLID("http://example.com:80/") == URLID("http://example.com/") {
		t.Fatal("two raw spellings share an id")
	}
	if got := Tag(0xABCD_0000_0000_0001); got != 0xABCD {
		t.Fatalf("Tag = %#x, want 0xabcd", got)
	}
}

// TestIDSetReportsForcedCollisions truncates the hash to 8 bits, so 1,000
// distinct URLs must collide, and checks the guard reports each colliding
// URL exactly once with the URL that held the id first.
func TestIDSetReportsForcedCollisions(t *testing.T) {
	weak := func(raw string) uint64 { return URLID(raw) & 0xFF }
	s := NewIDSet(weak)
	firsts := map[uint64]string{}
	wantCollided := 0
	for i := range 1000 {
		raw := fmt.Sprintf("http://example.com/page/%d", i)
		id, collided := s.Add(raw)
		if id != weak(raw) {
			t.Fatalf("Add returned id %#x, want the injected hash's %#x", id, weak(raw))
		}
		if _, seen := firsts[id]; seen {
			wantCollided++
			if !collided {
				t.Fatalf("%q shares id %#x with %q but Add reported no collision", raw, id, firsts[id])
			}
		} else {
			firsts[id] = raw
			if collided {
				t.Fatalf("%q is the first URL with id %#x but Add reported a collision", raw, id)
			}
		}
		// Adding the same URL again is not a collision.
		if _, again := s.Add(raw); again != collided {
			t.Fatalf("re-adding %q changed the collision answer", raw)
		}
	}
	cs := s.Collisions()
	if len(cs) != wantCollided || wantCollided != 1000-len(firsts) || len(firsts) > 256 {
		t.Fatalf("%d collisions reported, want %d (1000 URLs into %d of 256 ids)", len(cs), wantCollided, len(firsts))
	}
	for _, c := range cs {
		if c.First == c.Second || weak(c.First) != c.ID || weak(c.Second) != c.ID || firsts[c.ID] != c.First {
			t.Fatalf("bad collision record %+v", c)
		}
	}
	if s.Len() != len(firsts) {
		t.Fatalf("Len() = %d, want %d distinct ids", s.Len(), len(firsts))
	}
}

func TestIDSetAddIDFromElsewhere(t *testing.T) {
	s := NewIDSet(nil)
	if s.AddID(7, "http://a.com/") || s.AddID(7, "http://a.com/") {
		t.Fatal("one URL under one id is not a collision")
	}
	if !s.AddID(7, "http://b.com/") || !s.AddID(7, "http://b.com/") {
		t.Fatal("a second URL under id 7 must be reported every time it is added")
	}
	if got := s.Collisions(); len(got) != 1 || got[0] != (Collision{ID: 7, First: "http://a.com/", Second: "http://b.com/"}) {
		t.Fatalf("Collisions() = %+v, want one a.com/b.com record", got)
	}
}

// TestIDSetRealURLsDoNotCollide: with the real xxh3-64 the 60k real URLs
// have 60k distinct ids.
func TestIDSetRealURLsDoNotCollide(t *testing.T) {
	s := NewIDSet(nil)
	lines := 0
	distinct := map[string]bool{}
	for _, f := range loadURLFiles(t) {
		for _, line := range f.lines {
			lines++
			distinct[line] = true
			if _, collided := s.Add(line); collided {
				t.Errorf("xxh3-64 collision on %q", line)
			}
		}
	}
	if s.Len() != len(distinct) {
		t.Fatalf("%d ids for %d distinct URLs", s.Len(), len(distinct))
	}
	t.Logf("%d lines, %d distinct raw URLs, no collision", lines, len(distinct))
}
