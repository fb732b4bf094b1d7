package sqlserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// P6, a bound on what a non-admin's statement expands to through DuckDB's
// built-in macros and its own NOT MATERIALIZED CTEs.
//
// P5 bounds the session's TEMP views and macros; DuckDB's binder copies
// more than those. A built-in macro copies an argument into each place its
// definition names the parameter (nullif(a, b) is CASE WHEN a = b THEN
// NULL ELSE a END), so nesting doubles the binder's work with every level;
// a NOT MATERIALIZED CTE is copied wherever it is named. Measured as a
// reader with statement_timeout 2 s: nullif nested 14 deep took 1.7 s, 18
// deep 37 s, 19 deep ended in 53200 after 41 s at the memory limit, with a
// cancel taking no effect; a chain of 18 NOT MATERIALIZED CTEs, each a
// UNION ALL of the one before twice, 24.5 s. Text of 300 bytes to 1.3 KB,
// under every other limit.
//
//	P6. A non-admin's statement may expand to at most maxTempExpansion
//	    tokens, counting each call of a built-in or TEMP macro as its
//	    definition's tokens (expanded) plus, for each argument, the
//	    argument's own expansion times the copies of that parameter in the
//	    expanded definition, and each name of a NOT MATERIALIZED CTE as
//	    that CTE's expansion (a CTE met again while its own expansion is
//	    counted, a recursive one, counts as a name). A TEMP macro's
//	    definition only grows, as in P5. (CREATE TEMP MACRO m(x) AS x + x
//	    doubles with each m( nested, which P5, counting names, does not.)
//
// DuckDB materializes a CTE named more than once unless told not to
// (measured: 14 levels of such a chain in 4 ms, 1.2 s NOT MATERIALIZED),
// so only those are counted.

// macroCost is what a call of a built-in macro copies.
type macroCost struct {
	body int   // tokens of the definition
	uses []int // per parameter, the times the definition names it
}

func (e *Engine) builtinMacros(ctx context.Context) (map[string]macroCost, error) {
	return e.macros.get(func() (map[string]macroCost, error) {
		rows, err := e.db.QueryContext(ctx, `SELECT lower(function_name), array_to_string(parameters, chr(31)), macro_definition
			FROM duckdb_functions() WHERE function_type = 'macro' AND macro_definition IS NOT NULL`)
		if err != nil {
			return nil, fmt.Errorf("list macros: %w", err)
		}
		defer rows.Close()
		m := map[string]macroCost{}
		for rows.Next() {
			var name, params, def string
			if err := rows.Scan(&name, &params, &def); err != nil {
				return nil, err
			}
			toks := pgsql.Significant(pgsql.Lex(def))
			counts := identCounts(toks)
			c := m[name] // overloads: the most of each
			c.body = max(c.body, len(toks))
			for i, p := range strings.Split(params, "\x1f") {
				if p == "" {
					continue
				}
				for len(c.uses) <= i {
					c.uses = append(c.uses, 0)
				}
				c.uses[i] = max(c.uses[i], counts[strings.ToLower(p)])
			}
			m[name] = c
		}
		return m, rows.Err()
	})
}

// builtinExpansionCheck applies P6 to toks (significant tokens).
func (s *session) builtinExpansionCheck(ctx context.Context, toks []pgsql.Token) error {
	macros, err := s.srv.engine.builtinMacros(ctx)
	if err != nil {
		return err
	}
	x := expansion{toks: toks, macros: macros, temps: s.tempMacros, ctes: notMaterializedCTEs(toks)}
	if x.size(0, len(toks), "") > maxTempExpansion {
		return pgErrorf(codes.StatementTooComplex, "statement too complex: it expands to more than %d tokens through macros or NOT MATERIALIZED CTEs (DuckDB copies an argument into each place a macro names it, a CTE wherever it is named, before statement_timeout applies)", maxTempExpansion)
	}
	return nil
}

