package sqlserver

import (
	"context"
	"database/sql/driver"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// SQL cursors (DECLARE, FETCH, MOVE, CLOSE) are portals, as in PostgreSQL:
// psycopg's server-side cursors DECLARE one, then read it with FETCH in
// simple queries and describe it with a protocol-level Describe of the
// cursor's name. Results are held by DuckDB, so a cursor costs no re-run.

// classifyDeclare parses DECLARE name [BINARY] [ASENSITIVE | INSENSITIVE]
// [[NO] SCROLL] CURSOR [{WITH | WITHOUT} HOLD] FOR query.
func classifyDeclare(c classified, st pgsql.Statement) classified {
	toks := c.toks
	if len(toks) < 2 || (toks[1].Kind != pgsql.Ident && toks[1].Kind != pgsql.QIdent) {
		return c // DuckDB reports the syntax error
	}
	c.kind, c.tag, c.param = kindDeclare, "DECLARE CURSOR", toks[1].IdentName()
	i := 2
	for ; i < len(toks) && !toks[i].Is("FOR"); i++ {
		switch {
		case toks[i].Is("BINARY"):
			c.binary = true
		case toks[i].Is("HOLD"):
			c.hold = i > 0 && toks[i-1].Is("WITH")
		case toks[i].Is("SCROLL") && !toks[i-1].Is("NO"):
			c.kind, c.reason = kindUnsupported, "scrollable cursors are not supported; declare the cursor NO SCROLL"
			return c
		}
	}
	if i >= len(toks)-1 {
		c.kind, c.reason = kindUnsupported, "DECLARE CURSOR needs FOR and a query"
		return c
	}
	c.inner = after(st, toks[i])
	return c
}

// classifyFetch parses FETCH and MOVE: [NEXT | FORWARD [n | ALL] | n | ALL]
// [FROM | IN] name. Only forward movement is supported: DuckDB results are
// read once.
func classifyFetch(c classified) classified {
	toks := c.toks[1:]
	c.kind, c.count, c.move = kindFetch, 1, c.toks[0].Is("MOVE")
	if len(toks) == 0 {
		c.kind, c.reason = kindUnsupported, "FETCH needs a cursor name"
		return c
	}
	name := toks[len(toks)-1]
	c.param = name.IdentName()
	dir := toks[:len(toks)-1]
	if len(dir) > 0 && (dir[len(dir)-1].Is("FROM") || dir[len(dir)-1].Is("IN")) {
		dir = dir[:len(dir)-1]
	}
	if len(dir) > 0 && (dir[0].Is("FORWARD") || dir[0].Is("NEXT")) {
		dir = dir[1:]
	}
	switch {
	case len(dir) == 0:
	case len(dir) == 1 && dir[0].Is("ALL"):
		c.count = 0
	case len(dir) == 1 && dir[0].Kind == pgsql.Number:
		n, err := strconv.ParseInt(dir[0].Text, 10, 64)
		if err != nil || n < 0 {
			c.kind, c.reason = kindUnsupported, "only forward fetches are supported (FETCH n with n >= 0)"
			return c
		}
		c.count = n
		if n == 0 {
			c.count = -1 // FETCH 0 re-reads the current row in PostgreSQL; DHSI returns none
		}
	default:
		c.kind, c.reason = kindUnsupported, "only forward fetches are supported: FETCH [FORWARD] [n | ALL] FROM cursor"
	}
	return c
}

// classifyCloseCursor parses CLOSE name | CLOSE ALL.
func classifyCloseCursor(c classified) classified {
	c.kind, c.tag = kindCloseCursor, "CLOSE CURSOR"
	if len(c.toks) != 2 {
		c.kind, c.reason = kindUnsupported, "CLOSE needs a cursor name or ALL"
		return c
	}
	c.param = c.toks[1].IdentName()
	if c.toks[1].Is("ALL") {
		c.param, c.tag = "", "CLOSE CURSOR ALL"
	}
	return c
}

// after returns the part of st that follows the significant token t.
func after(st pgsql.Statement, t pgsql.Token) pgsql.Statement {
	for i, tok := range st.Tokens {
		if tok.Pos == t.Pos && tok.Text == t.Text {
			rest := st.Tokens[i+1:]
			return pgsql.Statement{SQL: strings.TrimSpace(pgsql.Join(rest)), Tokens: rest}
		}
	}
	return pgsql.Statement{}
}

// prepareFetch describes a FETCH by its cursor's columns, which PostgreSQL
// also requires to exist when the FETCH is parsed.
func (s *session) prepareFetch(p *prepared) error {
	cur, ok := s.portals[p.class.param]
	if !ok || !cur.cursor {
		return pgErrorf(codes.InvalidCursorName, "cursor %q does not exist", p.class.param)
	}
	if !p.class.move && cur.stmt.returnsRows {
		// a copy: the query's columns get their origins in place at its
		// first Describe, which drops only the query's RowDescription
		// (sendRowDescription)
		p.returnsRows, p.cols, p.formats = true, slices.Clone(cur.stmt.cols), cur.formats
	}
	return nil
}

// runDeclare opens the cursor: a portal named after it, bound to the query
// and the DECLARE's parameters. The query runs at the first FETCH.
func (s *session) runDeclare(ctx context.Context, pt *portal) error {
	c := pt.stmt.class
	if s.tx == txIdle && !c.hold {
		return pgErrorf(codes.NoActiveSQLTransaction, "DECLARE CURSOR can only be used in transaction blocks")
	}
	if _, exists := s.portals[c.param]; exists {
		return pgErrorf(codes.DuplicateCursor, "cursor %q already exists", c.param)
	}
	inner := pt.stmt.inner
	if inner == nil || !inner.returnsRows {
		return pgErrorf(codes.InvalidCursorDefinition, "cursor %q does not return rows: DECLARE needs a SELECT", c.param)
	}
	cur := &portal{name: c.param, stmt: inner, params: pt.params, bound: true, cursor: true, hold: c.hold}
	if c.binary {
		cur.formats = []int16{1}
	}
	inner.refs++
	s.portals[c.param] = cur
	s.complete(pt, c.tag)
	return nil
}

// runFetch sends the cursor's next rows (FETCH) or skips them (MOVE).
func (s *session) runFetch(ctx context.Context, pt *portal) error {
	c := pt.stmt.class
	cur, ok := s.portals[c.param]
	if !ok || !cur.cursor {
		return pgErrorf(codes.InvalidCursorName, "cursor %q does not exist", c.param)
	}
	verb := "FETCH"
	if c.move {
		verb = "MOVE"
	}
	if cur.rows == nil && !cur.done {
		if _, err := s.openPortal(ctx, cur); err != nil {
			return err
		}
	}
	var n int64
	if cur.rows != nil && c.count >= 0 {
		var more bool
		var err error
		if c.move {
			n, more, err = s.skipRows(cur, c.count)
		} else {
			formats := pt.formats
			if !pt.bound { // a simple query: the cursor's own format
				formats = cur.formats
			}
			n, more, err = s.sendRows(cur, c.count, formats)
		}
		if err != nil {
			return err
		}
		if !more {
			// the cursor stays open, at its end, until CLOSE
			s.closePortalResult(cur)
			cur.done = true
		}
	}
	s.complete(pt, verb+" "+itoa(n))
	return nil
}

// skipRows reads and drops up to max rows (all when max is 0), for MOVE.
func (s *session) skipRows(pt *portal, max int64) (int64, bool, error) {
	dest := make([]driver.Value, len(pt.stmt.cols))
	var n int64
	for max == 0 || n < max {
		if err := pt.rows.Next(dest); err != nil {
			if err == io.EOF {
				return n, false, nil
			}
			return n, false, err
		}
		n++
	}
	return n, true, nil
}

func (s *session) runCloseCursor(pt *portal) error {
	c := pt.stmt.class
	if c.param == "" {
		for _, p := range s.portals {
			if p.cursor {
				s.closePortal(p)
			}
		}
	} else {
		cur, ok := s.portals[c.param]
		if !ok || !cur.cursor {
			return pgErrorf(codes.InvalidCursorName, "cursor %q does not exist", c.param)
		}
		s.closePortal(cur)
	}
	s.complete(pt, "CLOSE CURSOR")
	return nil
}
