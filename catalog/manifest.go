package catalog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dhsi/dhsi/store"
)

// ManifestKey is the one mutable object of the URL index: it names the
// current version. Everything a version references is written before the
// manifest points at it, and is never modified afterwards.
//
// Invariants (docs/format/manifest.md):
//
//	M1. Objects under index/{version}/ and urls/ are immutable; keys are
//	    never reused (versions and Parquet part names are unique).
//	M2. A manifest references only objects that already exist.
//	M3. The one commit point is Put(manifest, IfMatch: the ETag the publisher
//	    read) — IfNoneMatch for the first version. Of concurrent publishers
//	    exactly one wins; the loser gets ErrConflict and rebuilds on the new
//	    current version (Publish never retries blindly).
//	M4. Readers pin one Version for a whole query; a flip mid-query is seen
//	    by the next query only.
//	M7. Version sequence numbers grow strictly for the life of a store: the
//	    next is one more than last_sequence and than every listed version,
//	    and Publish records it (NextSequence), so gc cannot lower it.
//	M8. A new dataset's id is reserved (ReserveDatasetID, a create-only
//	    object under datasets/ids/) before anything is written under it, so
//	    concurrent ingests stage different new datasets under different ids
//	    and a loser of M3 keeps its ids on the winner's version.
const ManifestKey = "index/manifest.json"

// ManifestFormat and ManifestFormatVersion identify the manifest layout.
// Readers reject a format_version they do not know.
const (
	ManifestFormat        = "dhsi-url-index-manifest"
	ManifestFormatVersion = 1
)

// ErrConflict: another publisher flipped the manifest first (M3).
var ErrConflict = errors.New("catalog: manifest changed since it was read")

// Manifest is index/manifest.json. Unknown fields are preserved on rewrite
// (Extra) so a newer writer's additions survive an older writer's publish.
type Manifest struct {
	Format         string    `json:"format"`
	FormatVersion  int       `json:"format_version"`
	CurrentVersion string    `json:"current_version"`
	Versions       []Version `json:"versions"` // oldest first; the last is current
	// LastSequence is the highest version sequence number ever published
	// in this store (M7): the next version is LastSequence+1 whatever gc
	// removed. Absent in manifests written before it; NextSequence then
	// falls back to the listed versions.
	LastSequence int `json:"last_sequence,omitempty"`

	etag store.ETag
}

