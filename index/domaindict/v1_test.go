package domaindict

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"iter"

	"github.com/zeebo/xxh3"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// writeV1 writes version 1, which releases before 2026-11-28 wrote: the
// strings as they are, then offsets and the table sorted by hf. The tests
// write such files with it to hold Open to reading them.
func writeV1(w io.Writer, domains iter.Seq[string], hf hashFunc) error {
	hash, _ := hashers(hf)
	bw := bufio.NewWriterSize(w, 256<<10)
	hdr := header(1)
	if _, err := bw.Write(hdr[:]); err != nil {
		return fmt.Errorf("domaindict: write header: %w", err)
	}
	lh := xxh3.New()
	var (
		rows    []tableRow
		offsets = []uint64{0}
		prev    string
		off     uint64
		inErr   error
	)
	for d := range domains {
		n := uint64(len(rows))
		if inErr = checkNext(n, d, prev); inErr != nil {
			break
		}
		rows = append(rows, tableRow{h: hash(d), id: uint32(n)})
		off += uint64(len(d)) + 1
		offsets = append(offsets, off)
		bw.WriteString(d)
		bw.WriteByte('\n')
		lh.WriteString(d)
		lh.WriteString("\n")
		prev = d
	}
	if inErr != nil {
		return inErr
	}
	rows = sortTable(rows)

	n := uint64(len(rows))
	sectCRC := uint32(0)
	var b [tableEntry]byte
	for _, o := range offsets {
		binary.LittleEndian.PutUint64(b[:8], o)
		sectCRC = binio.CRCUpdate(sectCRC, b[:8])
		bw.Write(b[:8])
	}
	for _, r := range rows {
		binary.LittleEndian.PutUint64(b[:], r.h)
		binary.LittleEndian.PutUint32(b[8:], r.id)
		sectCRC = binio.CRCUpdate(sectCRC, b[:])
		bw.Write(b[:])
	}
	var f [footerSize]byte
	le := binary.LittleEndian
	offOff := headerSize + off
	le.PutUint64(f[0:], n)
	le.PutUint64(f[8:], headerSize)
	le.PutUint64(f[16:], off)
	le.PutUint64(f[24:], offOff)
	le.PutUint64(f[32:], offOff+8*(n+1))
	le.PutUint64(f[40:], lh.Sum64())
	le.PutUint32(f[48:], sectCRC)
	le.PutUint32(f[52:], binio.CRCUpdate(binio.CRC(hdr[:]), f[:footerCRCSpan]))
	le.PutUint32(f[56:], 1)
	copy(f[60:], Magic)
	bw.Write(f[:])
	// bufio.Writer keeps the first error, so checking Flush covers every
	// write above.
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("domaindict: write: %w", err)
	}
	return nil
}
