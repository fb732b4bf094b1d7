package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestRawEditRoundTrips(t *testing.T) {
	for _, c := range []struct {
		name     string
		url, raw string
		maxEdit  int // the edit's size is at most this
	}{
		{"a query's pairs in another order are one operation and their order",
			"https://www.example.com/a/b/report-1.html?filter=x9y&id=abc123&utm_source=zz",
			"https://www.example.com/a/b/report-1.html?utm_source=zz&id=abc123&filter=x9y", 2},
		{"equal pairs keep their order",
			"http://e.com/?a=1&a=1&b=2&b=3", "http://e.com/?b=2&a=1&b=3&a=1", 2},
		{"a query in another order and a fragment",
			"http://e.com/p?a=1&b=2", "http://e.com/p?b=2&a=1#top", 7},
		{"a query in another order after an upper-case host is copies",
			"http://e.com/p?a=1&b=2", "http://E.COM/p?b=2&a=1", 20},
		{"a query with a pair normalization changed is copies",
			"http://e.com/p?a=%7E&b=2", "http://e.com/p?b=2&a=~", 20},
		{"twenty pairs", "http://e.com/?" + pairs(20, false), "http://e.com/?" + pairs(20, true), 12},
		{"twenty-one pairs are copies", "http://e.com/?" + pairs(21, false), "http://e.com/?" + pairs(21, true), 200},
		{"an upper-case scheme and host are inserted, the path copied",
			"https://small.example/p/1", "HTTPS://SMALL.EXAMPLE/p/1", 24},
		{"a dropped fragment is one insert after one copy",
			"http://example.com/x", "http://example.com/x#section-2", 14},
		{"a dropped default port",
			"http://example.com/x/y/z", "http://example.com:80/x/y/z", 9},
		{"an added trailing slash", "https://example.com/", "https://example.com", 3},
		{"nothing in common", "http://a.b/", "zzz", 4},
		{"a raw URL longer than its URL by far",
			"http://e.com/", "http://user:secret@e.com/" + strings.Repeat("x", 300), 320},
		{"non-ASCII bytes in the raw URL",
			"https://xn--bcher-kva.de/%C3%A4", "https://bücher.de/ä", 30},
		{"repeated bytes stay within the chain bound",
			"http://e.com/" + strings.Repeat("a", 5000), "http://e.com/" + strings.Repeat("a", 4999) + "b", 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			var e RawEncoder
			edit := e.Append(nil, c.url, c.raw)
			got, err := AppendRaw(nil, c.url, edit)
			if err != nil || string(got) != c.raw {
				t.Fatalf("edit %x rebuilds %q (%v), want %q", edit, got, err, c.raw)
			}
			if len(edit) > c.maxEdit {
				t.Errorf("edit of %d bytes, want at most %d: %x", len(edit), c.maxEdit, edit)
			}
		})
	}
}

// pairs is a query of n pairs k00=v … in order, or in reverse.
func pairs(n int, reverse bool) string {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf("k%02d=v", i))
	}
	if reverse {
		slices.Reverse(ps)
	}
	return strings.Join(ps, "&")
}

func TestRawEditRejectsCorruptEdits(t *testing.T) {
	url := "http://example.com/abc?a=1&b=2&c=3"
	for _, c := range []struct {
		name string
		edit []byte
	}{
		{"empty", nil},
		{"a zero-length copy", []byte{0, 0}},
		{"a zero-length insert", []byte{1}},
		{"a copy past the URL's end", []byte{4 * 40, 0}},
		{"a copy before its start", []byte{4, 1}},     // zigzag 1 = -1
		{"an insert cut short", []byte{4*3 + 1, 'a'}}, // 3 bytes announced
		{"a copy without its offset", []byte{4}},
		{"a truncated varint", []byte{0x80}},
		{"a reserved operation", []byte{4 + 3}},
		{"a query operation of other than the URL's pairs", []byte{4*2 + 2, 1}},
		{"a query order of n! or more", []byte{4*3 + 2, 6}},
		{"a query operation without its order", []byte{4*3 + 2}},
		{"a query operation after the cursor passed the '?'", []byte{4 * 30, 0, 4*3 + 2, 1}},
		{"a query operation of one pair", []byte{4*1 + 2, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, err := AppendRaw(nil, url, c.edit); !errors.Is(err, ErrRawEdit) {
				t.Fatalf("AppendRaw(%x) = %q, %v; want ErrRawEdit", c.edit, got, err)
			}
		})
	}
}

// FuzzRawEdit: every edit the encoder writes rebuilds its raw URL, and no
// bytes make the decoder panic or read outside the URL.
func FuzzRawEdit(f *testing.F) {
	f.Add("https://www.example.com/a?b=1&a=2", "https://www.example.com/a?a=2&b=1", []byte{2, 0})
	f.Add("http://e.com/", "HTTP://E.COM", []byte{5, 'x'})
	f.Add("http://e.com/?a=1&b=2&c=3", "http://e.com/?c=3&a=1&b=2#x", []byte{14, 4})
	var e RawEncoder
	f.Fuzz(func(t *testing.T, url, raw string, edit []byte) {
		AppendRaw(nil, url, edit) // must not panic
		if raw == "" {
			return
		}
		enc := e.Append(nil, url, raw)
		got, err := AppendRaw(nil, url, enc)
		if err != nil || string(got) != raw {
			t.Fatalf("edit %x of %q → %q rebuilds %q (%v)", enc, url, raw, got, err)
		}
	})
}
