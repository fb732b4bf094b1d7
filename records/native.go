package records

import (
	"context"
	"errors"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/tableschema"
)

// NativeColumn is a column of domain_record's answer without DuckDB.
type NativeColumn struct {
	Name string
	Type duckdb.Type
}

// NativeLookup returns domain_record for a server that answers "SELECT …
// FROM domains WHERE domain = $1" without DuckDB (sqlserver's native
// path): its columns, and run, which returns what the macro returns — the
// latest record (latest), each field cast by tableschema's Cast, which
// agrees with the views' SQL casts (tableschema.TestDuckDBCastAgreesWithCast).
// ok is false when a field's type has no native form here (the lookup then
// goes through DuckDB): string, integer and datetime fields do. The columns
// and casts are the schema's now; run refuses a lookup once
// datapackage.json's schema changed.
func (d *Domains) NativeLookup() (cols []NativeColumn, run func(ctx context.Context, domain string) ([][]any, error), ok bool) {
	d.mu.Lock()
	sch, schema := d.sch, d.sig
	d.mu.Unlock()
	casts := make([]func(string) any, len(sch.Fields))
	for i, f := range sch.Fields {
		t := duckdb.TYPE_VARCHAR
		switch {
		case f.Name == compiler.DomainField:
			casts[i] = func(s string) any { return s } // the key, untouched (views.go)
			cols = append(cols, NativeColumn{f.Name, t})
			continue
		case f.EffectiveType() == tableschema.TypeString:
		case f.EffectiveType() == tableschema.TypeInteger:
			t = duckdb.TYPE_BIGINT
		case f.EffectiveType() == tableschema.TypeDatetime:
			t = duckdb.TYPE_TIMESTAMP_TZ
		default:
			return nil, nil, false
		}
		if _, err := tableschema.DuckDBCast(f, "x"); err != nil {
			return nil, nil, false // kept as text in the views: leave it to them
		}
		cast, err := f.Caster() // compiled once, not per lookup
		if err != nil {
			return nil, nil, false
		}
		casts[i] = func(s string) any {
			v, err := cast(s)
			if err != nil {
				return nil // the views' TRY_CAST gives NULL
			}
			return v
		}
		cols = append(cols, NativeColumn{f.Name, t})
	}
	run = func(ctx context.Context, domain string) ([][]any, error) {
		v := d.view.Load()
		if v.schema != schema {
			return nil, errSchemaChanged // the casts above are the old schema's
		}
		rows, err := d.lookup(ctx, v, domain)
		if err != nil || len(rows) == 0 {
			return nil, err
		}
		best := latest(rows)
		out := make([]any, len(casts))
		for i, c := range casts {
			out[i] = c(best[len(rowColumns)+i].(string))
		}
		return [][]any{out}, nil
	}
	return cols, run, true
}

var errSchemaChanged = errors.New("the domain record schema (datapackage.json) changed since this server started: restart it, or look the domain up with a WHERE the server does not rewrite (domain IN ($1))")
