// Package files owns the file registry, files.tsv: the map from a
// postings span's file_id to the Parquet file it names, with that file's
// dataset, domain prefix, row count and row-group count. The format is
// specified in docs/format/postings.md ("File registry").
//
// Invariants of a registry, checked by Read:
//
//	F1. The first line is the header naming the version and the columns;
//	    the last is "# end <count>", so truncation at a line boundary is
//	    caught.
//	F2. file_ids are strictly increasing.
//	F3. Paths are relative, slash-separated, with no empty, "." or ".."
//	    segment, and contain no tab, CR or LF, so joining them under the
//	    lake root cannot escape it.
//	F4. domain_prefix is one or two lowercase hex digits (version 1: two).
//
// A registry is small (one line per Parquet file) and is read whole.
package files

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Version is the files.tsv version this package writes. Version 2 allows
// one-digit domain prefixes (docs/format/lake.md, "Prefix width"); Read
// also accepts version 1, whose prefixes are all two digits.
const Version = 2

const (
	headerPrefix = "# dhsi files.tsv v"
	columns      = "file_id\tdataset_id\tdomain_prefix\tparquet_rel_path\trows\trow_groups"
	endPrefix    = "# end "
	maxLine      = 1 << 20
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrCorrupt marks a registry that breaks F1-F4 or does not parse.
	ErrCorrupt = errors.New("files: corrupt registry")
	// ErrVersion marks a version this reader does not know.
	ErrVersion = errors.New("files: unsupported version")
	// ErrInput marks writer input breaking F2-F4.
	ErrInput = errors.New("files: invalid input")
)

// File is one registry row.
type File struct {
	ID           uint32
	DatasetID    uint32
	DomainPrefix string // one or two lowercase hex digits
	Path         string // relative to the lake root, e.g. urls/dataset_id=3/domain_prefix=0a/part-00000.parquet
	Rows         uint64
	RowGroups    uint32
}

func checkFile(f File, version uint64) error {
	if !ValidPrefix(f.DomainPrefix) || version < 2 && len(f.DomainPrefix) != 2 {
		return fmt.Errorf("domain prefix %q is not one or two lowercase hex digits (two before version 2)", f.DomainPrefix)
	}
	if f.Path == "" || strings.ContainsAny(f.Path, "\t\r\n\\") || strings.HasPrefix(f.Path, "/") {
		return fmt.Errorf("path %q is empty, absolute or holds a tab, newline or backslash", f.Path)
	}
	for _, seg := range strings.Split(f.Path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("path %q has an empty, . or .. segment", f.Path)
		}
	}
	return nil
}

// ValidPrefix reports whether p is a domain prefix of this version: one or
// two lowercase hex digits.
func ValidPrefix(p string) bool {
	if len(p) < 1 || len(p) > 2 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if !isHex(p[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// Writer writes a registry.
type Writer struct {
	w    *bufio.Writer
	n    uint64
	last uint32
	err  error
}

// NewWriter writes the header to w (buffered until Close). Wrap w in a
// zstd encoder to produce files.tsv.zst; Read accepts both.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: bufio.NewWriter(w)}
	fmt.Fprintf(wr.w, "%s%d\t%s\n", headerPrefix, Version, columns)
	return wr
}

// Add appends f; ids must increase (F2). A rejected Add leaves the writer
// usable.
func (w *Writer) Add(f File) error {
	if w.err != nil {
		return w.err
	}
	if w.n > 0 && f.ID <= w.last {
		return fmt.Errorf("%w: file id %d is not after %d", ErrInput, f.ID, w.last)
	}
	if err := checkFile(f, Version); err != nil {
		return fmt.Errorf("%w: file %d: %v", ErrInput, f.ID, err)
	}
	fmt.Fprintf(w.w, "%d\t%d\t%s\t%s\t%d\t%d\n", f.ID, f.DatasetID, f.DomainPrefix, f.Path, f.Rows, f.RowGroups)
	w.n++
	w.last = f.ID
	return nil
}

// Close writes the end line and flushes. It does not close the destination.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	fmt.Fprintf(w.w, "%s%d\n", endPrefix, w.n)
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("files: write: %w", err)
		return w.err
	}
	w.err = errors.New("files: writer is closed")
	return nil
}

// Registry is a registry in memory, sorted by file_id.
type Registry struct{ files []File }

