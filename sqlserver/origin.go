package sqlserver

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"sync"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/sqlserver/pgsql"
)

// RowDescription carries, for each column, the table OID and attribute
// number it comes from. JDBC's ResultSetMetaData (getTableName, isNullable,
// isAutoIncrement) and BI tools that edit query results read them. DuckDB
// does not report column lineage, so DHSI derives it for the statement shape
// where it is certain: a SELECT from one table or view whose select list
// holds plain column references and stars. Everything else reports zeros,
// which PostgreSQL also does for expressions.

// originItem is one select-list entry: a star, a column reference, or an
// expression (neither).
type originItem struct {
	star   bool
	column string
}

// singleTableSelect recognises SELECT [DISTINCT] list FROM [schema.]table
// [[AS] alias] [WHERE | GROUP | ORDER | LIMIT | ...] and returns the table
// and the select list.
func singleTableSelect(toks []pgsql.Token) (schema, table string, items []originItem, ok bool) {
	if len(toks) < 4 || !toks[0].Is("SELECT") {
		return "", "", nil, false
	}
	i := 1
	if toks[i].Is("DISTINCT") {
		i++
		if i < len(toks) && toks[i].Is("ON") {
			return "", "", nil, false
		}
	} else if toks[i].Is("ALL") {
		i++
	}
	depth, from := 0, -1
	inFrom := false // between FROM and the next clause
	for k := i; k < len(toks); k++ {
		switch toks[k].Text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		}
		if depth != 0 {
			continue
		}
		switch toks[k].Upper() {
		case "FROM":
			if from < 0 {
				from, inFrom = k, true
			}
		case "UNION", "INTERSECT", "EXCEPT", "JOIN", "INTO":
			return "", "", nil, false
		}
		if inFrom && k > from && clauseKeyword(toks[k]) {
			inFrom = false
		}
		if inFrom && toks[k].Text == "," {
			return "", "", nil, false // FROM a, b
		}
	}
	if from < 0 || from+1 >= len(toks) {
		return "", "", nil, false
	}
	// the FROM item
	rest := toks[from+1:]
	isName := func(t pgsql.Token) bool { return t.Kind == pgsql.Ident || t.Kind == pgsql.QIdent }
	if !isName(rest[0]) {
		return "", "", nil, false
	}
	table, rest = rest[0].IdentName(), rest[1:]
	if len(rest) >= 2 && rest[0].Text == "." && isName(rest[1]) {
		schema, table, rest = table, rest[1].IdentName(), rest[2:]
	}
	if len(rest) > 0 && (rest[0].Text == "." || rest[0].Text == "(") {
		return "", "", nil, false // catalog.schema.table, or a table function
	}
	if len(rest) > 0 && rest[0].Is("AS") {
		rest = rest[1:]
	}
	if len(rest) > 0 && isName(rest[0]) && !clauseKeyword(rest[0]) {
		rest = rest[1:] // alias
	}
	if len(rest) > 0 && !clauseKeyword(rest[0]) {
		return "", "", nil, false
	}
	// the select list
	start := i
	depth = 0
	for k := i; k <= from; k++ {
		if k < from {
			switch toks[k].Text {
			case "(", "[":
				depth++
			case ")", "]":
				depth--
			}
			if depth != 0 || toks[k].Text != "," {
				continue
			}
		}
		items = append(items, originOf(toks[start:k]))
		start = k + 1
	}
	return schema, table, items, true
}

// originOf classifies one select-list entry.
func originOf(item []pgsql.Token) originItem {
	isName := func(t pgsql.Token) bool { return t.Kind == pgsql.Ident || t.Kind == pgsql.QIdent }
	// drop an alias: "x AS y" or "x y"
	if n := len(item); n >= 3 && item[n-2].Is("AS") && isName(item[n-1]) {
		item = item[:n-2]
	} else if n == 2 && isName(item[0]) && isName(item[1]) {
		item = item[:1]
	} else if n == 4 && item[1].Text == "." && isName(item[3]) {
		item = item[:3]
	}
	switch {
	case len(item) == 1 && item[0].Text == "*":
		return originItem{star: true}
	case len(item) == 3 && isName(item[0]) && item[1].Text == "." && item[2].Text == "*":
		return originItem{star: true}
	case len(item) == 1 && isName(item[0]) && !clauseKeyword(item[0]):
		return originItem{column: item[0].IdentName()}
	case len(item) == 3 && isName(item[0]) && item[1].Text == "." && isName(item[2]):
		return originItem{column: item[2].IdentName()}
	}
	return originItem{}
}

