// Package dtdr owns domain_to_datasets.roar, the membership index: for each
// domain_id, the Roaring bitmap of the dataset_ids (uint32) whose URLs
// include that domain. The layout is design §2.2 B, specified in
// docs/format/dtdr.md.
//
// Index versions written since 2026-11-28 have no such file (their membership
// is dataset_to_domains.roar alone, index/dsdr); this package reads the
// files of older versions, and its writer stays for tests and tools.
//
// Invariants of a file, all little-endian:
//
//	R1. One entry per domain_id 0..N-1, in order; a domain with no datasets
//	    has the serialization of an empty bitmap, never a missing entry.
//	R2. Bitmaps are contiguous in domain_id order from byte 24; each is the
//	    portable Roaring serialization followed by its CRC-32C, and the
//	    index's bitmap_len counts the Roaring bytes only.
//	R3. index_offset is the end of the last bitmap's CRC, and the file ends
//	    8 bytes after the index: a CRC-32C of header and index, then "DTDR".
//
// Get costs at most two ReadAt calls (index entry, bitmap+CRC), one when the
// index is loaded; every bitmap read is checked against its CRC, so a torn
// or misdirected range read is an error, never a wrong answer.
//
// A *Reader is immutable and safe for concurrent use.
package dtdr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// Format constants; see docs/format/dtdr.md.
const (
	Magic       = "DTDR"
	Version     = 1
	headerSize  = 24 // magic, version uint32, N uint64, index_offset uint64
	entrySize   = 12 // bitmap_start uint64, bitmap_len uint32
	crcSize     = 4
	trailerSize = 8 // CRC-32C of header and index, then Magic
	minBitmap   = 8 // an empty bitmap serializes to 8 bytes
	maxDomains  = 1 << 40
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrCorrupt marks bytes that break R1-R3 or fail a checksum.
	ErrCorrupt = errors.New("dtdr: corrupt membership file")
	// ErrVersion marks a version this reader does not know.
	ErrVersion = errors.New("dtdr: unsupported version")
	// ErrOutOfRange marks a domain_id >= N.
	ErrOutOfRange = errors.New("dtdr: domain id out of range")
	// ErrInput marks writer misuse: ids out of order or beyond N.
	ErrInput = errors.New("dtdr: invalid input")
)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func readErr(what string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return corruptf("read %s: truncated", what)
	}
	return fmt.Errorf("dtdr: read %s: %w", what, err)
}

// Writer writes a membership file for a known number of domains.
type Writer struct {
	sink  *binio.Sink
	n     uint64
	next  uint64 // next domain_id to write
	index []byte // 12 bytes a domain, written after the bitmaps
	empty []byte // the serialization of an empty bitmap
	buf   bytes.Buffer
	err   error
}

// NewWriter starts a file for nDomains domains (the dictionary's Len).
// If w is an io.WriterAt (an *os.File is) bitmaps stream to it and the
// header is patched at Close; otherwise the file is built in memory. The
// index (12 bytes a domain) is held in memory either way.
func NewWriter(w io.Writer, nDomains uint64) *Writer {
	wr := &Writer{sink: binio.NewSink(w), n: nDomains}
	if nDomains > maxDomains {
		wr.err = fmt.Errorf("%w: %d domains, more than %d", ErrInput, nDomains, uint64(maxDomains))
		return wr
	}
	wr.index = make([]byte, 0, entrySize*nDomains)
	wr.empty, _ = roaring.New().ToBytes()
	var hdr [headerSize]byte // placeholder; Close writes the real one
	_, wr.err = wr.sink.Write(hdr[:])
	return wr
}

// Add writes the datasets of domainID. Ids must increase; skipped ids get
// an empty bitmap (R1). A nil bitmap is empty. bm is not modified; callers
// wanting run containers call bm.RunOptimize first.
func (w *Writer) Add(domainID uint64, bm *roaring.Bitmap) error {
	if w.err != nil {
		return w.err
	}
	if domainID < w.next || domainID >= w.n {
		return fmt.Errorf("%w: domain id %d: want %d <= id < %d", ErrInput, domainID, w.next, w.n)
	}
	for w.next < domainID {
		if w.err = w.put(w.empty); w.err != nil {
			return w.err
		}
	}
	if bm == nil {
		w.err = w.put(w.empty)
		return w.err
	}
	w.buf.Reset()
	if _, err := bm.WriteTo(&w.buf); err != nil {
		w.err = fmt.Errorf("dtdr: serialize bitmap of domain %d: %w", domainID, err)
		return w.err
	}
	w.err = w.put(w.buf.Bytes())
	return w.err
}