// Len is the number of files.
func (r *Registry) Len() int { return len(r.files) }

// All returns the files in file_id order; the slice is the caller's.
func (r *Registry) All() []File { return slices.Clone(r.files) }

// Lookup returns the file with id.
func (r *Registry) Lookup(id uint32) (File, bool) {
	i, ok := slices.BinarySearchFunc(r.files, id, func(f File, id uint32) int {
		return cmp.Compare(f.ID, id)
	})
	if !ok {
		return File{}, false
	}
	return r.files[i], true
}

// zstdMagic opens every zstd frame.
const zstdMagic = "\x28\xb5\x2f\xfd"

// Read reads a whole registry, plain or zstd-compressed (files.tsv.zst).
func Read(r io.Reader) (*Registry, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(4); string(head) == zstdMagic {
		// Cap the decoder's window so a hostile frame cannot claim
		// gigabytes; a registry never needs more than the 8 MiB default.
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			return nil, fmt.Errorf("files: zstd: %w", err)
		}
		defer zr.Close()
		return read(zr)
	}
	return read(br)
}

func corruptf(line int, format string, args ...any) error {
	return fmt.Errorf("%w: line %d: "+format, append([]any{ErrCorrupt, line}, args...)...)
}

func read(r io.Reader) (*Registry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	// Split on '\n' only, and refuse a last line without one: the writer
	// always ends lines, so a missing newline means truncation.
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return 0, nil, errors.New("last line has no newline")
		}
		return 0, nil, nil
	})
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	h, ok := next()
	if !ok {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return nil, corruptf(1, "empty registry")
	}
	vs, rest, ok := strings.Cut(strings.TrimPrefix(h, headerPrefix), "\t")
	if !strings.HasPrefix(h, headerPrefix) || !ok {
		return nil, corruptf(1, "not a files.tsv header")
	}
	version, err := strconv.ParseUint(vs, 10, 32)
	if err != nil || version < 1 || version > Version || vs != strconv.FormatUint(version, 10) {
		return nil, fmt.Errorf("%w: files.tsv version %q (this reader knows 1 to %d)", ErrVersion, vs, Version)
	}
	if rest != columns {
		return nil, corruptf(1, "columns %q, want %q", rest, columns)
	}
	reg := &Registry{}
	for {
		l, ok := next()
		if !ok {
			if err := sc.Err(); err != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrCorrupt, line+1, err)
			}
			return nil, corruptf(line, "no end line (truncated?)")
		}
		if c, found := strings.CutPrefix(l, endPrefix); found {
			n, err := strconv.ParseUint(c, 10, 64)
			if err != nil || n != uint64(len(reg.files)) {
				return nil, corruptf(line, "end line says %q files, read %d", c, len(reg.files))
			}
			if _, more := next(); more || sc.Err() != nil {
				return nil, corruptf(line+1, "data after the end line")
			}
			return reg, nil
		}
		f, err := parseLine(l, version)
		if err != nil {
			return nil, corruptf(line, "%v", err)
		}
		if len(reg.files) > 0 && f.ID <= reg.files[len(reg.files)-1].ID {
			return nil, corruptf(line, "file id %d is not after %d", f.ID, reg.files[len(reg.files)-1].ID)
		}
		reg.files = append(reg.files, f)
	}
}

func parseLine(l string, version uint64) (File, error) {
	c := strings.Split(l, "\t")
	if len(c) != 6 {
		return File{}, fmt.Errorf("%d columns, want 6", len(c))
	}
	var f File
	var err error
	u32 := func(s string) uint32 {
		v, e := strconv.ParseUint(s, 10, 32)
		if e != nil || s != strconv.FormatUint(v, 10) { // canonical decimal only
			err = fmt.Errorf("%q is not a uint32", s)
		}
		return uint32(v)
	}
	f.ID, f.DatasetID = u32(c[0]), u32(c[1])
	f.DomainPrefix, f.Path = c[2], c[3]
	rows, e := strconv.ParseUint(c[4], 10, 64)
	if e != nil || c[4] != strconv.FormatUint(rows, 10) {
		err = fmt.Errorf("%q is not a uint64", c[4])
	}
	f.Rows = rows
	f.RowGroups = u32(c[5])
	if err != nil {
		return File{}, err
	}
	if err := checkFile(f, version); err != nil {
		return File{}, err
	}
	return f, nil
}
