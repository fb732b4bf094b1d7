package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/index/domaindict"
	"github.com/dhsi/dhsi/index/dsdr"
	"github.com/dhsi/dhsi/index/dtdr"
	"github.com/dhsi/dhsi/index/postings"
	"github.com/dhsi/dhsi/store"
)

// reverseIndex is a snapshot's dataset → domains bitmaps
// (dataset_to_domains.roar, docs/format/dsdr.md), the version's membership.
//
// A version whose manifest entry names the file has it read when the
// snapshot opens, like the dictionary and the postings: a version the
// server serves is complete. A version written before the file existed
// (no dataset_to_domains_roar), or whose file is missing, has it built on
// first use, with the code an ingest writes it with: by transposing the
// version's domain_to_datasets.roar in memory where the version has one
// (those written before 2026-11-28), else from the postings, which hold every
// (domain, dataset) pair. The build runs once per snapshot, and a failed
// build (a cancelled query) is retried by the next call.
type reverseIndex struct {
	r     atomic.Pointer[dsdr.Reader]
	build sync.Mutex // held while building r
}

// openReverse reads the version's dataset→domains file, if it names one.
func (s *Snapshot) openReverse(ctx context.Context) error {
	key := s.Version.DatasetToDomainsRoar
	if key == "" {
		return nil // built on first use
	}
	body, _, err := store.ReadAll(ctx, s.x.st, key)
	if errors.Is(err, store.ErrNotFound) {
		// e.g. gc of a release that did not know the file: the version
		// is still whole without it
		s.x.log.Warn("index version names a dataset→domains file that is missing; it will be rebuilt in memory when first needed",
			"version", s.Version.Version, "key", key, "from", s.reverseSource())
		return nil
	}
	if err != nil {
		return err
	}
	r, err := dsdr.Open(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := s.checkReverse(r); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	s.reverse.r.Store(r)
	return nil
}

// checkReverse holds r to the rest of the version: as many domains as the
// dictionary (S4), one entry per dataset of the registry (S1).
func (s *Snapshot) checkReverse(r *dsdr.Reader) error {
	if r.Len() != s.dict.Len() {
		return fmt.Errorf("%w: %d domains, the dictionary has %d", dsdr.ErrCorrupt, r.Len(), s.dict.Len())
	}
	if got, want := r.Datasets(), s.Datasets.IDs(); !slices.Equal(got, want) {
		return fmt.Errorf("%w: datasets %v, the registry has %v", dsdr.ErrCorrupt, got, want)
	}
	return nil
}

// reverseReader returns the snapshot's dataset→domains reader, building
// it from the membership file the first time for a version without one.
func (s *Snapshot) reverseReader(ctx context.Context) (*dsdr.Reader, error) {
	if r := s.reverse.r.Load(); r != nil {
		return r, nil
	}
	s.reverse.build.Lock()
	defer s.reverse.build.Unlock()
	if r := s.reverse.r.Load(); r != nil {
		return r, nil // built while this call waited
	}
	start := time.Now()
	from := s.reverseSource()
	body, err := s.transposeMembership(ctx)
	if err != nil {
		return nil, fmt.Errorf("dataset→domains of index version %s, from %s: %w", s.Version.Version, from, err)
	}
	r, err := dsdr.Open(bytes.NewReader(body), int64(len(body)))
	if err == nil {
		err = s.checkReverse(r)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset→domains built from %s: %w", from, err)
	}
	s.reverse.r.Store(r)
	s.x.log.Info("built each dataset's domains in memory: the index version's dataset_to_domains.roar is absent",
		"version", s.Version.Version, "from", from, "domains", r.Len(), "datasets", len(r.Datasets()), "bytes", len(body), "took", time.Since(start).Round(time.Millisecond))
	return r, nil
}

// reverseSource names what reverseReader builds the file from.
func (s *Snapshot) reverseSource() string {
	if s.Version.D2DRoar != "" {
		return s.Version.D2DRoar
	}
	return "the postings"
}

// transposeMembership writes the version's dataset→domains file from its
// domain_to_datasets.roar (dsdr.Transpose), or, in a version without one,
// from its postings.
func (s *Snapshot) transposeMembership(ctx context.Context) ([]byte, error) {
	var buf bytes.Buffer
	if s.Version.D2DRoar == "" {
		t, err := NewPostingsTranspose(ctx, s.dict)
		if err != nil {
			return nil, err
		}
		for _, r := range s.shards {
			if err := t.AddShard(ctx, r); err != nil {
				return nil, err
			}
		}
		err = t.Write(&buf, s.Datasets.IDs())
		return buf.Bytes(), err
	}
	body, _, err := store.ReadAll(ctx, s.x.st, s.Version.D2DRoar)
	if err != nil {
		return nil, err
	}
	m, err := dtdr.OpenWith(bytes.NewReader(body), int64(len(body)), dtdr.Options{LoadIndex: true})
	if err != nil {
		return nil, err
	}
	if m.Len() != s.dict.Len() {
		return nil, fmt.Errorf("%w: %d domains, the dictionary has %d", dtdr.ErrCorrupt, m.Len(), s.dict.Len())
	}
	if err := dsdr.Transpose(&buf, ctxMembership{ctx, m}, s.Datasets.IDs()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// PostingsTranspose gathers a version's postings entries, (domain key,
// dataset) pairs, into each dataset's domains as ids of the version's
// dictionary: the dataset→domains file the postings imply. The server
// builds a missing file with it, and dhsi verify checks the file against
// the postings with it.
type PostingsTranspose struct {
	ids map[uint64]uint32 // DomainKey → id in the dictionary
	*dsdr.Transposer
}

// NewPostingsTranspose hashes every domain of dict (DomainKey).
func NewPostingsTranspose(ctx context.Context, dict *domaindict.Dict) (*PostingsTranspose, error) {
	t := &PostingsTranspose{ids: make(map[uint64]uint32, dict.Len()), Transposer: dsdr.NewTransposer(dict.Len())}
	for id := range dict.Len() {
		if id%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		d, err := dict.Domain(id)
		if err != nil {
			return nil, err
		}
		k := DomainKey(d)
		if other, dup := t.ids[k]; dup {
			// the postings cannot tell the two apart: refuse, rather than
			// give one's datasets to the other (ingest refuses to publish
			// such a pair, buildShard)
			o, _ := dict.Domain(uint64(other))
			return nil, fmt.Errorf("%w: domains %q and %q share postings key %d", postings.ErrCorrupt, o, d, k)
		}
		t.ids[k] = uint32(id)
	}
	return t, nil
}

// Add records e's pair; a domain key the dictionary lacks is corrupt.
func (t *PostingsTranspose) Add(e postings.Entry) error {
	id, ok := t.ids[e.DomainID]
	if !ok {
		return fmt.Errorf("%w: postings entry of domain key %d (dataset %d) names no domain of the dictionary", postings.ErrCorrupt, e.DomainID, e.DatasetID)
	}
	return t.AddPair(uint64(id), e.DatasetID)
}

// AddShard adds every entry of a postings shard, stopping when ctx ends.
func (t *PostingsTranspose) AddShard(ctx context.Context, r *postings.Reader) error {
	for e, err := range r.All() {
		if err == nil {
			err = t.Add(e)
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ctxMembership stops a transpose when its query is cancelled.
type ctxMembership struct {
	ctx context.Context
	*dtdr.Reader
}

func (c ctxMembership) Get(id uint64) (*roaring.Bitmap, error) {
	if id%4096 == 0 {
		if err := c.ctx.Err(); err != nil {
			return nil, err
		}
	}
	return c.Reader.Get(id)
}

// DatasetDomainIDs returns the domains of dataset datasetID in this
// version, as their ids in the version's dictionary (DomainName); ok is
// false when the version has no such dataset. The bitmap is the caller's:
// set operations may modify it. Visibility (access A3) is the caller's to
// decide, before calling.
func (s *Snapshot) DatasetDomainIDs(ctx context.Context, datasetID uint32) (bm *roaring.Bitmap, ok bool, err error) {
	if s.empty {
		return nil, false, nil
	}
	if _, known := s.Datasets.ByID(datasetID); !known {
		return nil, false, nil
	}
	r, err := s.reverseReader(ctx)
	if err != nil {
		return nil, false, err
	}
	bm, ok, err = r.Get(datasetID)
	if err == nil && !ok {
		// checkReverse holds every registry dataset to an entry
		err = fmt.Errorf("%w: dataset %d of the registry has no entry", dsdr.ErrCorrupt, datasetID)
	}
	return bm, ok, err
}

// DomainName returns the domain whose id in this version is id.
func (s *Snapshot) DomainName(id uint32) (string, error) {
	if s.empty {
		return "", fmt.Errorf("domain id %d: the index is empty", id)
	}
	return s.dict.Domain(uint64(id))
}

// URLCount returns the exact number of URLs of domain in dataset datasetID
// (0: none), from the postings, as domain_datasets counts them.
func (s *Snapshot) URLCount(domain string, datasetID uint32) (uint64, error) {
	e, _, _, err := s.entry(domain, datasetID, false)
	return e.URLCount, err
}
