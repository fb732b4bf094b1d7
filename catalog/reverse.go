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

	"github.com/dhsi/dhsi/index/dsdr"
	"github.com/dhsi/dhsi/index/dtdr"
	"github.com/dhsi/dhsi/store"
)

// reverseIndex is a snapshot's dataset → domains bitmaps
// (dataset_to_domains.roar, docs/format/dsdr.md), the reverse of the
// membership file.
//
// A version whose manifest entry names the file has it read when the
// snapshot opens, like the dictionary and the postings: a version the
// server serves is complete. A version written before the file existed
// (no dataset_to_domains_roar), or whose file is missing, has it built on
// first use by transposing the version's domain_to_datasets.roar in
// memory, with the code an ingest writes it with; the build runs once per
// snapshot, and a failed build (a cancelled query) is retried by the next
// call.
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
		s.x.log.Warn("index version names a dataset→domains file that is missing; it will be rebuilt in memory from the membership file when first needed",
			"version", s.Version.Version, "key", key)
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
	if got, want := r.Datasets(), s.registryIDs(); !slices.Equal(got, want) {
		return fmt.Errorf("%w: datasets %v, the registry has %v", dsdr.ErrCorrupt, got, want)
	}
	return nil
}

func (s *Snapshot) registryIDs() []uint32 {
	ids := make([]uint32, 0, len(s.Datasets.Datasets))
	for _, d := range s.Datasets.Datasets {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	return ids
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
	body, err := s.transposeMembership(ctx)
	if err != nil {
		return nil, fmt.Errorf("dataset→domains of index version %s, from %s: %w", s.Version.Version, s.Version.D2DRoar, err)
	}
	r, err := dsdr.Open(bytes.NewReader(body), int64(len(body)))
	if err == nil {
		err = s.checkReverse(r)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset→domains built from %s: %w", s.Version.D2DRoar, err)
	}
	s.reverse.r.Store(r)
	s.x.log.Info("built each dataset's domains in memory from the membership file: the index version was written without dataset_to_domains.roar",
		"version", s.Version.Version, "domains", r.Len(), "datasets", len(r.Datasets()), "bytes", len(body), "took", time.Since(start).Round(time.Millisecond))
	return r, nil
}

// transposeMembership reads the version's domain_to_datasets.roar and
// writes its transpose (dsdr.Transpose).
func (s *Snapshot) transposeMembership(ctx context.Context) ([]byte, error) {
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
	var buf bytes.Buffer
	if err := dsdr.Transpose(&buf, ctxMembership{ctx, m}, s.registryIDs()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
