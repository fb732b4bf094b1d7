package records

import (
	"context"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/tableschema"
)

// NativeColumn is a column of domain_record's answer without DuckDB.
type NativeColumn struct {
	Name string
	Type duckdb.Type
}

// Native is domain_record answered without DuckDB, for the schema in force
// when NativeLookup made it.
type Native struct {
	Columns []NativeColumn
	// Run returns what the macro returns: the latest record (latest), each
	// field cast by tableschema's Cast, which agrees with the views' SQL
	// casts (tableschema.TestDuckDBCastAgreesWithCast). Once the schema
	// changed it refuses with SQLSTATE 0A000, as PostgreSQL refuses a
	// prepared statement whose table changed its columns.
	Run func(ctx context.Context, domain string) ([][]any, error)
	// Stale reports that datapackage.json's schema changed since: the
	// columns and casts are no longer the lookup's (OnSchemaChange says
	// when to make a new one).
	Stale func() bool
}

// NativeLookup returns domain_record for a server that answers "SELECT …
// FROM domains WHERE domain = $1" without DuckDB (sqlserver's native
// path). ok is false when a field's type has no native form here (the
// lookup then goes through DuckDB): string, integer and datetime fields do.
func (d *Domains) NativeLookup() (n Native, ok bool) {
	d.mu.Lock()
	sch, schema := d.sch, d.sig
	d.mu.Unlock()
	var cols []NativeColumn
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
			return Native{}, false
		}
		if _, err := tableschema.DuckDBCast(f, "x"); err != nil {
			return Native{}, false // kept as text in the views: leave it to them
		}
		cast, err := f.Caster() // compiled once, not per lookup
		if err != nil {
			return Native{}, false
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
	run := func(ctx context.Context, domain string) ([][]any, error) {
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
	stale := func() bool { return d.view.Load().schema != schema }
	return Native{Columns: cols, Run: run, Stale: stale}, true
}

// schemaChangedError is PostgreSQL's answer to a prepared statement whose
// result columns changed: drivers (pgx, JDBC) prepare the statement again
// on it, and the new one is answered under the new schema.
type schemaChangedError struct{}

func (schemaChangedError) Error() string {
	return "cached plan must not change result type (the domain record schema, datapackage.json, changed since this statement was prepared: prepare it again)"
}
func (schemaChangedError) SQLState() string { return "0A000" }

var errSchemaChanged error = schemaChangedError{}
