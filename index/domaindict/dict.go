// Package domaindict owns the domain dictionary (domains.dict): the sorted
// unique registered domains of one index version and the map from a domain
// string to its domain_id, the domain's index in that sorted order. The
// byte layout is specified in docs/format/domains-dict.md. Write writes
// version 2 (domains.txt compressed; Open builds offsets and table); Open
// also reads version 1, which stores them.
//
// Invariants of a dictionary file, checked by Open:
//
//	D1. Domains are non-empty, contain no '\n', and are strictly increasing
//	    in byte order; domain_id i is the i-th domain.
//	D2. The strings section is byte-identical to domains.txt (each domain
//	    followed by '\n'; in version 2 it decompresses to it), and the
//	    footer's list hash is xxh3-64 of it, so a dictionary is bound to
//	    exactly one domain list.
//	D3. The lookup table holds one (xxh3-64(domain), domain_id) pair per
//	    domain, sorted by (hash, id); every id appears exactly once.
//	D4. Lookup never trusts a hash alone: a candidate id is returned only
//	    after its string equals the query, so hash collisions cost a string
//	    comparison, never a wrong answer.
//
// Lookup is "sorted 64-bit hashes with verification" rather than a minimal
// perfect hash: it costs 12 bytes a domain more than an MPHF, but it builds
// deterministically in one sort, needs no collision machinery, and rejects
// absent domains from memory without reading a string, which matters when
// strings are read by range from S3. The format page has the measurements.
//
// A *Dict is immutable and safe for concurrent use when its io.ReaderAt is
// (io.ReaderAt requires that).
package domaindict

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"

	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// Format constants; see docs/format/domains-dict.md.
const (
	Magic = "DDIC"
	// Version is what Write writes: 2, domains.txt compressed, offsets and
	// table built by Open. Open reads 1 too (releases before 2026-11-28).
	Version       = 2
	hashAlgXXH3   = 1 // xxh3-64, seed 0
	headerSize    = 16
	footerSize    = 64
	tableEntry    = 12 // hash uint64 + id uint32
	maxDomains    = 1 << 32
	verifyChunk   = 4 << 20
	footerCRCSpan = 52 // footer bytes covered by footer_crc
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrCorrupt marks a file that is not a valid dictionary: bad magic,
	// bad checksum, inconsistent offsets, broken ordering.
	ErrCorrupt = errors.New("domaindict: corrupt dictionary")
	// ErrVersion marks a version or hash algorithm this reader does not know.
	ErrVersion = errors.New("domaindict: unsupported version")
	// ErrListMismatch marks a dictionary whose domain list does not hash to
	// the expected list hash (design §9 "MPHF mismatch"). A mismatch found
	// inside one file also wraps ErrCorrupt.
	ErrListMismatch = errors.New("domaindict: domain list does not match dictionary")
	// ErrInput marks writer input that breaks D1.
	ErrInput = errors.New("domaindict: invalid input")
	// ErrOutOfRange marks a domain_id >= Len().
	ErrOutOfRange = errors.New("domaindict: domain id out of range")
)

// hashFunc is the lookup hash. nil means xxh3-64, the only hash a file can
// declare; tests inject weak hashes to force collisions (D4).
type hashFunc func(string) uint64

// hashers returns the string and byte-slice forms of hash, so verifying a
// million strings does not allocate a million strings.
func hashers(hash hashFunc) (func(string) uint64, func([]byte) uint64) {
	if hash == nil {
		return xxh3.HashString, xxh3.Hash
	}
	return hash, func(b []byte) uint64 { return hash(string(b)) }
}

