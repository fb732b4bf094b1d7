package catalog_test

import (
	"testing"

	"github.com/dhsi/dhsi/catalog"
)

// TestNameOfAgreesWithByID: NameOf's shortcut (id n at n-1) and its search
// find the same names ByID does, with ids that are dense, that skip (a
// dropped dataset) and that are absent.
func TestNameOfAgreesWithByID(t *testing.T) {
	for _, ids := range [][]uint32{{1, 2, 3, 4}, {1, 2, 4, 7, 8}, {3, 5}, {}} {
		d := catalog.NewDatasets()
		for _, id := range ids {
			d.Datasets = append(d.Datasets, catalog.Dataset{ID: id, Name: "ds" + string(rune('a'+id))})
		}
		for id := range uint32(10) {
			ds, ok := d.ByID(id)
			name, ok2 := d.NameOf(id)
			if ok != ok2 || ds.Name != name {
				t.Errorf("ids %v: NameOf(%d) = %q, %v; ByID has %q, %v", ids, id, name, ok2, ds.Name, ok)
			}
		}
	}
}
