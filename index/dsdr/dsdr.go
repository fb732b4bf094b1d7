// Package dsdr owns dataset_to_domains.roar, an index version's membership
// (since 2026-11-28 its only one; older versions also have index/dtdr's
// domain_to_datasets.roar, its transpose): for each dataset_id, the Roaring
// bitmap of the domain_ids (positions in that version's dictionary) whose
// URLs the dataset holds. It answers "every domain of a dataset" and set
// operations between datasets with one read and one Roaring operation,
// where dtdr would need a read of every domain's bitmap. The layout is
// specified in docs/format/dsdr.md.
//
// Invariants of a file, all little-endian:
//
//	S1. Index entries are strictly increasing by dataset_id, one per dataset
//	    of the version's registry; a dataset with no domain has the
//	    serialization of an empty bitmap, never a missing entry.
//	S2. Bitmaps are contiguous in entry order from byte 32; each is the
//	    portable Roaring serialization followed by its CRC-32C, and the
//	    entry's bitmap_len counts the Roaring bytes only.
//	S3. index_offset is the end of the last bitmap's CRC, and the file ends
//	    8 bytes after the index: a CRC-32C of header and index, then "DSDR".
//	S4. Every domain_id in a bitmap is below N, the dictionary's Len.
//	S5. Domain d is in dataset s's bitmap exactly when the version's
//	    postings hold (d, s), and, in a version that also has
//	    domain_to_datasets.roar, when s is in d's bitmap there (checked by
//	    dhsi verify, which reads them all).
//
// Open reads the header and the index (16 bytes a dataset) and checks them
// whole; Get then costs one ReadAt, checked against the bitmap's CRC, so a
// torn or misdirected read is an error, never a wrong answer.
//
// A *Reader is immutable and safe for concurrent use.
package dsdr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// Format constants; see docs/format/dsdr.md.
const (
	Magic       = "DSDR"
	Version     = 1
	headerSize  = 32 // magic, version u32, N u64, D u32, reserved u32, index_offset u64
	entrySize   = 16 // dataset_id u32, bitmap_len u32, bitmap_start u64
	crcSize     = 4
	trailerSize = 8 // CRC-32C of header and index, then Magic
	minBitmap   = 8 // an empty bitmap serializes to 8 bytes
	// MaxDomains bounds N: domain ids are Roaring's uint32 values.
	MaxDomains = 1 << 32
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrCorrupt marks bytes that break S1-S4 or fail a checksum.
	ErrCorrupt = errors.New("dsdr: corrupt dataset→domains file")
	// ErrVersion marks a version this reader does not know.
	ErrVersion = errors.New("dsdr: unsupported version")
	// ErrInput marks writer misuse: dataset ids out of order, domain ids
	// beyond N, a membership naming a dataset the caller did not list.
	ErrInput = errors.New("dsdr: invalid input")
)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func readErr(what string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return corruptf("read %s: truncated", what)
	}
	return fmt.Errorf("dsdr: read %s: %w", what, err)
}

// Writer writes a dataset→domains file for a known number of domains.
type Writer struct {
	sink    *binio.Sink
	n       uint64
	count   uint32 // entries written
	last    uint32 // dataset_id of the last entry
	index   []byte
	buf     bytes.Buffer
	err     error
	started bool
}

// NewWriter starts a file whose bitmaps hold domain ids below nDomains (the
// dictionary's Len). If w is an io.WriterAt (an *os.File is) bitmaps
// stream to it and the header is patched at Close; otherwise the file is
// built in memory.
func NewWriter(w io.Writer, nDomains uint64) *Writer {
	wr := &Writer{sink: binio.NewSink(w), n: nDomains}
	if nDomains > MaxDomains {
		wr.err = fmt.Errorf("%w: %d domains, more than %d", ErrInput, nDomains, uint64(MaxDomains))
		return wr
	}
	var hdr [headerSize]byte // placeholder; Close writes the real one
	_, wr.err = wr.sink.Write(hdr[:])
	return wr
}

