package catalog

import "github.com/dhsi/dhsi/internal/lru"

// datasetsCache keeps domain_datasets answers (Q1) of hot domains: the
// datasets and URL counts DomainDatasets reads from a domain's postings
// entry, after the dictionary has said the version holds the domain. An
// index version is immutable (M1), so an answer never goes stale: it is
// keyed by the version and the domain, and a later version's answers take
// the place of an earlier one's as the LRU evicts them.
//
// A hit is a map lookup under one lock; a miss finds the postings block,
// decodes the entry's payload, checks its CRC and looks the domain up in
// the dictionary: ~3 µs of the ~17 µs of server CPU a domain_datasets
// statement cost at 4 clients on the 10M realistic corpus (pprof, stop 43).
//
// INVARIANTS:
//   - C1: a cached slice is shared by the readers of its scope and never
//     modified; DomainDatasetsCached's callers only read it.
//   - C2: an answer is shared only within its scope, the principal that
//     asked. A hit is faster than a miss, so a cache shared by every
//     session would tell a reader, by timing, which domains other users
//     had looked up (as the server's URL normalizer would, which is why it
//     keeps no host cache: docs/security.md).
type datasetsCache = lru.Cache[datasetsKey, []DatasetCount]

type datasetsKey struct {
	version string // Version.Version: a published version never changes
	scope   string // who asked (C2)
	domain  string
}

// datasetsCacheShare is the part of URLIndexOptions.RowCacheBytes (the
// memory for hot domains) given to their domain_datasets answers: 1/16,
// 32 MiB of the default 512, ~14,000 domains of 64 datasets each.
const datasetsCacheShare = 16

func newDatasetsCache(limit int64) *datasetsCache { return lru.New(limit, answerCost, nil) }

// answerCost estimates the bytes a cached answer holds: the key's own
// strings (DomainDatasetsCached clones scope and domain; the version is
// the snapshot's, shared), the key twice over (the map's and the list
// entry's), the list element and the map slot, and the rows (the dataset
// names are the registry's strings, shared).
func answerCost(k datasetsKey, v []DatasetCount) int64 {
	return int64(len(k.scope)+len(k.domain)) + answerOverhead + int64(len(v))*datasetCountSize
}

// answerOverhead is an entry's fixed cost: two keys of three string
// headers (96 B), the list element and entry (~80 B), a map slot and the
// slice header (~40 B).
const answerOverhead = 216

// datasetCountSize is a DatasetCount's size: an id, a string header and a
// count.
const datasetCountSize = 32
