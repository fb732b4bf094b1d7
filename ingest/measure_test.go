package ingest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	pqfile "github.com/apache/arrow-go/v18/parquet/file"
)

// TestMeasureStoreBytes prints what each lake column and each index file
// of a store costs per URL (docs/format/lake.md, "What each column
// costs"). It measures a store given by DHSI_MEASURE_STORE (e.g. the
// store/ of `dhsi bench --work-dir DIR`) and is skipped otherwise:
//
//	DHSI_MEASURE_STORE=/tmp/b2m/store go test ./ingest -run TestMeasureStoreBytes -v
func TestMeasureStoreBytes(t *testing.T) {
	root := os.Getenv("DHSI_MEASURE_STORE")
	if root == "" {
		t.Skip("set DHSI_MEASURE_STORE to a store directory")
	}
	type cost struct{ comp, uncomp int64 }
	cols := map[string]*cost{}
	var order []string
	var fileBytes, chunkBytes, pageIndex, rows, nFiles, rowGroups int64
	err := filepath.WalkDir(filepath.Join(root, "urls"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		r, err := pqfile.OpenParquetFile(p, false)
		if err != nil {
			return err
		}
		defer r.Close()
		nFiles++
		fileBytes += fi.Size()
		md := r.MetaData()
		rows += md.NumRows
		for g := range md.NumRowGroups() {
			rowGroups++
			rg := md.RowGroup(g)
			for c := range rg.NumColumns() {
				cc, err := rg.ColumnChunk(c)
				if err != nil {
					return err
				}
				name := cc.PathInSchema().String()
				if cols[name] == nil {
					cols[name] = &cost{}
					order = append(order, name)
				}
				cols[name].comp += cc.TotalCompressedSize()
				cols[name].uncomp += cc.TotalUncompressedSize()
				chunkBytes += cc.TotalCompressedSize()
				if l := cc.GetColumnIndexLocation(); l != nil {
					pageIndex += int64(l.Length)
				}
				if l := cc.GetOffsetIndexLocation(); l != nil {
					pageIndex += int64(l.Length)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatalf("no lake rows under %s", root)
	}
	per := func(n int64) string { return fmt.Sprintf("%6.2f", float64(n)/float64(rows)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d URLs, %d lake files, %d row groups\n", root, rows, nFiles, rowGroups)
	fmt.Fprintf(&b, "%-28s %14s %8s %14s\n", "part", "bytes", "B/URL", "uncompressed")
	for _, name := range order {
		fmt.Fprintf(&b, "%-28s %14d %8s %14d\n", "lake "+name, cols[name].comp, per(cols[name].comp), cols[name].uncomp)
	}
	fmt.Fprintf(&b, "%-28s %14d %8s\n", "lake page index", pageIndex, per(pageIndex))
	other := fileBytes - chunkBytes - pageIndex
	fmt.Fprintf(&b, "%-28s %14d %8s\n", "lake footers and magic", other, per(other))
	fmt.Fprintf(&b, "%-28s %14d %8s\n", "lake total", fileBytes, per(fileBytes))

	// index files of the kept versions, by kind
	kinds := map[string]int64{}
	var indexBytes int64
	err = filepath.WalkDir(filepath.Join(root, "index"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		kinds[filepath.Base(p)] += fi.Size()
		indexBytes += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "%-28s %14d %8s\n", "index "+k, kinds[k], per(kinds[k]))
	}
	fmt.Fprintf(&b, "%-28s %14d %8s\n", "index total", indexBytes, per(indexBytes))
	fmt.Fprintf(&b, "%-28s %14d %8s\n", "total", fileBytes+indexBytes, per(fileBytes+indexBytes))
	t.Log("\n" + b.String())
}
