package udf

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	duckdb "github.com/duckdb/duckdb-go/v2"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/urlnorm"
)

// RegisterURLFuncs installs the URL scalar functions:
//
//	url_id(raw VARCHAR) → UBIGINT            xxh3-64 of the raw URL (design §1.2)
//	norm_url(raw VARCHAR) → VARCHAR          the normalized URL, NULL if it does not normalize
//	etld1(url_or_host VARCHAR) → VARCHAR     the registered domain, NULL if none
//	url_host(url VARCHAR) → VARCHAR          the URL's host as the index normalizes it (lower case, punycode), NULL if it does not normalize
//	roaring_contains(bitmap BLOB, id UINTEGER) → BOOLEAN   membership in a portable Roaring bitmap
//	lake_raw(url VARCHAR, raw_edit BLOB) → VARCHAR          the raw URL a lake row's edit rebuilds (docs/format/lake.md)
func RegisterURLFuncs(ctx context.Context, db *sql.DB, norm *urlnorm.Normalizer) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	ti := func(t duckdb.Type) duckdb.TypeInfo {
		x, err := duckdb.NewTypeInfo(t)
		if err != nil {
			panic(err) // fixed primitive types only
		}
		return x
	}
	varchar, ubigint, blob, uinteger, boolean := ti(duckdb.TYPE_VARCHAR), ti(duckdb.TYPE_UBIGINT), ti(duckdb.TYPE_BLOB), ti(duckdb.TYPE_UINTEGER), ti(duckdb.TYPE_BOOLEAN)
	fns := map[string]scalar{
		"url_id": {name: "url_id", cfg: duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{varchar}, ResultTypeInfo: ubigint},
			fn: func(v []driver.Value) (any, error) { return urlnorm.URLID(v[0].(string)), nil }},
		"norm_url": {name: "norm_url", cfg: duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{varchar}, ResultTypeInfo: varchar},
			fn: func(v []driver.Value) (any, error) {
				u, err := norm.Parse(v[0].(string))
				if err != nil {
					return nil, nil
				}
				return u.Normalized, nil
			}},
		"etld1": {name: "etld1", cfg: duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{varchar}, ResultTypeInfo: varchar},
			fn: func(v []driver.Value) (any, error) {
				d, _, err := norm.QueryDomain(v[0].(string))
				if err != nil {
					return nil, nil
				}
				return d, nil
			}},
		// url_host answers the CDX match types "host" (url_host(url) =
		// 'www.example.com') and, with LIKE, a host and its subdomains
		"url_host": {name: "url_host", cfg: duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{varchar}, ResultTypeInfo: varchar},
			fn: func(v []driver.Value) (any, error) {
				u, err := norm.Parse(v[0].(string))
				if err != nil {
					return nil, nil
				}
				return strings.TrimSuffix(u.Host, "."), nil
			}},
		"lake_raw": {name: "lake_raw", cfg: duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{varchar, blob}, ResultTypeInfo: varchar},
			fn: func(v []driver.Value) (any, error) {
				edit, ok := v[1].([]byte)
				if !ok {
					return nil, fmt.Errorf("lake_raw: want a BLOB edit")
				}
				b, err := catalog.AppendRaw(nil, v[0].(string), edit)
				if err != nil {
					return nil, fmt.Errorf("lake_raw: %w", err)
				}
				return string(b), nil
			}},
		"roaring_contains": {name: "roaring_contains", cfg: duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{blob, uinteger}, ResultTypeInfo: boolean},
			fn: func(v []driver.Value) (any, error) {
				b, ok := v[0].([]byte)
				if !ok {
					return nil, fmt.Errorf("roaring_contains: want a BLOB bitmap")
				}
				bm := roaring.New()
				if _, err := bm.FromUnsafeBytes(b); err != nil {
					return nil, fmt.Errorf("roaring_contains: not a portable Roaring bitmap: %w", err)
				}
				return bm.Contains(v[1].(uint32)), nil
			}},
	}
	for name, f := range fns {
		if err := duckdb.RegisterScalarUDF(conn, name, f); err != nil {
			return fmt.Errorf("register %s: %w", name, err)
		}
	}
	return nil
}

// scalar is a simple row-at-a-time scalar function, panic-guarded.
type scalar struct {
	cfg  duckdb.ScalarFuncConfig
	fn   duckdb.RowExecutorFn
	name string
}

func (s scalar) Config() duckdb.ScalarFuncConfig { return s.cfg }
func (s scalar) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: guard(s.name, s.fn)}
}