// pairMix mixes a table pair for the order-independent digest that checks
// the table against the strings (D3) in two sequential passes instead of a
// random table access per domain. It is splitmix64's finalizer.
func pairMix(h uint64, id uint32) uint64 {
	x := h ^ (uint64(id)+1)*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// ListHashOf returns the list hash of domains.txt content, xxh3-64 of the
// bytes. It equals (*Dict).ListHash of the dictionary built from that list.
func ListHashOf(domainsTxt io.Reader) (uint64, error) {
	h := xxh3.New()
	if _, err := io.Copy(h, domainsTxt); err != nil {
		return 0, fmt.Errorf("domaindict: hash domain list: %w", err)
	}
	return h.Sum64(), nil
}

// Options tune Open of a version-1 file; a version-2 file is always
// loaded whole and verified.
type Options struct {
	// LoadStrings keeps the strings section in memory, so Lookup and
	// Domain make no ReadAt calls. Without it each verified candidate and
	// each Domain call costs one ReadAt.
	LoadStrings bool
	// SkipVerify skips reading the strings section on Open. Open then does
	// not check D1, D2 or the hashes of D3. Lookup still never returns a
	// wrong id (D4), but corrupt strings show up as misses and Domain may
	// return them. Use it only where the file was verified before.
	SkipVerify bool
	// ExpectListHash, if non-zero, is the list hash the caller expects
	// (e.g. from the manifest or from ListHashOf(domains.txt)); a different
	// one fails Open with ErrListMismatch.
	ExpectListHash uint64
}

// Dict is an open dictionary. What it holds in memory: the lookup table
// (12 bytes a domain), the string offsets (8 bytes a domain), a bucket
// directory over the hashes (about 2 bytes a domain) and, with
// LoadStrings, the strings.
type Dict struct {
	r        io.ReaderAt
	hash     func(string) uint64
	hashB    func([]byte) uint64
	digest   uint64 // sum of pairMix over the table, for scanStrings
	n        uint64
	listHash uint64
	strOff   int64 // file offset of the strings section
	// tab and offs are the file's own bytes, kept undecoded: a table probe
	// then touches one cache line for both hash and id, and Open copies
	// nothing.
	tab   []byte   // n entries of (hash uint64, id uint32), sorted
	offs  []byte   // n+1 uint64 string offsets relative to strOff
	dir   []uint32 // dir[b] = first table index whose hash>>shift >= b
	shift uint
	strs  []byte // the strings section, with LoadStrings or version 2
}

// Open opens the dictionary in r, which holds size bytes. Of a version-1
// file it reads the header and footer, the offsets and table in one
// ReadAt, and (unless SkipVerify) the strings section in 4 MiB ReadAts to
// check D1-D3. Of a version-2 file it reads header, footer and the
// compressed strings, and builds offsets and table from them.
func Open(r io.ReaderAt, size int64) (*Dict, error) { return OpenWith(r, size, Options{}) }

// OpenWith is Open with options.
func OpenWith(r io.ReaderAt, size int64, o Options) (*Dict, error) {
	return open(r, size, o, nil)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func readErr(what string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return corruptf("read %s: truncated", what)
	}
	return fmt.Errorf("domaindict: read %s: %w", what, err)
}

func open(r io.ReaderAt, size int64, o Options, hash hashFunc) (*Dict, error) {
	if size < headerSize+footerSize {
		return nil, corruptf("file is %d bytes, smaller than header and footer", size)
	}
	hdr, err := binio.ReadAt(r, 0, headerSize)
	if err != nil {
		return nil, readErr("header", err)
	}
	ftr, err := binio.ReadAt(r, size-footerSize, footerSize)
	if err != nil {
		return nil, readErr("footer", err)
	}
	if string(hdr[0:4]) != Magic || string(ftr[60:64]) != Magic {
		return nil, corruptf("bad magic")
	}
	version := binary.LittleEndian.Uint32(hdr[4:])
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("%w: version %d (this reader knows 1 and 2)", ErrVersion, version)
	}
	if v := binary.LittleEndian.Uint32(ftr[56:]); v != version {
		return nil, corruptf("footer version %d differs from header version", v)
	}
	if a := binary.LittleEndian.Uint32(hdr[8:]); a != hashAlgXXH3 {
		return nil, fmt.Errorf("%w: hash algorithm %d", ErrVersion, a)
	}
	if binary.LittleEndian.Uint32(hdr[12:]) != 0 {
		return nil, corruptf("reserved header field is not zero")
	}
	crc := binio.CRCUpdate(binio.CRC(hdr), ftr[:footerCRCSpan])
	if want := binary.LittleEndian.Uint32(ftr[52:]); crc != want {
		return nil, corruptf("footer checksum %08x, want %08x", crc, want)
	}
	if version == 2 {
		return openV2(r, size, o, hash, ftr)
	}
	le := binary.LittleEndian
	n := le.Uint64(ftr[0:])
	strOff, strLen := le.Uint64(ftr[8:]), le.Uint64(ftr[16:])
	offOff, tabOff := le.Uint64(ftr[24:]), le.Uint64(ftr[32:])
	listHash := le.Uint64(ftr[40:])
	sectCRC := le.Uint32(ftr[48:])
	// Check the layout arithmetic before allocating anything sized by it;
	// n is bounded first so the products cannot overflow.
	if n > maxDomains {
		return nil, corruptf("%d domains, more than %d", n, uint64(maxDomains))
	}
	if strOff != headerSize || offOff != strOff+strLen || tabOff != offOff+8*(n+1) ||
		tabOff+tableEntry*n+footerSize != uint64(size) || strLen < 2*n {
		return nil, corruptf("section offsets do not add up to the file size")
	}
	if o.ExpectListHash != 0 && o.ExpectListHash != listHash {
		return nil, fmt.Errorf("%w: file has list hash %016x, expected %016x", ErrListMismatch, listHash, o.ExpectListHash)
	}

	mid, err := binio.ReadAt(r, int64(offOff), int(uint64(size)-footerSize-offOff))
	if err != nil {
		return nil, readErr("offsets and table", err)
	}
	if got := binio.CRC(mid); got != sectCRC {
		return nil, corruptf("offsets and table checksum %08x, want %08x", got, sectCRC)
	}
	d := &Dict{r: r, n: n, listHash: listHash, strOff: int64(strOff),
		offs: mid[:8*(n+1)], tab: mid[8*(n+1):]}
	d.hash, d.hashB = hashers(hash)
	if d.offset(0) != 0 || d.offset(n) != strLen {
		return nil, corruptf("string offsets do not span the strings section")
	}
	for i := uint64(0); i < n; i++ {
		if d.offset(i+1) < d.offset(i)+2 { // a non-empty domain and its '\n'
			return nil, corruptf("string offset %d is not past offset %d by 2 or more", i+1, i)
		}
	}
	seen := make([]uint64, (n+63)/64)
	for i := uint64(0); i < n; i++ {
		h, id := d.entry(i)
		if uint64(id) >= n || seen[id/64]&(1<<(id%64)) != 0 {
			return nil, corruptf("table entry %d: id %d out of range or repeated", i, id)
		}
		seen[id/64] |= 1 << (id % 64)
		d.digest += pairMix(h, id)
		if i > 0 {
			if ph, pid := d.entry(i - 1); h < ph || h == ph && id <= pid {
				return nil, corruptf("table entry %d is not after entry %d", i, i-1)
			}
		}
	}
	d.buildDir()

	if !o.SkipVerify || o.LoadStrings {
		if err := d.scanStrings(o); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// maxRatio bounds how many times its compressed length a version-2
// footer may say the strings are, so a small damaged or forged file
// cannot make Open allocate gigabytes (a review forged 99 bytes that
// declared 16 GiB). Domain lists compress 2.6 times (the realistic
// corpus's) to ~6 (generated sequences); Write refuses a list past the
// bound rather than write a file Open would refuse.
const maxRatio = 1024

// maxStringsOf is the most strings a section of sectLen bytes may hold.
func maxStringsOf(sectLen uint64) uint64 { return maxRatio*sectLen + 1<<20 }

// openV2 opens a version-2 file: it reads and decompresses the strings
// section, checks D1 and D2, and builds the offsets and the table (D3) as
// version 1 stores them, so every lookup runs the same code. The strings
// stay in memory (LoadStrings is implied; SkipVerify has nothing to skip).
func openV2(r io.ReaderAt, size int64, o Options, hash hashFunc, ftr []byte) (*Dict, error) {
	le := binary.LittleEndian
	n := le.Uint64(ftr[0:])
	sectOff, sectLen, strLen := le.Uint64(ftr[8:]), le.Uint64(ftr[16:]), le.Uint64(ftr[24:])
	listHash := le.Uint64(ftr[32:])
	sectCRC := le.Uint32(ftr[48:])
	if n > maxDomains {
		return nil, corruptf("%d domains, more than %d", n, uint64(maxDomains))
	}
	if le.Uint64(ftr[40:]) != 0 {
		return nil, corruptf("reserved footer field is not zero")
	}
	if sectOff != headerSize || sectOff+sectLen+footerSize != uint64(size) || strLen < 2*n || strLen > maxStringsOf(sectLen) {
		return nil, corruptf("section lengths do not add up to the file size")
	}
	if o.ExpectListHash != 0 && o.ExpectListHash != listHash {
		return nil, fmt.Errorf("%w: file has list hash %016x, expected %016x", ErrListMismatch, listHash, o.ExpectListHash)
	}
	sect, err := binio.ReadAt(r, int64(sectOff), int(sectLen))
	if err != nil {
		return nil, readErr("strings", err)
	}
	if got := binio.CRC(sect); got != sectCRC {
		return nil, corruptf("strings checksum %08x, want %08x", got, sectCRC)
	}
	// the writer streams, so its frame declares a window (8 MiB) and not
	// the content size: the decoder's bound is the larger
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(strLen, 8<<20)))
	if err != nil {
		return nil, fmt.Errorf("domaindict: %w", err)
	}
	defer dec.Close()
	// decoded into a buffer that grows with what the section really
	// holds, up to strLen (the decoder's bound), not one of strLen bytes
	strs, err := dec.DecodeAll(sect, make([]byte, 0, min(strLen, 8*sectLen+4096)))
	if err != nil {
		return nil, corruptf("strings do not decompress: %v", err)
	}
	if uint64(len(strs)) != strLen {
		return nil, corruptf("strings decompress to %d bytes, the footer says %d", len(strs), strLen)
	}
	if got := xxh3.Hash(strs); got != listHash {
		return nil, fmt.Errorf("%w: %w: strings hash to %016x, footer says %016x", ErrCorrupt, ErrListMismatch, got, listHash)
	}
	d := &Dict{r: r, n: n, listHash: listHash, strs: strs, offs: make([]byte, 8*(n+1))}
	d.hash, d.hashB = hashers(hash)
	rows := make([]tableRow, 0, n)
	var prev []byte
	for off := uint64(0); off < strLen; {
		end := bytes.IndexByte(strs[off:], '\n')
		id := uint64(len(rows))
		switch {
		case end < 0:
			return nil, corruptf("the strings do not end with a newline")
		case end == 0:
			return nil, corruptf("domain %d is empty", id)
		case id == n:
			return nil, corruptf("more domains than the footer's %d", n)
		}
		dom := strs[off : off+uint64(end)]
		if id > 0 && bytes.Compare(dom, prev) <= 0 {
			return nil, corruptf("domain %d is not after domain %d", id, id-1)
		}
		rows = append(rows, tableRow{h: d.hashB(dom), id: uint32(id)})
		prev = dom
		off += uint64(end) + 1
		le.PutUint64(d.offs[8*(id+1):], off)
	}
	if uint64(len(rows)) != n {
		return nil, corruptf("%d domains, the footer says %d", len(rows), n)
	}
	rows = sortTable(rows)
	d.tab = make([]byte, tableEntry*n)
	for i, row := range rows {
		le.PutUint64(d.tab[tableEntry*i:], row.h)
		le.PutUint32(d.tab[tableEntry*i+8:], row.id)
	}
	d.buildDir()
	return d, nil
}

