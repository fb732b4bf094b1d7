package sqlserver

import (
	"fmt"
	"strings"

	dhsisql "github.com/dhsi/dhsi/sql"
)

// typeDisplay is format_type's name for each type (arrays add "[]").
var typeDisplay = map[uint32]string{
	oidBool: "boolean", oidBytea: "bytea", oidChar: `"char"`, oidName: "name", oidInt8: "bigint",
	oidInt2: "smallint", oidInt4: "integer", oidText: "text", oidOid: "oid", oidJSON: "json",
	oidFloat4: "real", oidFloat8: "double precision", oidUnknown: "unknown", oidVarchar: "character varying",
	oidDate: "date", oidTime: "time without time zone", oidTimestamp: "timestamp without time zone",
	oidTimestampTZ: "timestamp with time zone", oidInterval: "interval", oidTimeTZ: "time with time zone",
	oidNumeric: "numeric", oidUUID: "uuid", oidJSONB: "jsonb",
}

// duckTypeOIDs maps DuckDB's type names (duckdb_columns().data_type) to the
// OIDs colTypeOf reports on the wire; catalog_test checks the two agree.
var duckTypeOIDs = []struct {
	names []string
	like  string
	oid   uint32
}{
	{names: []string{"BOOLEAN"}, oid: oidBool},
	{names: []string{"TINYINT", "SMALLINT", "UTINYINT"}, oid: oidInt2},
	{names: []string{"INTEGER", "USMALLINT"}, oid: oidInt4},
	{names: []string{"BIGINT", "UINTEGER"}, oid: oidInt8},
	{names: []string{"UBIGINT", "HUGEINT", "UHUGEINT", "BIGNUM", "VARINT"}, like: "DECIMAL(%", oid: oidNumeric},
	{names: []string{"FLOAT"}, oid: oidFloat4},
	{names: []string{"DOUBLE"}, oid: oidFloat8},
	{names: []string{"BLOB", "GEOMETRY"}, oid: oidBytea},
	{names: []string{"DATE"}, oid: oidDate},
	{names: []string{"TIME"}, oid: oidTime},
	{names: []string{"TIME WITH TIME ZONE"}, oid: oidTimeTZ},
	{names: []string{"TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"}, oid: oidTimestamp},
	{names: []string{"TIMESTAMP WITH TIME ZONE"}, oid: oidTimestampTZ},
	{names: []string{"INTERVAL"}, oid: oidInterval},
	{names: []string{"UUID"}, oid: oidUUID},
	{names: []string{"JSON"}, oid: oidJSON},
	{names: []string{"VARIANT"}, like: "STRUCT(%", oid: oidJSON},
	{like: "MAP(%", oid: oidJSON},
	{like: "UNION(%", oid: oidJSON},
}

// versionBanner is what version() returns: clients parse the leading
// "PostgreSQL 16.x".
const versionBanner = "PostgreSQL " + serverVersion + " (DHSI, DuckDB) on x86_64-pc-linux-gnu, compiled by Go, 64-bit"

// shimSQL returns the statements that install the catalog shim: the parts
// generated from this package's type table first, then sql/pg_catalog.sql.
func shimSQL() []string {
	var rows []string
	for _, t := range pgTypes {
		disp := typeDisplay[t.OID]
		if t.Elem != 0 {
			disp = typeDisplay[t.Elem] + "[]"
		}
		rows = append(rows, fmt.Sprintf("(%d, %s, %d, %d, %d, %s, %s)",
			t.OID, quoteLiteral(t.Name), t.Len, t.Elem, t.Array, quoteLiteral(t.Category), quoteLiteral(disp)))
	}
	// The type macros are MAP lookups: a macro is expanded textually
	// wherever it is used, and CASE chains nested in one another grew the
	// pg_attribute view's expression so much that binding it dominated every
	// catalog query; a subquery instead would make the views correlated,
	// which DuckDB cannot put on the right of the LEFT JOINs clients write.
	var arrays, display []string
	for _, t := range pgTypes {
		if t.Array != 0 && t.OID != oidJSON {
			arrays = append(arrays, fmt.Sprintf("%d: %d", t.OID, t.Array))
		}
		disp := typeDisplay[t.OID]
		if t.Elem != 0 {
			disp = typeDisplay[t.Elem] + "[]"
		}
		display = append(display, fmt.Sprintf("%d: %s", t.OID, quoteLiteral(disp)))
	}
	var names, prefixes []string
	for _, m := range duckTypeOIDs {
		for _, n := range m.names {
			names = append(names, fmt.Sprintf("%s: %d", quoteLiteral(n), m.oid))
		}
		if m.like != "" {
			prefixes = append(prefixes, fmt.Sprintf("%s: %d", quoteLiteral(strings.TrimSuffix(m.like, "(%")), m.oid))
		}
	}
	out := []string{
		"CREATE OR REPLACE TABLE dhsi_sys.pg.pg_type_base (oid BIGINT, typname VARCHAR, typlen SMALLINT, typelem BIGINT, typarray BIGINT, typcategory VARCHAR, dhsi_display VARCHAR)",
		"INSERT INTO dhsi_sys.pg.pg_type_base VALUES " + strings.Join(rows, ", "),
		// a DuckDB type name (duckdb_columns().data_type) to its OID: by
		// name, else by the word before "(" (DECIMAL(10,2), STRUCT(...))
		"CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_scalar_oid(p_t) AS coalesce(MAP {" + strings.Join(names, ", ") + "}[p_t], MAP {" +
			strings.Join(prefixes, ", ") + `}[regexp_extract(p_t, '^([A-Z]+)\(', 1)], ` + fmt.Sprint(oidText) + ")",
		"CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_array_oid(p_elem) AS coalesce(MAP {" + strings.Join(arrays, ", ") + "}[p_elem], " + fmt.Sprint(oidJSON) + ")",
		"CREATE OR REPLACE MACRO dhsi_sys.pg.dhsi_type_display(p_oid) AS MAP {" + strings.Join(display, ", ") + "}[p_oid]",
		"CREATE OR REPLACE MACRO dhsi_sys.pg.version() AS " + quoteLiteral(versionBanner),
	}
	return append(out, dhsisql.PGCatalog()...)
}
