package sqlserver

import (
	"context"
	"fmt"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

func TestToPGErrorMapsSQLSTATE(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code string
		msg  string
	}{
		{"DuckDB's division by zero is 22012",
			&duckdb.Error{Type: duckdb.ErrorTypeDivideByZero, Msg: "Divide by zero Error: division by zero"}, "22012", "division by zero"},
		{"a parser error is 42601 and loses DuckDB's prefix",
			&duckdb.Error{Type: duckdb.ErrorTypeParser, Msg: "Parser Error: syntax error at or near \"x\"\n\nLINE 1: x\n        ^"}, "42601", `syntax error at or near "x"`},
		{"a missing table is 42P01",
			&duckdb.Error{Type: duckdb.ErrorTypeCatalog, Msg: "Catalog Error: Table with name t does not exist!\nDid you mean \"s\"?"}, "42P01", "Table with name t does not exist!"},
		{"a duplicate key is 23505",
			&duckdb.Error{Type: duckdb.ErrorTypeConstraint, Msg: "Constraint Error: Duplicate key \"a: 1\" violates primary key constraint."}, "23505", `Duplicate key "a: 1" violates primary key constraint.`},
		{"a conversion error is 22P02",
			&duckdb.Error{Type: duckdb.ErrorTypeConversion, Msg: "Conversion Error: Could not convert string 'x' to INT32"}, "22P02", "Could not convert string 'x' to INT32"},
		{"an interrupt is 57014",
			&duckdb.Error{Type: duckdb.ErrorTypeInterrupt, Msg: "INTERRUPT Error: Interrupted!"}, "57014", "Interrupted!"},
		{"a cancelled context is 57014", fmt.Errorf("run: %w", context.Canceled), "57014", "canceling statement due to user request"},
		{"a statement timeout is 57014", fmt.Errorf("run: %w", context.DeadlineExceeded), "57014", "canceling statement due to statement timeout"},
		{"an error with its own SQLSTATE keeps it", coded{}, "53100", "disk full"},
		{"anything else is an internal error", fmt.Errorf("boom"), "XX000", "boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pe := toPGError(tc.err)
			if string(pe.Code) != tc.code || pe.Message != tc.msg {
				t.Errorf("toPGError = %s %q, want %s %q", pe.Code, pe.Message, tc.code, tc.msg)
			}
		})
	}
}

type coded struct{}

func (coded) Error() string    { return "disk full" }
func (coded) SQLState() string { return "53100" }
