package sqlserver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"
)

// Error is an error with a PostgreSQL SQLSTATE. Only this package knows
// SQLSTATEs: other packages return plain or sentinel errors, and toPGError
// maps them at the wire.
type Error struct {
	Severity string // ERROR, FATAL, WARNING, NOTICE
	Code     codes.Code
	Message  string
	Detail   string
	Hint     string
}

func (e *Error) Error() string { return e.Message }

func pgErrorf(code codes.Code, format string, args ...any) *Error {
	return &Error{Severity: "ERROR", Code: code, Message: fmt.Sprintf(format, args...)}
}

// Coded lets any package attach a SQLSTATE to an error without importing
// sqlserver: an error with a method SQLState() string is reported with that
// code.
type Coded interface{ SQLState() string }

func (e *Error) response() *pgproto3.ErrorResponse {
	sev := e.Severity
	if sev == "" {
		sev = "ERROR"
	}
	return &pgproto3.ErrorResponse{
		Severity:            sev,
		SeverityUnlocalized: sev,
		Code:                string(e.Code),
		Message:             e.Message,
		Detail:              e.Detail,
		Hint:                e.Hint,
	}
}

// toPGError maps any error to a PostgreSQL error with the most specific
// SQLSTATE we can justify.
func toPGError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	var coded Coded
	if errors.As(err, &coded) {
		return &Error{Severity: "ERROR", Code: codes.Code(coded.SQLState()), Message: err.Error()}
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Severity: "ERROR", Code: codes.QueryCanceled, Message: "canceling statement due to user request"}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Severity: "ERROR", Code: codes.QueryCanceled, Message: "canceling statement due to statement timeout"}
	}
	var de *duckdb.Error
	if errors.As(err, &de) {
		return duckError(de)
	}
	if strings.Contains(err.Error(), "unsupported data type") {
		// duckdb-go cannot read some DuckDB types (VARIANT)
		return &Error{Severity: "ERROR", Code: codes.FeatureNotSupported, Message: err.Error()}
	}
	return &Error{Severity: "ERROR", Code: codes.Internal, Message: err.Error()}
}

// duckError splits DuckDB's "Kind Error: message\n\nLINE 1: ..." text into
// a PostgreSQL message and hint, and picks the SQLSTATE.
func duckError(de *duckdb.Error) *Error {
	msg := de.Msg
	if _, rest, ok := strings.Cut(msg, " Error: "); ok && !strings.Contains(msg[:len(msg)-len(rest)], "\n") {
		msg = rest
	}
	// duckdb-go prefixes the error of a Go scalar function with its own
	// words; the client wants the function's
	msg = strings.TrimPrefix(msg, "database/sql/driver: API error: ")
	first, more, _ := strings.Cut(msg, "\n")
	e := &Error{Severity: "ERROR", Message: strings.TrimSpace(first)}
	for _, line := range strings.Split(more, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "Did you mean") || strings.HasPrefix(line, "Candidate") {
			if e.Hint != "" {
				e.Hint += " "
			}
			e.Hint += line
		}
	}
	e.Code = duckSQLState(de.Type, e.Message)
	if de.Type == duckdb.ErrorTypeOutOfMemory && strings.Contains(more, "max_temp_directory_size") {
		// DuckDB's words tell the user to raise max_temp_directory_size,
		// which only an admin may, and which is serve's
		// --duckdb-temp-limit (engine.go, TempLimit)
		e.Code = codes.DiskFull
		e.Message = "the server's temp space is full"
		if m := tempSpaceUsed.FindStringSubmatch(first); m != nil {
			e.Message += fmt.Sprintf(" (%s of %s used)", m[1], m[2])
		}
		e.Detail = "DuckDB's spills and every session's TEMP tables share dhsi serve's --duckdb-temp-limit."
		e.Hint = "Drop TEMP tables you no longer need, or ask an admin to raise --duckdb-temp-limit."
	}
	if m := expressionDepthError.FindStringSubmatch(e.Message); m != nil {
		// DuckDB's words tell the user to SET max_expression_depth, which
		// only an admin may (engine.go, sharedExpressionDepth)
		e.Code = codes.StatementTooComplex
		e.Message = "statement too complex: an expression nested more than " + m[1] + " levels deep"
		e.Hint = "Write it flatter; an admin may raise max_expression_depth."
	}
	return e
}

// tempSpaceUsed is what DuckDB says of its temp directory when
// max_temp_directory_size stops a spill: "failed to offload data block of
// size 256.0 KiB (99.7 MiB/100.0 MiB used)."
var tempSpaceUsed = regexp.MustCompile(`\(([0-9.]+ [KMGT]?i?B)/([0-9.]+ [KMGT]?i?B) used\)`)

// expressionDepthError is DuckDB's parser refusing a deep expression.
var expressionDepthError = regexp.MustCompile(`^Max expression depth limit of (\d+) exceeded`)

