package sqlserver

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// COPY ... TO STDOUT streams a query's rows to the client in PostgreSQL's
// text or CSV format: psql's \copy (query) to 'file', psycopg's copy_expert
// and cursor.copy, JDBC's CopyManager. COPY FROM STDIN is not supported:
// DHSI's data arrives through the store, not through the wire.

// copyOptions are the options of a COPY TO.
type copyOptions struct {
	csv        bool
	header     bool
	delim      string
	null       string
	quote      string
	escape     string
	forceAll   bool
	forceQuote map[string]bool
}

// classifyCopy recognises COPY {table [(columns)] | (query)} TO STDOUT
// [[WITH] (options) | legacy options] and turns it into a query.
func classifyCopy(c classified, st pgsql.Statement) classified {
	toks := c.toks
	to := pgsql.FirstTopLevel(toks, func(_ int, t pgsql.Token) bool { return t.Is("TO") || t.Is("FROM") })
	if to < 0 || to+1 >= len(toks) {
		return c // COPY t TO 'file' and friends: DuckDB's own COPY
	}
	target := toks[to+1]
	if toks[to].Is("FROM") {
		if target.Is("STDIN") {
			c.kind, c.reason = kindUnsupported, "COPY FROM STDIN is not supported: DHSI's data is loaded through its store (dhsi put), not over the wire"
		}
		return c
	}
	if !target.Is("STDOUT") {
		if target.Kind == pgsql.Ident && strings.EqualFold(target.Text, "PROGRAM") {
			c.kind, c.reason = kindUnsupported, "COPY TO PROGRAM is not supported"
		}
		return c
	}
	opts, err := parseCopyOptions(toks[to+2:])
	if err != nil {
		c.kind, c.reason = kindUnsupported, err.Error()
		return c
	}
	c.kind, c.tag, c.copy = kindCopyOut, "COPY", opts
	src := toks[1:to]
	if len(src) > 0 && src[0].Text == "(" && src[len(src)-1].Text == ")" {
		// COPY (query) TO STDOUT: the tokens between the parentheses,
		// spaces and comments included
		inner := after(st, src[0])
		cut := len(inner.Tokens)
		for i := len(inner.Tokens) - 1; i >= 0; i-- {
			if inner.Tokens[i].Pos == src[len(src)-1].Pos {
				cut = i
				break
			}
		}
		inner.Tokens = inner.Tokens[:cut]
		inner.SQL = strings.TrimSpace(pgsql.Join(inner.Tokens))
		c.inner = inner
		return c
	}
	// COPY table [(columns)] TO STDOUT reads the whole table
	cols := "*"
	name := src
	for i, t := range src {
		if t.Text == "(" {
			name = src[:i]
			cols = pgsql.Join(spaced(src[i+1 : len(src)-1]))
			break
		}
	}
	if len(name) == 0 {
		c.kind, c.reason = kindUnsupported, "COPY needs a table or a (query)"
		return c
	}
	q := "SELECT " + cols + " FROM " + pgsql.Join(name)
	if stmts := pgsql.Split(q); len(stmts) == 1 {
		c.inner = stmts[0]
	}
	return c
}

// spaced puts a space between tokens that the significant-token view lost.
func spaced(toks []pgsql.Token) []pgsql.Token {
	out := make([]pgsql.Token, 0, 2*len(toks))
	for i, t := range toks {
		if i > 0 && t.Text != "," && t.Text != "." && toks[i-1].Text != "." {
			out = append(out, pgsql.Token{Kind: pgsql.Space, Text: " "})
		}
		out = append(out, t)
	}
	return out
}

