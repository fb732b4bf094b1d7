package catalog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	pqfile "github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// TestLakeLayoutIsChecked: a lake file of a layout this release does not
// know is refused; files without the key (layout 3 and older) and of
// layout 4 are read.
func TestLakeLayoutIsChecked(t *testing.T) {
	for _, c := range []struct {
		name, layout string // "" writes no key
		refused      string
	}{
		{"a file without the key is of an older layout", "", ""},
		{"layout 4", "4", ""},
		{"a newer layout", "5", "newer than this release reads"},
		{"not a number", "four", "want a number"},
		{"a layout that never carried the key", "3", "want a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{
				schema.MustPrimitive(schema.NewPrimitiveNode("url", parquet.Repetitions.Required, parquet.Types.ByteArray, -1, -1)),
			}, -1))
			kv := metadata.NewKeyValueMetadata()
			if c.layout != "" {
				kv.Append(LakeLayoutKey, c.layout)
			}
			var buf bytes.Buffer
			w := pqfile.NewParquetWriter(&buf, root, pqfile.WithWriteMetadata(kv))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := pqfile.NewParquetReader(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			err = CheckLakeLayout(r)
			if c.refused == "" && err != nil || c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)) {
				t.Fatalf("CheckLakeLayout = %v, want refused: %q", err, c.refused)
			}
		})
	}
}
