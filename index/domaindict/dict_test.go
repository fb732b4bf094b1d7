package domaindict

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/dhsi/dhsi/index/internal/binio"
	"github.com/dhsi/dhsi/index/internal/indextest"
)

// build writes a dictionary of version 2, which stores no hash: Open
// builds the table with the hash it is given.
func build(t testing.TB, domains []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf, slices.Values(domains)); err != nil {
		t.Fatalf("write: %v", err)
	}
	return buf.Bytes()
}

// buildV1 writes one of version 1, as releases before 2026-11-28 did, with
// its table sorted by hash.
func buildV1(t testing.TB, domains []string, hash hashFunc) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := writeV1(&buf, slices.Values(domains), hash); err != nil {
		t.Fatalf("write: %v", err)
	}
	return buf.Bytes()
}

// versions builds the same list in each version Open reads.
func versions(t testing.TB, domains []string, hash hashFunc) map[string][]byte {
	return map[string][]byte{"v1": buildV1(t, domains, hash), "v2": build(t, domains)}
}

func openBytes(t testing.TB, b []byte, o Options, hash hashFunc) *Dict {
	t.Helper()
	d, err := open(bytes.NewReader(b), int64(len(b)), o, hash)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return d
}

// xxh3Hash is the production hash (nil selects it).
var xxh3Hash hashFunc

// Weak hashes that force collisions (D4).
func constHash(string) uint64   { return 7 }
func lenHash(s string) uint64   { return uint64(len(s)) }
func firstHash(s string) uint64 { return uint64(s[0]) << 56 }

func TestLookup(t *testing.T) {
	small := []string{"a.com", "b.org", "example.com", "example.net", "xn--bcher-kva.de", "zz.io"}
	cases := []struct {
		name    string
		domains []string
		hash    hashFunc
		opts    Options
		absent  []string
	}{
		{"every domain of a small list finds its sorted index", small, xxh3Hash, Options{}, []string{"c.com", "", "example.co", "a.com\n"}},
		{"lookups work with the strings loaded", small, xxh3Hash, Options{LoadStrings: true}, []string{"zz.iO"}},
		{"lookups work without verification on open", small, xxh3Hash, Options{SkipVerify: true}, []string{"b.or"}},
		{"all domains colliding on one hash still resolve by string", small, constHash, Options{}, []string{"c.com", "q"}},
		{"domains colliding by length resolve by string", small, lenHash, Options{LoadStrings: true}, []string{"c.com", "aaaaa"}},
		{"collisions in the top bits exercise the bucket directory", small, firstHash, Options{}, []string{"e.com", "zz.ia"}},
		{"a single domain dictionary works", []string{"only.com"}, xxh3Hash, Options{}, []string{"only.co"}},
		{"an empty dictionary finds nothing", nil, xxh3Hash, Options{}, []string{"a.com", ""}},
		{"a thousand generated domains all resolve", indextest.Domains(1000, 1), xxh3Hash, Options{}, []string{"nope.example"}},
		{"a thousand colliding generated domains all resolve", indextest.Domains(1000, 2), firstHash, Options{}, []string{"nope.example"}},
	}
	for _, c := range cases {
		for v, file := range versions(t, c.domains, c.hash) {
			t.Run(v+"/"+c.name, func(t *testing.T) {
				d := openBytes(t, file, c.opts, c.hash)
				if d.Len() != uint64(len(c.domains)) {
					t.Fatalf("Len = %d, want %d", d.Len(), len(c.domains))
				}
				for i, s := range c.domains {
					id, ok, err := d.Lookup(s)
					if err != nil || !ok || id != uint64(i) {
						t.Fatalf("Lookup(%q) = %d, %v, %v; want %d", s, id, ok, err, i)
					}
					got, err := d.Domain(uint64(i))
					if err != nil || got != s {
						t.Fatalf("Domain(%d) = %q, %v; want %q", i, got, err, s)
					}
				}
				for _, s := range c.absent {
					if id, ok, err := d.Lookup(s); ok || err != nil {
						t.Fatalf("Lookup(%q) = %d, %v, %v; want absent", s, id, ok, err)
					}
				}
				if _, err := d.Domain(d.Len()); !errors.Is(err, ErrOutOfRange) {
					t.Fatalf("Domain(Len()) err = %v, want ErrOutOfRange", err)
				}
			})
		}
	}
}