// noteTempMacro records what a call of the TEMP macro being created
// copies (P6): its body, "(params) AS expression", as it expands.
func (s *session) noteTempMacro(ctx context.Context, name string, body []pgsql.Token) error {
	args, end := pgsql.CallArgs(body, 0)
	if len(body) == 0 || body[0].Text != "(" || end < 0 || end+1 >= len(body) || !body[end+1].Is("AS") {
		return nil // not a macro of one expression (a table macro, a syntax error)
	}
	macros, err := s.srv.engine.builtinMacros(ctx)
	if err != nil {
		return err
	}
	expr := body[end+2:]
	x := expansion{toks: expr, macros: macros, temps: s.tempMacros, ctes: notMaterializedCTEs(expr)}
	c := macroCost{body: x.size(0, len(expr), "")}
	for _, a := range args {
		param := ""
		for _, t := range body[a[0]:a[1]] {
			if n, ok := identName(t); ok {
				param = n // a default (p := v) names the parameter first
				break
			}
		}
		x.cteSizes = nil
		c.uses = append(c.uses, x.size(0, len(expr), param))
	}
	if s.tempMacros == nil {
		s.tempMacros = map[string]macroCost{}
	}
	old, had := s.tempMacros[name] // definitions only grow (P5)
	grew := !had || c.body > old.body || len(c.uses) > len(old.uses)
	c.body = max(c.body, old.body)
	for i := range c.uses {
		if i < len(old.uses) {
			grew = grew || c.uses[i] > old.uses[i]
			c.uses[i] = max(c.uses[i], old.uses[i])
		}
	}
	for i := len(c.uses); i < len(old.uses); i++ {
		c.uses = append(c.uses, old.uses[i])
	}
	s.tempMacros[name] = c
	if grew {
		s.tempsVersion++ // statements prepared before are checked again
	}
	return nil
}

type expansion struct {
	toks          []pgsql.Token
	macros, temps map[string]macroCost
	ctes          map[string]cteDef
	cteSizes      map[string]int // memo; -1 while being counted
}

type cteDef struct {
	at   int    // the token of its name in its definition
	body [2]int // its body's tokens
}

const tooManyTokens = maxTempExpansion + 1

// size is what toks[lo:hi] expand to, capped at tooManyTokens: all their
// tokens when param is "", else the copies of the identifier param.
// last is the size of the term just counted (a name, a literal, a
// parenthesized group, a call), which a method call x.f(...) passes as the
// first argument, as DuckDB does.
func (x *expansion) size(lo, hi int, param string) int {
	n, last := 0, 0
	for k := lo; k < hi && n <= maxTempExpansion; k++ {
		t := x.toks[k]
		switch {
		case t.Text == "(":
			_, end := pgsql.CallArgs(x.toks, k)
			if end < 0 || end >= hi {
				break
			}
			g := x.size(k+1, end, param)
			if param == "" {
				g += 2
			}
			n, last, k = n+g, g, end
			continue
		case t.Text == "." && k+2 < hi && x.toks[k+2].Text == "(":
			if m, ok := x.macro(x.toks[k+1]); ok {
				args, end := pgsql.CallArgs(x.toks, k+2)
				if end >= 0 && end < hi {
					c := x.call(m, last, args, param)
					n, last, k = n-last+c, c, end
					continue
				}
			}
		case t.Is("CASE"):
			if c, end, ok := x.simpleCase(k, hi, param); ok {
				n, last, k = n+c, c, end
				continue
			}
		}
		name, ok := identName(t)
		if ok && k+1 < hi && x.toks[k+1].Text == "(" {
			if m, ok := x.macro(t); ok {
				args, end := pgsql.CallArgs(x.toks, k+1)
				if end >= 0 && end < hi {
					c := x.call(m, -1, args, param)
					n, last, k = n+c, c, end
					continue
				}
			}
		}
		if d, isCTE := x.ctes[name]; ok && isCTE && k != d.at {
			c := x.cteSize(name, d.body, param)
			n, last = n+c, c
			continue
		}
		last = 0
		if param == "" || ok && name == param {
			n, last = n+1, 1
		}
	}
	return min(n, tooManyTokens)
}