func (w *Writer) put(b []byte) error {
	if uint64(len(b)) > 1<<32-1 {
		return fmt.Errorf("%w: bitmap of domain %d is %d bytes", ErrInput, w.next, len(b))
	}
	w.index = binary.LittleEndian.AppendUint64(w.index, uint64(w.sink.Offset()))
	w.index = binary.LittleEndian.AppendUint32(w.index, uint32(len(b)))
	if _, err := w.sink.Write(b); err != nil {
		return fmt.Errorf("dtdr: write bitmap of domain %d: %w", w.next, err)
	}
	if _, err := w.sink.Write(binary.LittleEndian.AppendUint32(nil, binio.CRC(b))); err != nil {
		return fmt.Errorf("dtdr: write bitmap of domain %d: %w", w.next, err)
	}
	w.next++
	return nil
}

// Close fills the remaining domains with empty bitmaps, writes the index
// and trailer, and patches the header. It does not close the destination.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	for w.next < w.n {
		if w.err = w.put(w.empty); w.err != nil {
			return w.err
		}
	}
	var hdr [headerSize]byte
	copy(hdr[:], Magic)
	binary.LittleEndian.PutUint32(hdr[4:], Version)
	binary.LittleEndian.PutUint64(hdr[8:], w.n)
	binary.LittleEndian.PutUint64(hdr[16:], uint64(w.sink.Offset()))
	var tr [trailerSize]byte
	binary.LittleEndian.PutUint32(tr[:], binio.CRCUpdate(binio.CRC(hdr[:]), w.index))
	copy(tr[4:], Magic)
	w.sink.Write(w.index)
	if _, err := w.sink.Write(tr[:]); err != nil {
		w.err = fmt.Errorf("dtdr: write index: %w", err)
		return w.err
	}
	if err := w.sink.Finish(hdr[:]); err != nil {
		w.err = fmt.Errorf("dtdr: finish: %w", err)
		return w.err
	}
	w.err = errors.New("dtdr: writer is closed")
	return nil
}

// Options tune Open.
type Options struct {
	// LoadIndex reads the whole index (12 bytes a domain) on Open and
	// checks its CRC and R2/R3 contiguity, so Get makes one ReadAt.
	LoadIndex bool
}

// Reader reads a membership file.
type Reader struct {
	r        io.ReaderAt
	n        uint64
	indexOff uint64
	index    []byte // with LoadIndex
}

// Open opens the file in r of size bytes with one ReadAt (the header).
func Open(r io.ReaderAt, size int64) (*Reader, error) { return OpenWith(r, size, Options{}) }

// OpenWith is Open with options.
func OpenWith(r io.ReaderAt, size int64, o Options) (*Reader, error) {
	if size < headerSize+trailerSize {
		return nil, corruptf("file is %d bytes, smaller than header and trailer", size)
	}
	hdr, err := binio.ReadAt(r, 0, headerSize)
	if err != nil {
		return nil, readErr("header", err)
	}
	if string(hdr[:4]) != Magic {
		return nil, corruptf("bad magic %q", hdr[:4])
	}
	if v := binary.LittleEndian.Uint32(hdr[4:]); v != Version {
		return nil, fmt.Errorf("%w: version %d (this reader knows %d)", ErrVersion, v, Version)
	}
	rd := &Reader{r: r, n: binary.LittleEndian.Uint64(hdr[8:]), indexOff: binary.LittleEndian.Uint64(hdr[16:])}
	if rd.n > maxDomains || rd.indexOff < headerSize+rd.n*(minBitmap+crcSize) ||
		rd.indexOff+rd.n*entrySize+trailerSize != uint64(size) {
		return nil, corruptf("N=%d and index_offset=%d do not fit a %d-byte file", rd.n, rd.indexOff, size)
	}
	if !o.LoadIndex {
		return rd, nil
	}
	tail, err := binio.ReadAt(r, int64(rd.indexOff), int(rd.n*entrySize+trailerSize))
	if err != nil {
		return nil, readErr("index", err)
	}
	idx, tr := tail[:rd.n*entrySize], tail[rd.n*entrySize:]
	if string(tr[4:]) != Magic {
		return nil, corruptf("bad trailer magic")
	}
	if got, want := binio.CRCUpdate(binio.CRC(hdr), idx), binary.LittleEndian.Uint32(tr); got != want {
		return nil, corruptf("index checksum %08x, want %08x", got, want)
	}
	next := uint64(headerSize)
	for i := uint64(0); i < rd.n; i++ {
		start, l := entry(idx[i*entrySize:])
		if start != next || l < minBitmap {
			return nil, corruptf("index entry %d (start %d, len %d) does not follow the previous bitmap at %d", i, start, l, next)
		}
		next = start + l + crcSize
	}
	if next != rd.indexOff {
		return nil, corruptf("bitmaps end at %d, index_offset is %d", next, rd.indexOff)
	}
	rd.index = idx
	return rd, nil
}

