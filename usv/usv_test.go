package usv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want [][]string
	}{
		{"units and records in Unicode form", "a␟b␞c␟d␞", [][]string{{"a", "b"}, {"c", "d"}}},
		{"a line break after a record separator is layout", "a␟b␞\nc␟d␞\n", [][]string{{"a", "b"}, {"c", "d"}}},
		{"a CRLF after a separator is layout", "a␟\r\nb␞\r\n", [][]string{{"a", "b"}}},
		{"a line break inside a unit is data", "a\nb␟c␞", [][]string{{"a\nb", "c"}}},
		{"the escape keeps a separator as data", "a␛␟b␟c␞", [][]string{{"a␟b", "c"}}},
		{"C0 control separators are accepted", "a\x1fb\x1ec\x1fd\x1e", [][]string{{"a", "b"}, {"c", "d"}}},
		{"a final record without a separator is a record", "a␟b␞c␟d", [][]string{{"a", "b"}, {"c", "d"}}},
		{"empty units are kept", "␟␟␞", [][]string{{"", "", ""}}},
		{"empty records are skipped", "a␞␞b␞", [][]string{{"a"}, {"b"}}},
		{"an empty file has no records", "", nil},
		{"group and file separators end records", "a␝b␜c", [][]string{{"a"}, {"b"}, {"c"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NewReader(strings.NewReader(c.in)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestInvalidUTF8IsAnErrorWithAPosition(t *testing.T) {
	_, err := NewReader(strings.NewReader("a␟b␞c\xff␞")).ReadAll()
	var pe *ParseError
	if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidUTF8) || pe.Record != 2 {
		t.Fatalf("err = %v, want ErrInvalidUTF8 in record 2", err)
	}
}

func TestRoundTrip(t *testing.T) {
	recs := [][]string{
		{"domain", "company_name", "updated_at"},
		{"example.com", "Example ␟ Inc ␞ ␛", "2024-01-01T00:00:00Z"},
		{"\nleading newline", "", "\r\n"},
		{"x\x1fy\x1ez\x1b", "ünïcödé", "末"},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	got, err := NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got {
		// the terminated form: every record reads with a last, empty unit
		if len(r) == 0 || r[len(r)-1] != "" {
			t.Fatalf("record %d %q: want the terminated form's last empty unit", i, r)
		}
		got[i] = r[:len(r)-1]
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip:\n got %q\nwant %q", got, recs)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{"a␟b␞", "␛", "a\x1fb\x1e\n", "\xff", "␞␞␞", "a␛\n␟"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := NewReader(bytes.NewReader(data)).ReadAll()
		if err != nil {
			return
		}
		// whatever we read, we can write and read back identically
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, r := range recs {
			if len(r) == 0 {
				continue
			}
			if err := w.Write(r); err != nil {
				t.Fatalf("write %q: %v", r, err)
			}
		}
		w.Flush()
		back, err := NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range back {
			back[i] = r[:len(r)-1] // the terminated form's last, empty unit
		}
		var want [][]string
		for _, r := range recs {
			if len(r) > 0 {
				want = append(want, r)
			}
		}
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("round trip of %q:\n got %q\nwant %q", data, back, want)
		}
	})
}

func FuzzWriteRead(f *testing.F) {
	f.Add("a", "b␟", "\n")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		rec := []string{a, b, c}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		if err := w.Write(rec); err != nil {
			return // invalid UTF-8 is refused
		}
		w.Flush()
		got, err := NewReader(&buf).ReadAll()
		if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], append(rec, "")) {
			t.Fatalf("write→read of %q: %q, %v", rec, got, err)
		}
	})
}

// TestParseBytesIsReader: ParseBytes returns what Reader.ReadAll does, on
// random texts of separators (both forms), escapes, layout and data.
func TestParseBytesIsReader(t *testing.T) {
	pieces := []string{"a", "bc", "é", "␟", "␞", "␛", "␝", "␜", "\x1f", "\x1e", "\x1b", "\x1d", "\x1c", "\n", "\r", "\r\n", "", "\ufeff", "\xe2\x90", "\xe2", "\xff"}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 50000; n++ {
		var b strings.Builder
		for k := rng.IntN(12); k > 0; k-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		in := b.String()
		want, werr := NewReader(strings.NewReader(in)).ReadAll()
		got, gerr := ParseBytes([]byte(in))
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || fmt.Sprintf("%q", want) != fmt.Sprintf("%q", got) {
			t.Fatalf("%q:\n Reader     %q %v\n ParseBytes %q %v", in, want, werr, got, gerr)
		}
	}
}
