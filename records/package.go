package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/tableschema"
)

// LoadPackage reads indexes/domains/datapackage.json, writing the design's
// default (create-only, so concurrent servers agree) when the store has none.
func LoadPackage(ctx context.Context, st store.Store) (*tableschema.Package, error) {
	pkg, _, err := LoadPackageVersion(ctx, st)
	return pkg, err
}

// LoadPackageVersion is LoadPackage that also returns the ETag of the
// version read: the condition of a rewrite (a resharding's state) and of a
// compiler's check that its layout is current (compiler I7).
func LoadPackageVersion(ctx context.Context, st store.Store) (*tableschema.Package, store.ETag, error) {
	b, a, err := store.ReadAll(ctx, st, compiler.SchemaKey)
	if errors.Is(err, store.ErrNotFound) {
		body, err := defaultPackageBody()
		if err != nil {
			return nil, "", err
		}
		if _, err := st.Put(ctx, compiler.SchemaKey, bytes.NewReader(body), store.Cond{IfNoneMatch: true}); err != nil && !errors.Is(err, store.ErrPreconditionFailed) {
			return nil, "", fmt.Errorf("write default %s: %w", compiler.SchemaKey, err)
		}
		b, a, err = store.ReadAll(ctx, st, compiler.SchemaKey)
		if err != nil {
			return nil, "", err
		}
	} else if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", compiler.SchemaKey, err)
	}
	pkg, err := parsePackage(b)
	return pkg, a.ETag, err
}

// ReadPackage is LoadPackage for readers that must not write (dhsi
// verify): a store without datapackage.json gets the default LoadPackage
// would write, without writing it.
func ReadPackage(ctx context.Context, st store.Store) (*tableschema.Package, error) {
	b, _, err := store.ReadAll(ctx, st, compiler.SchemaKey)
	if errors.Is(err, store.ErrNotFound) {
		if b, err = defaultPackageBody(); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", compiler.SchemaKey, err)
	}
	return parsePackage(b)
}

// defaultPackageBody is the design's default datapackage.json, its shard
// width recorded.
func defaultPackageBody() ([]byte, error) {
	def := tableschema.DefaultDomainPackage()
	rec, _ := json.Marshal(layoutDoc{ShardWidth: shard.DefaultWidth})
	if def.Extra == nil {
		def.Extra = map[string]json.RawMessage{}
	}
	def.Extra[layoutProperty] = rec
	return json.MarshalIndent(def, "", "  ")
}

func parsePackage(b []byte) (*tableschema.Package, error) {
	pkg, err := tableschema.ParsePackage(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", compiler.SchemaKey, err)
	}
	if len(pkg.Resources) == 0 || pkg.Resources[0].Schema == nil {
		return nil, fmt.Errorf("%s: resources[0].schema: missing", compiler.SchemaKey)
	}
	return pkg, nil
}

// layoutProperty is the custom datapackage.json property that records how
// the index is sharded: {"dhsi": {"shard_width": 2}}, and during a
// resharding {"dhsi": {"shard_width": 3, "previous_shard_width": 2}}. The
// width is a recorded parameter, never a constant, so an index can be
// resharded (package reshard, docs/format/datapackage.md).
const layoutProperty = "dhsi"

type layoutDoc struct {
	ShardWidth         int `json:"shard_width"`
	PreviousShardWidth int `json:"previous_shard_width,omitempty"`
}

// Layouts is what a store records of its sharding: the Current layout,
// which every compaction writes, and while a resharding is in progress the
// Previous one (Width 0 otherwise), whose shards readers still union in.
type Layouts struct {
	Current, Previous shard.Layout
}

// Resharding reports whether a resharding is in progress.
func (l Layouts) Resharding() bool { return l.Previous.Width != 0 }

// LayoutOf returns the current shard layout recorded in pkg, or the default
// for a package that records none (every index written before it was
// recorded).
func LayoutOf(pkg *tableschema.Package) (shard.Layout, error) {
	l, err := LayoutsOf(pkg)
	return l.Current, err
}

