package domaindict

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// FuzzOpen: arbitrary bytes never panic Open, Lookup or Domain.
func FuzzOpen(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, slices.Values([]string{"a.com", "b.com", "example.org"}))
	f.Add(buf.Bytes())
	buf.Reset()
	Write(&buf, slices.Values([]string(nil)))
	f.Add(buf.Bytes())
	f.Add([]byte("DDIC"))
	var v1 bytes.Buffer
	writeV1(&v1, slices.Values([]string{"a.com", "b.com", "example.org"}), nil)
	f.Add(v1.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, o := range []Options{{}, {SkipVerify: true}, {LoadStrings: true}} {
			d, err := OpenWith(bytes.NewReader(b), int64(len(b)), o)
			if err != nil {
				continue
			}
			for _, s := range []string{"a.com", "example.org", "zzz"} {
				d.Lookup(s)
			}
			for id := uint64(0); id < min(d.Len(), 16); id++ {
				if s, err := d.Domain(id); err == nil && !o.SkipVerify {
					if got, ok, err := d.Lookup(s); !ok || err != nil || got != id {
						t.Fatalf("verified dictionary: Lookup(Domain(%d)) = %d, %v, %v", id, got, ok, err)
					}
				}
			}
		}
	})
}

// FuzzRoundTrip: any list of domains writes and reads back, with a weak
// hash half the time so collisions are common.
func FuzzRoundTrip(f *testing.F) {
	f.Add("a.com\nb.com\nc.com", false)
	f.Add("x\ny\nz\nxx\nyy", true)
	f.Fuzz(func(t *testing.T, s string, weak bool) {
		domains := strings.Split(s, "\n")
		domains = slices.DeleteFunc(domains, func(d string) bool { return d == "" })
		slices.Sort(domains)
		domains = slices.Compact(domains)
		var hash hashFunc
		if weak {
			hash = func(s string) uint64 { return uint64(len(s) % 3) }
		}
		for _, b := range versions(t, domains, hash) {
			d, err := open(bytes.NewReader(b), int64(len(b)), Options{}, hash)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range domains {
				if id, ok, err := d.Lookup(s); !ok || err != nil || id != uint64(i) {
					t.Fatalf("Lookup(%q) = %d %v %v, want %d", s, id, ok, err, i)
				}
			}
			if _, ok, _ := d.Lookup(s + "\x00absent"); ok && !slices.Contains(domains, s+"\x00absent") {
				t.Fatal("absent domain found")
			}
		}
	})
}
