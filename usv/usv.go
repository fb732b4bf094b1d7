// Package usv reads and writes Unicode Separated Values (the USV draft,
// https://github.com/SixArm/usv): units separated by ␟ (U+241F), records
// terminated by ␞ (U+241E), and ␛ (U+241B) escaping the character after it.
// The exact dialect DHSI writes and accepts is specified in
// docs/format/usv.md.
//
// Reader guarantees: it never panics on any input; a line break (LF or CRLF)
// immediately after a unit or record separator is layout and is dropped; the
// C0 control forms (US 0x1F, RS 0x1E, ESC 0x1B) are accepted as the same
// separators; a final record without a terminating separator is still a
// record. The Reader returns units as they are separated: a record in the
// specification's terminated form (every unit followed by ␟, "a␟b␟␞")
// reads with a last, empty unit ([a b ""]); which reading a file means is
// its header's business (compiler.ParseTable, docs/format/usv.md).
//
// Writer guarantees: it writes the specification's terminated form, and
// Read(Write(r)) == append(r, "") for every record r of valid UTF-8
// strings other than the lone empty unit [""], which it refuses (readers
// of the separated form would see an empty record, and skip it).
package usv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// The separators of the Unicode form and their C0 control equivalents.
const (
	UnitSep     = '\u241F' // ␟
	RecordSep   = '\u241E' // ␞
	Escape      = '\u241B' // ␛
	GroupSep    = '\u241D' // ␝ (accepted as a record separator)
	FileSep     = '\u241C' // ␜ (accepted as a record separator)
	c0Unit      = '\x1F'
	c0Record    = '\x1E'
	c0Escape    = '\x1B'
	c0Group     = '\x1D'
	c0File      = '\x1C'
	maxUnitSize = 64 << 20
)

// ErrInvalidUTF8 reports bytes that are not UTF-8.
var ErrInvalidUTF8 = errors.New("usv: invalid UTF-8")

// ErrTooLarge reports a unit larger than the reader accepts (64 MiB).
var ErrTooLarge = errors.New("usv: unit too large")

func isUnitSep(r rune) bool { return r == UnitSep || r == c0Unit }
func isRecordSep(r rune) bool {
	return r == RecordSep || r == c0Record || r == GroupSep || r == c0Group || r == FileSep || r == c0File
}
func isEscape(r rune) bool { return r == Escape || r == c0Escape }

// Reader reads records.
type Reader struct {
	r      *bufio.Reader
	record int // records returned so far
	offset int64
	done   bool
}

// NewReader returns a reader of r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReaderSize(r, 64<<10)} }

// Record is the 1-based number of the record Read last returned.
func (r *Reader) Record() int { return r.record }

// ParseError locates a malformed record.
type ParseError struct {
	Record int   // 1-based record number
	Offset int64 // byte offset where the problem was found
	Err    error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("usv: record %d (byte %d): %v", e.Record, e.Offset, e.Err)
}
func (e *ParseError) Unwrap() error { return e.Err }