// parseCopyOptions reads both option syntaxes: WITH (FORMAT csv, HEADER)
// and the pre-9.0 one psql and older drivers still send (CSV HEADER
// DELIMITER ',').
func parseCopyOptions(toks []pgsql.Token) (copyOptions, error) {
	o := copyOptions{delim: "\t", null: `\N`, quote: `"`, forceQuote: map[string]bool{}}
	if len(toks) > 0 && toks[0].Is("WITH") {
		toks = toks[1:]
	}
	var items [][]pgsql.Token
	if len(toks) > 0 && toks[0].Text == "(" {
		if toks[len(toks)-1].Text != ")" {
			return o, fmt.Errorf("COPY options: missing )")
		}
		depth, start := 0, 1
		for i := 1; i < len(toks)-1; i++ {
			switch toks[i].Text {
			case "(":
				depth++
			case ")":
				depth--
			case ",":
				if depth == 0 {
					items = append(items, toks[start:i])
					start = i + 1
				}
			}
		}
		items = append(items, toks[start:len(toks)-1])
	} else {
		// legacy: keywords, some followed by [AS] 'value' or a column list
		for i := 0; i < len(toks); {
			j := i + 1
			switch toks[i].Upper() {
			case "DELIMITER", "NULL", "QUOTE", "ESCAPE", "ENCODING":
				if j < len(toks) && toks[j].Is("AS") {
					j++
				}
				j++
			case "FORCE":
				j++ // QUOTE or NOT NULL
				if j < len(toks) && toks[j].Is("NULL") {
					j++
				}
				for j < len(toks) && (toks[j].Text == "*" || toks[j].Kind == pgsql.Ident && !isCopyKeyword(toks[j]) || toks[j].Kind == pgsql.QIdent || toks[j].Text == ",") {
					j++
				}
			}
			if j > len(toks) {
				j = len(toks)
			}
			items = append(items, toks[i:j])
			i = j
		}
	}
	for _, it := range items {
		if len(it) == 0 {
			continue
		}
		name := strings.ToUpper(it[0].Text)
		rest := it[1:]
		if len(rest) > 0 && rest[0].Is("AS") {
			rest = rest[1:]
		}
		if name == "FORCE" && len(rest) > 0 {
			name, rest = "FORCE_"+strings.ToUpper(rest[0].Text), rest[1:]
			if name == "FORCE_NOT" && len(rest) > 0 {
				name, rest = "FORCE_NOT_NULL", rest[1:]
			}
		}
		val := ""
		if len(rest) > 0 {
			val = unquoteCopyValue(rest[0])
		}
		switch name {
		case "FORMAT":
			switch strings.ToLower(val) {
			case "text":
			case "csv":
				o.csv = true
			case "binary":
				return o, fmt.Errorf("COPY in binary format is not supported; use FORMAT text or csv")
			default:
				return o, fmt.Errorf("COPY format %q not recognized", val)
			}
		case "CSV":
			o.csv = true
		case "BINARY":
			return o, fmt.Errorf("COPY in binary format is not supported; use FORMAT text or csv")
		case "HEADER":
			switch strings.ToLower(val) {
			case "", "true", "on", "1":
				o.header = true
			case "false", "off", "0":
				o.header = false
			default:
				return o, fmt.Errorf("COPY HEADER %q is not supported", val)
			}
		case "DELIMITER":
			o.delim = val
		case "NULL":
			o.null = val
		case "QUOTE":
			o.quote = val
		case "ESCAPE":
			o.escape = val
		case "ENCODING":
			if v := strings.ToUpper(strings.ReplaceAll(val, "-", "")); v != "UTF8" && v != "UNICODE" {
				return o, fmt.Errorf("COPY encoding %q is not supported; the server sends UTF8", val)
			}
		case "FORCE_QUOTE":
			for _, t := range rest {
				switch {
				case t.Text == "*":
					o.forceAll = true
				case t.Kind == pgsql.Ident || t.Kind == pgsql.QIdent:
					o.forceQuote[t.IdentName()] = true
				}
			}
		case "FORCE_NOT_NULL", "FORCE_NULL", "FREEZE", "OIDS":
			// options of COPY FROM, or ignored
		default:
			return o, fmt.Errorf("COPY option %q is not supported", it[0].Text)
		}
	}
	if !o.csv && o.null == `\N` && o.delim == "" {
		o.delim = "\t"
	}
	if o.csv {
		if o.delim == "\t" {
			o.delim = ","
		}
		if o.null == `\N` {
			o.null = ""
		}
	}
	if len(o.delim) != 1 {
		return o, fmt.Errorf("COPY delimiter must be a single one-byte character")
	}
	if o.escape == "" {
		o.escape = o.quote
	}
	if o.csv && (len(o.quote) != 1 || len(o.escape) != 1) {
		return o, fmt.Errorf("COPY quote and escape must be single one-byte characters")
	}
	return o, nil
}

