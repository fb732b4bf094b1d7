// Package pgsql is a small, dependency-free lexer for PostgreSQL-dialect SQL
// text. The server uses it to split a simple-query string into statements, to
// classify statements it answers itself (SET, SHOW, BEGIN, ...), and to
// rewrite PostgreSQL-only syntax that DuckDB does not parse.
//
// It is a lexer, not a parser: it understands exactly enough (quotes,
// comments, dollar quoting, parentheses) to never split or rewrite inside a
// literal or a comment.
package pgsql

import (
	"strings"
	"unicode/utf8"
)

// Kind classifies a token.
type Kind uint8

const (
	Space   Kind = iota // whitespace
	Comment             // -- line or /* block */ comment
	Ident               // bare identifier or keyword
	QIdent              // "quoted identifier"
	String              // 'string', E'string', B'..', X'..', $tag$string$tag$
	Number              // numeric literal
	Param               // $1
	Op                  // operator characters, e.g. ::, ~, <>, !~*
	Punct               // ( ) , ; [ ] .
)

// Token is one lexical token; Text is the exact source slice.
type Token struct {
	Kind Kind
	Text string
	Pos  int // byte offset in the source
}

// Upper returns the token text upper-cased when it is a bare identifier,
// which is how SQL keywords compare.
func (t Token) Upper() string {
	if t.Kind == Ident {
		return strings.ToUpper(t.Text)
	}
	return ""
}

// Is reports whether t is the bare keyword kw (case-insensitive).
func (t Token) Is(kw string) bool {
	return t.Kind == Ident && strings.EqualFold(t.Text, kw)
}

// IdentName returns the identifier's name: lower-cased for a bare identifier
// (PostgreSQL folds unquoted names), unquoted for a quoted one.
func (t Token) IdentName() string {
	switch t.Kind {
	case Ident:
		return strings.ToLower(t.Text)
	case QIdent:
		// U&"..." and unterminated identifiers keep their raw text.
		if len(t.Text) < 2 || t.Text[0] != '"' || t.Text[len(t.Text)-1] != '"' {
			return t.Text
		}
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
	}
	return ""
}

// StandardString returns the value of a standard string literal ('...',
// with ” for a quote). ok is false for anything else: another token, an
// E”, B”, X” or $$ string, or an unterminated literal.
func (t Token) StandardString() (value string, ok bool) {
	s := t.Text
	if t.Kind != String || len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", false
	}
	return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), true
}

// Lex splits src into tokens. It never fails: an unterminated literal or
// comment runs to the end of the input (the engine reports the error).
func Lex(src string) []Token {
	var toks []Token
	i := 0
	for i < len(src) {
		start := i
		c := src[i]
		var k Kind
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			for i < len(src) && strings.IndexByte(" \t\n\r\f\v", src[i]) >= 0 {
				i++
			}
			k = Space
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			// scan.l: comment ("--"{non_newline}*), non_newline [^\n\r]
			j := strings.IndexAny(src[i:], "\n\r")
			if j < 0 {
				i = len(src)
			} else {
				i += j + 1
			}
			k = Comment
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i = skipBlockComment(src, i)
			k = Comment
		case c == '\'':
			i = skipQuoted(src, i, '\'', false)
			k = String
		case (c == 'E' || c == 'e') && i+1 < len(src) && src[i+1] == '\'':
			i = skipQuoted(src, i+1, '\'', true)
			// scan.l's quotecontinue: 'a' newline 'b' is one literal, and
			// the pieces after an E'' piece keep its backslash escapes
			for {
				next, ok := quoteContinues(src, i)
				if !ok {
					break
				}
				i = skipQuoted(src, next, '\'', true)
			}
			k = String
		case (c == 'B' || c == 'b' || c == 'X' || c == 'x' || c == 'N' || c == 'n') && i+1 < len(src) && src[i+1] == '\'':
			i = skipQuoted(src, i+1, '\'', false)
			k = String
		case (c == 'U' || c == 'u') && i+2 < len(src) && src[i+1] == '&' && (src[i+2] == '\'' || src[i+2] == '"'):
			q := src[i+2]
			i = skipQuoted(src, i+2, q, false)
			if q == '\'' {
				k = String
			} else {
				k = QIdent
			}
		case c == '"':
			i = skipQuoted(src, i, '"', false)
			k = QIdent
		case c == '$':
			if i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9' {
				i++
				for i < len(src) && src[i] >= '0' && src[i] <= '9' {
					i++
				}
				k = Param
			} else if end, ok := dollarQuoted(src, i); ok {
				i = end
				k = String
			} else {
				i++
				k = Op
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			i = skipNumber(src, i)
			k = Number
		case isIdentStart(src, i):
			for i < len(src) && isIdentCont(src, i) {
				i++
			}
			k = Ident
		case strings.IndexByte("(),;[]{}.", c) >= 0:
			i++
			k = Punct
		case c == ':' && i+1 < len(src) && src[i+1] == ':':
			i += 2
			k = Op
		case strings.IndexByte("+-*/<>=~!@#%^&|`?:", c) >= 0:
			for i < len(src) && strings.IndexByte("+-*/<>=~!@#%^&|`?:", src[i]) >= 0 {
				// "--" and "/*" start comments even inside an operator run.
				if i > start && (strings.HasPrefix(src[i:], "--") || strings.HasPrefix(src[i:], "/*")) {
					break
				}
				i++
			}
			k = Op
		default:
			_, w := utf8.DecodeRuneInString(src[i:])
			i += w
			k = Op
		}
		toks = append(toks, Token{Kind: k, Text: src[start:i], Pos: start})
	}
	return toks
}

