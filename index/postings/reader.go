package postings

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"sort"
	"sync"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// Options tune Open.
type Options struct {
	// LoadIndex reads all idx entries on Open (20 bytes a domain) and checks
	// P1, P2 and every block CRC, so lookups read only the payload.
	LoadIndex bool
}

// Reader reads one shard.
type Reader struct {
	version  uint32 // 2 or 3 (Version)
	idx, dat io.ReaderAt
	n        uint64 // domains
	datSize  uint64
	stride   uint64
	sparse   []byte    // one 12-byte key+CRC per block
	entries  []byte    // with LoadIndex
	bufs     sync.Pool // *[]byte block buffers, so lookups do not allocate 5 KiB each
}

func readErr(what string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return corruptf("read %s: truncated", what)
	}
	return fmt.Errorf("postings: read %s: %w", what, err)
}

// Open opens a shard: two ReadAt calls on idx (header, sparse index), none
// on dat.
func Open(idx io.ReaderAt, idxSize int64, dat io.ReaderAt, datSize int64) (*Reader, error) {
	return OpenWith(idx, idxSize, dat, datSize, Options{})
}

// OpenWith is Open with options.
func OpenWith(idx io.ReaderAt, idxSize int64, dat io.ReaderAt, datSize int64, o Options) (*Reader, error) {
	if idxSize < headerSize {
		return nil, corruptf("idx is %d bytes, smaller than its header", idxSize)
	}
	h, err := binio.ReadAt(idx, 0, headerSize)
	if err != nil {
		return nil, readErr("idx header", err)
	}
	le := binary.LittleEndian
	var version uint32
	switch string(h[:4]) {
	case Magic:
		version = Version
	case magicV2:
		version = 2
	default:
		if string(h[:3]) == "PDX" {
			return nil, fmt.Errorf("%w: magic %q (this reader knows %q and %q; rebuild the index with this version's dhsi ingest)", ErrVersion, h[:4], magicV2, Magic)
		}
		return nil, corruptf("bad magic %q", h[:4])
	}
	if v := le.Uint32(h[4:]); v != version {
		return nil, fmt.Errorf("%w: version %d under magic %q", ErrVersion, v, h[:4])
	}
	if got, want := binio.CRC(h[:36]), le.Uint32(h[36:]); got != want {
		return nil, corruptf("header checksum %08x, want %08x", got, want)
	}
	r := &Reader{version: version, idx: idx, dat: dat, n: le.Uint64(h[8:]), datSize: le.Uint64(h[16:]), stride: uint64(le.Uint32(h[24:]))}
	if le.Uint32(h[28:]) != 0 {
		return nil, corruptf("reserved header field is not zero")
	}
	if r.stride == 0 || r.stride > maxStride || r.n > maxEntries {
		return nil, corruptf("stride %d or count %d out of range", r.stride, r.n)
	}
	blocks := (r.n + r.stride - 1) / r.stride
	if uint64(idxSize) != headerSize+r.n*entrySize+blocks*sparseSize {
		return nil, corruptf("idx is %d bytes, header implies %d", idxSize, headerSize+r.n*entrySize+blocks*sparseSize)
	}
	if datSize < 0 || uint64(datSize) != r.datSize || r.datSize < r.n*minPayload {
		return nil, corruptf("dat is %d bytes, idx header says %d for %d domains", datSize, r.datSize, r.n)
	}
	sparseOff := int64(headerSize + r.n*entrySize)
	readFrom := sparseOff
	if o.LoadIndex {
		readFrom = headerSize // entries and sparse index are contiguous
	}
	tail, err := binio.ReadAt(idx, readFrom, int(idxSize-readFrom))
	if err != nil {
		return nil, readErr("idx", err)
	}
	r.sparse = tail[sparseOff-readFrom:]
	if got, want := binio.CRC(r.sparse), le.Uint32(h[32:]); got != want {
		return nil, corruptf("sparse index checksum %08x, want %08x", got, want)
	}
	for b := uint64(1); b < blocks; b++ {
		if entryKey(r.sparse[(b-1)*sparseSize:]) >= entryKey(r.sparse[b*sparseSize:]) {
			return nil, corruptf("sparse key %d is not after key %d", b, b-1)
		}
	}
	if o.LoadIndex {
		entries := tail[:sparseOff-readFrom]
		for b := uint64(0); b < blocks; b++ {
			if err := r.checkBlock(b, entries[b*r.stride*entrySize:min(r.n, (b+1)*r.stride)*entrySize], true); err != nil {
				return nil, err
			}
		}
		next := uint64(0)
		for i := uint64(0); i < r.n; i++ {
			e := getEntry(entries[i*entrySize:])
			if e.PayloadOffset != next {
				return nil, corruptf("entry %d payload at %d, previous ended at %d", i, e.PayloadOffset, next)
			}
			next += uint64(e.PayloadLen)
		}
		if next != r.datSize {
			return nil, corruptf("payloads end at %d, dat_size is %d", next, r.datSize)
		}
		r.entries = entries
	}
	return r, nil
}