// tableRow is one entry of the lookup table (D3).
type tableRow struct {
	h  uint64
	id uint32
}

// sortTable returns a table ordered by (hash, id) (D3): rows placed by the
// top bits of their hash, about two a bucket as buildDir has them, then
// each bucket sorted. A sort of the whole table took most of a version-2
// Open (BenchmarkDictOpen); this is linear where hashes spread, and a
// bucket that many hashes share (domains made to collide) is sorted in
// n log n, not insertion-sorted.
func sortTable(rows []tableRow) []tableRow {
	byHashID := func(a, b tableRow) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	}
	n := uint64(len(rows))
	if n < 64 {
		slices.SortFunc(rows, byHashID)
		return rows
	}
	b := bits.Len64(n/2 - 1)
	shift := uint(64 - b)
	start := make([]uint32, (1<<b)+1)
	for _, r := range rows {
		start[r.h>>shift+1]++
	}
	for k := 1; k < len(start); k++ {
		start[k] += start[k-1]
	}
	out := make([]tableRow, n)
	next := slices.Clone(start)
	for _, r := range rows {
		k := r.h >> shift
		out[next[k]] = r
		next[k]++
	}
	for k := 0; k+1 < len(start); k++ {
		bucket := out[start[k]:start[k+1]]
		if len(bucket) > 8 {
			slices.SortFunc(bucket, byHashID)
			continue
		}
		for i := 1; i < len(bucket); i++ {
			for j := i; j > 0 && byHashID(bucket[j-1], bucket[j]) > 0; j-- {
				bucket[j-1], bucket[j] = bucket[j], bucket[j-1]
			}
		}
	}
	return out
}

