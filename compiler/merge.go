package compiler

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/dhsi/dhsi/usv"
)

// Field names the compiler itself relies on; every other field is carried.
const (
	DomainField    = "domain"
	UpdatedAtField = "updated_at"
)

// Table is one USV file: its header (field names) and its records.
type Table struct {
	Header []string
	Rows   [][]string
	// recordNo[i] is Rows[i]'s number in the file it was read from (the
	// header is 1), when records were left out; nil: i+2
	recordNo []int
}

// ParseTable reads a USV file whose first record is the header.
//
// It reads both forms writers use (docs/format/usv.md): the separated form
// DHSI has written (a␟b␞c␟d␞) and the specification's terminated form, in
// which every unit ends with ␟ (a␟b␟␞c␟d␟␞), record by record, so a file may
// mix them. A record whose text ends with ␟ before its ␞ has two readings:
// its units as separated (the last one empty) or as terminated (one fewer).
// The header decides its own: field names are never empty, so only the
// terminated reading of a terminated header is valid. Every other record
// must have as many units as the header, and its two readings differ by one
// unit, so at most one fits: the file is never ambiguous, and a record that
// neither reading fits is an error naming both counts, never a guess.
//
// A leading UTF-8 byte-order mark (what some Windows tools write) is not
// part of the first field name: it is dropped.
func ParseTable(b []byte) (Table, error) {
	t, problems, err := parseRecords(b)
	if err != nil {
		return Table{}, err
	}
	if len(problems) > 0 {
		return Table{}, errors.New(JoinProblems(problems))
	}
	return t, nil
}

// parseRecords is ParseTable that keeps the records that fit the header:
// err is for a file with no valid header, problems name each record that
// neither reading fits (left out of t).
func parseRecords(b []byte) (t Table, problems []Problem, err error) {
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	recs, err := usv.ParseBytes(b)
	if err != nil {
		return Table{}, nil, err
	}
	if len(recs) == 0 {
		return Table{}, nil, fmt.Errorf("empty file: no header record")
	}
	header := recs[0]
	if term, ok := terminatedReading(header); ok {
		header = term // the separated reading names an empty field
	}
	t = Table{Header: header, Rows: make([][]string, 0, len(recs)-1)}
	seen := map[string]bool{}
	for _, h := range t.Header {
		if h == "" {
			return Table{}, nil, fmt.Errorf("header has an empty field name")
		}
		if seen[h] {
			return Table{}, nil, fmt.Errorf("header names field %q twice", h)
		}
		seen[h] = true
	}
	for i, r := range recs[1:] {
		switch term, ok := terminatedReading(r); {
		case len(r) == len(t.Header):
			t.Rows = append(t.Rows, r)
			t.recordNo = append(t.recordNo, i+2)
		case ok && len(term) == len(t.Header):
			t.Rows = append(t.Rows, term)
			t.recordNo = append(t.recordNo, i+2)
		case ok:
			problems = append(problems, Problem{Record: i + 2, Reason: fmt.Sprintf("has %d units (%d if its last ␟ ends a unit), header has %d", len(r), len(term), len(t.Header))})
		default:
			problems = append(problems, Problem{Record: i + 2, Reason: fmt.Sprintf("has %d units, header has %d", len(r), len(t.Header))})
		}
	}
	if len(problems) == 0 {
		t.recordNo = nil // record i is i+2
	}
	return t, problems, nil
}

// terminatedReading is a record's reading in the terminated form: when its
// text ended with ␟ before ␞ (the reader returned a last, empty unit), the
// units without that empty one.
func terminatedReading(units []string) ([]string, bool) {
	if len(units) > 1 && units[len(units)-1] == "" {
		return units[:len(units)-1], true
	}
	return nil, false
}

// Encode writes the table as canonical USV.
func (t Table) Encode(w io.Writer) error {
	uw := usv.NewWriter(w)
	if err := uw.Write(t.Header); err != nil {
		return err
	}
	for _, r := range t.Rows {
		if err := uw.Write(r); err != nil {
			return err
		}
	}
	return uw.Flush()
}

