package httpapi

import (
	"slices"
	"testing"

	"github.com/dhsi/dhsi/catalog"
)

// TestHiddenNameDoesNotShadowAnID: a dataset a caller cannot see is no
// match for its name, so a hidden dataset named "1" does not make the
// visible dataset of id 1 answer 404 (which told the caller the hidden one
// exists, and its name); a caller who sees both gets the name's.
func TestHiddenNameDoesNotShadowAnID(t *testing.T) {
	snap := &catalog.Snapshot{Datasets: &catalog.Datasets{Datasets: []catalog.Dataset{{ID: 1, Name: "open"}, {ID: 2, Name: "1"}}}}
	hide2 := func(id uint32) bool { return id != 2 }
	for _, c := range []struct {
		visible func(uint32) bool
		want    []uint32
	}{{hide2, []uint32{1}}, {nil, []uint32{2}}} {
		ids, code, err := cdxDatasets(snap, c.visible, &cdxQuery{datasets: []string{"1"}})
		if err != nil || code != 0 || !slices.Equal(ids, c.want) {
			t.Errorf("dataset=1 (hidden 2: %v): %v %d %v, want %v", c.visible != nil, ids, code, err, c.want)
		}
	}
	// and the hidden one's name answers as a missing one's
	if _, code, _ := cdxDatasets(snap, hide2, &cdxQuery{datasets: []string{"9"}}); code != 404 {
		t.Errorf("dataset=9: %d, want 404", code)
	}
}