// FormatVersion is the shard's format version: 2 (spans without first
// rows) or Version.
func (r *Reader) FormatVersion() uint32 { return r.version }

// Len is the number of domains in the shard.
func (r *Reader) Len() uint64 { return r.n }

// checkBlock verifies block b's CRC and that it starts at its sparse key.
// With full it also checks that keys increase and that every entry points
// inside dat; lookups skip that because a block whose CRC matches is the
// block a writer enforcing P1 wrote, and payload() re-checks the one entry
// it uses. LoadIndex and Verify check everything.
func (r *Reader) checkBlock(b uint64, blk []byte, full bool) error {
	s := r.sparse[b*sparseSize:]
	if got, want := binio.CRC(blk), binary.LittleEndian.Uint32(s[8:]); got != want {
		return corruptf("idx block %d checksum %08x, want %08x", b, got, want)
	}
	if entryKey(blk) != entryKey(s) {
		return corruptf("idx block %d starts at a key other than its sparse key", b)
	}
	if !full {
		return nil
	}
	d := entryKey(blk)
	for i := 0; i < len(blk)/entrySize; i++ {
		e := getEntry(blk[i*entrySize:])
		if i > 0 && d >= e.DomainID {
			return corruptf("idx block %d entry %d is out of order", b, i)
		}
		d = e.DomainID
		if e.PayloadLen < minPayload || e.PayloadOffset > r.datSize || r.datSize-e.PayloadOffset < uint64(e.PayloadLen) {
			return corruptf("idx block %d entry %d points outside dat", b, i)
		}
	}
	return nil
}

// withBlock calls fn with the entries of block b: the loaded index, or one
// ReadAt into a pooled buffer that fn must not retain.
func (r *Reader) withBlock(b uint64, full bool, fn func(blk []byte) error) error {
	lo, hi := b*r.stride, min(r.n, (b+1)*r.stride)
	if r.entries != nil {
		return fn(r.entries[lo*entrySize : hi*entrySize])
	}
	bp, _ := r.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer r.bufs.Put(bp)
	if n := int((hi - lo) * entrySize); cap(*bp) < n {
		*bp = make([]byte, n)
	} else {
		*bp = (*bp)[:n]
	}
	if err := binio.ReadFull(r.idx, int64(headerSize+lo*entrySize), *bp); err != nil {
		return readErr(fmt.Sprintf("idx block %d", b), err)
	}
	if err := r.checkBlock(b, *bp, full); err != nil {
		return err
	}
	return fn(*bp)
}

// find returns domainID's idx entry: one ReadAt of one idx block
// (stride*20 bytes), none with LoadIndex.
func (r *Reader) find(domainID uint64) (idxEntry, bool, error) {
	blocks := len(r.sparse) / sparseSize
	b := sort.Search(blocks, func(i int) bool { return entryKey(r.sparse[i*sparseSize:]) > domainID }) - 1
	if b < 0 {
		return idxEntry{}, false, nil
	}
	var e idxEntry
	found := false
	err := r.withBlock(uint64(b), false, func(blk []byte) error {
		i := sort.Search(len(blk)/entrySize, func(i int) bool { return entryKey(blk[i*entrySize:]) >= domainID })
		if i*entrySize < len(blk) {
			e = getEntry(blk[i*entrySize:])
			found = e.DomainID == domainID
		}
		return nil
	})
	if err != nil || !found {
		return idxEntry{}, false, err
	}
	return e, true, nil
}