// Add writes the domains of datasetID. Dataset ids must strictly increase
// (S1); a nil bitmap is empty. bm is not modified; callers wanting run
// containers call bm.RunOptimize first.
func (w *Writer) Add(datasetID uint32, bm *roaring.Bitmap) error {
	if w.err != nil {
		return w.err
	}
	if w.started && datasetID <= w.last {
		return fmt.Errorf("%w: dataset id %d after %d", ErrInput, datasetID, w.last)
	}
	if w.count == 1<<32-1 {
		return fmt.Errorf("%w: too many datasets", ErrInput)
	}
	if bm == nil {
		bm = roaring.New()
	}
	if !bm.IsEmpty() && uint64(bm.Maximum()) >= w.n {
		return fmt.Errorf("%w: dataset %d holds domain id %d, the dictionary has %d", ErrInput, datasetID, bm.Maximum(), w.n)
	}
	w.buf.Reset()
	if _, err := bm.WriteTo(&w.buf); err != nil {
		w.err = fmt.Errorf("dsdr: serialize bitmap of dataset %d: %w", datasetID, err)
		return w.err
	}
	b := w.buf.Bytes()
	if uint64(len(b)) > 1<<32-1 {
		w.err = fmt.Errorf("%w: bitmap of dataset %d is %d bytes", ErrInput, datasetID, len(b))
		return w.err
	}
	w.index = binary.LittleEndian.AppendUint32(w.index, datasetID)
	w.index = binary.LittleEndian.AppendUint32(w.index, uint32(len(b)))
	w.index = binary.LittleEndian.AppendUint64(w.index, uint64(w.sink.Offset()))
	if _, err := w.sink.Write(b); err != nil {
		w.err = fmt.Errorf("dsdr: write bitmap of dataset %d: %w", datasetID, err)
		return w.err
	}
	if _, err := w.sink.Write(binary.LittleEndian.AppendUint32(nil, binio.CRC(b))); err != nil {
		w.err = fmt.Errorf("dsdr: write bitmap of dataset %d: %w", datasetID, err)
		return w.err
	}
	w.started, w.last = true, datasetID
	w.count++
	return nil
}

// Close writes the index and trailer and patches the header. It does not
// close the destination.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	var hdr [headerSize]byte
	copy(hdr[:], Magic)
	binary.LittleEndian.PutUint32(hdr[4:], Version)
	binary.LittleEndian.PutUint64(hdr[8:], w.n)
	binary.LittleEndian.PutUint32(hdr[16:], w.count)
	binary.LittleEndian.PutUint64(hdr[24:], uint64(w.sink.Offset()))
	var tr [trailerSize]byte
	binary.LittleEndian.PutUint32(tr[:], binio.CRCUpdate(binio.CRC(hdr[:]), w.index))
	copy(tr[4:], Magic)
	w.sink.Write(w.index)
	if _, err := w.sink.Write(tr[:]); err != nil {
		w.err = fmt.Errorf("dsdr: write index: %w", err)
		return w.err
	}
	if err := w.sink.Finish(hdr[:]); err != nil {
		w.err = fmt.Errorf("dsdr: finish: %w", err)
		return w.err
	}
	w.err = errors.New("dsdr: writer is closed")
	return nil
}

// Transposer turns a membership given domain by domain (dtdr's direction)
// into per-dataset bitmaps of domain ids, as an ingest or a reader of a
// version without dataset_to_domains.roar has it.
type Transposer struct {
	n    uint64
	next uint64
	sets map[uint32]*roaring.Bitmap
}

// NewTransposer starts a transpose over nDomains domains.
func NewTransposer(nDomains uint64) *Transposer {
	return &Transposer{n: nDomains, sets: map[uint32]*roaring.Bitmap{}}
}

// Add records that domainID is in each dataset of datasets (nil: none).
// Domain ids must strictly increase, so every bitmap grows at its end.
func (t *Transposer) Add(domainID uint64, datasets *roaring.Bitmap) error {
	if domainID < t.next || domainID >= t.n || domainID >= MaxDomains {
		return fmt.Errorf("%w: domain id %d: want %d <= id < %d", ErrInput, domainID, t.next, t.n)
	}
	t.next = domainID + 1
	if datasets == nil {
		return nil
	}
	datasets.Iterate(func(ds uint32) bool {
		t.bitmapOf(ds).Add(uint32(domainID))
		return true
	})
	return nil
}

// bitmapOf returns datasetID's bitmap, made on first use.
func (t *Transposer) bitmapOf(datasetID uint32) *roaring.Bitmap {
	bm := t.sets[datasetID]
	if bm == nil {
		bm = roaring.New()
		t.sets[datasetID] = bm
	}
	return bm
}

// AddPair records that domainID is in datasetID, in any order: for a
// membership given pair by pair (a version's postings), not domain by
// domain. It may be mixed with Add.
func (t *Transposer) AddPair(domainID uint64, datasetID uint32) error {
	if domainID >= t.n || domainID >= MaxDomains {
		return fmt.Errorf("%w: domain id %d: want id < %d", ErrInput, domainID, t.n)
	}
	t.bitmapOf(datasetID).Add(uint32(domainID))
	return nil
}

// Domains returns the domains of datasetID gathered so far (nil: none).
// The bitmap is the transposer's.
func (t *Transposer) Domains(datasetID uint32) *roaring.Bitmap { return t.sets[datasetID] }

