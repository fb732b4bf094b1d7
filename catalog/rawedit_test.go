package catalog

import (
	"errors"
	"strings"
	"testing"
)

func TestRawEditRoundTrips(t *testing.T) {
	for _, c := range []struct {
		name     string
		url, raw string
		maxEdit  int // the edit's size is at most this
	}{
		{"a query's pairs in another order cost a few copies",
			"https://www.example.com/a/b/report-1.html?filter=x9y&id=abc123&utm_source=zz",
			"https://www.example.com/a/b/report-1.html?utm_source=zz&id=abc123&filter=x9y", 12},
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

func TestRawEditRejectsCorruptEdits(t *testing.T) {
	url := "http://example.com/abc"
	for _, c := range []struct {
		name string
		edit []byte
	}{
		{"empty", nil},
		{"a zero-length copy", []byte{0, 0}},
		{"a zero-length insert", []byte{1}},
		{"a copy past the URL's end", []byte{2 * 30, 0}},
		{"a copy before its start", []byte{2, 1}}, // zigzag 1 = -1
		{"an insert cut short", []byte{7, 'a'}},   // 3 bytes announced
		{"a copy without its offset", []byte{4}},
		{"a truncated varint", []byte{0x80}},
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
	f.Add("http://e.com/", "HTTP://E.COM", []byte{3, 'x'})
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