func TestWriteRejectsInvalidInput(t *testing.T) {
	cases := []struct {
		name    string
		domains []string
	}{
		{"unsorted input is rejected", []string{"b.com", "a.com"}},
		{"a duplicate domain is rejected", []string{"a.com", "a.com"}},
		{"an empty domain is rejected", []string{""}},
		{"a domain containing a newline is rejected", []string{"a.com\nb.com"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Write(&bytes.Buffer{}, slices.Values(c.domains))
			if !errors.Is(err, ErrInput) {
				t.Fatalf("err = %v, want ErrInput", err)
			}
		})
	}
}

func TestStringsSectionIsDomainsTxt(t *testing.T) {
	domains := indextest.Domains(500, 3)
	txt := strings.Join(domains, "\n") + "\n"
	want, err := ListHashOf(strings.NewReader(txt))
	if err != nil {
		t.Fatal(err)
	}
	if b := buildV1(t, domains, xxh3Hash); string(b[headerSize:headerSize+len(txt)]) != txt {
		t.Fatal("version 1: strings section differs from domains.txt")
	}
	b := build(t, domains)
	if got := decompressed(t, b); got != txt {
		t.Fatal("version 2: strings section does not decompress to domains.txt")
	}
	d := openBytes(t, b, Options{}, xxh3Hash)
	if d.ListHash() != want {
		t.Fatalf("ListHash = %016x, ListHashOf(domains.txt) = %016x", d.ListHash(), want)
	}
	if _, err := OpenWith(bytes.NewReader(b), int64(len(b)), Options{ExpectListHash: want}); err != nil {
		t.Fatalf("open with the right list hash: %v", err)
	}
	_, err = OpenWith(bytes.NewReader(b), int64(len(b)), Options{ExpectListHash: want ^ 1})
	if !errors.Is(err, ErrListMismatch) {
		t.Fatalf("open with another list's hash: err = %v, want ErrListMismatch", err)
	}
}

// rewriteFooterCRC recomputes the footer checksum after a test edits a
// covered field, so the edit is what the reader reacts to.
func rewriteFooterCRC(b []byte) {
	f := b[len(b)-footerSize:]
	binary.LittleEndian.PutUint32(f[52:], binio.CRCUpdate(binio.CRC(b[:headerSize]), f[:footerCRCSpan]))
}

// decompressed returns the strings section of a version-2 file.
func decompressed(t testing.TB, b []byte) string {
	t.Helper()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out, err := dec.DecodeAll(b[headerSize:len(b)-footerSize], nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// withStrings replaces a version-2 file's strings by txt, compressed, with
// a right CRC, lengths and (with rehash) list hash, so what Open reacts to
// is the list itself.
func withStrings(t testing.TB, b []byte, txt string, n uint64, rehash bool) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	sect := enc.EncodeAll([]byte(txt), nil)
	out := append(append(bytes.Clone(b[:headerSize]), sect...), b[len(b)-footerSize:]...)
	f := out[len(out)-footerSize:]
	le := binary.LittleEndian
	le.PutUint64(f[0:], n)
	le.PutUint64(f[16:], uint64(len(sect)))
	le.PutUint64(f[24:], uint64(len(txt)))
	if rehash {
		h, _ := ListHashOf(strings.NewReader(txt))
		le.PutUint64(f[32:], h)
	}
	le.PutUint32(f[48:], binio.CRC(sect))
	rewriteFooterCRC(out)
	return out
}

// rejectCase is a damaged file and the error Open must return for it.
type rejectCase struct {
	name string
	edit func(b []byte) []byte
	opts Options
	want error
}

func checkRejects(t *testing.T, good []byte, cases []rejectCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(bytes.Clone(good))
			_, err := OpenWith(bytes.NewReader(b), int64(len(b)), c.opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
		})
	}
}