// buildDir indexes the sorted hashes by their top bits so a lookup binary
// searches about two entries instead of log2(n); it is rebuilt on Open
// rather than stored because it is cheap and derived.
func (d *Dict) buildDir() {
	b := 0
	if d.n > 2 {
		b = bits.Len64(d.n/2 - 1) // about two entries a bucket
	}
	d.shift = uint(64 - b)
	buckets := uint64(1) << b
	d.dir = make([]uint32, buckets+1)
	j := uint64(0)
	for bk := uint64(0); bk <= buckets; bk++ {
		for j < d.n && d.bucket(d.hash64(j)) < bk {
			j++
		}
		d.dir[bk] = uint32(j)
	}
}

func (d *Dict) offset(i uint64) uint64 { return binary.LittleEndian.Uint64(d.offs[8*i:]) }
func (d *Dict) hash64(i uint64) uint64 { return binary.LittleEndian.Uint64(d.tab[tableEntry*i:]) }
func (d *Dict) entry(i uint64) (uint64, uint32) {
	return binary.LittleEndian.Uint64(d.tab[tableEntry*i:]), binary.LittleEndian.Uint32(d.tab[tableEntry*i+8:])
}

func (d *Dict) bucket(h uint64) uint64 {
	if d.shift == 64 {
		return 0
	}
	return h >> d.shift
}

