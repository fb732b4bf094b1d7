package udf

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/dhsi/dhsi/access"
)

// FunctionDoc documents one of DHSI's functions for the PostgreSQL catalog
// (psql's \df and \sf, pgAdmin, DBeaver): DuckDB knows a Go function's
// argument types but not their names or what it does.
type FunctionDoc struct {
	Name        string
	Args        []string // argument names, in order
	Example     []string // SQL literals that bind (DESCRIBE finds a table function's columns)
	Description string
}

// NamedArgs are the functions' named arguments (name := value), each
// optional; DuckDB lists them after the positional ones.
var NamedArgs = map[string][]string{"ingest": {"keep_columns"}}

// FunctionDocs are DHSI's functions. TestFunctionDocs checks that every
// registered function has one, with as many names as it has arguments.
var FunctionDocs = []FunctionDoc{
	{"domain_datasets", []string{"domain"}, []string{"'example.com'"}, "the datasets holding URLs of a domain, with exact counts"},
	{"domain_record", []string{"domain"}, []string{"'example.com'"}, "domains WHERE domain = d, from the one shard d hashes to (the server answers that WHERE this way)"},
	{"domain_urls", []string{"domain", "dataset_id", "offset", "limit"}, []string{"'example.com'", "1", "0", "10"}, "one page of a domain's URLs in a dataset"},
	{"domain_url_fields", []string{"domain", "dataset_id", "offset", "limit"}, []string{"'example.com'", "1", "0", "10"}, "domain_urls with what the input said about each URL: status, mime, digest, length, offset, filename (CDX) and the other kept columns as JSON (fields)"},
	{"dataset_domains", []string{"dataset_id"}, []string{"1"}, "every domain of a dataset, in domain order, with its exact URL count"},
	{"dataset_domains_set", []string{"a", "op", "b"}, []string{"1", "'andnot'", "2"}, "the domains of dataset a op dataset b, op 'and', 'or', 'andnot' or 'xor', with each side's URL count (NULL: not in it)"},
	{URLsByDomainFunction, []string{"domain"}, []string{"'example.com'"}, "urls WHERE domain = d, from the postings (the server answers that WHERE this way)"},
	{URLsByDomainDatasetFunction, []string{"domain", "dataset_id"}, []string{"'example.com'", "1"}, "urls WHERE domain = d AND dataset_id = n, from that dataset's postings"},
	{URLsScanFunction, nil, nil, "every row of the urls view the caller may see, read by the server (the urls view on an S3 store)"},
	{"dhsi_datasets", nil, nil, "the datasets of the URL index the caller may see"},
	{"dhsi_dataset_grants", nil, nil, "who may see which dataset"},
	{"compact_shard", []string{"shard"}, []string{"'5e'"}, "merge one shard's pending domain records into it (writer)"},
	{"compact_all", nil, nil, "merge every shard's pending domain records (writer)"},
	{"inbox_put", []string{"domain", "record"}, []string{"'example.com'", "'{}'"}, "land one domain record in the inbox (writer)"},
	{"reshard", []string{"width"}, []string{"2"}, "move the domain-record shards to a new width, 1 to 4 hex characters (admin)"},
	{"ingest", []string{"dataset", "files"}, []string{"'d'", "'f'"}, "ingest URL files on the server into a dataset (writer); keep_columns := 'name[:type],...' keeps input columns, as dhsi ingest --keep-columns"},
	{"dhsi_ingest", []string{"dataset", "files", "keep_columns"}, []string{"'d'", "'f'", "''"}, "what CALL ingest runs, every argument given ('' for none)"},
	{"grant_dataset", []string{"dataset", "grantee"}, []string{"'d'", "'u'"}, "let a user or role see a dataset (admin)"},
	{"revoke_dataset", []string{"dataset", "grantee"}, []string{"'d'", "'u'"}, "stop a user or role seeing a dataset (admin)"},
	{"shard_id", []string{"domain"}, nil, "the domain-record shard a domain's record lives in, under the store's layout"},
	{"etld1", []string{"host"}, nil, "the registered domain (eTLD+1) of a host, lower case and punycode"},
	{"norm_url", []string{"url"}, nil, "a URL normalized as the URL index stores it"},
	{"url_host", []string{"url"}, nil, "the host of a URL as the index normalizes it: url_host(url) = 'www.example.com' is the CDX match type host"},
	{"url_id", []string{"url"}, nil, "the 64-bit id of a normalized URL"},
	{"domain_dataset_list", []string{"domain"}, nil, "domain_datasets as a list, for joins: FROM my_domains d, unnest(domain_dataset_list(d.domain)) t(x)"},
	{"roaring_contains", []string{"bitmap", "id"}, nil, "whether a serialized Roaring bitmap holds an id"},
	{"lake_raw", []string{"url", "raw_edit"}, nil, "the raw URL a lake row's raw_edit rebuilds from its url (the urls view's raw)"},
}

