package pgsql

import "strings"

// ArrayToList converts a PostgreSQL array literal ({1,"a b",NULL}, nested
// {{1,2},{3,4}}) into DuckDB's list literal (["1", "a b", NULL]). Every
// element is double-quoted, so DuckDB's cast to the list's element type sees
// exactly the element's text; an unquoted NULL stays NULL. It reports false
// for anything that is not a well-formed array literal (including explicit
// bounds such as [0:1]={1,2}).
func ArrayToList(s string) (string, bool) {
	p := arrayParser{s: s}
	var b strings.Builder
	p.skipSpace()
	if !p.array(&b) {
		return "", false
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return "", false
	}
	return b.String(), true
}

// QuoteListElement double-quotes one element of a DuckDB list literal.
func QuoteListElement(s string) string {
	var b strings.Builder
	writeListElement(&b, s)
	return b.String()
}

func writeListElement(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
}

type arrayParser struct {
	s string
	i int
}

func isArraySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func (p *arrayParser) skipSpace() {
	for p.i < len(p.s) && isArraySpace(p.s[p.i]) {
		p.i++
	}
}

// array parses {elem, ...} at p.i (as PostgreSQL's array_in does) and
// writes the DuckDB list.
func (p *arrayParser) array(b *strings.Builder) bool {
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return false
	}
	p.i++
	b.WriteByte('[')
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		b.WriteByte(']')
		return true
	}
	for n := 0; ; n++ {
		if n > 0 {
			b.WriteString(", ")
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case '{':
			if !p.array(b) {
				return false
			}
		case '"':
			p.i++
			var el strings.Builder
			for closed := false; !closed; {
				if p.i >= len(p.s) {
					return false
				}
				c := p.s[p.i]
				p.i++
				switch c {
				case '\\':
					if p.i >= len(p.s) {
						return false
					}
					el.WriteByte(p.s[p.i])
					p.i++
				case '"':
					closed = true
				default:
					el.WriteByte(c)
				}
			}
			writeListElement(b, el.String())
		default:
			var el strings.Builder
			escaped := 0 // length of el up to the last escaped byte: never trimmed
			for p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != '}' {
				c := p.s[p.i]
				switch c {
				case '{', '"':
					return false
				case '\\':
					p.i++
					if p.i >= len(p.s) {
						return false
					}
					el.WriteByte(p.s[p.i])
					escaped = el.Len()
					p.i++
					continue
				}
				el.WriteByte(c)
				p.i++
			}
			v := el.String()
			end := len(v)
			for end > escaped && isArraySpace(v[end-1]) {
				end--
			}
			v = v[:end]
			switch {
			case v == "":
				return false
			case escaped == 0 && strings.EqualFold(v, "NULL"):
				b.WriteString("NULL")
			default:
				writeListElement(b, v)
			}
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			b.WriteByte(']')
			return true
		default:
			return false
		}
	}
}