// LayoutsOf returns the layouts recorded in pkg.
func LayoutsOf(pkg *tableschema.Package) (Layouts, error) {
	raw, ok := pkg.Extra[layoutProperty]
	if !ok {
		return Layouts{Current: shard.Default()}, nil
	}
	var doc layoutDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Layouts{}, fmt.Errorf("%s: %s: %w", compiler.SchemaKey, layoutProperty, err)
	}
	out := Layouts{Current: shard.Default()}
	if doc.ShardWidth != 0 {
		out.Current = shard.Layout{Width: doc.ShardWidth}
		if err := out.Current.Validate(); err != nil {
			return Layouts{}, fmt.Errorf("%s: %s.shard_width: %w", compiler.SchemaKey, layoutProperty, err)
		}
	}
	if doc.PreviousShardWidth != 0 {
		out.Previous = shard.Layout{Width: doc.PreviousShardWidth}
		if err := out.Previous.Validate(); err != nil {
			return Layouts{}, fmt.Errorf("%s: %s.previous_shard_width: %w", compiler.SchemaKey, layoutProperty, err)
		}
		if out.Previous == out.Current {
			return Layouts{}, fmt.Errorf("%s: %s.previous_shard_width equals shard_width (%d)", compiler.SchemaKey, layoutProperty, out.Current.Width)
		}
	}
	return out, nil
}

// WithLayouts returns the body of pkg with layouts recorded, every other
// property kept.
func WithLayouts(pkg *tableschema.Package, l Layouts) ([]byte, error) {
	cp := *pkg
	cp.Extra = map[string]json.RawMessage{}
	for k, v := range pkg.Extra {
		cp.Extra[k] = v
	}
	doc := map[string]json.RawMessage{}
	if raw, ok := pkg.Extra[layoutProperty]; ok {
		_ = json.Unmarshal(raw, &doc) // keep what else the property says
	}
	doc["shard_width"], _ = json.Marshal(l.Current.Width)
	delete(doc, "previous_shard_width")
	if l.Resharding() {
		doc["previous_shard_width"], _ = json.Marshal(l.Previous.Width)
	}
	rec, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	cp.Extra[layoutProperty] = rec
	return json.MarshalIndent(&cp, "", "  ")
}

// CompilerConfig returns the compiler configuration a store's package
// implies: its schema's fields and its shard layout.
func CompilerConfig(pkg *tableschema.Package) (compiler.Config, error) {
	sch, err := SchemaOf(pkg)
	if err != nil {
		return compiler.Config{}, err
	}
	layout, err := LayoutOf(pkg)
	if err != nil {
		return compiler.Config{}, err
	}
	return compiler.Config{SchemaFields: sch.FieldNames(), Schema: sch, Layout: layout}, nil
}

// LoadCompilerConfig is CompilerConfig of the store's package as it is now,
// with the package's ETag, so the compiler notices a resharding that starts
// after it was configured (compiler I7).
func LoadCompilerConfig(ctx context.Context, st store.Store) (compiler.Config, error) {
	pkg, etag, err := LoadPackageVersion(ctx, st)
	if err != nil {
		return compiler.Config{}, err
	}
	cfg, err := CompilerConfig(pkg)
	cfg.PackageETag = etag
	return cfg, err
}

// SchemaOf returns the schema DHSI types shard records with: the first
// resource's, which must have domain and updated_at fields.
func SchemaOf(pkg *tableschema.Package) (*tableschema.Schema, error) {
	s := pkg.Resources[0].Schema
	var names []string
	for _, f := range s.Fields {
		names = append(names, f.Name)
	}
	for _, want := range []string{compiler.DomainField, compiler.UpdatedAtField} {
		if slices.Index(names, want) < 0 {
			return nil, fmt.Errorf("%s: resources[0].schema.fields: no %q field", compiler.SchemaKey, want)
		}
	}
	return s, nil
}
