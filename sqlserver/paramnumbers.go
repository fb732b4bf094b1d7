package sqlserver

import (
	"database/sql/driver"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jeroenrinzema/psql-wire/codes"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// The client's parameter numbers and DuckDB's.
//
// PostgreSQL takes a statement's parameters as $1..$m, m the larger of the
// highest $n it uses and the number of types Parse declares; a $n the
// statement does not use keeps its declared type, and one left undeclared
// is an error (42P18). DuckDB numbers the $n it finds 1..k and binds
// values by that number: "SELECT $2" prepares with one parameter, which
// no value reaches ("Values were not provided for … parameters: 2"), and a
// Parse declaring more types than the statement uses described fewer
// parameters than the client then bound (08P01). So:
//
//	N1. A statement DuckDB prepares uses $1..$k, each at least once: where
//	    the client's do not (a gap, or types declared past the last),
//	    denseParams numbers them afresh in the order of their numbers, and
//	    prepared.toDuck maps the client's to DuckDB's.
//	N2. The client sees its own numbering (describedParams, Bind's count);
//	    Bind decodes every value it is sent, with its type, and passes
//	    DuckDB the values of the $n DuckDB's statement uses, by DuckDB's
//	    numbers (bindForDuck). Everything else of a prepared statement
//	    (paramOIDs, paramDuck, nullUnsafe, argOIDs, argOnly) is in DuckDB's
//	    numbering.

// denseParams returns toks with its $n numbered 1..k in the order of
// their numbers, and toDuck[n-1], the number $n became (0: unused), for
// n up to the larger of the highest and declared; nil toDuck when the
// numbers are already 1..k with k >= declared (N1).
func denseParams(toks []pgsql.Token, declared int) ([]pgsql.Token, []int) {
	highest := 0
	used := map[int]bool{}
	for _, t := range toks {
		if t.Kind != pgsql.Param {
			continue
		}
		n, ok := paramNumber(t)
		if !ok {
			// past what a Bind can carry: DuckDB's to refuse (sized by it,
			// toDuck would let a $10000000000 exhaust the heap)
			return toks, nil
		}
		used[n] = true
		highest = max(highest, n)
	}
	if len(used) == highest && declared <= highest || declared > maxParams {
		return toks, nil
	}
	toDuck := make([]int, max(highest, declared))
	k := 0
	for n := 1; n <= highest; n++ {
		if used[n] {
			k++
			toDuck[n-1] = k
		}
	}
	out := make([]pgsql.Token, len(toks))
	copy(out, toks)
	for i, t := range out {
		if t.Kind == pgsql.Param {
			n, _ := paramNumber(t)
			out[i].Text = "$" + strconv.Itoa(toDuck[n-1])
		}
	}
	return out, toDuck
}

// paramsForDuck is the client's declared types (oids) in DuckDB's
// numbering; a $n the statement does not use must have one, as
// PostgreSQL requires.
func paramsForDuck(toDuck []int, oids []uint32) ([]uint32, error) {
	k := 0
	for _, d := range toDuck {
		k = max(k, d)
	}
	out := make([]uint32, k)
	for i, d := range toDuck {
		declared := i < len(oids) && oids[i] != 0
		switch {
		case d > 0 && declared:
			out[d-1] = oids[i]
		case d == 0 && !declared:
			// PostgreSQL's words
			return nil, pgErrorf(codes.IndeterminateDatatype, "could not determine data type of parameter $%d", i+1)
		}
	}
	return out, nil
}

// describedParams are the parameter types the client is told of, in its
// numbering (N2).
func (p *prepared) describedParams() []uint32 {
	if p.toDuck != nil {
		return p.clientOIDs
	}
	return p.paramOIDs
}

// clientParam is the client's number of DuckDB's parameter d.
func (p *prepared) clientParam(d int) int {
	for i, n := range p.toDuck {
		if n == d {
			return i + 1
		}
	}
	return d
}

// bindForDuck is m, whose values are in the client's numbering, with the
// values of the $n DuckDB's statement uses in DuckDB's (N2); the others
// are decoded, so a malformed one fails as PostgreSQL fails it, and
// dropped. Formats come one per value.
func (p *prepared) bindForDuck(m *pgproto3.Bind) (*pgproto3.Bind, error) {
	out := &pgproto3.Bind{DestinationPortal: m.DestinationPortal, PreparedStatement: m.PreparedStatement,
		ResultFormatCodes: m.ResultFormatCodes}
	k := len(p.paramOIDs)
	out.Parameters = make([][]byte, k)
	out.ParameterFormatCodes = make([]int16, k)
	for i, data := range m.Parameters {
		format := int16(0)
		switch {
		case len(m.ParameterFormatCodes) == 1:
			format = m.ParameterFormatCodes[0]
		case i < len(m.ParameterFormatCodes):
			format = m.ParameterFormatCodes[i]
		}
		d := p.toDuck[i]
		if d == 0 {
			if _, err := decodeParam(p.clientOIDs[i], format, data); err != nil {
				return nil, err
			}
			continue
		}
		out.Parameters[d-1], out.ParameterFormatCodes[d-1] = data, format
	}
	return out, nil
}

// duckValues is values, in the client's numbering, in DuckDB's (N2).
func (p *prepared) duckValues(values []driver.NamedValue) []driver.NamedValue {
	if p.toDuck == nil {
		return values
	}
	out := make([]driver.NamedValue, len(p.paramOIDs))
	for i, d := range p.toDuck {
		if d > 0 && i < len(values) {
			out[d-1] = driver.NamedValue{Ordinal: d, Value: values[i].Value}
		}
	}
	return out
}
