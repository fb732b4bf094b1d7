package sqlserver

import (
	"errors"
	"sync"

	"github.com/duckdb/duckdb-go/v2/mapping"
)

// L1. A non-admin's statement reaches DuckDB only when DuckDB's own parser
// reads exactly one statement in its text (or none).
//
// The checks of authorize.go (P1–P4) read the text with pgsql's lexer. Where
// that lexer and DuckDB's disagree on where a literal ends, a text the lexer
// takes for one SELECT can hold more statements for DuckDB, and duckdb-go's
// PrepareContext runs every statement but the last while it prepares
// (connection.go, prepareStmts): a reader once ran CREATE TABLE, SET GLOBAL
// and COPY that way behind "SELECT $€$ ( $€$ AS x;". The lexer now follows
// DuckDB's scanner, and this guard makes any disagreement left a refusal
// instead of a statement nobody checked: it counts statements with DuckDB's
// parser (duckdb_extract_statements, parsing only: nothing is bound or run)
// on a private in-memory database that holds nothing.

// statementCounter parses texts on connections of its own database, opened
// on the first parse and closed by Engine.Close.
type statementCounter struct {
	once  sync.Once
	db    mapping.Database
	conns chan mapping.Connection // nil until db is open
	err   error
}

var errCounterClosed = errors.New("statement counter: closed")

// count returns how many statements DuckDB's parser reads in query. A text
// DuckDB cannot parse counts as 1: preparing it fails the same way, before
// anything runs.
func (c *statementCounter) count(query string) (int, error) {
	n, parseErr, err := c.parse(query)
	if err != nil {
		return 0, err
	}
	if parseErr != "" {
		return 1, nil
	}
	return n, nil
}

// parse returns the number of statements in query, or DuckDB's parser error.
func (c *statementCounter) parse(query string) (n int, parseErr string, err error) {
	c.once.Do(c.open)
	if c.err != nil {
		return 0, "", c.err
	}
	conn, ok := <-c.conns
	if !ok {
		return 0, "", errCounterClosed
	}
	defer func() { c.conns <- conn }()
	var stmts mapping.ExtractedStatements
	count := mapping.ExtractStatements(conn, query, &stmts)
	defer mapping.DestroyExtracted(&stmts)
	if count == 0 {
		if msg := mapping.ExtractStatementsError(stmts); msg != "" {
			return 0, msg, nil
		}
	}
	return int(count), "", nil
}

const statementCounterConns = 4

func (c *statementCounter) open() {
	if mapping.Open(":memory:", &c.db) == mapping.StateError {
		c.err = errors.New("statement counter: cannot open an in-memory DuckDB database")
		return
	}
	c.conns = make(chan mapping.Connection, statementCounterConns)
	for range statementCounterConns {
		var conn mapping.Connection
		if mapping.Connect(c.db, &conn) == mapping.StateError {
			c.err = errors.New("statement counter: cannot connect to its in-memory DuckDB database")
			return
		}
		c.conns <- conn
	}
}

// close waits for the parses in flight, disconnects the connections and
// closes the database; a parse after it fails with errCounterClosed. A
// counter that never parsed has nothing open, and never will.
func (c *statementCounter) close() {
	c.once.Do(func() { c.err = errCounterClosed })
	if c.conns == nil {
		return
	}
	held := len(c.conns) // after a failed open, parse hands none out
	if c.err == nil {
		held = cap(c.conns) // every connection, once each parse returns its own
	}
	for range held {
		conn := <-c.conns
		mapping.Disconnect(&conn)
	}
	close(c.conns) // a parse waiting for a connection gets errCounterClosed
	mapping.Close(&c.db)
}