// scanStrings reads the strings section, checks D1 and D2 and that the
// table holds exactly (hash(domain i), i) for every i (D3), and keeps the
// bytes with LoadStrings.
func (d *Dict) scanStrings(o Options) error {
	strLen := d.offset(d.n)
	var all []byte
	if o.LoadStrings {
		all = make([]byte, strLen)
	}
	verify := !o.SkipVerify
	var digest uint64 // sum of pairMix(hash(domain id), id) over the strings
	lh := xxh3.New()
	var prev, carry []byte
	id := uint64(0)
	for off := uint64(0); off < strLen; {
		n := min(uint64(verifyChunk), strLen-off)
		var chunk []byte
		if all != nil {
			chunk = all[off : off+n]
			if err := binio.ReadFull(d.r, d.strOff+int64(off), chunk); err != nil {
				return readErr("strings", err)
			}
		} else {
			var err error
			if chunk, err = binio.ReadAt(d.r, d.strOff+int64(off), int(n)); err != nil {
				return readErr("strings", err)
			}
		}
		lh.Write(chunk)
		if verify {
			// Split the chunk at the offsets; a domain may straddle chunks.
			start := off - uint64(len(carry))
			buf := chunk
			if len(carry) > 0 {
				buf = append(carry, chunk...)
			}
			for id < d.n && d.offset(id+1) <= off+n {
				s := buf[d.offset(id)-start : d.offset(id+1)-start]
				dom := s[:len(s)-1]
				if s[len(s)-1] != '\n' || bytes.IndexByte(dom, '\n') >= 0 {
					return corruptf("domain %d is not one line", id)
				}
				if id > 0 && bytes.Compare(dom, prev) <= 0 {
					return corruptf("domain %d is not after domain %d", id, id-1)
				}
				digest += pairMix(d.hashB(dom), uint32(id))
				prev = append(prev[:0], dom...)
				id++
			}
			carry = append(carry[:0], buf[d.offset(id)-start:]...)
		}
		off += n
	}
	if got := lh.Sum64(); got != d.listHash {
		return fmt.Errorf("%w: %w: strings hash to %016x, footer says %016x", ErrCorrupt, ErrListMismatch, got, d.listHash)
	}
	if verify && digest != d.digest {
		return fmt.Errorf("%w: %w: the lookup table was not built from these strings", ErrCorrupt, ErrListMismatch)
	}
	d.strs = all
	return nil
}