// Version describes one immutable, complete index version.
type Version struct {
	Version   string    `json:"version"`
	Parent    string    `json:"parent,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// PSLVersion and PSLMode record the Public Suffix List that computed the
	// registered domains ("icann" or "all").
	PSLVersion string `json:"psl_version"`
	PSLMode    string `json:"psl_mode"`
	// PostingsShards is S in shard = domain_hash % S.
	PostingsShards int `json:"postings_shards"`
	// Counts of the whole version.
	Domains  int64 `json:"domains"`
	URLs     int64 `json:"urls"`
	Datasets int   `json:"datasets"`
	// Files of this version, relative to the store root.
	DomainsDict string `json:"domains_dict"`
	// D2DRoar is each domain's datasets (docs/format/dtdr.md). Versions
	// written since 2026-11-28 have none: the membership is kept once, in
	// DatasetToDomainsRoar.
	D2DRoar string `json:"d2d_roar,omitempty"`
	// DatasetToDomainsRoar is each dataset's domains (docs/format/dsdr.md).
	// Empty in versions written before it, which have D2DRoar: readers
	// transpose that instead. A version has one or both.
	DatasetToDomainsRoar string `json:"dataset_to_domains_roar,omitempty"`
	// Postings lists every shard's files; a shard a publish did not touch
	// points at the files of the version that wrote it (reuse by reference).
	Postings     []PostingsShard `json:"postings"`
	FilesTSV     string          `json:"files_tsv"`
	DatasetsJSON string          `json:"datasets_json"`
	SourcesJSON  string          `json:"sources_json,omitempty"` // sha256 of ingested inputs per dataset
	ParquetRoot  string          `json:"parquet_root"`
	// DomainListHash is the dictionary's list hash (0: not recorded); the
	// server checks the dictionary it opens against it.
	DomainListHash uint64 `json:"domain_list_hash,omitempty"`
}

// PostingsShard names one postings shard's files.
type PostingsShard struct {
	Shard int    `json:"shard"`
	Idx   string `json:"idx"`
	Dat   string `json:"dat"`
}

// Current returns the current version, or false for an empty index.
func (m *Manifest) Current() (Version, bool) {
	for _, v := range m.Versions {
		if v.Version == m.CurrentVersion {
			return v, true
		}
	}
	return Version{}, false
}

// ReadManifest reads the manifest; a store without one has an empty
// manifest (and Publish will create it with IfNoneMatch).
func ReadManifest(ctx context.Context, st store.Store) (*Manifest, error) {
	b, a, err := store.ReadAll(ctx, st, ManifestKey)
	if errors.Is(err, store.ErrNotFound) {
		return &Manifest{Format: ManifestFormat, FormatVersion: ManifestFormatVersion}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ManifestKey, err)
	}
	m, err := ParseManifest(b)
	if err != nil {
		return nil, err
	}
	m.etag = a.ETag
	return m, nil
}

// ParseManifest decodes and validates a manifest.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestKey, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("%s: format %q is not %q", ManifestKey, m.Format, ManifestFormat)
	}
	if m.FormatVersion != ManifestFormatVersion {
		return nil, fmt.Errorf("%s: format_version %d is not supported by this dhsi (it reads %d)", ManifestKey, m.FormatVersion, ManifestFormatVersion)
	}
	seen := map[string]bool{}
	for i, v := range m.Versions {
		if v.Version == "" || seen[v.Version] {
			return nil, fmt.Errorf("%s: versions[%d]: empty or repeated version %q", ManifestKey, i, v.Version)
		}
		seen[v.Version] = true
	}
	if m.CurrentVersion != "" && !seen[m.CurrentVersion] {
		return nil, fmt.Errorf("%s: current_version %q is not among versions", ManifestKey, m.CurrentVersion)
	}
	return &m, nil
}

// NewVersionName returns a fresh, sortable, unique version name; seq comes
// from NextSequence. Concurrent ingests read the same manifest, so they
// share seq and may share the millisecond: 16 random bits end the name, so
// their index files never collide (M1) while they race to publish (M3).
func NewVersionName(now time.Time, seq int) string {
	var r [2]byte
	rand.Read(r[:])
	return fmt.Sprintf("v%06d-%s-%s", seq, now.UTC().Format("20060102T150405.000Z"), hex.EncodeToString(r[:]))
}

// NextSequence is the sequence number of the next version built on m (M7):
// one more than any version this store ever published, so version names
// grow strictly for the life of the store, whatever gc removed.
func (m *Manifest) NextSequence() int {
	last := m.LastSequence
	for _, v := range m.Versions {
		if n := versionSequence(v.Version); n > last {
			last = n
		}
	}
	return last + 1
}

// versionSequence reads the sequence number of a name "v000012-...", or 0.
func versionSequence(name string) int {
	digits, _, ok := strings.Cut(strings.TrimPrefix(name, "v"), "-")
	if !ok || !strings.HasPrefix(name, "v") {
		return 0
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return 0
	}
	return n
}

// Publish makes v the current version (M3). The caller has written every
// file v references (M2). keep bounds how many versions the manifest lists
// (older ones become garbage for GC; 0 keeps all).
func Publish(ctx context.Context, st store.Store, base *Manifest, v Version, keep int) (*Manifest, error) {
	if base.CurrentVersion != v.Parent {
		return nil, fmt.Errorf("%w: version %s was built on %q but the manifest read says %q", ErrConflict, v.Version, v.Parent, base.CurrentVersion)
	}
	next := &Manifest{Format: ManifestFormat, FormatVersion: ManifestFormatVersion, CurrentVersion: v.Version}
	next.Versions = append(append([]Version(nil), base.Versions...), v)
	next.LastSequence = base.NextSequence() - 1 // M7: remembered past gc
	if n := versionSequence(v.Version); n > next.LastSequence {
		next.LastSequence = n
	}
	if keep > 0 && len(next.Versions) > keep {
		next.Versions = next.Versions[len(next.Versions)-keep:]
	}
	body, err := jsonIndent(next)
	if err != nil {
		return nil, err
	}
	cond := store.Cond{IfNoneMatch: true}
	if base.etag != "" {
		cond = store.Cond{IfMatch: base.etag}
	}
	a, err := st.Put(ctx, ManifestKey, bytes.NewReader(body), cond)
	if errors.Is(err, store.ErrPreconditionFailed) {
		return nil, fmt.Errorf("%w: another publisher flipped %s first; rebuild on the new current version", ErrConflict, ManifestKey)
	}
	if err != nil {
		return nil, fmt.Errorf("publish %s: %w", ManifestKey, err)
	}
	next.etag = a.ETag
	return next, nil
}

// Referenced returns every object key the listed versions reference, for
// GC: anything under index/ or urls/ not referenced by a kept version, and
// not held by a reader, may go.
func (m *Manifest) Referenced(expand func(v Version) ([]string, error)) (map[string]bool, error) {
	out := map[string]bool{ManifestKey: true}
	for _, v := range m.Versions {
		keys, err := expand(v)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Version, err)
		}
		for _, k := range keys {
			out[k] = true
		}
	}
	return out, nil
}

// VersionNames lists version names, oldest first.
func (m *Manifest) VersionNames() []string {
	var out []string
	for _, v := range m.Versions {
		out = append(out, v.Version)
	}
	sort.Strings(out)
	return out
}

func jsonIndent(m *Manifest) ([]byte, error) { return json.MarshalIndent(m, "", "  ") }
