// Package binio holds the byte-level helpers the index formats share: the
// CRC-32C they all use, an exact ReadAt, and Sink, which writes a file whose
// header is only known once the body has been written.
//
// It owns no format; each format package documents its own bytes.
package binio

import (
	"bufio"
	"errors"
	"hash/crc32"
	"io"
)

// castagnoli is read-only after initialisation; crc32 caches the table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC returns the CRC-32C (Castagnoli) of b. Every DHSI index checksum is
// CRC-32C because it is hardware-accelerated on amd64 and arm64.
func CRC(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// CRCUpdate extends crc with b.
func CRCUpdate(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// ReadAt reads exactly n bytes at off with one ReadAt call. A short read is
// io.ErrUnexpectedEOF; io.EOF alongside a full read is not an error, as
// io.ReaderAt allows.
func ReadAt(r io.ReaderAt, off int64, n int) ([]byte, error) {
	buf := make([]byte, n)
	if err := ReadFull(r, off, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// ReadFull fills buf from off with one ReadAt call; see ReadAt.
func ReadFull(r io.ReaderAt, off int64, buf []byte) error {
	if off < 0 {
		return errors.New("binio: negative offset")
	}
	m, err := r.ReadAt(buf, off)
	if m == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Sink writes a file from offset 0 whose first bytes (a header holding
// counts and offsets) are only known at the end. If the destination is an
// io.WriterAt (an *os.File is), the body streams through a buffered writer
// and Finish patches the header in place, so memory stays bounded. Otherwise
// the whole file is held in memory until Finish, because a plain io.Writer
// cannot be rewound.
type Sink struct {
	wa  io.WriterAt   // streaming mode when non-nil
	bw  *bufio.Writer // streaming mode: buffers writes to wa
	w   io.Writer     // buffering mode destination
	mem []byte        // buffering mode: the whole file
	off int64         // logical bytes written so far
}

// NewSink returns a Sink writing to w from offset 0.
func NewSink(w io.Writer) *Sink {
	if wa, ok := w.(io.WriterAt); ok {
		s := &Sink{wa: wa}
		s.bw = bufio.NewWriterSize(&atWriter{wa: wa}, 256<<10)
		return s
	}
	return &Sink{w: w}
}

// Streaming reports whether the sink writes through an io.WriterAt.
func (s *Sink) Streaming() bool { return s.wa != nil }

// Offset is the number of bytes written so far.
func (s *Sink) Offset() int64 { return s.off }

// Write appends p.
func (s *Sink) Write(p []byte) (int, error) {
	if s.wa != nil {
		n, err := s.bw.Write(p)
		s.off += int64(n)
		return n, err
	}
	s.mem = append(s.mem, p...)
	s.off += int64(len(p))
	return len(p), nil
}

// Finish overwrites the first len(header) bytes with header and flushes.
// The caller reserved those bytes by writing placeholders first.
func (s *Sink) Finish(header []byte) error {
	if int64(len(header)) > s.off {
		return errors.New("binio: header longer than the file")
	}
	if s.wa != nil {
		if err := s.bw.Flush(); err != nil {
			return err
		}
		_, err := s.wa.WriteAt(header, 0)
		return err
	}
	copy(s.mem, header)
	_, err := s.w.Write(s.mem)
	s.mem = nil
	return err
}

// atWriter turns sequential writes into WriteAt calls from offset 0.
type atWriter struct {
	wa  io.WriterAt
	off int64
}

func (a *atWriter) Write(p []byte) (int, error) {
	n, err := a.wa.WriteAt(p, a.off)
	a.off += int64(n)
	return n, err
}
