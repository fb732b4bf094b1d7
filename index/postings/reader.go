package postings

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"sort"
	"sync"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// Options tune Open.
type Options struct {
	// LoadIndex reads all idx entries on Open (12 bytes a domain; 20
	// before version 4) and checks P1, P2 and every block CRC, so lookups
	// read only the payload.
	LoadIndex bool
}

// Reader reads one shard.
type Reader struct {
	version  uint32 // 2 to 4 (Version)
	idx, dat io.ReaderAt
	n        uint64 // domains
	datSize  uint64
	stride   uint64
	entry    uint64    // bytes per idx entry (layoutOf)
	sparseN  uint64    // bytes per sparse entry (layoutOf)
	sparse   []byte    // one key+CRC(+first offset) per block
	entries  []byte    // with LoadIndex
	bufs     sync.Pool // *[]byte block buffers, so lookups do not allocate 3 KiB each
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
	case magicV3:
		version = 3
	case magicV2:
		version = 2
	default:
		if string(h[:3]) == "PDX" {
			return nil, fmt.Errorf("%w: magic %q (this reader knows %q, %q and %q; rebuild the index with this version's dhsi ingest)", ErrVersion, h[:4], magicV2, magicV3, Magic)
		}
		return nil, corruptf("bad magic %q", h[:4])
	}
	if v := le.Uint32(h[4:]); v != version {
		return nil, fmt.Errorf("%w: version %d under magic %q", ErrVersion, v, h[:4])
	}
	if got, want := binio.CRC(h[:36]), le.Uint32(h[36:]); got != want {
		return nil, corruptf("header checksum %08x, want %08x", got, want)
	}
	es, ss := layoutOf(version)
	r := &Reader{version: version, idx: idx, dat: dat, n: le.Uint64(h[8:]), datSize: le.Uint64(h[16:]), stride: uint64(le.Uint32(h[24:])), entry: uint64(es), sparseN: uint64(ss)}
	if le.Uint32(h[28:]) != 0 {
		return nil, corruptf("reserved header field is not zero")
	}
	if r.stride == 0 || r.stride > maxStride || r.n > maxEntries {
		return nil, corruptf("stride %d or count %d out of range", r.stride, r.n)
	}
	blocks := (r.n + r.stride - 1) / r.stride
	if uint64(idxSize) != headerSize+r.n*r.entry+blocks*r.sparseN {
		return nil, corruptf("idx is %d bytes, header implies %d", idxSize, headerSize+r.n*r.entry+blocks*r.sparseN)
	}
	if datSize < 0 || uint64(datSize) != r.datSize || r.datSize < r.n*minPayload || version >= 4 && r.datSize > maxDat {
		return nil, corruptf("dat is %d bytes, idx header says %d for %d domains", datSize, r.datSize, r.n)
	}
	sparseOff := int64(headerSize + r.n*r.entry)
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
		if entryKey(r.sparse[(b-1)*r.sparseN:]) >= entryKey(r.sparse[b*r.sparseN:]) {
			return nil, corruptf("sparse key %d is not after key %d", b, b-1)
		}
		if version >= 4 && r.blockStart(b-1) > r.blockStart(b) {
			return nil, corruptf("sparse block %d starts in dat before block %d", b, b-1)
		}
	}
	if version >= 4 && blocks > 0 && r.blockStart(0) != 0 {
		return nil, corruptf("the first payload is at %d, not 0", r.blockStart(0))
	}
	if o.LoadIndex {
		entries := tail[:sparseOff-readFrom]
		next := uint64(0)
		for b := uint64(0); b < blocks; b++ {
			blk := entries[b*r.stride*r.entry : min(r.n, (b+1)*r.stride)*r.entry]
			if err := r.checkBlock(b, blk, true); err != nil {
				return nil, err
			}
			for i := 0; uint64(i)*r.entry < uint64(len(blk)); i++ {
				e, err := r.entryAt(b, blk, i)
				if err != nil {
					return nil, err
				}
				if e.PayloadOffset != next {
					return nil, corruptf("block %d entry %d payload at %d, previous ended at %d", b, i, e.PayloadOffset, next)
				}
				next += uint64(e.PayloadLen)
			}
		}
		if next != r.datSize {
			return nil, corruptf("payloads end at %d, dat_size is %d", next, r.datSize)
		}
		r.entries = entries
	}
	return r, nil
}