// InstallFunctionDocs fills the catalog shim's table of DHSI's functions
// (dhsi_sys.pg.dhsi_functions, read by pg_proc and pg_get_functiondef)
// from FunctionDocs and from what DuckDB says of each registered one:
// argument types, and a scalar's result type or a table function's
// columns. It runs once at start-up, after every function is registered;
// a documented function that is not registered (CALL ingest without
// --ingest-dir) is left out.
func InstallFunctionDocs(ctx context.Context, db *sql.DB) error {
	// a table function's bind checks the caller's role: DESCRIBE runs as
	// the server itself
	ctx = access.WithPrincipal(ctx, access.System)
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	pgType := func(duckType string) (string, error) {
		var t sql.NullString
		err := conn.QueryRowContext(ctx, "SELECT dhsi_sys.pg.dhsi_type_display(dhsi_sys.pg.dhsi_scalar_oid(?))", strings.ToUpper(duckType)).Scan(&t)
		if err != nil || !t.Valid {
			return strings.ToLower(duckType), err
		}
		return t.String, nil
	}
	for _, d := range FunctionDocs {
		var kind, schema string
		var params []any
		var ret sql.NullString
		err := conn.QueryRowContext(ctx, "SELECT function_type, parameter_types, return_type, schema_name FROM duckdb_functions() WHERE function_name = ? AND schema_name IN ('main', 'public') LIMIT 1", d.Name).
			Scan(&kind, &params, &ret, &schema)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return fmt.Errorf("describe %s: %w", d.Name, err)
		}
		named := NamedArgs[d.Name]
		if len(params) != len(d.Args)+len(named) {
			return fmt.Errorf("describe %s: %d arguments, documented %d", d.Name, len(params), len(d.Args)+len(named))
		}
		var args []string
		for i, p := range params {
			if p == nil {
				p = "VARCHAR" // a macro's parameters are untyped; DHSI's take text
			}
			t, err := pgType(fmt.Sprint(p))
			if err != nil {
				return err
			}
			if i < len(d.Args) {
				args = append(args, quoteIdentIfNeeded(d.Args[i])+" "+t)
			} else { // a named argument: optional, '' when left out (IngestMacro)
				args = append(args, quoteIdentIfNeeded(named[i-len(d.Args)])+" "+t+" DEFAULT ''::"+t)
			}
		}
		result := ""
		if kind == "table" || kind == "table_macro" {
			rows, err := conn.QueryContext(ctx, "DESCRIBE SELECT * FROM "+schema+"."+d.Name+"("+strings.Join(d.Example, ", ")+")")
			if err != nil {
				return fmt.Errorf("describe %s: %w", d.Name, err)
			}
			var cols []string
			for rows.Next() {
				var name, typ string
				var rest [4]sql.NullString
				if err := rows.Scan(&name, &typ, &rest[0], &rest[1], &rest[2], &rest[3]); err != nil {
					rows.Close()
					return err
				}
				t, err := pgType(typ)
				if err != nil {
					rows.Close()
					return err
				}
				cols = append(cols, quoteIdentIfNeeded(name)+" "+t)
			}
			rows.Close()
			result = "TABLE(" + strings.Join(cols, ", ") + ")"
		} else if result, err = pgType(ret.String); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO dhsi_sys.pg.dhsi_functions VALUES (?, ?, ?, ?)", d.Name, strings.Join(args, ", "), result, d.Description); err != nil {
			return fmt.Errorf("describe %s: %w", d.Name, err)
		}
	}
	return nil
}

// quoteIdentIfNeeded quotes what PostgreSQL would: names that are not
// plain lower-case identifiers, and reserved words a signature uses.
func quoteIdentIfNeeded(s string) string {
	plain := s != ""
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
		}
	}
	switch s {
	case "offset", "limit", "table", "user":
		plain = false
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