// Write writes the file: one entry per id of datasetIDs (the version's
// registry, in any order), an empty bitmap for a dataset without domains
// (S1). A membership naming a dataset not in datasetIDs is ErrInput: the
// registry and the membership disagree. Bitmaps are run-optimized.
func (t *Transposer) Write(w io.Writer, datasetIDs []uint32) error {
	ids := slices.Clone(datasetIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for ds := range t.sets {
		if _, ok := slices.BinarySearch(ids, ds); !ok {
			return fmt.Errorf("%w: domains are in dataset %d, which the registry lacks", ErrInput, ds)
		}
	}
	wr := NewWriter(w, t.n)
	for _, ds := range ids {
		bm := t.sets[ds]
		if bm != nil {
			bm.RunOptimize()
		}
		if err := wr.Add(ds, bm); err != nil {
			return err
		}
	}
	return wr.Close()
}

// Reader reads a dataset→domains file.
type Reader struct {
	r        io.ReaderAt
	n        uint64
	d        uint32
	indexOff uint64
	index    []byte
}

// Open opens the file in r of size bytes with two ReadAt calls (the header,
// then index and trailer) and checks the index whole: its CRC, S1-S3.
func Open(r io.ReaderAt, size int64) (*Reader, error) {
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
	rd := &Reader{r: r, n: binary.LittleEndian.Uint64(hdr[8:]), d: binary.LittleEndian.Uint32(hdr[16:]), indexOff: binary.LittleEndian.Uint64(hdr[24:])}
	if binary.LittleEndian.Uint32(hdr[20:]) != 0 {
		return nil, corruptf("reserved header field is not zero")
	}
	d := uint64(rd.d)
	if rd.n > MaxDomains || rd.indexOff < headerSize+d*(minBitmap+crcSize) || rd.indexOff > uint64(size) ||
		rd.indexOff+d*entrySize+trailerSize != uint64(size) {
		return nil, corruptf("N=%d, D=%d and index_offset=%d do not fit a %d-byte file", rd.n, rd.d, rd.indexOff, size)
	}
	tail, err := binio.ReadAt(r, int64(rd.indexOff), int(d*entrySize+trailerSize))
	if err != nil {
		return nil, readErr("index", err)
	}
	idx, tr := tail[:d*entrySize], tail[d*entrySize:]
	if string(tr[4:]) != Magic {
		return nil, corruptf("bad trailer magic")
	}
	if got, want := binio.CRCUpdate(binio.CRC(hdr), idx), binary.LittleEndian.Uint32(tr); got != want {
		return nil, corruptf("index checksum %08x, want %08x", got, want)
	}
	next := uint64(headerSize)
	for i := uint64(0); i < d; i++ {
		id, start, l := entry(idx[i*entrySize:])
		if i > 0 {
			if prev, _, _ := entry(idx[(i-1)*entrySize:]); id <= prev {
				return nil, corruptf("index entry %d (dataset %d) does not follow dataset %d", i, id, prev)
			}
		}
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

func entry(b []byte) (datasetID uint32, start, length uint64) {
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint64(b[8:]), uint64(binary.LittleEndian.Uint32(b[4:]))
}

// Len is N, the number of domains of the version.
func (r *Reader) Len() uint64 { return r.n }

// Datasets lists the dataset ids the file has an entry for, increasing.
func (r *Reader) Datasets() []uint32 {
	out := make([]uint32, r.d)
	for i := range out {
		out[i], _, _ = entry(r.index[i*entrySize:])
	}
	return out
}

// find returns the index entry of datasetID.
func (r *Reader) find(datasetID uint32) (start, length uint64, ok bool) {
	i := sort.Search(int(r.d), func(i int) bool { id, _, _ := entry(r.index[i*entrySize:]); return id >= datasetID })
	if i == int(r.d) {
		return 0, 0, false
	}
	id, start, length := entry(r.index[i*entrySize:])
	return start, length, id == datasetID
}

// Get returns the domains of datasetID; ok is false when the file has no
// entry for it. The bitmap is the caller's to modify.
func (r *Reader) Get(datasetID uint32) (bm *roaring.Bitmap, ok bool, err error) {
	b, ok, err := r.GetBytes(datasetID)
	if err != nil || !ok {
		return nil, ok, err
	}
	bm = roaring.New()
	// ReadFrom over a bytes.Reader copies containers out of b, so the
	// bitmap owns its memory; Validate rejects structurally bad containers
	// that a CRC collision or a buggy writer could let through.
	n, err := bm.ReadFrom(bytes.NewReader(b))
	if err != nil {
		return nil, false, corruptf("bitmap of dataset %d: %v", datasetID, err)
	}
	if n != int64(len(b)) {
		return nil, false, corruptf("bitmap of dataset %d: %d of %d bytes decoded", datasetID, n, len(b))
	}
	if err := bm.Validate(); err != nil {
		return nil, false, corruptf("bitmap of dataset %d: %v", datasetID, err)
	}
	if !bm.IsEmpty() && uint64(bm.Maximum()) >= r.n {
		return nil, false, corruptf("bitmap of dataset %d holds domain id %d, N is %d", datasetID, bm.Maximum(), r.n)
	}
	return bm, true, nil
}

// GetBytes returns the CRC-checked portable Roaring bytes of datasetID,
// for callers that cache or forward them undecoded; ok is false when the
// file has no entry for it.
func (r *Reader) GetBytes(datasetID uint32) (b []byte, ok bool, err error) {
	start, l, ok := r.find(datasetID)
	if !ok {
		return nil, false, nil
	}
	b, err = binio.ReadAt(r.r, int64(start), int(l+crcSize))
	if err != nil {
		return nil, false, readErr(fmt.Sprintf("bitmap of dataset %d", datasetID), err)
	}
	if got, want := binio.CRC(b[:l]), binary.LittleEndian.Uint32(b[l:]); got != want {
		return nil, false, corruptf("bitmap of dataset %d: checksum %08x, want %08x", datasetID, got, want)
	}
	return b[:l], true, nil
}

// Verify checks every bitmap: its CRC, its decoding and S4. Open has
// checked the rest. It reads the file once; use it in offline checks.
func (r *Reader) Verify() error {
	for _, ds := range r.Datasets() {
		if _, _, err := r.Get(ds); err != nil {
			return err
		}
	}
	return nil
}

// Membership is the domain → datasets direction the file is the transpose
// of: a *dtdr.Reader satisfies it.
type Membership interface {
	Len() uint64
	Get(domainID uint64) (*roaring.Bitmap, error)
}

// Transpose writes the dataset→domains file of a membership file (S5), one
// entry per id of registry: the bytes an ingest writes for the same
// version, since both go through a Transposer. It reads every domain's
// bitmap once.
func Transpose(w io.Writer, m Membership, registry []uint32) error {
	t := NewTransposer(m.Len())
	for d := uint64(0); d < m.Len(); d++ {
		bm, err := m.Get(d)
		if err != nil {
			return err
		}
		if err := t.Add(d, bm); err != nil {
			return err
		}
	}
	return t.Write(w, registry)
}

// ByDomain is a file transposed back into the membership direction: each
// domain's datasets, in memory as one array of dataset ids ordered by
// domain (4 bytes a (domain, dataset) pair and 4 a domain). Since this
// file became the only membership file a version writes (docs/format/
// dtdr.md), an ingest building on a version reads the domains' datasets
// with it. A *ByDomain satisfies Membership, and Transpose of it writes
// the file it was read from.
type ByDomain struct {
	start    []uint32 // domain d's datasets are datasets[start[d]:start[d+1]]
	datasets []uint32 // increasing within a domain
}

// ByDomain reads every bitmap of the file (checked as Get checks them)
// and transposes them.
func (r *Reader) ByDomain() (*ByDomain, error) {
	ids := r.Datasets()
	sets := make([]*roaring.Bitmap, len(ids))
	start := make([]uint32, r.n+1)
	for i, ds := range ids {
		bm, _, err := r.Get(ds)
		if err != nil {
			return nil, err
		}
		sets[i] = bm
		bm.Iterate(func(d uint32) bool { start[d+1]++; return true })
	}
	var pairs uint64
	for d := uint64(1); d <= r.n; d++ {
		if pairs += uint64(start[d]); pairs > math.MaxUint32 {
			return nil, fmt.Errorf("%w: more than %d (domain, dataset) pairs to hold in memory", ErrInput, uint64(math.MaxUint32))
		}
		start[d] = uint32(pairs)
	}
	datasets := make([]uint32, start[r.n])
	next := slices.Clone(start[:r.n])
	for i, bm := range sets { // ids increase, so each domain's do too
		bm.Iterate(func(d uint32) bool { datasets[next[d]] = ids[i]; next[d]++; return true })
	}
	return &ByDomain{start: start, datasets: datasets}, nil
}

// Len is the number of domains.
func (b *ByDomain) Len() uint64 { return uint64(len(b.start) - 1) }

// Get returns domainID's datasets, a bitmap the caller may modify.
func (b *ByDomain) Get(domainID uint64) (*roaring.Bitmap, error) {
	if domainID >= b.Len() {
		return nil, fmt.Errorf("%w: domain id %d of %d", ErrInput, domainID, b.Len())
	}
	return roaring.BitmapOf(b.datasets[b.start[domainID]:b.start[domainID+1]]...), nil
}