// RecordNo is the number of Rows[i] in the file it was read from, the
// header being record 1.
func (t Table) RecordNo(i int) int {
	if t.recordNo != nil {
		return t.recordNo[i]
	}
	return i + 2
}

// column returns the index of a field in the header, or -1.
func (t Table) column(name string) int {
	for i, h := range t.Header {
		if h == name {
			return i
		}
	}
	return -1
}

// ParseTimestamp reads updated_at: RFC 3339 (with a zone or Z), or the same
// with a space for the T; a value without a zone is UTC.
func ParseTimestamp(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// version is one record competing for its domain.
type version struct {
	units   []string // aligned to the output header
	updated time.Time
	valid   bool // updated_at parsed
}

// newer reports whether a beats b under the merge rule of the package
// comment; k is the number of schema fields at the front of the units.
func newer(a, b version, k int) bool {
	if a.valid != b.valid {
		return a.valid
	}
	if a.valid && !a.updated.Equal(b.updated) {
		return a.updated.After(b.updated)
	}
	if ta, tb := TieBreakKey(a.units[:k]), TieBreakKey(b.units[:k]); ta != tb {
		return ta > tb
	}
	// equal in every schema field: the extra columns decide, which no
	// reader can observe (views show schema fields only)
	return TieBreakKey(a.units[k:]) > TieBreakKey(b.units[k:])
}

// TieBreakKey is the value compared when two records of a domain have the
// same updated_at: the schema fields' units, in schema order, joined by
// U+241F. The server's "domains" view orders by the same key.
func TieBreakKey(units []string) string { return strings.Join(units, "\u241F") }

// OutputHeader is the header of a merged shard: the schema's fields in
// schema order, then any other field seen in the inputs, sorted, so no
// input column is ever dropped.
func OutputHeader(schemaFields []string, inputs ...Table) []string {
	out := append([]string(nil), schemaFields...)
	have := map[string]bool{}
	for _, f := range out {
		have[f] = true
	}
	var extra []string
	for _, in := range inputs {
		for _, h := range in.Header {
			if !have[h] {
				have[h] = true
				extra = append(extra, h)
			}
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// Merge computes a shard from the current shard and inbox tables: one
// record per domain under the merge rule, sorted by domain. It is pure.
// Every input must have domain and updated_at columns (the record rule,
// rule.go, checks inbox tables before they get here); shard rows with an empty domain are
// carried through unchanged at the front, never dropped.
//
// The first schemaFields columns of header are the schema's fields (see
// OutputHeader); they alone decide ties that no reader could otherwise
// reproduce.
func Merge(header []string, schemaFields int, inputs ...Table) (Table, error) {
	di := indexOf(header, DomainField)
	ui := indexOf(header, UpdatedAtField)
	if di < 0 || ui < 0 {
		return Table{}, fmt.Errorf("output header lacks %q or %q", DomainField, UpdatedAtField)
	}
	if schemaFields < 0 || schemaFields > len(header) {
		return Table{}, fmt.Errorf("schema field count %d out of range", schemaFields)
	}
	best := map[string]version{}
	var orphans [][]string
	for _, in := range inputs {
		pos := make([]int, len(header)) // output column → input column
		for i, h := range header {
			pos[i] = in.column(h)
		}
		for _, row := range in.Rows {
			units := make([]string, len(header))
			for i, p := range pos {
				if p >= 0 {
					units[i] = row[p]
				}
			}
			d := units[di]
			if d == "" {
				orphans = append(orphans, units)
				continue
			}
			t, ok := ParseTimestamp(units[ui])
			v := version{units: units, updated: t, valid: ok}
			if cur, seen := best[d]; !seen || newer(v, cur, schemaFields) {
				best[d] = v
			}
		}
	}
	domains := make([]string, 0, len(best))
	for d := range best {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	out := Table{Header: header, Rows: orphans}
	for _, d := range domains {
		out.Rows = append(out.Rows, best[d].units)
	}
	return out, nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