// payload reads and decodes e's payload with one ReadAt on dat, checking
// its CRC (which covers the domain, P5) and P1, P3, P4 within it.
func (r *Reader) payload(e idxEntry) ([]Entry, error) { return r.payloadOf(e, -1) }

// payloadOf reads e's payload and decodes the entry of dataset only (all of
// them when only < 0).
func (r *Reader) payloadOf(e idxEntry, only int64) ([]Entry, error) {
	if e.PayloadLen < minPayload || e.PayloadOffset > r.datSize || r.datSize-e.PayloadOffset < uint64(e.PayloadLen) {
		return nil, corruptf("payload of domain %d at %d+%d is outside dat", e.DomainID, e.PayloadOffset, e.PayloadLen)
	}
	p, err := binio.ReadAt(r.dat, int64(e.PayloadOffset), int(e.PayloadLen))
	if err != nil {
		return nil, readErr(fmt.Sprintf("payload of domain %d", e.DomainID), err)
	}
	out, err := decodePayloadOf(p, e.DomainID, r.version, only)
	if err != nil {
		return nil, fmt.Errorf("payload of domain %d: %w", e.DomainID, err)
	}
	return out, nil
}

// DatasetsOf returns the keys of domainID in dataset_id order (P1), with
// their URL counts and spans: one idx block read (none with LoadIndex) and
// one payload read.
func (r *Reader) DatasetsOf(domainID uint64) ([]Entry, error) {
	e, ok, err := r.find(domainID)
	if err != nil || !ok {
		return nil, err
	}
	return r.payload(e)
}

// Lookup finds the key (domainID, datasetID).
func (r *Reader) Lookup(domainID uint64, datasetID uint32) (Entry, bool, error) {
	e, ok, err := r.find(domainID)
	if err != nil || !ok {
		return Entry{}, false, err
	}
	es, err := r.payloadOf(e, int64(datasetID))
	if err != nil || len(es) == 0 {
		return Entry{}, false, err
	}
	return es[0], true, nil
}

// Payload returns the spans of an entry this reader returned (checked when
// its payload was read: P3-P5).
func (r *Reader) Payload(e Entry) (Spans, error) {
	if len(e.spans) == 0 {
		return nil, fmt.Errorf("%w: entry (%d, %d) was not returned by a reader", ErrInput, e.DomainID, e.DatasetID)
	}
	return e.spans, nil
}

// All yields every key in key order, one idx block and one payload per
// ReadAt. It stops at the first error, which it yields.
func (r *Reader) All() iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		stop := errors.New("stop")
		for b := uint64(0); b < uint64(len(r.sparse)/sparseSize); b++ {
			err := r.withBlock(b, true, func(blk []byte) error {
				for i := 0; i*entrySize < len(blk); i++ {
					es, err := r.payload(getEntry(blk[i*entrySize:]))
					if err != nil {
						return err
					}
					for _, e := range es {
						if !yield(e, nil) {
							return stop
						}
					}
				}
				return nil
			})
			if errors.Is(err, stop) {
				return
			}
			if err != nil {
				yield(Entry{}, err)
				return
			}
		}
	}
}

// Verify checks the whole shard: every block, P1 across blocks, P2, and
// every payload (P1, P3-P5). It reads both files once; it is for offline
// checks, not the serving path.
func (r *Reader) Verify() error {
	next := uint64(0)
	var prev uint64
	for b := uint64(0); b < uint64(len(r.sparse)/sparseSize); b++ {
		err := r.withBlock(b, true, func(blk []byte) error {
			for i := 0; i*entrySize < len(blk); i++ {
				e := getEntry(blk[i*entrySize:])
				if (b > 0 || i > 0) && prev >= e.DomainID {
					return corruptf("domain entry %d of block %d is out of order", i, b)
				}
				if e.PayloadOffset != next {
					return corruptf("domain %d payload at %d, previous ended at %d", e.DomainID, e.PayloadOffset, next)
				}
				if _, err := r.payload(e); err != nil {
					return err
				}
				next += uint64(e.PayloadLen)
				prev = e.DomainID
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if next != r.datSize {
		return corruptf("payloads end at %d, dat_size is %d", next, r.datSize)
	}
	return nil
}
