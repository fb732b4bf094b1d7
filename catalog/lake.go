package catalog

import (
	"fmt"
	"strconv"

	pqfile "github.com/apache/arrow-go/v18/parquet/file"
)

// Lake file layouts (docs/format/lake.md, "Layouts"). A file written
// since layout 4 names its layout in the footer's key-value metadata under
// LakeLayoutKey; older files carry no such key and are told apart by
// their columns:
//
//	<= 2  domain stored per row (postings version 2); the oldest url_id too
//	3     domain_offset and domain_length into url (postings version 3)
//	4     raw URLs as raw_edit, edits of url, in place of the raw column
const (
	LakeLayoutKey = "dhsi.lake.layout"
	LakeLayout    = 4
)

// CheckLakeLayout refuses a lake file of a layout newer than this release
// reads; a file without the key is of layout 3 or older.
func CheckLakeLayout(r *pqfile.Reader) error {
	kv := r.MetaData().KeyValueMetadata()
	if kv == nil {
		return nil
	}
	v := kv.FindValue(LakeLayoutKey)
	if v == nil {
		return nil
	}
	n, err := strconv.Atoi(*v)
	if err != nil || n < 4 {
		return fmt.Errorf("lake file layout %q: want a number from 4 to %d", *v, LakeLayout)
	}
	if n > LakeLayout {
		return fmt.Errorf("lake file layout %d is newer than this release reads (%d): upgrade dhsi", n, LakeLayout)
	}
	return nil
}