// blockStart is, in version 4, where block b's first payload starts in
// dat (its sparse entry), or dat_size past the last block.
func (r *Reader) blockStart(b uint64) uint64 {
	if b*r.sparseN >= uint64(len(r.sparse)) {
		return r.datSize
	}
	return uint64(binary.LittleEndian.Uint32(r.sparse[b*r.sparseN+12:]))
}

// entryAt decodes entry i of block b (blk). A version-4 entry's payload
// ends where the next entry's starts, or the next block's.
func (r *Reader) entryAt(b uint64, blk []byte, i int) (idxEntry, error) {
	at := uint64(i) * r.entry
	if r.version < 4 {
		return getEntryV3(blk[at:]), nil
	}
	le := binary.LittleEndian
	off := uint64(le.Uint32(blk[at+8:]))
	end := r.blockStart(b + 1)
	if at+r.entry < uint64(len(blk)) {
		end = uint64(le.Uint32(blk[at+r.entry+8:]))
	}
	if end < off || end-off > 1<<32-1 {
		return idxEntry{}, corruptf("idx block %d entry %d: payload from %d to %d", b, i, off, end)
	}
	return idxEntry{DomainID: le.Uint64(blk[at:]), PayloadOffset: off, PayloadLen: uint32(end - off)}, nil
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
	s := r.sparse[b*r.sparseN:]
	if got, want := binio.CRC(blk), binary.LittleEndian.Uint32(s[8:]); got != want {
		return corruptf("idx block %d checksum %08x, want %08x", b, got, want)
	}
	if entryKey(blk) != entryKey(s) {
		return corruptf("idx block %d starts at a key other than its sparse key", b)
	}
	if r.version >= 4 && uint64(binary.LittleEndian.Uint32(blk[8:])) != r.blockStart(b) {
		return corruptf("idx block %d starts in dat elsewhere than its sparse entry says", b)
	}
	if !full {
		return nil
	}
	d := entryKey(blk)
	for i := 0; uint64(i)*r.entry < uint64(len(blk)); i++ {
		e, err := r.entryAt(b, blk, i)
		if err != nil {
			return err
		}
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
		return fn(r.entries[lo*r.entry : hi*r.entry])
	}
	bp, _ := r.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer r.bufs.Put(bp)
	if n := int((hi - lo) * r.entry); cap(*bp) < n {
		*bp = make([]byte, n)
	} else {
		*bp = (*bp)[:n]
	}
	if err := binio.ReadFull(r.idx, int64(headerSize+lo*r.entry), *bp); err != nil {
		return readErr(fmt.Sprintf("idx block %d", b), err)
	}
	if err := r.checkBlock(b, *bp, full); err != nil {
		return err
	}
	return fn(*bp)
}

