package domaindict

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/dhsi/dhsi/index/internal/binio"
)

// Write writes the dictionary of domains, which must be non-empty strings
// without '\n', strictly increasing in byte order (D1); anything else fails
// with ErrInput before the footer is written, so a caller that discards w on
// error never publishes a partial dictionary.
//
// Strings stream to w as they arrive; Write holds 24 bytes a domain (the
// table rows and the offsets) until the end, because the table is sorted by
// hash and written after the strings.
func Write(w io.Writer, domains iter.Seq[string]) error {
	return write(w, domains, nil)
}

type tableRow struct {
	h  uint64
	id uint32
}

func write(w io.Writer, domains iter.Seq[string], hf hashFunc) error {
	hash, _ := hashers(hf)
	bw := bufio.NewWriterSize(w, 256<<10)
	var hdr [headerSize]byte
	copy(hdr[:], Magic)
	binary.LittleEndian.PutUint32(hdr[4:], Version)
	binary.LittleEndian.PutUint32(hdr[8:], hashAlgXXH3)
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
		switch {
		case d == "":
			inErr = fmt.Errorf("%w: domain %d is empty", ErrInput, n)
		case strings.IndexByte(d, '\n') >= 0:
			inErr = fmt.Errorf("%w: domain %d %q contains a newline", ErrInput, n, d)
		case n > 0 && d <= prev:
			inErr = fmt.Errorf("%w: domain %d %q is not after %q (input must be sorted and unique)", ErrInput, n, d, prev)
		case n >= maxDomains:
			inErr = fmt.Errorf("%w: more than %d domains", ErrInput, uint64(maxDomains))
		}
		if inErr != nil {
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
	slices.SortFunc(rows, func(a, b tableRow) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})

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
	le.PutUint32(f[56:], Version)
	copy(f[60:], Magic)
	bw.Write(f[:])
	// bufio.Writer keeps the first error, so checking Flush covers every
	// write above.
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("domaindict: write: %w", err)
	}
	return nil
}
