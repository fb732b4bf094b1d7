package records

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/tableschema"
)

func TestLoadPackage(t *testing.T) {
	ctx := context.Background()
	t.Run("a store without a schema gets the design's default, shard width recorded", func(t *testing.T) {
		st, _ := localfs.Open(t.TempDir())
		pkg, err := LoadPackage(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := CompilerConfig(pkg)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(cfg.SchemaFields, ",") != "domain,company_name,scraper_version,updated_at" || cfg.Layout.Width != 2 {
			t.Fatalf("config %+v", cfg)
		}
		b, _, _ := store.ReadAll(ctx, st, compiler.SchemaKey)
		if !strings.Contains(string(b), `"shard_width": 2`) {
			t.Fatalf("the width is not recorded in datapackage.json:\n%s", b)
		}
	})
	withWidth := func(w string) []byte {
		pkg := tableschema.DefaultDomainPackage()
		pkg.Extra = map[string]json.RawMessage{"dhsi": json.RawMessage(`{"shard_width": ` + w + `}`)}
		b, _ := json.Marshal(pkg)
		return b
	}
	t.Run("a recorded width is used", func(t *testing.T) {
		pkg, err := tableschema.ParsePackage(withWidth("1"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := LayoutOf(pkg)
		if err != nil || l.Width != 1 {
			t.Fatalf("layout %+v %v", l, err)
		}
	})
	t.Run("an impossible width is an error that names the property", func(t *testing.T) {
		pkg, _ := tableschema.ParsePackage(withWidth("9"))
		if _, err := LayoutOf(pkg); err == nil || !strings.Contains(err.Error(), "dhsi.shard_width") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a schema without updated_at is refused with the path", func(t *testing.T) {
		st, _ := localfs.Open(t.TempDir())
		st.Put(ctx, compiler.SchemaKey, strings.NewReader(`{"resources":[{"name":"shards","path":"shards/*.usv","schema":{"fields":[{"name":"domain"}]}}]}`), store.Cond{})
		pkg, err := LoadPackage(ctx, st)
		if err == nil {
			_, err = CompilerConfig(pkg)
		}
		if err == nil || !strings.Contains(err.Error(), `no "updated_at" field`) {
			t.Fatalf("err = %v", err)
		}
	})
}