// clauseKeyword reports whether t starts a clause after the FROM item (so it
// is no alias).
func clauseKeyword(t pgsql.Token) bool {
	switch t.Upper() {
	case "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "FETCH", "FOR", "WINDOW", "QUALIFY",
		"TABLESAMPLE", "USING", "SAMPLE", "NULL", "TRUE", "FALSE":
		return true
	}
	return false
}

// originsOnce looks the origins of p's columns up the first time p is
// described. Only a Describe asks: the clients that read origins (JDBC,
// BI tools on JDBC) use the extended protocol, and the lookup (a catalog
// query) would otherwise slow every simple-protocol SELECT, whose
// RowDescription carries zeros.
func (s *session) originsOnce(p *prepared) {
	// a native statement is a SELECT too: over a view (datasets, or domains
	// and urls by their lookups) its columns come from the view as DuckDB's
	// path reports them
	if p.origins || !p.returnsRows || p.class.kind != kindDuck || p.native == nil && p.duckType != duckdb.STATEMENT_TYPE_SELECT {
		return
	}
	p.origins = true
	s.annotateOrigins(context.Background(), p)
	p.described = nil // the columns' origins are in the RowDescription
}

// annotateOrigins fills the table OID and attribute number of p's columns
// when the statement is a single-table SELECT (see singleTableSelect).
func (s *session) annotateOrigins(ctx context.Context, p *prepared) {
	schema, table, items, ok := singleTableSelect(p.class.toks)
	if !ok {
		return
	}
	wanted := false
	for _, it := range items {
		wanted = wanted || it.star || it.column != ""
	}
	if !wanted {
		return
	}
	// pragma_table_info binds only this relation; duckdb_columns() would
	// bind every view of every attached database, the catalog shim's too
	schemaCond, qualified := "current_schema()", quoteIdent(table)
	if schema != "" {
		schemaCond, qualified = quoteLiteral(schema), quoteIdent(schema)+"."+quoteIdent(table)
	}
	// the relation's OID and definition, then its columns: from the
	// server's cache when that definition was looked up in this epoch
	relation := fmt.Sprintf(`SELECT table_oid AS oid, sql, false AS is_view FROM duckdb_tables() WHERE database_name = current_database()
	      AND lower(schema_name) = lower(%[1]s) AND lower(table_name) = lower(%[2]s)
	    UNION ALL
	    SELECT view_oid, sql, true FROM duckdb_views() WHERE database_name = current_database()
	      AND lower(schema_name) = lower(%[1]s) AND lower(view_name) = lower(%[2]s)`, schemaCond, quoteLiteral(table))
	if p.native == nil {
		// and whether the session has a TEMP relation of the name, which
		// pragma_table_info reads first (originCache's O2)
		relation = fmt.Sprintf(`SELECT *, (SELECT count(*) FROM duckdb_tables() WHERE temporary AND lower(table_name) = lower(%[2]s))
		    + (SELECT count(*) FROM duckdb_views() WHERE temporary AND lower(view_name) = lower(%[2]s)) AS temps FROM (%[1]s)`, relation, quoteLiteral(table))
	}
	rel, ok := s.queryRelation(ctx, relation)
	if !ok {
		return
	}
	oid := rel.oid
	var cols []originColumn
	if p.native != nil {
		// a view a native function answers has that function's columns, in
		// its order (TestNativeViewsCarryColumnOrigins holds them to
		// DuckDB's): only its OID is looked up
		for i, c := range p.native.fn.Columns {
			cols = append(cols, originColumn{name: c.Name, attnum: int16(i + 1)})
		}
	} else {
		epoch := s.srv.readEpoch()
		cacheable := s.originsCacheable(rel, table)
		if cacheable {
			cols, ok = s.srv.origins.get(rel.oid, rel.def, epoch)
		}
		if !cacheable || !ok {
			// pragma_table_info('urls') binds the view's read_parquet over
			// every file of the lake: 140 ms on the 10M bench store, paid
			// by every Describe of a DuckDB-path statement over urls until
			// the columns were kept (originCache)
			if cols, ok = s.queryColumns(ctx, fmt.Sprintf(`SELECT name, cid + 1 FROM pragma_table_info(%s) ORDER BY cid`, quoteLiteral(qualified))); !ok {
				return
			}
			if cacheable {
				s.srv.origins.put(rel.oid, rel.def, epoch, cols)
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	type origin struct{ attnum int16 }
	var out []origin
	for _, it := range items {
		switch {
		case it.star:
			for _, c := range cols {
				out = append(out, origin{c.attnum})
			}
		case it.column != "":
			var a int16
			for _, c := range cols {
				if strings.EqualFold(c.name, it.column) {
					a = c.attnum
				}
			}
			out = append(out, origin{a})
		default:
			out = append(out, origin{})
		}
	}
	if len(out) != len(p.cols) {
		return
	}
	for i, o := range out {
		if o.attnum != 0 {
			p.cols[i].table, p.cols[i].attnum = oid, o.attnum
		}
	}
}

// originColumn is a relation's column: its name and attribute number.
type originColumn struct {
	name   string
	attnum int16
}

// relationRow is what annotateOrigins' relation query says of a table or
// view: its OID, its definition, and whether the session has a TEMP
// relation of its name (temps, for DuckDB-path statements).
type relationRow struct {
	oid    uint32
	def    string
	isView bool
	temps  int64
}

// queryRelation runs relation, a query of one relation's OID, definition
// (duckdb_tables' or duckdb_views' sql), kind and, where asked, TEMP
// namesakes; ok is false unless it answers one row.
func (s *session) queryRelation(ctx context.Context, relation string) (rel relationRow, ok bool) {
	n := 0
	ok = s.eachRow(ctx, relation, func(row []driver.Value) {
		o, _ := toInt64(row[0])
		rel.oid, n = uint32(o), n+1
		rel.def, _ = row[1].(string)
		rel.isView, _ = row[2].(bool)
		if len(row) > 3 {
			rel.temps, _ = toInt64(row[3])
		}
	})
	return rel, ok && n == 1
}

// queryColumns runs q, a query of (name, attnum) rows.
func (s *session) queryColumns(ctx context.Context, q string) (cols []originColumn, ok bool) {
	ok = s.eachRow(ctx, q, func(row []driver.Value) {
		n, _ := toInt64(row[1])
		name, _ := row[0].(string)
		cols = append(cols, originColumn{name: name, attnum: int16(n)})
	})
	return cols, ok
}

// eachRow runs q on the session's connection and calls each with every
// row; false if it failed (no origin is a correct answer).
func (s *session) eachRow(ctx context.Context, q string, each func(row []driver.Value)) bool {
	rows, err := s.duck.QueryContext(ctx, q, nil)
	if err != nil {
		return false
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	for {
		if err := rows.Next(dest); err != nil {
			return err == io.EOF
		}
		each(dest)
	}
}

// originsCacheable says whether the columns of rel, named table, may come
// from and go to the server's originCache (O1-O3).
func (s *session) originsCacheable(rel relationRow, table string) bool {
	if rel.temps > 0 || s.tx != txIdle {
		return false // O2, O3
	}
	if !rel.isView {
		return true
	}
	name := strings.ToLower(table)
	_, lookup := s.srv.cfg.PointLookups[name]
	_, native := s.srv.cfg.NativeViews[name]
	return lookup || native // O1
}

// originCache keeps relations' columns for originsOnce, server-wide. An
// entry is a relation's OID and definition text in one read epoch: a
// replaced view has another OID, an altered table another definition
// (ALTER keeps the OID), and the urls view, whose text stays while its
// columns follow the lake's files (docs/format/lake.md, kept fields), is
// looked up again in each epoch (Config.ReadEpoch changes with every index
// version and grant). What else the key does not fix is kept out:
//
//	O1. Of views, only the server's own (Config.PointLookups and
//	    NativeViews: urls, domains, datasets), whose bodies read functions:
//	    another view's columns follow the tables it reads, which can be
//	    dropped and created again under its unchanged OID and text.
//	O2. Nothing is read or kept for a session that has a TEMP relation of
//	    the name, which pragma_table_info reads first: a reader's TEMP tt
//	    (z, y, a) once gave every session column 3 for a of main.tt (a, b).
//	O3. Nor inside a transaction block, whose catalog may hold DDL no
//	    other session sees, or an older snapshot than its epoch says.
type originCache struct {
	mu      sync.Mutex
	epoch   uint64
	entries map[originKey][]originColumn
}

type originKey struct {
	oid uint32
	def string
}

// maxOriginEntries bounds the cache: a client creating views by the
// thousand cannot grow it past this; it starts afresh instead.
const maxOriginEntries = 1024

func (c *originCache) get(oid uint32, def string, epoch uint64) ([]originColumn, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		return nil, false
	}
	cols, ok := c.entries[originKey{oid, def}]
	return cols, ok
}

func (c *originCache) put(oid uint32, def string, epoch uint64, cols []originColumn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch || len(c.entries) >= maxOriginEntries {
		c.epoch, c.entries = epoch, nil
	}
	if c.entries == nil {
		c.entries = map[originKey][]originColumn{}
	}
	c.entries[originKey{oid, def}] = cols
}