func entry(b []byte) (start, length uint64) {
	return binary.LittleEndian.Uint64(b), uint64(binary.LittleEndian.Uint32(b[8:]))
}

// Len is N, the number of domains.
func (r *Reader) Len() uint64 { return r.n }

// Get returns the datasets of domainID. The bitmap is the caller's to
// modify.
func (r *Reader) Get(domainID uint64) (*roaring.Bitmap, error) {
	b, err := r.GetBytes(domainID)
	if err != nil {
		return nil, err
	}
	bm := roaring.New()
	// ReadFrom over a bytes.Reader copies containers out of b, so the
	// bitmap owns its memory; Validate rejects structurally bad containers
	// that a CRC collision or a buggy writer could let through.
	n, err := bm.ReadFrom(bytes.NewReader(b))
	if err != nil {
		return nil, corruptf("bitmap of domain %d: %v", domainID, err)
	}
	if n != int64(len(b)) {
		return nil, corruptf("bitmap of domain %d: %d of %d bytes decoded", domainID, n, len(b))
	}
	if err := bm.Validate(); err != nil {
		return nil, corruptf("bitmap of domain %d: %v", domainID, err)
	}
	return bm, nil
}

// GetBytes returns the CRC-checked portable Roaring bytes of domainID, for
// callers that cache or forward them undecoded.
func (r *Reader) GetBytes(domainID uint64) ([]byte, error) {
	if domainID >= r.n {
		return nil, fmt.Errorf("%w: %d >= %d", ErrOutOfRange, domainID, r.n)
	}
	var e []byte
	if r.index != nil {
		e = r.index[domainID*entrySize:]
	} else {
		var err error
		if e, err = binio.ReadAt(r.r, int64(r.indexOff+domainID*entrySize), entrySize); err != nil {
			return nil, readErr(fmt.Sprintf("index entry %d", domainID), err)
		}
	}
	start, l := entry(e)
	if start < headerSize || l < minBitmap || start > r.indexOff || r.indexOff-start < l+crcSize {
		return nil, corruptf("index entry %d (start %d, len %d) is outside the bitmaps", domainID, start, l)
	}
	b, err := binio.ReadAt(r.r, int64(start), int(l+crcSize))
	if err != nil {
		return nil, readErr(fmt.Sprintf("bitmap of domain %d", domainID), err)
	}
	if got, want := binio.CRC(b[:l]), binary.LittleEndian.Uint32(b[l:]); got != want {
		return nil, corruptf("bitmap of domain %d: checksum %08x, want %08x", domainID, got, want)
	}
	return b[:l], nil
}

// Verify checks the whole file: the index CRC, R1-R3 and every bitmap's
// CRC and decoding. It reads the file once; use it in offline checks, not
// on the serving path.
func (r *Reader) Verify() error {
	size := int64(r.indexOff + r.n*entrySize + trailerSize)
	full, err := OpenWith(r.r, size, Options{LoadIndex: true})
	if err != nil {
		return err
	}
	for id := uint64(0); id < r.n; id++ {
		if _, err := full.Get(id); err != nil {
			return err
		}
	}
	return nil
}
