package sqlserver

import (
	"sync"
	"testing"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// TestLexerSplitsAsDuckDBParses holds pgsql's lexer to DuckDB's parser: for
// every text DuckDB parses, both read the same number of statements (L1).
// The texts are the places two SQL lexers disagree: quotes, dollar tags,
// escapes, comments, and bytes of 0x80 and above, where the lexer once read
// "$€$ ( $€$" as an open parenthesis and "€E'\'" as an unterminated E-string
// and a reader's second statement ran unchecked.
func TestLexerSplitsAsDuckDBParses(t *testing.T) {
	texts := []string{
		"SELECT 1; SELECT 2",
		"SELECT $€$ ( $€$ AS x; SELECT 2",
		"SELECT $€$ ( $€$ AS x; CREATE TABLE t AS SELECT 42 AS x; SELECT 2 AS y",
		`SELECT 1 AS €E, '\' AS a; SELECT 2 -- '`,
		"SELECT $é$;$é$; SELECT 2",
		"SELECT $\xff$;$\xff$; SELECT 2",
		"SELECT $_1$ ; $_1$; SELECT 2",
		"SELECT $a$;$a$; SELECT 2",
		"SELECT 1 AS a$b$; SELECT 2",
		"SELECT 'a;b'; SELECT 2",
		`SELECT E'\';' ; SELECT 3`,
		`SELECT '\'; SELECT 2 -- '`,
		`SELECT "a;b" FROM (SELECT 1 AS "a;b"); SELECT 2`,
		"SELECT 1 /* ; /* nested ; */ ; */; SELECT 2",
		"SELECT 1 -- ;\n; SELECT 2",
		`SELECT U&'\0041;'; SELECT 2`,
		"SELECT x'41;'; SELECT 2",
		"SELECT 'it''s;'; SELECT 2",
		"SELECT ü FROM (SELECT 1 AS ü); SELECT 2",
		"SELECT 1 AS \"€\"\"; \"; SELECT 2",
		"CREATE TEMP MACRO m(x) AS (x + 1); SELECT m(1)",
		"SELECT [1, 2]; SELECT {'a': ';'}",
		"SELECT 1 --\r; SELECT 2",
		"SELECT 1 --;\r; SELECT 2",
		"SELECT E'x'\n'\\' ; SELECT 2 ; ' AS a; SELECT 3",
		"SELECT E'x' -- c\n'\\' ; SELECT 2 ; ' AS a; SELECT 3",
		"SELECT E'x'\r'\\' ; SELECT 2 ; ' AS a; SELECT 3",
		"SELECT E'x' '\\' ; SELECT 2",
		"SELECT 'x'\n'\\' ; SELECT 2",
	}
	var counter statementCounter
	for _, text := range texts {
		duck, parseErr, err := counter.parse(text)
		if err != nil {
			t.Fatal(err)
		}
		if parseErr != "" {
			t.Logf("%q: DuckDB does not parse it (%s)", text, parseErr)
			continue
		}
		if got := len(pgsql.Split(text)); got != duck {
			t.Errorf("%q: the lexer reads %d statements, DuckDB %d", text, got, duck)
		}
	}
	// a text DuckDB cannot parse counts as one: preparing it fails before
	// anything runs
	if n, err := counter.count("SELECT (; DROP TABLE x"); err != nil || n != 1 {
		t.Errorf("unparsable text: %d, %v", n, err)
	}
}

// TestStatementCounterCloses: Engine.Close closes the counter's private
// database (it stayed open for the life of the process before), after the
// parses in flight; a parse after it is an error, not a hang or a crash.
func TestStatementCounterCloses(t *testing.T) {
	var unused statementCounter
	unused.close()
	if _, err := unused.count("SELECT 1"); err != errCounterClosed {
		t.Errorf("a counter closed before its first parse: %v, want errCounterClosed", err)
	}

	var c statementCounter
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				n, err := c.count("SELECT 1; SELECT 2")
				if err == errCounterClosed {
					return
				}
				if err != nil || n != 2 {
					t.Errorf("parser %d, parse %d: %d, %v", i, j, n, err)
					return
				}
			}
		}()
	}
	for { // let the parsers open it and run
		if n, err := c.count("SELECT 1"); err == nil && n == 1 {
			break
		}
	}
	c.close()
	wg.Wait()
	if _, err := c.count("SELECT 1"); err != errCounterClosed {
		t.Errorf("after close: %v, want errCounterClosed", err)
	}
}
