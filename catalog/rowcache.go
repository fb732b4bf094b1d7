package catalog

import "github.com/dhsi/dhsi/internal/lru"

// rowCache keeps decoded runs of URL rows — one domain's rows in one row
// group of one lake file — so a hot domain's pages are served without
// decompressing and decoding the row group again. Lake files are immutable
// (M1), so an entry never goes stale; it is keyed by the file's key, the
// row group and the domain. Its limit is in (estimated) bytes; a run larger
// than the whole limit is not kept.
type rowCache = lru.Cache[runKey, []URLRow]

type runKey struct {
	file   string
	rg     int
	domain string
}

// maxCachedRun is the longest run kept: a longer run is decoded per page
// (only its rows of the page), which is cheaper than decoding it whole.
const maxCachedRun = 16384

func newRowCache(limit int64) *rowCache { return lru.New(limit, runCost, nil) }

// runCost estimates the bytes a cached run holds. The rows are shared with
// readers and never modified.
func runCost(k runKey, rows []URLRow) int64 {
	size := int64(len(k.file)+len(k.domain)) + 64
	for i := range rows {
		size += int64(len(rows[i].URL)+len(rows[i].Raw)) + urlRowOverhead
	}
	return size
}

// urlRowOverhead is a URLRow's size beside its strings' bytes: two string
// headers, an id, a time.Time and a flag.
const urlRowOverhead = 72