// withVersion writes v in header and footer, with a right footer CRC.
func withVersion(v uint32) func([]byte) []byte {
	return func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[4:], v)
		binary.LittleEndian.PutUint32(b[len(b)-8:], v)
		rewriteFooterCRC(b)
		return b
	}
}

func TestOpenRejectsV2(t *testing.T) {
	good := build(t, []string{"a.com", "b.com", "c.com"})
	// lines puts txt in place of the strings (withStrings)
	lines := func(txt string, n uint64, rehash bool) func([]byte) []byte {
		return func(b []byte) []byte { return withStrings(t, b, txt, n, rehash) }
	}
	cases := []rejectCase{
		{"an unknown version is rejected as a version error", withVersion(3), Options{}, ErrVersion},
		{"another list's hash expected is a list mismatch", func(b []byte) []byte { return b }, Options{ExpectListHash: 1}, ErrListMismatch},
		{"a swapped domain list is a list mismatch", lines("a.com\nb.com\nd.com\n", 3, false), Options{}, ErrListMismatch},
		{"a list out of order is corrupt even when its hash is right", lines("b.com\na.com\nc.com\n", 3, true), Options{}, ErrCorrupt},
		{"a repeated domain is corrupt", lines("a.com\na.com\nc.com\n", 3, true), Options{}, ErrCorrupt},
		{"an empty domain is corrupt", lines("a.com\n\nc.com\n", 3, true), Options{}, ErrCorrupt},
		{"strings without a last newline are corrupt", lines("a.com\nb.com\nc.comm", 3, true), Options{}, ErrCorrupt},
		{"fewer domains than the footer's count are corrupt", lines("a.com\nb.com\nc.com\n", 4, true), Options{}, ErrCorrupt},
		{"more domains than the footer's count are corrupt", lines("a.com\nb.com\nc.com\n", 2, true), Options{}, ErrCorrupt},
		{"a strings length the section does not decompress to is corrupt", func(b []byte) []byte {
			b = withStrings(t, b, "a.com\nb.com\nc.com\n", 3, true)
			binary.LittleEndian.PutUint64(b[len(b)-footerSize+24:], 19)
			rewriteFooterCRC(b)
			return b
		}, Options{}, ErrCorrupt},
		{"a section that is not zstd is corrupt", func(b []byte) []byte {
			sect := b[headerSize : len(b)-footerSize]
			for i := range sect {
				sect[i] = 'x'
			}
			binary.LittleEndian.PutUint32(b[len(b)-footerSize+48:], binio.CRC(sect))
			return b
		}, Options{}, ErrCorrupt},
		{"a strings length past the bound is corrupt, not allocated", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[len(b)-footerSize+24:], 1<<40)
			rewriteFooterCRC(b)
			return b
		}, Options{}, ErrCorrupt},
		// a review's forgery: 99 bytes declaring 16 GiB of strings, with
		// every checksum right, killed a server; it is refused unread
		{"a strings length past maxRatio times the section is corrupt, not allocated", func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b[len(b)-footerSize+24:], maxStringsOf(uint64(len(b)-headerSize-footerSize))+1)
			rewriteFooterCRC(b)
			return b
		}, Options{}, ErrCorrupt},
		{"a truncated file is corrupt", func(b []byte) []byte { return b[:len(b)-1] }, Options{}, ErrCorrupt},
		{"a file extended by one byte is corrupt", func(b []byte) []byte { return append(b, 0) }, Options{}, ErrCorrupt},
	}
	checkRejects(t, good, cases)
}