// find returns domainID's idx entry: one ReadAt of one idx block
// (stride entries), none with LoadIndex.
func (r *Reader) find(domainID uint64) (idxEntry, bool, error) {
	blocks := len(r.sparse) / int(r.sparseN)
	b := sort.Search(blocks, func(i int) bool { return entryKey(r.sparse[uint64(i)*r.sparseN:]) > domainID }) - 1
	if b < 0 {
		return idxEntry{}, false, nil
	}
	var e idxEntry
	found := false
	err := r.withBlock(uint64(b), false, func(blk []byte) error {
		es := int(r.entry)
		i := sort.Search(len(blk)/es, func(i int) bool { return entryKey(blk[i*es:]) >= domainID })
		if i*es < len(blk) && entryKey(blk[i*es:]) == domainID {
			var err error
			e, err = r.entryAt(uint64(b), blk, i)
			found = err == nil
			return err
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
func (r *Reader) payload(e idxEntry) ([]Entry, error) { return r.payloadOf(e, allEntries) }

// checkPayloadBounds checks that e's payload is long enough to be one and
// lies inside dat.
func (r *Reader) checkPayloadBounds(e idxEntry) error {
	if e.PayloadLen < minPayload || e.PayloadOffset > r.datSize || r.datSize-e.PayloadOffset < uint64(e.PayloadLen) {
		return corruptf("payload of domain %d at %d+%d is outside dat", e.DomainID, e.PayloadOffset, e.PayloadLen)
	}
	return nil
}

// payloadOf reads e's payload and decodes the entry of dataset only (all of
// them when only < 0).
func (r *Reader) payloadOf(e idxEntry, only int64) ([]Entry, error) {
	if err := r.checkPayloadBounds(e); err != nil {
		return nil, err
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

// DatasetCountsOf is DatasetsOf without the spans: the datasets of
// domainID and their URL counts, checked as fully (P3-P5) but with no span
// kept, so Payload refuses its entries. domain_datasets needs no more, and
// allocating every dataset's spans was a fifth of its cost.
func (r *Reader) DatasetCountsOf(domainID uint64) ([]Entry, error) {
	e, ok, err := r.find(domainID)
	if err != nil || !ok {
		return nil, err
	}
	return r.payloadOf(e, countsNoSpan)
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
		for b := uint64(0); b < uint64(len(r.sparse))/r.sparseN; b++ {
			err := r.withBlock(b, true, func(blk []byte) error {
				for i := 0; uint64(i)*r.entry < uint64(len(blk)); i++ {
					e, err := r.entryAt(b, blk, i)
					if err != nil {
						return err
					}
					es, err := r.payload(e)
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

// domainCursor walks a shard's domains in order for Merge: each domain's
// payload as stored, its block checked as All checks it and the payload
// against its CRC (P5), but not decoded.
type domainCursor struct {
	r   *Reader
	b   uint64 // the block blk holds
	blk []byte // block b's entries, nil before the first
	i   int    // the next entry of blk
	// dat: block b's payloads, read at once (version 4, whose sparse
	// entries say where a block's payloads start), from datAt
	dat   []byte
	datAt uint64
	id    uint64 // the current domain, when ok
	// payload is the current domain's, valid until the next call
	payload []byte
	ok      bool
}

// next moves to the next domain; ok is false past the last.
func (c *domainCursor) next() error {
	r := c.r
	blocks := uint64(len(r.sparse)) / r.sparseN
	for c.blk == nil || uint64(c.i)*r.entry >= uint64(len(c.blk)) {
		if c.blk != nil {
			c.b++
		}
		if c.b >= blocks {
			c.ok = false
			return nil
		}
		err := r.withBlock(c.b, true, func(blk []byte) error {
			c.blk = append(c.blk[:0], blk...) // withBlock's buffer is pooled
			return nil
		})
		if err != nil {
			return err
		}
		c.i = 0
		c.dat = c.dat[:0]
		if r.version >= 4 {
			from, to := r.blockStart(c.b), r.blockStart(c.b+1)
			if to < from || to > r.datSize {
				return corruptf("idx block %d: payloads from %d to %d", c.b, from, to)
			}
			c.dat = slices.Grow(c.dat, int(to-from))[:to-from]
			if err := binio.ReadFull(r.dat, int64(from), c.dat); err != nil {
				return readErr(fmt.Sprintf("payloads of idx block %d", c.b), err)
			}
			c.datAt = from
		}
	}
	e, err := r.entryAt(c.b, c.blk, c.i)
	if err != nil {
		return err
	}
	c.i++
	if err := r.checkPayloadBounds(e); err != nil {
		return err
	}
	var p []byte
	if r.version >= 4 {
		// entryAt bounds the payload by the next entry or the next block
		// start, so it lies in the block's
		if e.PayloadOffset < c.datAt || e.PayloadOffset+uint64(e.PayloadLen) > c.datAt+uint64(len(c.dat)) {
			return corruptf("payload of domain %d at %d+%d is outside its block's", e.DomainID, e.PayloadOffset, e.PayloadLen)
		}
		p = c.dat[e.PayloadOffset-c.datAt:][:e.PayloadLen]
	} else if p, err = binio.ReadAt(r.dat, int64(e.PayloadOffset), int(e.PayloadLen)); err != nil {
		return readErr(fmt.Sprintf("payload of domain %d", e.DomainID), err)
	}
	if err := checkPayloadCRC(p, e.DomainID); err != nil {
		return fmt.Errorf("payload of domain %d: %w", e.DomainID, err)
	}
	c.id, c.payload, c.ok = e.DomainID, p, true
	return nil
}

// Verify checks the whole shard: every block, P1 across blocks, P2, and
// every payload (P1, P3-P5). It reads both files once; it is for offline
// checks, not the serving path.
func (r *Reader) Verify() error {
	next := uint64(0)
	var prev uint64
	for b := uint64(0); b < uint64(len(r.sparse))/r.sparseN; b++ {
		err := r.withBlock(b, true, func(blk []byte) error {
			for i := 0; uint64(i)*r.entry < uint64(len(blk)); i++ {
				e, err := r.entryAt(b, blk, i)
				if err != nil {
					return err
				}
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