// Len is the number of domains.
func (d *Dict) Len() uint64 { return d.n }

// ListHash is xxh3-64 of the domain list as domains.txt bytes (D2).
func (d *Dict) ListHash() uint64 { return d.listHash }

// Lookup returns the domain_id of domain. An absent domain is (0, false,
// nil); the error is non-nil only when reading a candidate string fails.
func (d *Dict) Lookup(domain string) (uint64, bool, error) {
	if d.n == 0 || domain == "" {
		return 0, false, nil
	}
	h := d.hash(domain)
	b := d.bucket(h)
	lo, hi := uint64(d.dir[b]), uint64(d.dir[b+1])
	for lo < hi { // first entry with hash >= h
		m := (lo + hi) / 2
		if d.hash64(m) < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := lo; i < d.n; i++ {
		eh, id := d.entry(i)
		if eh != h {
			break
		}
		ok, err := d.matches(uint64(id), domain)
		if err != nil {
			return 0, false, err
		}
		if ok {
			return uint64(id), true, nil
		}
	}
	return 0, false, nil
}

// matches reports whether domain id is s, without allocating when the
// strings are loaded and reading only len(s) bytes when they are not.
func (d *Dict) matches(id uint64, s string) (bool, error) {
	a, b := d.offset(id), d.offset(id+1)-1 // drop the '\n'
	if b-a != uint64(len(s)) {
		return false, nil
	}
	if d.strs != nil {
		return string(d.strs[a:b]) == s, nil
	}
	got, err := d.domain(id)
	return got == s, err
}

// Domain returns the domain whose id is id.
func (d *Dict) Domain(id uint64) (string, error) {
	if id >= d.n {
		return "", fmt.Errorf("%w: %d >= %d", ErrOutOfRange, id, d.n)
	}
	return d.domain(id)
}

func (d *Dict) domain(id uint64) (string, error) {
	a, b := d.offset(id), d.offset(id+1)-1 // drop the '\n'
	if d.strs != nil {
		return string(d.strs[a:b]), nil
	}
	buf, err := binio.ReadAt(d.r, d.strOff+int64(a), int(b-a))
	if err != nil {
		return "", readErr(fmt.Sprintf("domain %d", id), err)
	}
	return string(buf), nil
}