func TestOpenRejects(t *testing.T) {
	good := buildV1(t, []string{"a.com", "b.com", "c.com"}, xxh3Hash)
	strEnd := headerSize + len("a.com\nb.com\nc.com\n")
	cases := []rejectCase{
		{"an unknown version is rejected as a version error", withVersion(7), Options{}, ErrVersion},
		{"an unknown hash algorithm is rejected as a version error", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[8:], 9)
			rewriteFooterCRC(b)
			return b
		}, Options{}, ErrVersion},
		{"a swapped domain list is a list mismatch", func(b []byte) []byte {
			copy(b[headerSize:], "a.com\nb.com\nd.com\n")
			return b
		}, Options{}, ErrListMismatch},
		{"a list out of order is corrupt even when its hash is right", func(b []byte) []byte {
			copy(b[headerSize:], "b.com\na.com\nc.com\n")
			f := b[len(b)-footerSize:]
			h, _ := ListHashOf(bytes.NewReader(b[headerSize:strEnd]))
			binary.LittleEndian.PutUint64(f[40:], h)
			rewriteFooterCRC(b)
			return b
		}, Options{}, ErrCorrupt},
		{"a lookup table built from another list is a list mismatch", func(b []byte) []byte {
			other := buildV1(t, []string{"a.com", "b.com", "d.com"}, xxh3Hash)
			copy(b[strEnd:len(b)-footerSize], other[strEnd:len(other)-footerSize])
			f := b[len(b)-footerSize:]
			binary.LittleEndian.PutUint32(f[48:], binio.CRC(b[strEnd:len(b)-footerSize]))
			rewriteFooterCRC(b)
			return b
		}, Options{}, ErrListMismatch},
		{"a truncated file is corrupt", func(b []byte) []byte { return b[:len(b)-1] }, Options{}, ErrCorrupt},
		{"a file extended by one byte is corrupt", func(b []byte) []byte { return append(b, 0) }, Options{}, ErrCorrupt},
		{"a tiny file is corrupt", func(b []byte) []byte { return b[:10] }, Options{}, ErrCorrupt},
	}
	checkRejects(t, good, cases)
}

// Every single-bit flip anywhere in the file is caught on Open: the header
// and footer by the footer CRC or field checks, offsets and table by the
// section CRC, strings by the list hash.
func TestEveryBitFlipIsDetected(t *testing.T) {
	for v, good := range versions(t, indextest.Domains(20, 4), xxh3Hash) {
		for i := range good {
			for bit := 0; bit < 8; bit++ {
				b := bytes.Clone(good)
				b[i] ^= 1 << bit
				_, err := Open(bytes.NewReader(b), int64(len(b)))
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
					t.Fatalf("%s: flip byte %d bit %d: err = %v, want ErrCorrupt or ErrVersion", v, i, bit, err)
				}
			}
		}
	}
}

// TestReadAtCalls: version 1 reads strings by range unless loaded.
// Version 2 reads the file in three calls and keeps everything.
func TestReadAtCalls(t *testing.T) {
	domains := indextest.Domains(5000, 5)
	b := buildV1(t, domains, xxh3Hash)
	cases := []struct {
		name               string
		opts               Options
		openMax, hit, miss int64
	}{
		{"default open reads header, footer, table and strings once; a hit reads its string", Options{}, 4, 1, 0},
		{"with strings loaded lookups make no reads", Options{LoadStrings: true}, 4, 0, 0},
		{"skipping verification opens in three reads", Options{SkipVerify: true}, 3, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cr := &indextest.CountingReaderAt{R: bytes.NewReader(b)}
			d, err := OpenWith(cr, int64(len(b)), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if cr.Calls() > c.openMax {
				t.Fatalf("open made %d reads, want <= %d", cr.Calls(), c.openMax)
			}
			cr.Reset()
			for _, s := range domains[:100] {
				if _, ok, err := d.Lookup(s); !ok || err != nil {
					t.Fatalf("Lookup(%q): %v %v", s, ok, err)
				}
			}
			if got := cr.Calls(); got != 100*c.hit {
				t.Fatalf("100 hits made %d reads, want %d", got, 100*c.hit)
			}
			cr.Reset()
			for i := range 100 {
				d.Lookup(fmt.Sprintf("absent-%d.example", i))
			}
			if got := cr.Calls(); got != 100*c.miss {
				t.Fatalf("100 misses made %d reads, want %d", got, 100*c.miss)
			}
		})
	}
}