func isCopyKeyword(t pgsql.Token) bool {
	switch t.Upper() {
	case "CSV", "HEADER", "DELIMITER", "NULL", "QUOTE", "ESCAPE", "FORCE", "ENCODING", "BINARY":
		return true
	}
	return false
}

func unquoteCopyValue(t pgsql.Token) string {
	s := t.Text
	switch {
	case t.Kind == pgsql.String && len(s) >= 2 && s[0] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	case t.Kind == pgsql.String && len(s) >= 3 && (s[0] == 'E' || s[0] == 'e'):
		body := strings.ReplaceAll(s[2:len(s)-1], "''", "'")
		r := strings.NewReplacer(`\t`, "\t", `\n`, "\n", `\r`, "\r", `\\`, `\`, `\'`, "'")
		return r.Replace(body)
	case t.Kind == pgsql.QIdent:
		return t.IdentName()
	}
	return strings.ToLower(s)
}

// runCopyOut runs the COPY's query and streams its rows as CopyData.
func (s *session) runCopyOut(ctx context.Context, pt *portal) error {
	c := pt.stmt.class
	inner := pt.stmt.inner
	if inner == nil || !inner.returnsRows {
		return pgErrorf(codes.FeatureNotSupported, "COPY TO STDOUT needs a table or a query that returns rows")
	}
	qp := &portal{stmt: inner, params: pt.params}
	defer s.closePortalResult(qp)
	if _, err := s.openPortal(ctx, qp); err != nil {
		return err
	}
	o := c.copy
	colFormats := make([]uint16, len(inner.cols))
	s.send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: colFormats})
	var line []byte
	if o.header {
		for i, col := range inner.cols {
			if i > 0 {
				line = append(line, o.delim...)
			}
			line = o.appendField(line, []byte(col.name), col.name)
		}
		line = append(line, '\n')
		s.send(&pgproto3.CopyData{Data: line})
	}
	loc := s.settings.location()
	dest := make([]driver.Value, len(inner.cols))
	var val []byte
	var n int64
	for {
		err := qp.rows.Next(dest)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		line = line[:0]
		for i, v := range dest {
			if i > 0 {
				line = append(line, o.delim...)
			}
			if v == nil {
				line = append(line, o.null...)
				continue
			}
			val, err = inner.cols[i].typ.encodeText(val[:0], v, loc)
			if err != nil {
				return fmt.Errorf("encode column %q: %w", inner.cols[i].name, err)
			}
			line = o.appendField(line, val, inner.cols[i].name)
		}
		line = append(line, '\n')
		// CopyData is sent before the next row overwrites line
		s.send(&pgproto3.CopyData{Data: line})
		n++
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.send(&pgproto3.CopyDone{})
	s.complete(pt, "COPY "+itoa(n))
	return nil
}

// appendField appends one non-NULL value in the COPY format.
func (o *copyOptions) appendField(dst, val []byte, column string) []byte {
	if !o.csv {
		// text format: backslash escapes for the characters that would end
		// the field or the row
		for _, b := range val {
			switch b {
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\v':
				dst = append(dst, '\\', 'v')
			default:
				if b == o.delim[0] {
					dst = append(dst, '\\')
				}
				dst = append(dst, b)
			}
		}
		return dst
	}
	q, e := o.quote[0], o.escape[0]
	quote := o.forceAll || o.forceQuote[column] || string(val) == o.null
	if !quote {
		for _, b := range val {
			if b == o.delim[0] || b == q || b == '\n' || b == '\r' {
				quote = true
				break
			}
		}
	}
	if !quote {
		return append(dst, val...)
	}
	dst = append(dst, q)
	for _, b := range val {
		if b == q || b == e {
			dst = append(dst, e)
		}
		dst = append(dst, b)
	}
	return append(dst, q)
}