// isIdentStart and isIdentCont follow PostgreSQL's scanner (scan.l), which
// DuckDB's parser shares: ident_start is [A-Za-z\200-\377_] and ident_cont
// adds [0-9$]. Every byte of 0x80 and above counts, whatever the character
// (a letter, a symbol such as '€', or no valid UTF-8 at all). Deciding by
// Unicode class instead let a statement lex differently here than in DuckDB
// ('$€$' opened a dollar quote only for DuckDB, '€E' started an E-string
// only here), and the authorization checks then judged a different statement
// than the one DuckDB ran (docs/security.md, L1).
func isIdentStart(s string, i int) bool {
	c := s[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentCont(s string, i int) bool {
	c := s[i]
	return isIdentStart(s, i) || c >= '0' && c <= '9' || c == '$'
}

func skipBlockComment(s string, i int) int {
	depth := 0
	for i < len(s) {
		if strings.HasPrefix(s[i:], "/*") {
			depth++
			i += 2
		} else if strings.HasPrefix(s[i:], "*/") {
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		} else {
			i++
		}
	}
	return i
}

// skipQuoted skips a literal that starts with quote q at s[i]. A doubled
// quote is an escaped quote; with backslash escapes (E'...') a backslash
// escapes the next byte.
func skipQuoted(s string, i int, q byte, backslash bool) int {
	i++
	for i < len(s) {
		switch {
		case backslash && s[i] == '\\':
			i += 2
		case s[i] == q:
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1
		default:
			i++
		}
	}
	return len(s)
}

// quoteContinues reports whether the literal that ended at s[i] continues:
// scan.l's quotecontinue, whitespace with at least one newline (and "--"
// comments) and then a quote. next is that quote's index.
func quoteContinues(s string, i int) (next int, ok bool) {
	newline := false
	for i < len(s) {
		switch c := s[i]; {
		case c == '\n' || c == '\r':
			newline = true
			i++
		case c == ' ' || c == '\t' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			j := strings.IndexAny(s[i:], "\n\r")
			if j < 0 {
				return 0, false
			}
			i += j
		case c == '\'' && newline:
			return i, true
		default:
			return 0, false
		}
	}
	return 0, false
}

// dollarQuoted recognises $tag$...$tag$ starting at s[i]. As in scan.l, a
// tag starts with [A-Za-z\200-\377_] and continues with those or digits.
func dollarQuoted(s string, i int) (int, bool) {
	j := i + 1
	for j < len(s) && s[j] != '$' {
		if !isIdentStart(s, j) && !(j > i+1 && s[j] >= '0' && s[j] <= '9') {
			return 0, false
		}
		j++
	}
	if j >= len(s) {
		return 0, false
	}
	tag := s[i : j+1]
	end := strings.Index(s[j+1:], tag)
	if end < 0 {
		return len(s), true
	}
	return j + 1 + end + len(tag), true
}

func skipNumber(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' || c == '.' || c == '_':
			i++
		case (c == 'e' || c == 'E') && i+1 < len(s):
			i++
			if s[i] == '+' || s[i] == '-' {
				i++
			}
		default:
			return i
		}
	}
	return i
}

// Statement is one statement of a query string.
type Statement struct {
	SQL    string  // source text, trimmed, without the terminating semicolon
	Tokens []Token // its tokens, including space and comments
}

// Significant returns the tokens that are neither whitespace nor comments.
func (s Statement) Significant() []Token { return Significant(s.Tokens) }

// Significant filters out whitespace and comment tokens.
func Significant(toks []Token) []Token {
	out := make([]Token, 0, len(toks))
	for _, t := range toks {
		if t.Kind != Space && t.Kind != Comment {
			out = append(out, t)
		}
	}
	return out
}

// Split cuts src at top-level semicolons. Empty statements (only space and
// comments) are dropped. Semicolons inside parentheses (e.g. in a CREATE
// MACRO body) do not split.
func Split(src string) []Statement {
	toks := Lex(src)
	var out []Statement
	depth := 0
	begin := 0
	flush := func(end int) {
		part := toks[begin:end]
		if len(Significant(part)) == 0 {
			return
		}
		lo := part[0].Pos
		hi := len(src)
		if end < len(toks) {
			hi = toks[end].Pos
		}
		out = append(out, Statement{SQL: strings.TrimSpace(src[lo:hi]), Tokens: part})
	}
	for i, t := range toks {
		depth = nest(depth, t)
		if depth == 0 && t.Kind == Punct && t.Text == ";" {
			flush(i)
			begin = i + 1
		}
	}
	flush(len(toks))
	return out
}

// nest is the nesting depth of parentheses and brackets after t, from
// depth: Split's and NestingDepth's rule (a stray closer opens no credit).
func nest(depth int, t Token) int {
	if t.Kind == Punct {
		switch t.Text {
		case "(", "[":
			return depth + 1
		case ")", "]":
			return max(depth-1, 0)
		}
	}
	return depth
}

// Join renders tokens back to text.
func Join(toks []Token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.Text)
	}
	return b.String()
}

// MaxNesting bounds how deeply a statement may nest parentheses and
// brackets. The rewrites of this package walk nested calls recursively, a
// level at a time (Rewrite rule 12's ANY(ARRAY[...]), CAST ... AS
// regclass, format): at 6,000 levels, 96 KB of text, they held 8.7 GB and
// the server died of it before DuckDB saw the statement. DuckDB refuses an
// expression deeper than 1,000 levels (max_expression_depth) and its
// parser gives up near 10,000; what this refuses that DuckDB would run is
// redundant parentheses (1,001 around a literal), which no tool writes.
const MaxNesting = 1000

// NestingDepth is the deepest nesting of ( and [ in toks.
func NestingDepth(toks []Token) int {
	depth, deepest := 0, 0
	for _, t := range toks {
		depth = nest(depth, t)
		deepest = max(deepest, depth)
	}
	return deepest
}
