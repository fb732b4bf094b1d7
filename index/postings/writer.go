package postings

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// Config tunes a Writer.
type Config struct {
	// SparseStride is the number of idx entries (domains) per block. The
	// sparse index holds one 12-byte key+CRC per block and a lookup reads
	// one block, so the stride trades Open size against bytes per lookup.
	SparseStride uint32
	// version is the format written: Version, or 2 or 3 in tests of
	// readers of older shards.
	version uint32
}

// Defaults fills unset fields.
func (c Config) Defaults() Config {
	if c.SparseStride == 0 {
		c.SparseStride = DefaultStride
	}
	if c.version == 0 {
		c.version = Version
	}
	return c
}

// Validate reports an unusable configuration.
func (c Config) Validate() error {
	if c.SparseStride == 0 || c.SparseStride > maxStride {
		return fmt.Errorf("postings: sparse stride %d not in [1, %d]", c.SparseStride, maxStride)
	}
	return nil
}

// Writer writes one shard's postings.idx and postings.dat from keys in
// increasing order (P1).
//
// Memory: one domain's spans are held until the next domain starts; its
// payload then streams to dat. idx entries stream to idx when it is an
// io.WriterAt (an *os.File is), and are otherwise held in memory (12 bytes
// a domain) until Close, because the header carries the count. The sparse
// index (16 bytes per stride domains) is held until Close.
type Writer struct {
	idx      *binio.Sink
	dat      *bufio.Writer
	datOff   uint64
	stride   uint32
	version  uint32
	n        uint64 // domains written
	sparse   []byte
	blockCRC uint32
	payload  []byte
	err      error

	// the domain being collected
	domain  uint64
	keys    []keySpans
	started bool
}

// NewWriter returns a Writer with the default configuration.
func NewWriter(idx, dat io.Writer) *Writer {
	w, _ := NewWriterConfig(idx, dat, Config{})
	return w
}

// NewWriterConfig returns a Writer with cfg (after Defaults).
func NewWriterConfig(idx, dat io.Writer, cfg Config) (*Writer, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &Writer{idx: binio.NewSink(idx), dat: bufio.NewWriterSize(dat, 256<<10), stride: cfg.SparseStride, version: cfg.version}
	var hdr [headerSize]byte // placeholder; Close writes the real one
	_, w.err = w.idx.Write(hdr[:])
	return w, nil
}

// Add records the postings of (domainID, datasetID): spans must be
// non-empty, strictly increasing by (file_id, row_group) with rows >= 1
// (P3), and the key must be greater than the previous key (P1). The URL
// count is the sum of rows. A rejected Add leaves the writer usable; a write
// error does not.
func (w *Writer) Add(domainID uint64, datasetID uint32, spans []Span) error {
	if w.err != nil {
		return w.err
	}
	if w.started {
		last := w.keys[len(w.keys)-1].datasetID
		if compareKey(domainID, datasetID, w.domain, last) <= 0 {
			return fmt.Errorf("%w: key (%d, %d) is not after (%d, %d)", ErrInput, domainID, datasetID, w.domain, last)
		}
	} else if w.n > 0 && domainID <= w.domain {
		return fmt.Errorf("%w: domain %d is not after domain %d", ErrInput, domainID, w.domain)
	}
	if err := checkSpans(spans); err != nil {
		return fmt.Errorf("%w: key (%d, %d): %v", ErrInput, domainID, datasetID, err)
	}
	if w.started && domainID != w.domain {
		if err := w.flushDomain(); err != nil {
			return err
		}
	}
	if !w.started || domainID != w.domain {
		if w.n >= maxEntries {
			return fmt.Errorf("%w: more than %d domains in one shard", ErrInput, uint64(maxEntries))
		}
		w.domain, w.keys, w.started = domainID, w.keys[:0], true
	}
	w.keys = append(w.keys, keySpans{datasetID: datasetID, spans: slices.Clone(spans)})
	return nil
}

// flushDomain writes the collected domain's payload and idx entry.
func (w *Writer) flushDomain() error {
	w.payload = appendPayload(w.payload[:0], w.domain, w.keys, w.version)
	return w.writePayload(w.domain, w.payload)
}

