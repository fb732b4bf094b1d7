package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/dhsi/dhsi/store"
)

// DatasetsFormat identifies index/{version}/datasets.json.
const (
	DatasetsFormat        = "dhsi-datasets"
	DatasetsFormatVersion = 1
)

// Dataset is one entry of the dataset registry.
type Dataset struct {
	ID      uint32    `json:"id"` // INVARIANT: unique, never reused
	Name    string    `json:"name"`
	Source  string    `json:"source,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	URLs    int64     `json:"urls"`    // exact, after normalization and deduplication
	Domains int64     `json:"domains"` // registered domains with at least one URL
	Files   int       `json:"files"`   // Parquet files
	// Columns are the fields kept for each URL (fields.go), in the order
	// the dataset gained them; absent before the dataset kept any.
	Columns []Column `json:"columns,omitempty"`
}

// Datasets is the dataset registry of one index version.
type Datasets struct {
	Format        string    `json:"format"`
	FormatVersion int       `json:"format_version"`
	Datasets      []Dataset `json:"datasets"` // sorted by id
}

// NewDatasets returns an empty registry.
func NewDatasets() *Datasets {
	return &Datasets{Format: DatasetsFormat, FormatVersion: DatasetsFormatVersion}
}

// ParseDatasets decodes and validates a registry.
func ParseDatasets(b []byte) (*Datasets, error) {
	var d Datasets
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("datasets.json: %w", err)
	}
	if d.Format != DatasetsFormat || d.FormatVersion != DatasetsFormatVersion {
		return nil, fmt.Errorf("datasets.json: format %q version %d is not supported (want %q %d)", d.Format, d.FormatVersion, DatasetsFormat, DatasetsFormatVersion)
	}
	ids, names := map[uint32]bool{}, map[string]bool{}
	for i, ds := range d.Datasets {
		if ids[ds.ID] || names[ds.Name] {
			return nil, fmt.Errorf("datasets.json: datasets[%d]: repeated id %d or name %q", i, ds.ID, ds.Name)
		}
		ids[ds.ID], names[ds.Name] = true, true
	}
	return &d, nil
}

var datasetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// ValidateDatasetName says what a dataset name may be.
func ValidateDatasetName(name string) error {
	if !datasetName.MatchString(name) {
		return fmt.Errorf("dataset name %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// IDs lists the registry's dataset ids, increasing: the entries a
// version's dataset_to_domains.roar has (dsdr S1).
func (d *Datasets) IDs() []uint32 {
	ids := make([]uint32, 0, len(d.Datasets))
	for _, ds := range d.Datasets {
		ids = append(ids, ds.ID)
	}
	slices.Sort(ids)
	return ids
}

// ByID finds a dataset.
func (d *Datasets) ByID(id uint32) (Dataset, bool) {
	i := sort.Search(len(d.Datasets), func(i int) bool { return d.Datasets[i].ID >= id })
	if i < len(d.Datasets) && d.Datasets[i].ID == id {
		return d.Datasets[i], true
	}
	return Dataset{}, false
}

// NameOf is ByID(id).Name without copying the Dataset: domain_datasets
// asks it for every row. Ids are usually 1, 2, 3, ... (NextID), so the
// dataset is usually at id-1; otherwise a binary search finds it.
func (d *Datasets) NameOf(id uint32) (string, bool) {
	if i := int(id) - 1; i >= 0 && i < len(d.Datasets) && d.Datasets[i].ID == id {
		return d.Datasets[i].Name, true
	}
	i := sort.Search(len(d.Datasets), func(i int) bool { return d.Datasets[i].ID >= id })
	if i < len(d.Datasets) && d.Datasets[i].ID == id {
		return d.Datasets[i].Name, true
	}
	return "", false
}

// ByName finds a dataset.
func (d *Datasets) ByName(name string) (Dataset, bool) {
	for _, ds := range d.Datasets {
		if ds.Name == name {
			return ds, true
		}
	}
	return Dataset{}, false
}

// NextID is the smallest id above every dataset's (ids are never reused).
func (d *Datasets) NextID() uint32 {
	var next uint32 = 1
	for _, ds := range d.Datasets {
		if ds.ID >= next {
			next = ds.ID + 1
		}
	}
	return next
}

// Ensure returns a copy of the registry in which name exists with id: an
// existing dataset of that name must already have it, and no other dataset
// may. It is how an ingest that reserved id (ReserveDatasetID) adds its
// dataset, also when it rebuilds on a concurrent publisher's version.
func (d *Datasets) Ensure(name, source string, id uint32, now time.Time) (*Datasets, bool, error) {
	if ds, ok := d.ByName(name); ok {
		if ds.ID != id {
			return nil, false, fmt.Errorf("dataset %q has id %d, not %d", name, ds.ID, id)
		}
		return d.clone(), false, nil
	}
	if ds, ok := d.ByID(id); ok {
		return nil, false, fmt.Errorf("dataset id %d belongs to %q, not %q", id, ds.Name, name)
	}
	out := d.clone()
	out.Datasets = append(out.Datasets, Dataset{ID: id, Name: name, Source: source, Created: now.UTC(), Updated: now.UTC()})
	sort.Slice(out.Datasets, func(i, j int) bool { return out.Datasets[i].ID < out.Datasets[j].ID })
	return out, true, nil
}

func (d *Datasets) clone() *Datasets {
	return &Datasets{Format: DatasetsFormat, FormatVersion: DatasetsFormatVersion, Datasets: append([]Dataset(nil), d.Datasets...)}
}

// DatasetIDPrefix holds one object per dataset id ever handed out
// (datasets/ids/{id:010}.json, {"name": …}), written create-only: the
// reservation that makes ids unique among concurrent ingests (M8). Outside
// index/, urls/ and ingest/, so gc never removes one.
const DatasetIDPrefix = "datasets/ids/"

// ReserveDatasetID returns the id of a new dataset name: the lowest id from
// d.NextID() up whose reservation object this call creates, or which an
// ingest of the same name reserved before. Two concurrent ingests of
// different new datasets therefore never stage under the same id (M8).
func ReserveDatasetID(ctx context.Context, st store.Store, d *Datasets, name string) (uint32, error) {
	body, err := json.Marshal(map[string]string{"name": name})
	if err != nil {
		return 0, err
	}
	for id := d.NextID(); ; id++ {
		if id == 0 {
			return 0, fmt.Errorf("dataset ids exhausted")
		}
		key := fmt.Sprintf("%s%010d.json", DatasetIDPrefix, id)
		_, err := st.Put(ctx, key, bytes.NewReader(body), store.Cond{IfNoneMatch: true})
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return 0, fmt.Errorf("reserve dataset id %d: %w", id, err)
		}
		b, _, err := store.ReadAll(ctx, st, key)
		if err != nil {
			return 0, fmt.Errorf("read dataset id reservation %s: %w", key, err)
		}
		var r struct{ Name string }
		if json.Unmarshal(b, &r) == nil && r.Name == name {
			return id, nil // the same new dataset, reserved by another ingest
		}
	}
}

// SetColumns records the columns of dataset id, merged with those it has
// (MergeColumns).
func (d *Datasets) SetColumns(id uint32, add []Column) error {
	for i := range d.Datasets {
		if d.Datasets[i].ID == id {
			cols, err := MergeColumns(d.Datasets[i].Columns, add)
			if err != nil {
				return fmt.Errorf("dataset %q: %w", d.Datasets[i].Name, err)
			}
			d.Datasets[i].Columns = cols
			return nil
		}
	}
	return fmt.Errorf("dataset id %d is not in the registry", id)
}

// Update applies fn to the dataset with id.
func (d *Datasets) Update(id uint32, fn func(*Dataset)) {
	for i := range d.Datasets {
		if d.Datasets[i].ID == id {
			fn(&d.Datasets[i])
		}
	}
}