func duckSQLState(t duckdb.ErrorType, msg string) codes.Code {
	lower := strings.ToLower(msg)
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(lower, x) {
				return true
			}
		}
		return false
	}
	if has(strings.ToLower(nullArgMessage)) {
		return codes.NullValueNotAllowed // guardNullArgs
	}
	if strings.HasPrefix(lower, "permission denied: ") {
		return codes.InsufficientPrivilege // access.Denied, raised inside a DHSI function
	}
	if strings.HasPrefix(lower, "reshard: another resharding is in progress") {
		return codes.ObjectNotInPrerequisiteState // reshard.ErrOtherResharding, raised inside reshard()
	}
	if strings.HasPrefix(lower, "reshard: the width must be") {
		return codes.InvalidParameterValue // reshard.ErrWidth
	}
	if has("shard layout changed while the statement ran") {
		return codes.SerializationFailure // records' errLayoutMoved: run it again
	}
	if strings.HasPrefix(lower, "dataset ") && has(" is not in index version ") {
		return codes.UndefinedObject // udf.UnknownDataset, raised inside domain_urls
	}
	switch t {
	case duckdb.ErrorTypeParser, duckdb.ErrorTypeSyntax:
		return codes.Syntax
	case duckdb.ErrorTypeCatalog:
		switch {
		case has("already exists"):
			if has("table", "view") {
				return codes.DuplicateRelation
			}
			if has("schema") {
				return codes.DuplicateSchema
			}
			return codes.DuplicateObject
		case has("function", "macro"):
			return codes.UndefinedFunction
		case has("schema") && has("does not exist"):
			return codes.InvalidSchemaName
		case has("table", "view", "relation"):
			return codes.UndefinedTable
		case has("column"):
			return codes.UndefinedColumn
		}
		return codes.UndefinedObject
	case duckdb.ErrorTypeBinder:
		switch {
		case has("referenced column", "column", "not found in from clause") && has("not found", "does not exist"):
			return codes.UndefinedColumn
		case has("no function matches", "does not support the supplied arguments", "function") && !has("aggregate"):
			return codes.UndefinedFunction
		case has("ambiguous"):
			return codes.AmbiguousColumn
		case has("group by"):
			return codes.Grouping
		case has("table") && has("does not exist"):
			return codes.UndefinedTable
		case has("parameter"):
			return codes.UndefinedParameter
		}
		return codes.SyntaxErrorOrAccessRuleViolation
	case duckdb.ErrorTypeConversion:
		if has("overflow", "out of range") {
			return codes.NumericValueOutOfRange
		}
		return codes.InvalidTextRepresentation
	case duckdb.ErrorTypeOutOfRange, duckdb.ErrorTypeDecimal:
		return codes.NumericValueOutOfRange
	case duckdb.ErrorTypeSequence:
		// nextval past a TEMP sequence's MAXVALUE: a user's, not internal
		// (XX000 is logged, once per statement)
		return codes.SequenceGeneratorLimitExceeded
	case duckdb.ErrorTypeObjectSize:
		return codes.ProgramLimitExceeded
	case duckdb.ErrorTypeDivideByZero:
		return codes.DivisionByZero
	case duckdb.ErrorTypeConstraint:
		switch {
		case has("duplicate key", "unique", "primary key"):
			return codes.UniqueViolation
		case has("not null"):
			return codes.NotNullViolation
		case has("check constraint"):
			return codes.CheckViolation
		case has("foreign key"):
			return codes.ForeignKeyViolation
		}
		return codes.IntegrityConstraintViolation
	case duckdb.ErrorTypeInterrupt:
		return codes.QueryCanceled
	case duckdb.ErrorTypeTransaction:
		switch {
		case has("conflict"):
			return codes.SerializationFailure
		case has("no transaction is active", "not in a transaction"):
			return codes.NoActiveSQLTransaction
		case has("within a transaction", "already"):
			return codes.ActiveSQLTransaction
		case has("aborted"):
			return codes.InFailedSQLTransaction
		}
		return codes.InvalidTransactionState
	case duckdb.ErrorTypeOutOfMemory:
		return codes.OutOfMemory
	case duckdb.ErrorTypeIO:
		return codes.Io
	case duckdb.ErrorTypePermission:
		return codes.InsufficientPrivilege
	case duckdb.ErrorTypeNotImplemented:
		return codes.FeatureNotSupported
	case duckdb.ErrorTypeInvalidInput:
		if has("syntax") {
			return codes.Syntax
		}
		return codes.InvalidParameterValue
	case duckdb.ErrorTypeMismatchType, duckdb.ErrorTypeInvalidType:
		return codes.DatatypeMismatch
	case duckdb.ErrorTypeDependency:
		return codes.DependentObjectsStillExist
	case duckdb.ErrorTypeParameterNotResolved, duckdb.ErrorTypeParameterNotAllowed:
		return codes.IndeterminateDatatype
	case duckdb.ErrorTypeSettings, duckdb.ErrorTypeInvalidConfiguration:
		return codes.InvalidParameterValue
	}
	return codes.Internal
}

// maxMessageBytes bounds an error message and its detail: an error that
// quotes a user's megabyte argument must not send (or log) the megabyte.
const maxMessageBytes = 1000

// capMessage shortens e's message and detail to maxMessageBytes, at a UTF-8
// boundary, saying how much was left out.
func capMessage(e *Error) *Error {
	shorten := func(s string) string {
		if len(s) <= maxMessageBytes {
			return s
		}
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut] + fmt.Sprintf("… (%d more bytes)", len(s)-cut)
	}
	if len(e.Message) <= maxMessageBytes && len(e.Detail) <= maxMessageBytes {
		return e
	}
	c := *e
	c.Message, c.Detail = shorten(e.Message), shorten(e.Detail)
	return &c
}
