// Package udf owns DHSI's scalar and table functions inside DuckDB. Every
// function is its own type whose constructor builds the DuckDB type
// descriptions; Register installs them all on a database.
//
// Invariant: a Go panic inside a DuckDB callback kills the whole server, so
// every executor is wrapped by guard, which turns a panic into a query error.
package udf

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"github.com/dhsi/dhsi/compiler"

	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/shard"
)

// Register installs every DHSI function on db. Functions registered on one
// connection are visible to all connections of the database. layout
// returns the store's current shard layout, which a resharding changes
// while the server runs.
func Register(ctx context.Context, db *sql.DB, layout func() shard.Layout) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	fns := []struct {
		name string
		new  func() (duckdb.ScalarFunc, error)
	}{
		{"shard_id", func() (duckdb.ScalarFunc, error) { return newShardID(layout) }},
	}
	for _, f := range fns {
		fn, err := f.new()
		if err != nil {
			return fmt.Errorf("udf %s: %w", f.name, err)
		}
		if err := duckdb.RegisterScalarUDF(conn, f.name, fn); err != nil {
			return fmt.Errorf("register udf %s: %w", f.name, err)
		}
	}
	return nil
}

// guard turns a panic in fn into an error for the one row.
func guard(name string, fn duckdb.RowExecutorFn) duckdb.RowExecutorFn {
	return func(values []driver.Value) (out any, err error) {
		defer func() {
			if r := recover(); r != nil {
				out, err = nil, fmt.Errorf("%s: internal error: %v", name, r)
			}
		}()
		return fn(values)
	}
}

// shardID is shard_id(domain VARCHAR) → VARCHAR: the hash shard of a domain
// ("5e"), under the index's recorded shard layout, for the domain's key:
// shard_id('Example.COM') is where example.com's record lives.
type shardID struct {
	cfg    duckdb.ScalarFuncConfig
	layout func() shard.Layout
}

func newShardID(layout func() shard.Layout) (*shardID, error) {
	if err := layout().Validate(); err != nil {
		return nil, err
	}
	varchar, err := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	if err != nil {
		return nil, err
	}
	return &shardID{
		// volatile: the layout changes while the server runs (a
		// resharding), so DuckDB must not fold shard_id('x') into a plan
		// that a client's prepared statement keeps
		cfg:    duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{varchar}, ResultTypeInfo: varchar, Volatile: true},
		layout: layout,
	}, nil
}

func (f *shardID) Config() duckdb.ScalarFuncConfig { return f.cfg }

func (f *shardID) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: guard("shard_id", func(values []driver.Value) (any, error) {
		s, ok := values[0].(string)
		if !ok {
			return nil, fmt.Errorf("shard_id: want a VARCHAR domain, got %T", values[0])
		}
		// the shard a record of s lives in: its key is the normalized
		// registered domain (the record rule's K1, compiler/rule.go); what is
		// no registered domain has no record, and hashes as written
		if d, err := compiler.NormalizeDomain(s); err == nil {
			s = d
		}
		return f.layout().Of(s), nil
	})}
}

// TableFunctions are the names of DHSI's table functions. duckdb-go reads
// their arguments at bind time without a NULL check, so the server refuses
// NULL arguments to them (sqlserver.Config.NullUnsafeFunctions).
var TableFunctions = []string{"compact_shard", "compact_all", "inbox_put", "ingest", "dhsi_ingest", "reshard", "grant_dataset", "revoke_dataset", "domain_datasets", "domain_urls", "domain_url_fields", "dataset_domains", "dataset_domains_set", URLsByDomainFunction, URLsByDomainDatasetFunction, URLsScanFunction, "dhsi_datasets", "dhsi_dataset_grants"}

// ReaderTableFunctions are DHSI's table functions every role may call: each
// answers only what the caller's grants let it see (access A3).
var ReaderTableFunctions = []string{"domain_datasets", "domain_urls", "domain_url_fields", "dataset_domains", "dataset_domains_set", URLsByDomainFunction, URLsByDomainDatasetFunction, URLsScanFunction, "dhsi_datasets", "dhsi_dataset_grants"}
