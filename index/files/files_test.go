package files

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

var sample = []File{
	{ID: 0, DatasetID: 3, DomainPrefix: "0a", Path: "urls/dataset_id=3/domain_prefix=0a/part-00000.parquet", Rows: 1000, RowGroups: 2},
	{ID: 1, DatasetID: 3, DomainPrefix: "ff", Path: "urls/dataset_id=3/domain_prefix=ff/part-00000.parquet", Rows: 0, RowGroups: 0},
	{ID: 7, DatasetID: 1<<32 - 1, DomainPrefix: "9c", Path: "x.parquet", Rows: 1<<64 - 1, RowGroups: 1<<32 - 1},
}

func encode(t testing.TB, fs []File) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, f := range fs {
		if err := w.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	zst := func(b []byte) []byte {
		var out bytes.Buffer
		zw, _ := zstd.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	cases := []struct {
		name string
		fs   []File
		wrap func([]byte) []byte
	}{
		{"a plain registry round-trips", sample, func(b []byte) []byte { return b }},
		{"a zstd-compressed registry round-trips", sample, zst},
		{"an empty registry round-trips", nil, func(b []byte) []byte { return b }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reg, err := Read(bytes.NewReader(c.wrap(encode(t, c.fs))))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(reg.All(), c.fs) && !(len(c.fs) == 0 && reg.Len() == 0) {
				t.Fatalf("All = %v, want %v", reg.All(), c.fs)
			}
			for _, f := range c.fs {
				if got, ok := reg.Lookup(f.ID); !ok || got != f {
					t.Fatalf("Lookup(%d) = %v, %v", f.ID, got, ok)
				}
			}
			if _, ok := reg.Lookup(5); ok {
				t.Fatal("Lookup of an absent id succeeded")
			}
		})
	}
}

func TestWriterRejects(t *testing.T) {
	cases := []struct {
		name string
		fs   []File
	}{
		{"a repeated file id is rejected", []File{sample[0], sample[0]}},
		{"a decreasing file id is rejected", []File{sample[2], sample[0]}},
		{"an uppercase domain prefix is rejected", []File{{DomainPrefix: "0A", Path: "a"}}},
		{"an absolute path is rejected", []File{{DomainPrefix: "00", Path: "/etc/passwd"}}},
		{"a path climbing out of the lake is rejected", []File{{DomainPrefix: "00", Path: "urls/../../x"}}},
		{"a path with a tab is rejected", []File{{DomainPrefix: "00", Path: "a\tb"}}},
		{"an empty path is rejected", []File{{DomainPrefix: "00"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := NewWriter(&bytes.Buffer{})
			var err error
			for _, f := range c.fs {
				if err = w.Add(f); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrInput) {
				t.Fatalf("err = %v, want ErrInput", err)
			}
		})
	}
}

// TestReadVersions: version 1 registries (two-digit prefixes) still read;
// version 2 adds one-digit prefixes.
func TestReadVersions(t *testing.T) {
	v1 := "# dhsi files.tsv v1\t" + columns + "\n0\t1\t0a\turls/a.parquet\t5\t1\n# end 1\n"
	reg, err := Read(strings.NewReader(v1))
	if err != nil || len(reg.All()) != 1 || reg.All()[0].DomainPrefix != "0a" {
		t.Fatalf("version 1: %v %+v", err, reg)
	}
	v2 := "# dhsi files.tsv v2\t" + columns + "\n0\t1\tf\turls/a.parquet\t5\t1\n# end 1\n"
	if reg, err = Read(strings.NewReader(v2)); err != nil || reg.All()[0].DomainPrefix != "f" {
		t.Fatalf("version 2: %v %+v", err, reg)
	}
}

func TestReadRejects(t *testing.T) {
	good := string(encode(t, sample))
	header, _, _ := strings.Cut(good, "\n")
	cases := []struct {
		name string
		in   string
		want error
	}{
		{"version 3 is rejected as unknown", strings.Replace(good, " v2\t", " v3\t", 1), ErrVersion},
		{"version 0 is rejected as unknown", strings.Replace(good, " v2\t", " v0\t", 1), ErrVersion},
		{"a non-canonical version is rejected", strings.Replace(good, " v2\t", " v02\t", 1), ErrVersion},
		{"version 1 with a one-digit prefix is corrupt", "# dhsi files.tsv v1\t" + columns + "\n0\t1\ta\ta\t1\t1\n# end 1\n", ErrCorrupt},
		{"a three-digit prefix is corrupt", header + "\n0\t1\tabc\ta\t1\t1\n# end 1\n", ErrCorrupt},
		{"a missing header is corrupt", "0\t3\t0a\ta\t1\t1\n# end 1\n", ErrCorrupt},
		{"other columns are corrupt", strings.Replace(good, "rows\trow_groups", "row_groups\trows", 1), ErrCorrupt},
		{"a registry cut at a line boundary is corrupt", good[:strings.LastIndex(good, "# end")], ErrCorrupt},
		{"a registry cut mid-line is corrupt", good[:len(good)-3], ErrCorrupt},
		{"an end line with the wrong count is corrupt", strings.Replace(good, "# end 3", "# end 2", 1), ErrCorrupt},
		{"data after the end line is corrupt", good + "8\t1\t00\ta\t1\t1\n", ErrCorrupt},
		{"file ids out of order are corrupt", header + "\n2\t1\t00\ta\t1\t1\n1\t1\t00\tb\t1\t1\n# end 2\n", ErrCorrupt},
		{"a non-canonical number is corrupt", header + "\n+1\t1\t00\ta\t1\t1\n# end 1\n", ErrCorrupt},
		{"a row with five columns is corrupt", header + "\n1\t1\t00\ta\t1\n# end 1\n", ErrCorrupt},
		{"an empty input is corrupt", "", ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Read(strings.NewReader(c.in)); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// FuzzRead: arbitrary input never panics, and what reads writes back
// byte for byte.
func FuzzRead(f *testing.F) {
	f.Add(encode(f, sample))
	f.Add([]byte("# dhsi files.tsv v2\t" + columns + "\n# end 0\n"))
	f.Add([]byte("# dhsi files.tsv v1\t" + columns + "\n0\t1\t0a\ta\t1\t1\n# end 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		reg, err := Read(bytes.NewReader(b))
		if err != nil || bytes.HasPrefix(b, []byte(zstdMagic)) || !bytes.HasPrefix(b, []byte(fmt.Sprintf("%s%d\t", headerPrefix, Version))) {
			return // only the current version writes back identically
		}
		if got := encode(t, reg.All()); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded registry differs:\n%q\n%q", got, b)
		}
	})
}