// Read returns the next record's units, or io.EOF after the last.
func (r *Reader) Read() ([]string, error) {
	if r.done {
		return nil, io.EOF
	}
	var units []string
	var cur strings.Builder
	afterSep := true // at the start of the input, a leading line break is layout too
	sawAny := false
	for {
		c, size, err := r.r.ReadRune()
		if err == io.EOF {
			r.done = true
			if sawAny {
				units = append(units, cur.String())
				r.record++
				return units, nil
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		r.offset += int64(size)
		if c == utf8.RuneError && size == 1 {
			return nil, &ParseError{Record: r.record + 1, Offset: r.offset - 1, Err: ErrInvalidUTF8}
		}
		if afterSep && (c == '\n' || c == '\r') {
			if c == '\r' {
				if next, _ := r.r.Peek(1); len(next) == 1 && next[0] == '\n' {
					r.r.ReadByte()
					r.offset++
				}
			}
			afterSep = false
			continue
		}
		afterSep = false
		switch {
		case isEscape(c):
			e, esize, err := r.r.ReadRune()
			if err == io.EOF {
				// a trailing escape escapes nothing; keep it as data
				cur.WriteRune(c)
				sawAny = true
				continue
			}
			if err != nil {
				return nil, err
			}
			r.offset += int64(esize)
			if e == utf8.RuneError && esize == 1 {
				return nil, &ParseError{Record: r.record + 1, Offset: r.offset - 1, Err: ErrInvalidUTF8}
			}
			cur.WriteRune(e)
			sawAny = true
		case isUnitSep(c):
			units = append(units, cur.String())
			cur.Reset()
			afterSep, sawAny = true, true
		case isRecordSep(c):
			units = append(units, cur.String())
			r.record++
			if len(units) == 1 && units[0] == "" && !sawAny {
				// an empty record (two record separators in a row) carries nothing
				units = units[:0]
				afterSep = true
				continue
			}
			return units, nil
		default:
			cur.WriteRune(c)
			sawAny = true
		}
		if cur.Len() > maxUnitSize {
			return nil, &ParseError{Record: r.record + 1, Offset: r.offset, Err: ErrTooLarge}
		}
	}
}

// ReadAll reads every remaining record.
func (r *Reader) ReadAll() ([][]string, error) {
	var out [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

// Writer writes records in the USV specification's terminated form: every
// unit followed by ␟, every record by ␞ and a line break (layout, so files
// read well in a terminal), separator characters in data escaped with ␛.
type Writer struct {
	w *bufio.Writer
}

// NewWriter returns a writer to w. Call Flush when done.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Write writes one record. Units must be valid UTF-8.
func (w *Writer) Write(units []string) error {
	if len(units) == 0 || len(units) == 1 && units[0] == "" {
		// a lone empty unit reads back as an empty record, which readers skip
		return errors.New("usv: a record needs a non-empty unit or more than one unit")
	}
	for i, u := range units {
		if !utf8.ValidString(u) {
			return fmt.Errorf("usv: unit %d: %w", i+1, ErrInvalidUTF8)
		}
		for j, c := range u {
			// separators and escapes are escaped; so is a line break that
			// opens a unit, which a reader would take for layout
			if isUnitSep(c) || isRecordSep(c) || isEscape(c) || (j == 0 && (c == '\n' || c == '\r')) {
				w.w.WriteRune(Escape)
			}
			w.w.WriteRune(c)
		}
		w.w.WriteRune(UnitSep) // the specification's form: ␟ ends every unit
	}
	w.w.WriteRune(RecordSep)
	_, err := w.w.WriteString("\n")
	return err
}

// Flush writes buffered data.
func (w *Writer) Flush() error { return w.w.Flush() }

// ParseBytes returns the records of b: exactly what
// NewReader(bytes.NewReader(b)).ReadAll() returns, errors included, about
// ten times faster. Units without an escape are substrings of one string
// copy of b, so a parsed file costs its size plus a string header per
// unit, not an allocation per unit. (Shards are parsed whenever a
// statement reads one, and a 2.6 MB shard took 187 ms through Reader.)
func ParseBytes(b []byte) ([][]string, error) {
	if !utf8.Valid(b) {
		// Reader's error names the record and byte offset: let it find them
		return NewReader(strings.NewReader(string(b))).ReadAll()
	}
	s := string(b)
	var out [][]string
	var units []string
	afterSep := true // a leading line break is layout
	sawAny := false
	start := 0     // where the current unit's text begins in s
	var esc []byte // the current unit, once it held an escape
	escaped := false
	unit := func(end int) string {
		if escaped {
			u := string(append(esc, s[start:end]...))
			esc, escaped = esc[:0], false
			return u
		}
		return s[start:end]
	}
	i := 0
	for i < len(s) {
		c := s[i]
		// the separators: C0 0x1B–0x1F, or U+241B–U+241F (E2 90 9B–9F)
		size, sep := 1, rune(0)
		switch {
		case c >= 0x1B && c <= 0x1F:
			sep = rune(c)
		case c == 0xE2 && i+2 < len(s) && s[i+1] == 0x90 && s[i+2] >= 0x9B && s[i+2] <= 0x9F:
			size, sep = 3, rune(0x2400)|rune(s[i+2]-0x80)
		}
		if afterSep && (c == '\n' || c == '\r') {
			i++
			if c == '\r' && i < len(s) && s[i] == '\n' {
				i++
			}
			afterSep = false
			start = i
			continue
		}
		afterSep = false
		switch {
		case sep == 0:
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			sawAny = true
		case isEscape(sep):
			if i+size == len(s) {
				// a trailing escape escapes nothing; keep it as data
				i += size
				sawAny = true
				continue
			}
			_, n := utf8.DecodeRuneInString(s[i+size:])
			esc = append(esc, s[start:i]...)
			esc = append(esc, s[i+size:i+size+n]...)
			escaped = true
			i += size + n
			start = i
			sawAny = true
		case isUnitSep(sep):
			units = append(units, unit(i))
			i += size
			start = i
			afterSep, sawAny = true, true
		default: // a record separator
			units = append(units, unit(i))
			i += size
			start = i
			afterSep = true
			if len(units) == 1 && units[0] == "" && !sawAny {
				units = units[:0] // an empty record carries nothing
				continue
			}
			out = append(out, units)
			units, sawAny = nil, false
		}
		if i-start+len(esc) > maxUnitSize {
			// Reader's error, with its record number and offset
			return NewReader(strings.NewReader(s)).ReadAll()
		}
	}
	if sawAny {
		out = append(out, append(units, unit(len(s))))
	}
	return out, nil
}