// addPayload writes domainID's payload as a shard of this writer's version
// stores it: Merge's copy of a domain only one source holds, whose payload
// passed its CRC (P5; the CRC covers domainID). Keys collected by Add are
// written first; domainID must follow them (P1).
func (w *Writer) addPayload(domainID uint64, payload []byte) error {
	if w.err != nil {
		return w.err
	}
	if (w.started || w.n > 0) && domainID <= w.domain {
		return fmt.Errorf("%w: domain %d is not after domain %d", ErrInput, domainID, w.domain)
	}
	if w.started {
		if err := w.flushDomain(); err != nil {
			return err
		}
		w.started = false
	}
	if w.n >= maxEntries {
		return fmt.Errorf("%w: more than %d domains in one shard", ErrInput, uint64(maxEntries))
	}
	w.domain = domainID
	return w.writePayload(domainID, payload)
}

// writePayload writes a domain's encoded payload to dat and its entry to
// idx.
func (w *Writer) writePayload(domain uint64, payload []byte) error {
	if len(payload) > 1<<32-1 {
		w.err = fmt.Errorf("%w: domain %d: payload of %d bytes", ErrInput, domain, len(payload))
		return w.err
	}
	if w.version >= 4 && w.datOff+uint64(len(payload)) > maxDat {
		w.err = fmt.Errorf("%w: domain %d: a shard's postings.dat passes %d bytes; write the index with more shards", ErrInput, domain, uint64(maxDat))
		return w.err
	}
	if _, err := w.dat.Write(payload); err != nil {
		w.err = fmt.Errorf("postings: write payload: %w", err)
		return w.err
	}
	e := idxEntry{DomainID: domain, PayloadOffset: w.datOff, PayloadLen: uint32(len(payload))}
	var buf [entrySizeV3]byte
	b := appendEntry(buf[:0], e, w.version)
	if w.n%uint64(w.stride) == 0 {
		w.closeBlock()
		w.sparse = binary.LittleEndian.AppendUint64(w.sparse, domain)
		w.sparse = append(w.sparse, 0, 0, 0, 0) // block CRC, set by closeBlock
		if w.version >= 4 {
			w.sparse = binary.LittleEndian.AppendUint32(w.sparse, uint32(w.datOff))
		}
	}
	w.datOff += uint64(len(payload))
	w.blockCRC = binio.CRCUpdate(w.blockCRC, b)
	if _, err := w.idx.Write(b); err != nil {
		w.err = fmt.Errorf("postings: write entry: %w", err)
		return w.err
	}
	w.n++
	return nil
}

// closeBlock stores the running CRC of the block just finished in its
// sparse entry.
func (w *Writer) closeBlock() {
	if len(w.sparse) > 0 {
		_, ss := layoutOf(w.version)
		binary.LittleEndian.PutUint32(w.sparse[len(w.sparse)-ss+8:], w.blockCRC)
	}
	w.blockCRC = 0
}

// Close writes the last domain, the sparse index and the header, and
// flushes both files. It does not close idx or dat.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.started {
		if err := w.flushDomain(); err != nil {
			return err
		}
		w.started = false
	}
	w.closeBlock()
	if err := w.dat.Flush(); err != nil {
		w.err = fmt.Errorf("postings: flush dat: %w", err)
		return w.err
	}
	if _, err := w.idx.Write(w.sparse); err != nil {
		w.err = fmt.Errorf("postings: write sparse index: %w", err)
		return w.err
	}
	var hdr [headerSize]byte
	le := binary.LittleEndian
	switch w.version {
	case 2:
		copy(hdr[:], magicV2)
	case 3:
		copy(hdr[:], magicV3)
	default:
		copy(hdr[:], Magic)
	}
	le.PutUint32(hdr[4:], w.version)
	le.PutUint64(hdr[8:], w.n)
	le.PutUint64(hdr[16:], w.datOff)
	le.PutUint32(hdr[24:], w.stride)
	le.PutUint32(hdr[28:], 0) // reserved
	le.PutUint32(hdr[32:], binio.CRC(w.sparse))
	le.PutUint32(hdr[36:], binio.CRC(hdr[:36]))
	if err := w.idx.Finish(hdr[:]); err != nil {
		w.err = fmt.Errorf("postings: finish idx: %w", err)
		return w.err
	}
	w.err = errors.New("postings: writer is closed")
	return nil
}
