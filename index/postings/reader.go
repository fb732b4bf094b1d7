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
	// LoadIndex reads all idx entries on Open (32 bytes a key) and checks
	// P1, P2 and every block CRC, so Lookup and DatasetsOf make no ReadAt.
	LoadIndex bool
}

// Reader reads one shard.
type Reader struct {
	idx, dat io.ReaderAt
	n        uint64
	datSize  uint64
	stride   uint64
	sparse   []byte    // one 16-byte key+CRC per block
	entries  []byte    // with LoadIndex
	bufs     sync.Pool // *[]byte block buffers, so lookups do not allocate 8 KiB each
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
	if string(h[:4]) != Magic {
		return nil, corruptf("bad magic %q", h[:4])
	}
	if v := le.Uint32(h[4:]); v != Version {
		return nil, fmt.Errorf("%w: version %d (this reader knows %d)", ErrVersion, v, Version)
	}
	if got, want := binio.CRC(h[:36]), le.Uint32(h[36:]); got != want {
		return nil, corruptf("header checksum %08x, want %08x", got, want)
	}
	r := &Reader{idx: idx, dat: dat, n: le.Uint64(h[8:]), datSize: le.Uint64(h[16:]), stride: uint64(le.Uint32(h[24:]))}
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
		return nil, corruptf("dat is %d bytes, idx header says %d for %d keys", datSize, r.datSize, r.n)
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
		d0, s0 := entryKey(r.sparse[(b-1)*sparseSize:])
		d1, s1 := entryKey(r.sparse[b*sparseSize:])
		if compareKey(d0, s0, d1, s1) >= 0 {
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

// Len is the number of keys in the shard.
func (r *Reader) Len() uint64 { return r.n }

// checkBlock verifies block b's CRC and that it starts at its sparse key.
// With full it also checks that keys increase and that every entry points
// inside dat; lookups skip that because a block whose CRC matches is the
// block a writer enforcing P1 wrote, and Payload re-checks the one entry
// it uses. LoadIndex and Verify check everything.
func (r *Reader) checkBlock(b uint64, blk []byte, full bool) error {
	s := r.sparse[b*sparseSize:]
	if got, want := binio.CRC(blk), binary.LittleEndian.Uint32(s[12:]); got != want {
		return corruptf("idx block %d checksum %08x, want %08x", b, got, want)
	}
	d, ds := entryKey(blk)
	if sd, sds := entryKey(s); d != sd || ds != sds {
		return corruptf("idx block %d starts at a key other than its sparse key", b)
	}
	if !full {
		return nil
	}
	for i := 0; i < len(blk)/entrySize; i++ {
		e := getEntry(blk[i*entrySize:])
		if i > 0 && compareKey(d, ds, e.DomainID, e.DatasetID) >= 0 {
			return corruptf("idx block %d entry %d is out of order", b, i)
		}
		d, ds = e.DomainID, e.DatasetID
		if e.PayloadLen < minPayload || e.PayloadOffset > r.datSize || r.datSize-e.PayloadOffset < uint64(e.PayloadLen) || e.URLCount == 0 {
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

// blockOf is the block that would hold key: the last whose first key is
// <= key, or -1 when key precedes every key.
func (r *Reader) blockOf(domainID uint64, datasetID uint32) int64 {
	blocks := len(r.sparse) / sparseSize
	i := sort.Search(blocks, func(i int) bool {
		d, s := entryKey(r.sparse[i*sparseSize:])
		return compareKey(d, s, domainID, datasetID) > 0
	})
	return int64(i) - 1
}

// searchBlock returns the index in blk of the first entry >= key.
func searchBlock(blk []byte, domainID uint64, datasetID uint32) int {
	return sort.Search(len(blk)/entrySize, func(i int) bool {
		d, s := entryKey(blk[i*entrySize:])
		return compareKey(d, s, domainID, datasetID) >= 0
	})
}

// Lookup finds the entry of (domainID, datasetID): one ReadAt of one idx
// block (stride*32 bytes), none with LoadIndex.
func (r *Reader) Lookup(domainID uint64, datasetID uint32) (Entry, bool, error) {
	b := r.blockOf(domainID, datasetID)
	if b < 0 {
		return Entry{}, false, nil
	}
	var e Entry
	found := false
	err := r.withBlock(uint64(b), false, func(blk []byte) error {
		i := searchBlock(blk, domainID, datasetID)
		if i*entrySize < len(blk) {
			e = getEntry(blk[i*entrySize:])
			found = e.DomainID == domainID && e.DatasetID == datasetID
		}
		return nil
	})
	if err != nil || !found {
		return Entry{}, false, err
	}
	return e, true, nil
}

// DatasetsOf returns the entries of domainID in dataset_id order (they are
// contiguous, P1): usually one ReadAt, one more per block boundary crossed.
func (r *Reader) DatasetsOf(domainID uint64) ([]Entry, error) {
	var out []Entry
	done := false
	// Start at the block holding (domainID, 0); the domain may begin in
	// the next block when its first dataset_id is above 0.
	for b := max(r.blockOf(domainID, 0), 0); !done && uint64(b) < uint64(len(r.sparse)/sparseSize); b++ {
		err := r.withBlock(uint64(b), false, func(blk []byte) error {
			for i := searchBlock(blk, domainID, 0); i*entrySize < len(blk); i++ {
				e := getEntry(blk[i*entrySize:])
				if e.DomainID != domainID {
					done = true
					return nil
				}
				out = append(out, e)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Payload reads e's spans with one ReadAt on dat, checking the payload CRC
// (which covers e's key, P5) and that the rows add up to e.URLCount (P4).
func (r *Reader) Payload(e Entry) (Spans, error) {
	if e.PayloadLen < minPayload || e.PayloadOffset > r.datSize || r.datSize-e.PayloadOffset < uint64(e.PayloadLen) {
		return nil, corruptf("payload of (%d, %d) at %d+%d is outside dat", e.DomainID, e.DatasetID, e.PayloadOffset, e.PayloadLen)
	}
	p, err := binio.ReadAt(r.dat, int64(e.PayloadOffset), int(e.PayloadLen))
	if err != nil {
		return nil, readErr(fmt.Sprintf("payload of (%d, %d)", e.DomainID, e.DatasetID), err)
	}
	spans, err := decodePayload(p, e.DomainID, e.DatasetID, e.URLCount)
	if err != nil {
		return nil, fmt.Errorf("payload of (%d, %d): %w", e.DomainID, e.DatasetID, err)
	}
	return spans, nil
}

// All yields every entry in key order, one block per ReadAt. It stops at
// the first error, which it yields.
func (r *Reader) All() iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		stop := errors.New("stop")
		for b := uint64(0); b < uint64(len(r.sparse)/sparseSize); b++ {
			err := r.withBlock(b, true, func(blk []byte) error {
				for i := 0; i*entrySize < len(blk); i++ {
					if !yield(getEntry(blk[i*entrySize:]), nil) {
						return stop
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
// every payload (P3-P5). It reads both files once; it is for offline
// checks, not the serving path.
func (r *Reader) Verify() error {
	var prev Entry
	next, i := uint64(0), uint64(0)
	for e, err := range r.All() {
		if err != nil {
			return err
		}
		if i > 0 && compareKey(prev.DomainID, prev.DatasetID, e.DomainID, e.DatasetID) >= 0 {
			return corruptf("entry %d is out of order", i)
		}
		if e.PayloadOffset != next {
			return corruptf("entry %d payload at %d, previous ended at %d", i, e.PayloadOffset, next)
		}
		if _, err := r.Payload(e); err != nil {
			return err
		}
		next += uint64(e.PayloadLen)
		prev = e
		i++
	}
	if next != r.datSize {
		return corruptf("payloads end at %d, dat_size is %d", next, r.datSize)
	}
	return nil
}