// macro is the macro t names, a TEMP one first.
func (x *expansion) macro(t pgsql.Token) (macroCost, bool) {
	name, ok := identName(t)
	if !ok {
		return macroCost{}, false
	}
	if m, ok := x.temps[name]; ok {
		return m, true
	}
	m, ok := x.macros[name]
	return m, ok
}

// call is what a call of m expands to: receiver, if not -1, is the size
// of the first argument written before the call (x.f(...)).
func (x *expansion) call(m macroCost, receiver int, args [][2]int, param string) int {
	n := 0
	if param == "" {
		n = m.body
	}
	uses := func(i int) int {
		if i < len(m.uses) {
			return m.uses[i]
		}
		return 1
	}
	first := 0
	if receiver >= 0 {
		n += uses(0) * receiver
		first = 1
	}
	for i, a := range args {
		n += uses(first+i) * x.size(a[0], a[1], param)
		if n > maxTempExpansion {
			return tooManyTokens
		}
	}
	return n
}

// simpleCase counts CASE operand WHEN ... END at toks[k], which DuckDB's
// parser turns into CASE WHEN operand = ... with the operand copied once
// per WHEN (measured: CASE nested 15 deep with three WHENs each took the
// server's memory past 11 GB in the parser). ok is false for a searched
// CASE (CASE WHEN ...), which copies nothing.
func (x *expansion) simpleCase(k, hi int, param string) (size, end int, ok bool) {
	if k+1 >= hi || x.toks[k+1].Is("WHEN") {
		return 0, 0, false
	}
	depth, firstWhen, whens := 0, -1, 0
	for j := k + 1; j < hi; j++ {
		t := x.toks[j]
		switch {
		case t.Text == "(" || t.Text == "[":
			depth++
		case t.Text == ")" || t.Text == "]":
			depth--
		case t.Is("CASE"):
			depth++
		case t.Is("END"):
			if depth == 0 {
				if firstWhen < 0 {
					return 0, 0, false
				}
				op := x.size(k+1, firstWhen, param)
				rest := x.size(firstWhen, j, param)
				size = whens*op + rest
				if param == "" {
					size += 2 // CASE, END
				}
				return min(size, tooManyTokens), j, true
			}
			depth--
		case depth == 0 && t.Is("WHEN"):
			if firstWhen < 0 {
				firstWhen = j
			}
			whens++
		}
	}
	return 0, 0, false
}

func (x *expansion) cteSize(name string, body [2]int, param string) int {
	if x.cteSizes == nil {
		x.cteSizes = map[string]int{}
	}
	switch n, ok := x.cteSizes[name]; {
	case ok && n < 0:
		return 1 // named in its own expansion: recursive, not copied
	case ok:
		return n
	}
	x.cteSizes[name] = -1
	n := x.size(body[0], body[1], param)
	x.cteSizes[name] = n
	return n
}

// notMaterializedCTEs finds "name [(columns)] AS NOT MATERIALIZED (body)".
func notMaterializedCTEs(toks []pgsql.Token) map[string]cteDef {
	var out map[string]cteDef
	for k := 1; k+3 < len(toks); k++ {
		if !toks[k].Is("AS") || !toks[k+1].Is("NOT") || !toks[k+2].Is("MATERIALIZED") || toks[k+3].Text != "(" {
			continue
		}
		_, end := pgsql.CallArgs(toks, k+3)
		if end < 0 {
			continue
		}
		n := k - 1
		if toks[n].Text == ")" { // a column list: the name is before it
			depth := 0
			for ; n >= 0; n-- {
				if toks[n].Text == ")" {
					depth++
				} else if toks[n].Text == "(" {
					if depth--; depth == 0 {
						break
					}
				}
			}
			n--
		}
		if n < 0 {
			continue
		}
		if name, ok := identName(toks[n]); ok {
			if out == nil {
				out = map[string]cteDef{}
			}
			out[name] = cteDef{at: n, body: [2]int{k + 4, end}}
		}
	}
	return out
}
