package tableschema

import (
	"fmt"
	"regexp"
	"strings"
)

// pattern is a compiled strptime format, the custom format of date, time
// and datetime fields. It follows Python's time.strptime, which the Table
// Schema specification names: each directive becomes a regular-expression
// group, whitespace in the format matches one or more whitespace
// characters, and the whole value must match. Go's RE2 prefers the same
// alternatives a backtracking engine would, so "%Y%m%d" splits "2024115"
// as Python does.
type pattern struct {
	format string
	source string // the RE2 expression, unanchored; DuckDBCast reuses it as a guard
	re     *regexp.Regexp
	groups []byte // the directive letter of each capture group
	zone   bool   // %z or %Z present
	// packed: two directives meet with no literal between them (%Y%m%d).
	// Python's regex backtracks there ("202415" is 2024-01-05); DuckDB's
	// strptime does not, so DuckDBCast splits such values itself.
	packed bool
}

// directive returns the text a supported directive accepts: Python's
// expressions, except that %S stops at 59 (Python's datetime refuses leap
// seconds too), %z needs an explicit ±hhmm or ±hh:mm (DuckDB's %z does not
// read "Z"; write a literal Z in the format instead), and %Z knows only UTC
// and GMT (anything else would need a time-zone database).
func directive(d byte) (string, bool) {
	switch d {
	case 'd':
		return `3[01]|[12][0-9]|0[1-9]|[1-9]`, true
	case 'f':
		return `[0-9]{1,6}`, true
	case 'H':
		return `2[0-3]|[01][0-9]|[0-9]`, true
	case 'I', 'm':
		return `1[0-2]|0[1-9]|[1-9]`, true
	case 'j':
		return `36[0-6]|3[0-5][0-9]|[12][0-9][0-9]|0[1-9][0-9]|00[1-9]|[1-9][0-9]|0[1-9]|[1-9]`, true
	case 'M', 'S':
		return `[0-5][0-9]|[0-9]`, true
	case 'y':
		return `[0-9][0-9]`, true
	case 'Y':
		return `[0-9]{4}`, true
	case 'z':
		return `[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9]`, true
	case 'Z':
		return `UTC|GMT`, true
	case 'b':
		return `(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)`, true
	case 'B':
		return `(?i:` + strings.Join(monthNames(), "|") + `)`, true
	case 'a':
		return `(?i:mon|tue|wed|thu|fri|sat|sun)`, true
	case 'A':
		return `(?i:monday|tuesday|wednesday|thursday|friday|saturday|sunday)`, true
	case 'p':
		return `(?i:am|pm)`, true
	}
	return "", false
}

const supportedDirectives = "%a %A %b %B %d %f %H %I %j %m %M %p %S %y %Y %z %Z %%"

func compilePattern(format string) (*pattern, error) {
	p := &pattern{format: format}
	var b strings.Builder
	seen := map[byte]bool{}
	afterDirective := false
	for i := 0; i < len(format); i++ {
		ch := format[i]
		wasAfter := afterDirective
		afterDirective = false
		switch {
		case ch == '%':
			if i+1 == len(format) {
				return nil, fmt.Errorf("format %q ends with a lone %%", format)
			}
			i++
			d := format[i]
			if d == '%' {
				b.WriteString("%")
				continue
			}
			src, ok := directive(d)
			if !ok {
				return nil, fmt.Errorf("format %q: unsupported directive %%%c (supported: %s)", format, d, supportedDirectives)
			}
			if seen[d] {
				return nil, fmt.Errorf("format %q: directive %%%c appears twice", format, d)
			}
			seen[d] = true
			b.WriteString("(" + src + ")")
			p.groups = append(p.groups, d)
			p.packed = p.packed || wasAfter
			afterDirective = true
			p.zone = p.zone || d == 'z' || d == 'Z'
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v':
			for i+1 < len(format) && strings.IndexByte(" \t\n\r\f\v", format[i+1]) >= 0 {
				i++
			}
			b.WriteString(`\s+`)
		default:
			// Copy the whole UTF-8 sequence, quoted, so a literal "." or
			// "(" in the format means itself.
			j := i + 1
			for j < len(format) && format[j]&0xC0 == 0x80 {
				j++
			}
			b.WriteString(regexp.QuoteMeta(format[i:j]))
			i = j - 1
		}
	}
	if len(p.groups) == 0 {
		return nil, fmt.Errorf("format %q has no directive (supported: %s)", format, supportedDirectives)
	}
	p.source = b.String()
	re, err := regexp.Compile(`^(?:` + p.source + `)$`)
	if err != nil {
		return nil, fmt.Errorf("format %q: %w", format, err)
	}
	p.re = re
	return p, nil
}

func monthNames() []string {
	return []string{"january", "february", "march", "april", "may", "june", "july",
		"august", "september", "october", "november", "december"}
}

// parse reads s. Unset parts default as in Python: 1900-01-01 00:00:00,
// UTC. %j (day of the year) overrides %m and %d; %I reads a 12-hour clock,
// as AM unless %p says PM.
func (p *pattern) parse(s string) (civil, bool) {
	m := p.re.FindStringSubmatch(s)
	if m == nil {
		return civil{}, false
	}
	c := civil{year: 1900, month: 1, day: 1}
	yday, hour12, pm := 0, -1, false
	for i, d := range p.groups {
		v := m[i+1]
		switch d {
		case 'Y':
			c.year = atoi(v)
		case 'y':
			// POSIX pivot, as Python and DuckDB: 69-99 are 1900s.
			c.year = atoi(v) + 2000
			if c.year >= 2069 {
				c.year -= 100
			}
		case 'm':
			c.month = atoi(v)
		case 'b', 'B':
			for k, name := range monthNames() {
				if strings.HasPrefix(name, strings.ToLower(v)) {
					c.month = k + 1
					break
				}
			}
		case 'd':
			c.day = atoi(v)
		case 'j':
			yday = atoi(v)
		case 'H':
			c.hour = atoi(v)
		case 'I':
			hour12 = atoi(v)
		case 'p':
			pm = strings.EqualFold(v, "pm")
		case 'M':
			c.min = atoi(v)
		case 'S':
			c.sec = atoi(v)
		case 'f':
			c.nsec = fraction(v)
		case 'z':
			parseOffset(&c, v)
		case 'Z':
			// UTC and GMT, the only names accepted, are offset 0.
		}
	}
	if hour12 >= 0 {
		c.hour = hour12 % 12
		if pm {
			c.hour += 12
		}
	}
	if yday > 0 {
		days := 365
		if daysIn(c.year, 2) == 29 {
			days = 366
		}
		if yday > days {
			return civil{}, false
		}
		t := civil{year: c.year, month: 1, day: 1}.date().AddDate(0, 0, yday-1)
		c.month, c.day = int(t.Month()), t.Day()
	}
	return c, c.validDate()
}
