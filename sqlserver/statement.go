package sqlserver

import (
	"strings"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// stmtKind says who answers a statement: DuckDB, or the session itself
// (transaction control and PostgreSQL run-time parameters, which DuckDB
// either lacks or must not see).
type stmtKind uint8

const (
	kindDuck stmtKind = iota
	kindEmpty
	kindBegin
	kindCommit
	kindRollback
	kindSet
	kindReset
	kindShow
	kindDiscard
	kindDeallocate
	kindNoop        // LISTEN, UNLISTEN, NOTIFY: accepted, never delivers
	kindUnsupported // answered with feature_not_supported
	kindDeclare     // DECLARE name CURSOR FOR query
	kindFetch       // FETCH or MOVE
	kindCloseCursor // CLOSE name | ALL
	kindCopyOut     // COPY ... TO STDOUT
)

// classified is a statement after classification.
type classified struct {
	kind stmtKind
	sql  string        // the client's text
	toks []pgsql.Token // significant tokens
	tag  string        // command tag for session-answered statements
	// for SET/RESET/SHOW
	param string
	value string
	local bool
	// for unsupported
	reason string
	// for DECLARE (param is the cursor) and COPY TO STDOUT: the query
	inner  pgsql.Statement
	binary bool // DECLARE ... BINARY CURSOR
	hold   bool // DECLARE ... WITH HOLD
	// for FETCH and MOVE (param is the cursor): rows to move, 0 for ALL,
	// -1 for none
	count int64
	move  bool
	copy  copyOptions
}

func classify(st pgsql.Statement) classified {
	toks := st.Significant()
	c := classified{kind: kindDuck, sql: st.SQL, toks: toks}
	if len(toks) == 0 {
		c.kind = kindEmpty
		return c
	}
	kw := func(i int) string {
		if i < len(toks) {
			return toks[i].Upper()
		}
		return ""
	}
	switch kw(0) {
	case "BEGIN", "START":
		c.kind, c.tag = kindBegin, "BEGIN"
		if kw(0) == "START" && kw(1) != "TRANSACTION" {
			c.kind = kindDuck
		}
	case "COMMIT", "END":
		c.kind, c.tag = kindCommit, "COMMIT"
		if kw(1) == "PREPARED" {
			c.kind, c.reason = kindUnsupported, "two-phase commit is not supported"
		}
	case "ROLLBACK", "ABORT":
		c.kind, c.tag = kindRollback, "ROLLBACK"
		if kw(1) == "TO" || kw(2) == "TO" {
			c.kind, c.reason = kindUnsupported, "savepoints are not supported"
		}
		if kw(1) == "PREPARED" {
			c.kind, c.reason = kindUnsupported, "two-phase commit is not supported"
		}
	case "SAVEPOINT", "RELEASE":
		c.kind, c.reason = kindUnsupported, "savepoints are not supported"
	case "SET":
		return classifySet(c)
	case "RESET":
		c.kind, c.tag = kindReset, "RESET"
		if len(toks) >= 2 {
			c.param = paramName(toks[1:])
		}
		if strings.EqualFold(c.param, "session authorization") {
			c.kind = kindNoop
		}
	case "SHOW":
		c.kind, c.tag = kindShow, "SHOW"
		c.param = strings.ToLower(paramName(toks[1:]))
		switch c.param {
		case "transaction isolation level":
			c.param = "transaction_isolation"
		case "time zone":
			c.param = "timezone"
		case "session authorization":
			c.param = "session_authorization"
		}
		if !knownSetting(c.param) && c.param != "all" {
			c.kind = kindDuck // DuckDB's SHOW TABLES, SHOW <table>, ...
		}
	case "DISCARD":
		c.kind, c.tag = kindDiscard, "DISCARD "+strings.ToUpper(kw(1))
	case "DEALLOCATE":
		c.kind, c.tag = kindDeallocate, "DEALLOCATE"
		rest := toks[1:]
		if len(rest) > 0 && rest[0].Is("PREPARE") {
			rest = rest[1:]
		}
		if len(rest) > 0 {
			c.param = rest[0].IdentName()
			if rest[0].Is("ALL") {
				c.param, c.tag = "", "DEALLOCATE ALL"
			}
		}
	case "LISTEN", "UNLISTEN", "NOTIFY":
		c.kind, c.tag = kindNoop, kw(0)
	case "COPY":
		return classifyCopy(c, st)
	case "DECLARE":
		return classifyDeclare(c, st)
	case "FETCH", "MOVE":
		return classifyFetch(c)
	case "CLOSE":
		return classifyCloseCursor(c)
	}
	return c
}

// classifySet handles SET [SESSION|LOCAL] name {TO|=} value, SET TIME ZONE,
// SET NAMES, SET SESSION CHARACTERISTICS and SET TRANSACTION.
func classifySet(c classified) classified {
	toks := c.toks[1:]
	c.kind, c.tag = kindSet, "SET"
	if len(toks) > 0 && (toks[0].Is("SESSION") || toks[0].Is("LOCAL")) {
		c.local = toks[0].Is("LOCAL")
		toks = toks[1:]
		if len(toks) > 0 && toks[0].Is("AUTHORIZATION") {
			c.kind = kindNoop
			return c
		}
	}
	if len(toks) == 0 {
		c.kind = kindDuck
		return c
	}
	switch {
	case toks[0].Is("TIME") && len(toks) > 1 && toks[1].Is("ZONE"):
		c.param, c.value = "timezone", valueText(toks[2:])
		if strings.EqualFold(c.value, "local") || strings.EqualFold(c.value, "default") {
			c.kind = kindReset
		}
		return c
	case toks[0].Is("NAMES"):
		c.param, c.value = "client_encoding", valueText(toks[1:])
		return c
	case toks[0].Is("CHARACTERISTICS") || toks[0].Is("TRANSACTION"):
		// SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL x / READ ONLY
		text := strings.ToLower(joinWords(toks))
		if i := strings.Index(text, "isolation level"); i >= 0 {
			lvl := strings.Fields(text[i+len("isolation level"):])
			if len(lvl) > 2 {
				lvl = lvl[:2]
			}
			if len(lvl) == 2 && lvl[0] != "read" && lvl[0] != "repeatable" {
				lvl = lvl[:1]
			}
			c.param, c.value = "default_transaction_isolation", strings.Join(lvl, " ")
			if toks[0].Is("TRANSACTION") {
				c.param = "transaction_isolation"
			}
			return c
		}
		c.kind = kindNoop // READ WRITE / READ ONLY / DEFERRABLE
		return c
	}
	// name {TO | =} value
	i := 0
	for i < len(toks) && !(toks[i].Is("TO") || toks[i].Text == "=") {
		i++
	}
	if i == len(toks) {
		c.kind = kindDuck
		return c
	}
	c.param = paramName(toks[:i])
	c.value = valueText(toks[i+1:])
	if strings.EqualFold(c.value, "DEFAULT") && len(toks) == i+2 && toks[i+1].Kind == pgsql.Ident {
		c.kind = kindReset
	}
	return c
}

func paramName(toks []pgsql.Token) string {
	var parts []string
	for _, t := range toks {
		switch t.Kind {
		case pgsql.Ident, pgsql.QIdent:
			parts = append(parts, t.IdentName())
		case pgsql.Punct:
			if t.Text == "." {
				parts = append(parts, ".")
			}
		}
	}
	return strings.ReplaceAll(strings.Join(parts, " "), " . ", ".")
}

// valueText renders a SET value list: 'a', b, 3 → "a, b, 3" with string
// literals unquoted.
func valueText(toks []pgsql.Token) string {
	var parts []string
	cur := ""
	for _, t := range toks {
		if t.Text == "," {
			parts = append(parts, cur)
			cur = ""
			continue
		}
		switch t.Kind {
		case pgsql.String:
			s := t.Text
			if len(s) >= 2 && s[0] == '\'' {
				s = strings.ReplaceAll(s[1:len(s)-1], "''", "'")
			} else if len(s) >= 3 && (s[0] == 'E' || s[0] == 'e') {
				s = strings.ReplaceAll(s[2:len(s)-1], "''", "'")
			}
			cur += s
		case pgsql.QIdent:
			cur += t.Text // keep quotes: search_path entries
		default:
			cur += t.Text
		}
	}
	parts = append(parts, cur)
	return strings.Join(parts, ", ")
}

// duckCommandTag derives PostgreSQL's command tag for a statement DuckDB ran.
func duckCommandTag(toks []pgsql.Token, rows int64, returned bool) string {
	kw := func(i int) string {
		if i < len(toks) {
			return toks[i].Upper()
		}
		return ""
	}
	n := func() string { return itoa(rows) }
	switch kw(0) {
	case "INSERT":
		return "INSERT 0 " + n()
	case "UPDATE", "DELETE", "MERGE", "COPY":
		return kw(0) + " " + n()
	case "CREATE", "DROP", "ALTER":
		i := 1
		for kw(i) == "OR" || kw(i) == "REPLACE" || kw(i) == "TEMP" || kw(i) == "TEMPORARY" || kw(i) == "UNIQUE" || kw(i) == "PERSISTENT" {
			i++
		}
		obj := kw(i)
		switch obj {
		case "MACRO", "FUNCTION":
			obj = "FUNCTION"
		case "":
			return kw(0)
		}
		if obj == "MATERIALIZED" || obj == "FOREIGN" {
			obj += " " + kw(i+1)
		}
		return kw(0) + " " + obj
	case "SELECT", "WITH", "VALUES", "TABLE", "FROM", "PRAGMA", "DESCRIBE", "SUMMARIZE", "SHOW", "CALL", "EXECUTE", "EXPLAIN", "(":
		if returned {
			return "SELECT " + n()
		}
	}
	if returned {
		return "SELECT " + n()
	}
	if kw(0) == "" {
		return "SELECT 0"
	}
	return kw(0)
}

func itoa(n int64) string {
	const digits = "0123456789"
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = digits[n%10]
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// joinWords renders significant tokens separated by single spaces.
func joinWords(toks []pgsql.Token) string {
	words := make([]string, len(toks))
	for i, t := range toks {
		words[i] = t.Text
	}
	return strings.Join(words, " ")
}
