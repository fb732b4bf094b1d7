package sqlserver

import (
	"context"
	"database/sql/driver"
	"errors"
	"slices"
	"time"

	"github.com/jeroenrinzema/psql-wire/codes"
)

// A native statement that would hold more rows than its limit (N1,
// nativestop.go) is run by DuckDB instead: its twin, the same text
// prepared as though it had no native shape, checked (authorize, P5, P6)
// as any DuckDB statement is, and bound to the portal's values. The
// client was told the native statement's columns; the twin's have the
// same names and types (TestNativeSelectAgreesWithDuckDB holds the two
// paths to it), and a twin whose do not is refused rather than sent.

// runNativeOrTwin runs a native portal, or its twin once the native path
// has refused it as too large (ErrNativeTooLarge comes before any row is
// sent: the rows are all computed by then).
//
// The twin answers within what is left of the statement's
// statement_timeout (session.spent): the native attempt's time counts.
func (s *session) runNativeOrTwin(ctx context.Context, pt *portal, maxRows int64) error {
	if pt.twin == nil {
		begun := time.Now()
		err := s.runNative(ctx, pt, maxRows)
		if !errors.Is(err, ErrNativeTooLarge) {
			return err
		}
		pt.native, pt.nativeRows, pt.nativeNext = nil, nil, 0
		s.spent = time.Since(begun)
		defer func() { s.spent = 0 }()
		p := pt.stmt
		if p.twin == nil {
			tw, err := s.prepareAs(ctx, "", p.src, p.paramOIDs, false)
			if err != nil {
				return err
			}
			if !sameDescription(tw, p) {
				tw.closed = true
				s.releaseStatement(tw) // in no session map: closed, it goes now
				return pgErrorf(codes.FeatureNotSupported, "this statement holds more rows than --native-row-limit lets the server answer without DuckDB, and DuckDB describes its result otherwise; raise the limit or add a LIMIT")
			}
			p.twin = tw
		}
		params, err := p.native.twinParams(pt.params)
		if err != nil {
			return err
		}
		params = p.twin.duckValues(params) // N2 (paramnumbers.go)
		// the check Bind makes of a DuckDB statement's values: a NULL that
		// reached a table function's bind aborted the process (nullguard.go)
		for i, v := range params {
			if v.Value == nil && p.twin.nullUnsafe[i+1] {
				return nullParamError(p.twin.clientParam(i + 1))
			}
		}
		pt.twin = &portal{name: pt.name, stmt: p.twin, params: params, formats: pt.formats}
	}
	err := s.runDuck(ctx, pt.twin, maxRows)
	if pt.twin.done {
		pt.done, pt.tag = true, pt.twin.tag
	}
	return err
}

// twinParams are the portal's values as the native path reads them: each
// $n that is a function's argument converted to the argument's type
// (convertArg). A driver that declares $1 int8 (JDBC's setLong) or
// varchar gets dataset_domains($1) answered natively, where DuckDB's
// binder looks for dataset_domains(BIGINT) and finds none: the twin must
// answer what the native statement would have.
func (c *nativeCall) twinParams(params []driver.NamedValue) ([]driver.NamedValue, error) {
	out := slices.Clone(params)
	for i, a := range c.args {
		if a.param == 0 || a.param > len(out) || out[a.param-1].Value == nil {
			continue
		}
		v, err := convertArg(out[a.param-1].Value, c.fn.Args[i])
		if err != nil {
			return nil, err
		}
		out[a.param-1].Value = v
	}
	return out, nil
}

// sameDescription: tw's result is described as p's was.
func sameDescription(tw, p *prepared) bool {
	if tw.returnsRows != p.returnsRows || len(tw.cols) != len(p.cols) {
		return false
	}
	for i, c := range p.cols {
		if tw.cols[i].name != c.name || tw.cols[i].typ.OID != c.typ.OID {
			return false
		}
	}
	return true
}
