package ingest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/index/domaindict"
	"github.com/dhsi/dhsi/index/dsdr"
	"github.com/dhsi/dhsi/index/dtdr"
	"github.com/dhsi/dhsi/index/files"
	"github.com/dhsi/dhsi/index/postings"
	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/urlnorm"
)

// DefaultPostingsShards is S for a new index (shard = domain key % S).
const DefaultPostingsShards = 64

// Options configure one ingest run.
type Options struct {
	Store          store.Store
	Dataset        string // registry name; created on first ingest
	Source         string // free text recorded in the registry
	Files          []string
	Format         Format // "" detects per file
	Normalizer     *urlnorm.Normalizer
	WorkDir        string // local scratch (default: a temp dir, removed after)
	RowGroupRows   int
	PageRows       int  // rows per Parquet data page (DefaultPageRows)
	ZstdLevel      int  // zstd level of the Parquet pages (DefaultZstdLevel)
	PrefixWidth    int  // hex digits of domain_prefix: 1, 2, or 0 for PrefixWidth's choice
	PostingsShards int  // only for a new index; an existing one keeps its own
	Keep           int  // versions the manifest lists (default 10)
	Force          bool // ingest files already ingested into this dataset
	// AllowEmpty publishes a batch whose inputs yield no URL (an empty
	// dataset); without it such an ingest fails and publishes nothing.
	AllowEmpty bool
	// StageBytes bounds the rows staged in memory before they spill to
	// WorkDir (0: 256 MiB); ParquetMemory is DuckDB's memory_limit while it
	// reads Parquet inputs ("": DuckDB's default). dhsi ingest sets both
	// from --memory-limit (internal/memlimit).
	StageBytes    int64
	ParquetMemory string
	Progress      func(Progress)
	Log           *slog.Logger
	// KeepColumns are the columns of CSV, TSV, JSON-lines, Parquet and
	// CDXJ inputs kept for each URL besides the URL and its timestamp
	// (CDX and CDXJ inputs always keep catalog.CDXColumns).
	KeepColumns []KeepColumn
	// KeepColumnsName is what errors call KeepColumns: "--keep-columns"
	// when empty (dhsi ingest), "keep_columns" for CALL ingest
	KeepColumnsName string

	columns []catalog.Column // the batch's dataset's columns (planColumns)

	domains *interner // one copy of each domain string per RunAll
}

// Progress is reported while reading.
type Progress struct {
	File                       string
	Read, Normalized, Rejected int64
	Phase                      string
}

// Summary is the result of a run.
type Summary struct {
	Version     string
	DatasetID   uint32
	Dataset     string
	NewDataset  bool
	Read        int64            // URLs read from the inputs
	Normalized  int64            // URLs that normalized
	Written     int64            // distinct URLs written (after deduplication)
	Rejected    map[string]int64 // by reason
	Flagged     map[string]int64 // URLs indexed with a flag, by flag name (flagPublicSuffixHost)
	RejectsFile string           // local TSV of every reject
	RejectsKey  string           // the same, in the store
	Skipped     []string         // files already ingested (see Force)
	Files       int              // Parquet files written
	Bytes       int64            // Parquet bytes written
	Collisions  int              // url_id collisions recorded
	// Columns are the dataset's kept columns after this ingest, and
	// FieldBytes what each cost in the Parquet written (compressed column
	// chunks; docs/format/lake.md, "Kept fields")
	Columns    []catalog.Column
	FieldBytes map[string]int64
	Domains    uint64 // domains in the new version
	URLsTotal  int64  // URLs in the new version
	Duration   time.Duration
	// Phases times each step: read+normalize, write parquet, upload, index.
	Phases []Phase
}

// Phase is one timed step of an ingest.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Batch is one dataset's inputs in a RunAll.
type Batch struct {
	Dataset string // registry name; created on first ingest
	Source  string // free text recorded in the registry
	Files   []string
}

// Run ingests opts.Files into opts.Dataset and publishes a new version.
func Run(ctx context.Context, o Options) (Summary, error) {
	sums, err := RunAll(ctx, o, []Batch{{Dataset: o.Dataset, Source: o.Source, Files: o.Files}})
	if len(sums) == 0 {
		return Summary{Dataset: o.Dataset, Rejected: map[string]int64{}, Flagged: map[string]int64{}}, err
	}
	return sums[0], err
}

// staged is one batch written to the lake, waiting for the index.
type staged struct {
	batch      Batch
	id         uint32
	lake       []lakeFile
	written    int64
	hashes     []string
	collisions []collision
	columns    []catalog.Column
}

// RunAll ingests several datasets and publishes them as one new version:
// each batch's Parquet is written and uploaded in turn, then the index is
// built once. Loading many datasets this way costs one index build instead
// of one per dataset. A batch whose files were all ingested before is
// skipped (its summary lists them); Run, for one batch, fails instead.
func RunAll(ctx context.Context, o Options, batches []Batch) ([]Summary, error) {
	start := time.Now()
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if len(batches) == 0 {
		return nil, fmt.Errorf("nothing to ingest: no dataset given")
	}
	seen := map[string]bool{}
	for _, b := range batches {
		if err := catalog.ValidateDatasetName(b.Dataset); err != nil {
			return nil, err
		}
		if seen[b.Dataset] {
			return nil, fmt.Errorf("dataset %q is given twice; list all its files in one batch", b.Dataset)
		}
		seen[b.Dataset] = true
	}
	if o.Normalizer == nil {
		n, err := urlnorm.NewNormalizer(urlnorm.Config{CacheHosts: true})
		if err != nil {
			return nil, err
		}
		o.Normalizer = n
	}
	if o.Keep == 0 {
		o.Keep = 10
	}
	if o.WorkDir == "" {
		d, err := os.MkdirTemp("", "dhsi-ingest-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		o.WorkDir = d
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, err
	}

	base, err := catalog.ReadManifest(ctx, o.Store)
	if err != nil {
		return nil, err
	}
	prev, err := loadBase(ctx, o.Store, base)
	if err != nil {
		return nil, err
	}
	if cur, ok := base.Current(); ok && cur.PSLVersion != "" && cur.PSLVersion != o.Normalizer.ListVersion() {
		o.Log.Warn("public suffix list differs from the index's", "index", cur.PSLVersion, "now", o.Normalizer.ListVersion())
	}
	version := catalog.NewVersionName(time.Now(), base.NextSequence())
	o.domains = &interner{}
	datasets := prev.datasets
	// every batch's kept columns, before anything is written: a column no
	// input has or a type the dataset's column lacks stops the ingest here
	columns := make([][]catalog.Column, len(batches))
	for i, b := range batches {
		var have []catalog.Column
		if ds, ok := datasets.ByName(b.Dataset); ok {
			have = ds.Columns
		}
		bo := o
		bo.Dataset, bo.Files = b.Dataset, b.Files
		if columns[i], err = planColumns(ctx, bo, b.Files, have); err != nil {
			return nil, fmt.Errorf("dataset %q: %w", b.Dataset, err)
		}
	}
	sums := make([]Summary, len(batches))
	var parts []staged
	var stagedIdx []int // indexes of the batches in parts
	// Batches are pipelined: batch i+1 is read and normalized while batch
	// i is deduplicated, written and uploaded, so neither half's tail
	// leaves a core idle. Each half then gets half the staging budget, so
	// the two together stay within o.StageBytes.
	if len(batches) > 1 {
		o.StageBytes = max(o.StageBytes, 0)
		if o.StageBytes == 0 {
			o.StageBytes = defaultStageBudget
		}
		o.StageBytes /= 2
	}
	pipeCtx, cancelPipe := context.WithCancel(ctx)
	defer cancelPipe()
	type writing struct {
		batch int
		done  chan struct{}
		part  staged
		err   error
	}
	var inflight *writing
	// collect waits for the batch being written and adds it to parts.
	collect := func() error {
		w := inflight
		if w == nil {
			return nil
		}
		inflight = nil
		<-w.done
		if w.err != nil {
			return w.err
		}
		w.part.batch = batches[w.batch]
		w.part.columns = columns[w.batch]
		parts = append(parts, w.part)
		stagedIdx = append(stagedIdx, w.batch)
		return nil
	}
	defer func() { cancelPipe(); _ = collect() }() // an early return waits for the write it left running
	for i, b := range batches {
		bo := o
		bo.Dataset, bo.Source, bo.Files, bo.columns = b.Dataset, b.Source, b.Files, columns[i]
		id, err := datasetID(ctx, o.Store, datasets, b.Dataset)
		if err != nil {
			return sums, err
		}
		var isNew bool
		if datasets, isNew, err = datasets.Ensure(b.Dataset, b.Source, id, time.Now()); err != nil {
			return sums, err
		}
		if len(columns[i]) > 0 {
			if err := datasets.SetColumns(id, columns[i]); err != nil {
				return sums, err
			}
		}
		sums[i] = Summary{Dataset: b.Dataset, DatasetID: id, NewDataset: isNew, Rejected: map[string]int64{}, Flagged: map[string]int64{}}
		read, err := readBatch(pipeCtx, bo, prev, id, &sums[i])
		if errors.Is(err, errNothingNew) && len(batches) > 1 {
			o.Log.Info("skipping a dataset: every file was ingested before", "dataset", b.Dataset)
			continue
		}
		if err != nil {
			// Stop the write in flight: nothing will be published. Its
			// error is the one to report only when it failed first and
			// its cancel is what ended this read.
			cancelPipe()
			werr := collect()
			if werr != nil && !errors.Is(werr, context.Canceled) && errors.Is(err, context.Canceled) {
				return sums, werr
			}
			return sums, err
		}
		if err := collect(); err != nil {
			read.close()
			return sums, err
		}
		w := &writing{batch: i, done: make(chan struct{})}
		inflight = w
		go func() {
			defer close(w.done)
			if w.part, w.err = read.write(pipeCtx, version); w.err != nil {
				cancelPipe()
			}
		}()
	}
	if err := collect(); err != nil {
		return sums, err
	}
	if len(parts) == 0 {
		return sums, fmt.Errorf("nothing to ingest: every file was already ingested into its dataset (use --force to ingest again)")
	}
	if !o.AllowEmpty {
		for _, i := range stagedIdx {
			if sum := sums[i]; sum.Written == 0 {
				var rejected int64
				for _, n := range sum.Rejected {
					rejected += n
				}
				return sums, fmt.Errorf("dataset %q: its input yielded no URL (%d read, %d rejected%s); nothing was published (--allow-empty publishes an empty dataset)",
					sum.Dataset, sum.Read, rejected, rejectsHint(sum))
			}
		}
	}
	var collisions []collision
	for _, p := range parts {
		collisions = append(collisions, p.collisions...)
	}
	if len(collisions) > 0 {
		if err := putCollisions(ctx, o.Store, "index/"+version+"/url_id_collisions.tsv", collisions); err != nil {
			return sums, err
		}
	}

	// build the version's index and publish; on a lost race rebuild on the
	// new current version (the Parquet above is reused: M1)
	mark := time.Now()
	for attempt := 0; ; attempt++ {
		if o.Progress != nil {
			o.Progress(Progress{Phase: "build index"})
		}
		var idx Summary
		v, err := buildVersion(ctx, o, prev, datasets, version, parts, &idx)
		if err != nil {
			return sums, err
		}
		_, err = catalog.Publish(ctx, o.Store, base, v, o.Keep)
		if err == nil {
			for i := range sums {
				sums[i].Phases = append(sums[i].Phases, Phase{"build index and publish", time.Since(mark)})
				sums[i].Version, sums[i].Domains, sums[i].URLsTotal = v.Version, idx.Domains, idx.URLsTotal
				sums[i].Duration = time.Since(start)
			}
			return sums, nil
		}
		if !errors.Is(err, catalog.ErrConflict) || attempt >= maxPublishAttempts {
			return sums, err
		}
		o.Log.Info("another ingest published first; rebuilding on its version", "attempt", attempt+1)
		// many publishers at once: spread the retries out
		time.Sleep(time.Duration(rand.IntN(50*(attempt+1))) * time.Millisecond)
		if base, err = catalog.ReadManifest(ctx, o.Store); err != nil {
			return sums, err
		}
		if prev, err = loadBase(ctx, o.Store, base); err != nil {
			return sums, err
		}
		// M8: the ids were reserved, so the new datasets keep them on the
		// winner's version, and the Parquet written under them stays right
		datasets = prev.datasets
		for _, p := range parts {
			if datasets, _, err = datasets.Ensure(p.batch.Dataset, p.batch.Source, p.id, time.Now()); err != nil {
				return sums, fmt.Errorf("rebuilding on a concurrent ingest's version: %w; run the ingest again", err)
			}
			if len(p.columns) > 0 {
				// the winner may have given the dataset other columns:
				// the files written hold p.columns, which must still agree
				if err := datasets.SetColumns(p.id, p.columns); err != nil {
					return sums, fmt.Errorf("rebuilding on a concurrent ingest's version: %w; run the ingest again", err)
				}
			}
		}
		version = catalog.NewVersionName(time.Now(), base.NextSequence())
	}
}

// maxPublishAttempts bounds the rebuilds of one ingest that keeps losing
// the publish race (M3): enough for dozens of concurrent publishers.
const maxPublishAttempts = 50

// datasetID is the id of dataset name: its own when it exists, else one
// reserved for it (catalog M8).
func datasetID(ctx context.Context, st store.Store, d *catalog.Datasets, name string) (uint32, error) {
	if ds, ok := d.ByName(name); ok {
		return ds.ID, nil
	}
	return catalog.ReserveDatasetID(ctx, st, d, name)
}

// errNothingNew: every input of a batch was ingested into its dataset before.
var errNothingNew = errors.New("nothing to ingest")

// readBatch reads and normalizes one dataset's inputs into a lakeWriter's
// staged rows; its write then deduplicates them and uploads the Parquet
// files and rejects (the index is built afterwards). The caller owns the
// result and must call its write or close.
func readBatch(ctx context.Context, o Options, prev *baseIndex, id uint32, sum *Summary) (_ *batchRead, err error) {
	// skip inputs already ingested into this dataset (exact counts depend on it)
	inputs, hashes, skipped, inputBytes, err := newInputs(o.Files, prev.sources[id], o.Force)
	if err != nil {
		return nil, err
	}
	sum.Skipped = skipped
	if len(inputs) == 0 {
		return nil, fmt.Errorf("%w: every file was already ingested into %q (use --force to ingest again)", errNothingNew, o.Dataset)
	}
	r := &batchRead{o: o, id: id, sum: sum, hashes: hashes}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if r.work, err = os.MkdirTemp(o.WorkDir, "batch-"); err != nil {
		return nil, err
	}
	r.lake = newLakeWriter(r.work, o.domains, o.StageBytes)
	r.lake.cols = o.columns
	r.lake.sizeHint(inputBytes)
	if r.rejects, err = os.Create(filepath.Join(o.WorkDir, "rejects-"+o.Dataset+".tsv")); err != nil {
		return nil, err
	}
	rw := bufio.NewWriter(r.rejects)
	fmt.Fprintf(rw, "source\treason\tdetail\traw\n")
	reject := func(r Reject) {
		sum.Rejected[r.Reason]++
		fmt.Fprintf(rw, "%s\t%s\t%s\t%s\n", tsv(r.Source), tsv(r.Reason), tsv(r.Detail), tsv(r.Raw))
	}
	r.mark = time.Now()
	plan := newFieldPlan(o.columns, keepNames(o.KeepColumns))
	if plan != nil {
		plan.flag = o.KeepColumnsName
	}
	if err := readAll(ctx, o, inputs, r.lake, plan, shard.Default(), sum, reject); err != nil {
		return nil, err
	}
	if err := plan.unseen(); err != nil { // JSON lines: seen only now
		return nil, err
	}
	if plan != nil && plan.notTyped > 0 {
		sum.Flagged[flagFieldNotTyped] += plan.notTyped
	}
	if err := rw.Flush(); err != nil {
		return nil, err
	}
	sum.RejectsFile = r.rejects.Name()
	if o.Progress != nil {
		o.Progress(Progress{Read: sum.Read, Normalized: sum.Normalized, Rejected: sum.Read - sum.Normalized, Phase: "write parquet"})
	}
	r.phase("read and normalize")
	return r, nil
}

// batchRead is one batch read and staged by readBatch, waiting for write.
type batchRead struct {
	o       Options
	id      uint32
	sum     *Summary
	hashes  []string
	work    string
	lake    *lakeWriter
	rejects *os.File
	mark    time.Time
}

func (r *batchRead) phase(name string) {
	r.sum.Phases = append(r.sum.Phases, Phase{name, time.Since(r.mark)})
	r.mark = time.Now()
}

// close releases what readBatch made; write calls it.
func (r *batchRead) close() {
	if r.lake != nil {
		r.lake.close()
	}
	if r.rejects != nil {
		r.rejects.Close()
	}
	if r.work != "" {
		os.RemoveAll(r.work)
	}
}

// write deduplicates the staged rows,
// writes and uploads the batch's Parquet files and its rejects, and
// releases the batch.
func (r *batchRead) write(ctx context.Context, version string) (staged, error) {
	defer r.close()
	o, sum, id := r.o, r.sum, r.id
	r.mark = time.Now()
	// each Parquet file is uploaded (immutable, uniquely named: M1) as soon
	// as it is written, 8 at a time
	up := newUploader(ctx, o.Store, 8)
	lakeFiles, collisions, written, err := r.lake.finish(ctx, "part-"+version+".parquet", layout{RowGroupRows: o.RowGroupRows, PageRows: o.PageRows, PrefixWidth: o.PrefixWidth, ZstdLevel: o.ZstdLevel}, func(f *lakeFile) error {
		f.Key = fmt.Sprintf("urls/dataset_id=%d/domain_prefix=%s/%s", id, f.Prefix, f.Name)
		return up.put(f.Key, f.Data)
	})
	if upErr := up.wait(); err == nil {
		err = upErr
	}
	if err != nil {
		return staged{}, err
	}
	sum.Written, sum.Collisions, sum.Files = written, len(collisions), len(lakeFiles)
	for _, f := range lakeFiles {
		sum.Bytes += f.Bytes
		for k, n := range f.FieldBytes {
			if sum.FieldBytes == nil {
				sum.FieldBytes = map[string]int64{}
			}
			sum.FieldBytes[k] += n
		}
	}
	sum.Columns = o.columns
	sum.RejectsKey = "ingest/" + version + "/rejects-" + o.Dataset + ".tsv"
	if err := putFile(ctx, o.Store, sum.RejectsKey, sum.RejectsFile); err != nil {
		return staged{}, err
	}
	r.phase("deduplicate, write and upload parquet")
	return staged{id: id, lake: lakeFiles, written: written, hashes: r.hashes, collisions: collisions}, nil
}

func tsv(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

// base is what a new version builds on.
type baseIndex struct {
	version  catalog.Version
	has      bool
	datasets *catalog.Datasets
	sources  map[uint32]map[string]bool // dataset → sha256 of ingested files
	files    []files.File
	dict     *domaindict.Dict
	// membership: each previous domain's datasets, from the version's
	// dataset_to_domains.roar transposed back, or from the
	// domain_to_datasets.roar a version written before 2026-11-28 has
	membership dsdr.Membership
	shards     []shardFiles
	closers    []func()
}

type shardFiles struct{ idx, dat string }

func (b *baseIndex) close() {
	for _, c := range b.closers {
		c()
	}
}

// sourcesFile records input hashes per dataset (index/{version}/sources.json).
type sourcesDoc struct {
	Datasets map[string][]string `json:"datasets"` // dataset id → sha256 of ingested input files
}

func loadBase(ctx context.Context, st store.Store, m *catalog.Manifest) (*baseIndex, error) {
	b := &baseIndex{datasets: catalog.NewDatasets(), sources: map[uint32]map[string]bool{}}
	v, ok := m.Current()
	if !ok {
		return b, nil
	}
	b.version, b.has = v, true
	body, _, err := store.ReadAll(ctx, st, v.DatasetsJSON)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", v.DatasetsJSON, err)
	}
	if b.datasets, err = catalog.ParseDatasets(body); err != nil {
		return nil, err
	}
	if v.SourcesJSON != "" {
		body, _, err := store.ReadAll(ctx, st, v.SourcesJSON)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", v.SourcesJSON, err)
		}
		var doc sourcesDoc
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", v.SourcesJSON, err)
		}
		for ds, hs := range doc.Datasets {
			var id uint32
			fmt.Sscan(ds, &id)
			b.sources[id] = map[string]bool{}
			for _, h := range hs {
				b.sources[id][h] = true
			}
		}
	}
	body, _, err = store.ReadAll(ctx, st, v.FilesTSV)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", v.FilesTSV, err)
	}
	reg, err := files.Read(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.FilesTSV, err)
	}
	b.files = reg.All()
	dictBody, _, err := store.ReadAll(ctx, st, v.DomainsDict)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", v.DomainsDict, err)
	}
	if b.dict, err = domaindict.OpenWith(bytes.NewReader(dictBody), int64(len(dictBody)), domaindict.Options{LoadStrings: true}); err != nil {
		return nil, fmt.Errorf("%s: %w", v.DomainsDict, err)
	}
	if b.membership, err = loadMembership(ctx, st, v, b.dict, b.datasets); err != nil {
		return nil, err
	}
	for _, p := range v.Postings {
		b.shards = append(b.shards, shardFiles{idx: p.Idx, dat: p.Dat})
	}
	return b, nil
}

// loadMembership reads the previous version's membership: its
// dataset_to_domains.roar transposed back, or, for a version written
// before that file (or before it became the only one), its
// domain_to_datasets.roar. A version that has lost its only membership
// file (gc by a release that did not know it) has it rebuilt from its
// postings, as the server does (catalog.PostingsTranspose). Whichever it
// comes from, it holds as many domains as dict.
func loadMembership(ctx context.Context, st store.Store, v catalog.Version, dict *domaindict.Dict, registry *catalog.Datasets) (dsdr.Membership, error) {
	if key := v.DatasetToDomainsRoar; key != "" {
		body, _, err := store.ReadAll(ctx, st, key)
		if err == nil {
			return byDomain(key, body, dict.Len())
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("read %s: %w", key, err)
		}
	}
	if v.D2DRoar == "" {
		return membershipFromPostings(ctx, st, v, dict, registry)
	}
	body, _, err := store.ReadAll(ctx, st, v.D2DRoar)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", v.D2DRoar, err)
	}
	m, err := dtdr.OpenWith(bytes.NewReader(body), int64(len(body)), dtdr.Options{LoadIndex: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.D2DRoar, err)
	}
	if m.Len() != dict.Len() { // byDomain and the postings check their own
		return nil, fmt.Errorf("%s: %w: %d domains, the dictionary has %d", v.D2DRoar, dtdr.ErrCorrupt, m.Len(), dict.Len())
	}
	return m, nil
}

// byDomain opens a dataset_to_domains.roar (key) of the version whose
// dictionary holds n domains, and transposes it back.
func byDomain(key string, body []byte, n uint64) (dsdr.Membership, error) {
	r, err := dsdr.Open(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	// before ByDomain sizes its arrays by the header's count (dsdr S4)
	if r.Len() != n {
		return nil, fmt.Errorf("%s: %w: %d domains, the dictionary has %d", key, dsdr.ErrCorrupt, r.Len(), n)
	}
	m, err := r.ByDomain()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return m, nil
}

// membershipFromPostings reads every postings shard of v and gathers its
// (domain, dataset) pairs.
func membershipFromPostings(ctx context.Context, st store.Store, v catalog.Version, dict *domaindict.Dict, registry *catalog.Datasets) (dsdr.Membership, error) {
	t, err := catalog.NewPostingsTranspose(ctx, dict)
	if err != nil {
		return nil, err
	}
	for _, p := range v.Postings {
		r, err := openShard(ctx, st, shardFiles{idx: p.Idx, dat: p.Dat})
		if err == nil {
			err = t.AddShard(ctx, r)
		}
		if err != nil {
			return nil, fmt.Errorf("postings shard %d: %w", p.Shard, err)
		}
	}
	var buf bytes.Buffer
	if err := t.Write(&buf, registry.IDs()); err != nil {
		return nil, err
	}
	return byDomain("the postings of "+v.Version, buf.Bytes(), dict.Len())
}

// newInputs hashes the inputs and drops those already ingested; keptBytes
// is what the kept ones hold (read while hashing: the staging size hint).
func newInputs(paths []string, seen map[string]bool, force bool) (keep, hashes, skipped []string, keptBytes int64, err error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		h := sha256.New()
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return nil, nil, nil, 0, fmt.Errorf("%s: %w", p, err)
		}
		sum := hex.EncodeToString(h.Sum(nil))
		if seen[sum] && !force {
			skipped = append(skipped, p)
			continue
		}
		keep, hashes = append(keep, p), append(hashes, sum)
		keptBytes += n
	}
	return keep, hashes, skipped, keptBytes, nil
}

func putFile(ctx context.Context, st store.Store, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := st.Put(ctx, key, f, store.Cond{IfNoneMatch: true}); err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	return nil
}

func putBytes(ctx context.Context, st store.Store, key string, b []byte) error {
	if _, err := st.Put(ctx, key, bytes.NewReader(b), store.Cond{IfNoneMatch: true}); err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	return nil
}

func putCollisions(ctx context.Context, st store.Store, key string, cs []collision) error {
	var b bytes.Buffer
	b.WriteString("url_id\turl_a\turl_b\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "%d\t%s\t%s\n", c.URLID, tsv(c.A), tsv(c.B))
	}
	return putBytes(ctx, st, key, b.Bytes())
}

// buildVersion writes every index file of a new version on top of prev and
// returns its manifest entry (M2: the files exist before Publish).
func buildVersion(ctx context.Context, o Options, prev *baseIndex, datasets *catalog.Datasets,
	version string, parts []staged, sum *Summary) (catalog.Version, error) {
	dir := "index/" + version + "/"
	nShards := o.PostingsShards
	if prev.has {
		nShards = prev.version.PostingsShards
	}
	if nShards <= 0 {
		nShards = DefaultPostingsShards
	}

	// file registry: the previous files plus the new ones
	var fileList []files.File
	var nextFileID uint32 = 1
	for _, f := range prev.files {
		fileList = append(fileList, f)
		if f.ID >= nextFileID {
			nextFileID = f.ID + 1
		}
	}
	// the batch's postings: one entry per span of the new files, per
	// postings shard, grouped into (domain, dataset) keys by sorting
	names := o.domains.domains()
	keyOf := make([]uint64, len(names))
	for id, d := range names {
		keyOf[id] = catalog.DomainKey(d)
	}
	byShard := make([][]batchSpan, nShards)
	// New files take ids prefix-major, (domain_prefix, dataset): a domain's
	// files in several datasets of the batch then have nearby ids, and the
	// postings' file deltas fit one varint byte instead of two.
	type newFile struct {
		part *staged
		lf   *lakeFile
	}
	var added []newFile
	for i := range parts {
		for j := range parts[i].lake {
			added = append(added, newFile{&parts[i], &parts[i].lake[j]})
		}
	}
	slices.SortStableFunc(added, func(a, b newFile) int {
		return cmp.Or(strings.Compare(a.lf.Prefix, b.lf.Prefix), cmp.Compare(a.part.id, b.part.id))
	})
	for _, nf := range added {
		part, lf := nf.part, nf.lf
		fid := nextFileID
		nextFileID++
		fileList = append(fileList, files.File{ID: fid, DatasetID: part.id, DomainPrefix: lf.Prefix, Path: lf.Key, Rows: uint64(lf.Rows), RowGroups: uint32(lf.RowGroups)})
		for _, sp := range lf.Spans {
			k := keyOf[sp.Domain]
			s := postings.ShardOf(k, uint32(nShards))
			byShard[s] = append(byShard[s], batchSpan{k: k, ds: part.id, domain: sp.Domain, fid: fid, groupRows: sp.groupRows})
		}
	}
	// per shard: the spans in postings order, and each domain's datasets
	// in this batch (a domain's spans are all in its key's shard, so the
	// shards write disjoint entries of dsOf)
	dsOf := make([][]uint32, len(names))
	shardErrs := make([]error, nShards)
	parallel.ForEach(nShards, runtime.GOMAXPROCS(0), func(s int) {
		es := byShard[s]
		slices.SortFunc(es, func(a, b batchSpan) int {
			return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.ds, b.ds), cmp.Compare(a.fid, b.fid), cmp.Compare(a.RowGroup, b.RowGroup))
		})
		for i, e := range es {
			if i > 0 && es[i-1].k == e.k {
				if d := es[i-1].domain; d != e.domain {
					shardErrs[s] = fmt.Errorf("domain key collision: %q and %q share postings key %d", names[e.domain], names[d], e.k)
					return
				}
				if es[i-1].ds == e.ds {
					continue
				}
			}
			dsOf[e.domain] = append(dsOf[e.domain], e.ds)
		}
	})
	if err := errors.Join(shardErrs...); err != nil {
		return catalog.Version{}, err
	}
	var fbuf bytes.Buffer
	fw := files.NewWriter(&fbuf)
	for _, f := range fileList {
		if err := fw.Add(f); err != nil {
			return catalog.Version{}, err
		}
	}
	if err := fw.Close(); err != nil {
		return catalog.Version{}, err
	}

	// domains: previous ∪ batch, sorted; membership bitmaps follow
	newDomains := make([]domainID, 0, len(names))
	for id := range names {
		if len(dsOf[id]) > 0 {
			newDomains = append(newDomains, domainID(id))
		}
	}
	slices.SortFunc(newDomains, func(a, b domainID) int { return strings.Compare(names[a], names[b]) })
	var merged []string
	var bitmaps []*roaring.Bitmap
	var prevN uint64
	if prev.has {
		prevN = prev.dict.Len()
	}
	datasetDomains := map[uint32]int64{}
	fresh := make([]bool, len(names)) // a domain the previous version lacks
	i, j := uint64(0), 0
	for i < prevN || j < len(newDomains) {
		var d string
		var bm *roaring.Bitmap
		var pd string
		if i < prevN {
			var err error
			if pd, err = prev.dict.Domain(i); err != nil {
				return catalog.Version{}, err
			}
		}
		switch {
		case i < prevN && (j >= len(newDomains) || pd < names[newDomains[j]]):
			d = pd
			b, err := prev.membership.Get(i)
			if err != nil {
				return catalog.Version{}, err
			}
			bm = b
			i++
		case i < prevN && pd == names[newDomains[j]]:
			d = pd
			b, err := prev.membership.Get(i)
			if err != nil {
				return catalog.Version{}, err
			}
			bm = b
			bm.AddMany(dsOf[newDomains[j]])
			i++
			j++
		default:
			d = names[newDomains[j]]
			bm = roaring.BitmapOf(dsOf[newDomains[j]]...)
			fresh[newDomains[j]] = true
			j++
		}
		for _, ds := range bm.ToArray() {
			datasetDomains[ds]++
		}
		bm.RunOptimize() // a domain in datasets 1-64 is one run: 15 bytes, not 144
		merged = append(merged, d)
		bitmaps = append(bitmaps, bm)
	}
	var dictBuf bytes.Buffer
	var listHash uint64
	if err := domaindict.Write(&dictBuf, func(yield func(string) bool) {
		for _, d := range merged {
			if !yield(d) {
				return
			}
		}
	}); err != nil {
		return catalog.Version{}, fmt.Errorf("domain dictionary: %w", err)
	}
	if d, err := domaindict.Open(bytes.NewReader(dictBuf.Bytes()), int64(dictBuf.Len())); err == nil {
		listHash = d.ListHash()
	} else {
		return catalog.Version{}, fmt.Errorf("domain dictionary just written does not open: %w", err)
	}
	// membership is kept once, as each dataset's domains
	// (docs/format/dsdr.md); the postings hold the same pairs with counts.
	// domain_to_datasets.roar, the same bitmaps domain by domain, is no
	// longer written: no reader needs that direction from a file, and it
	// cost 1.09 bytes a URL of 28.6 on the realistic 10M corpus
	// (docs/format/dtdr.md)
	tr := dsdr.NewTransposer(uint64(len(merged)))
	for id, bm := range bitmaps {
		if err := tr.Add(uint64(id), bm); err != nil {
			return catalog.Version{}, err
		}
	}
	var ds2dBuf bytes.Buffer
	if err := tr.Write(&ds2dBuf, datasets.IDs()); err != nil {
		return catalog.Version{}, fmt.Errorf("dataset→domains: %w", err)
	}

	// postings: the batch's entries per shard, merged into the previous
	// shard; untouched shards are reused by reference
	v := catalog.Version{
		Version: version, Parent: prev.version.Version, CreatedAt: time.Now().UTC(),
		PSLVersion: o.Normalizer.ListVersion(), PSLMode: pslMode(o.Normalizer), PostingsShards: nShards,
		Domains: int64(len(merged)), Datasets: len(datasets.Datasets),
		DomainsDict: dir + "domains.dict", DatasetToDomainsRoar: dir + "dataset_to_domains.roar",
		FilesTSV: dir + "files.tsv", DatasetsJSON: dir + "datasets.json", SourcesJSON: dir + "sources.json",
		ParquetRoot: "urls/", DomainListHash: listHash,
	}
	// shards are merged 4 at a time (a read of the old shard, CPU, a put)
	// and uploaded by the uploader's workers
	up := newUploader(ctx, o.Store, 8)
	v.Postings = make([]catalog.PostingsShard, nShards)
	parallel.ForEach(nShards, 4, func(s int) {
		v.Postings[s], shardErrs[s] = buildShard(ctx, o.Store, up, prev, dir, s, byShard[s], func(sp batchSpan) (string, bool) { return names[sp.domain], fresh[sp.domain] })
	})
	if err := errors.Join(up.wait(), errors.Join(shardErrs...)); err != nil {
		return catalog.Version{}, err
	}

	// registry counts
	var totalURLs int64
	for _, part := range parts {
		datasets.Update(part.id, func(d *catalog.Dataset) {
			d.URLs += part.written
			d.Files += len(part.lake)
			d.Updated = time.Now().UTC()
			if part.batch.Source != "" {
				d.Source = part.batch.Source
			}
		})
	}
	for k := range datasets.Datasets {
		datasets.Datasets[k].Domains = datasetDomains[datasets.Datasets[k].ID]
		totalURLs += datasets.Datasets[k].URLs
	}
	v.URLs, v.Datasets = totalURLs, len(datasets.Datasets)
	dsJSON, err := json.MarshalIndent(datasets, "", "  ")
	if err != nil {
		return catalog.Version{}, err
	}
	srcDoc := sourcesDoc{Datasets: map[string][]string{}}
	for ds, hs := range prev.sources {
		for h := range hs {
			srcDoc.Datasets[fmt.Sprint(ds)] = append(srcDoc.Datasets[fmt.Sprint(ds)], h)
		}
	}
	for _, part := range parts {
		srcDoc.Datasets[fmt.Sprint(part.id)] = append(srcDoc.Datasets[fmt.Sprint(part.id)], part.hashes...)
	}
	for k := range srcDoc.Datasets {
		sort.Strings(srcDoc.Datasets[k])
	}
	srcJSON, _ := json.MarshalIndent(srcDoc, "", "  ")
	finals := []struct {
		key  string
		body []byte
	}{
		{v.DomainsDict, dictBuf.Bytes()}, {v.DatasetToDomainsRoar, ds2dBuf.Bytes()}, {v.FilesTSV, fbuf.Bytes()},
		{v.DatasetsJSON, dsJSON}, {v.SourcesJSON, srcJSON},
	}
	putErrs := make([]error, len(finals))
	parallel.ForEach(len(finals), len(finals), func(i int) {
		putErrs[i] = putBytes(ctx, o.Store, finals[i].key, finals[i].body)
	})
	if err := errors.Join(putErrs...); err != nil {
		return catalog.Version{}, err
	}
	sum.Domains, sum.URLsTotal = uint64(len(merged)), totalURLs
	return v, nil
}

// batchSpan is one span of a new file, keyed for the postings.
type batchSpan struct {
	k      uint64 // catalog.DomainKey of domain
	ds     uint32
	domain domainID
	fid    uint32
	groupRows
}

// buildShard writes postings shard s of the new version: the batch's
// spans (sorted by key, file and row group) merged into the previous
// version's shard, or that shard itself, by reference, when the batch has
// none. newDomain names a span's domain and says whether the previous
// version lacks it: such a domain's key must not be in the previous shard,
// or the postings would give one domain's URLs to the other (keys are
// 64-bit hashes, and two domains can be made to share one; a batch's own
// pairs are refused in buildVersion).
func buildShard(ctx context.Context, st store.Store, up *uploader, prev *baseIndex, dir string, s int, spans []batchSpan, newDomain func(batchSpan) (string, bool)) (catalog.PostingsShard, error) {
	if len(spans) == 0 && prev.has && s < len(prev.shards) {
		return catalog.PostingsShard{Shard: s, Idx: prev.shards[s].idx, Dat: prev.shards[s].dat}, nil
	}
	var bIdx, bDat bytes.Buffer
	bw := postings.NewWriter(&bIdx, &bDat)
	var key []postings.Span
	for i := 0; i < len(spans); {
		first := spans[i]
		key = key[:0]
		for ; i < len(spans) && spans[i].k == first.k && spans[i].ds == first.ds; i++ {
			g := spans[i]
			key = append(key, postings.Span{FileID: g.fid, RowGroup: g.RowGroup, Rows: g.Rows, First: g.First, HasFirst: true})
		}
		if err := bw.Add(first.k, first.ds, key); err != nil {
			return catalog.PostingsShard{}, err
		}
	}
	if err := bw.Close(); err != nil {
		return catalog.PostingsShard{}, err
	}
	idxB, datB := bIdx.Bytes(), bDat.Bytes()
	if prev.has && s < len(prev.shards) {
		// merge with the previous version's shard
		pr, err := openShard(ctx, st, prev.shards[s])
		if err != nil {
			return catalog.PostingsShard{}, fmt.Errorf("postings shard %d: %w", s, err)
		}
		for i, sp := range spans {
			name, isNew := newDomain(sp)
			if !isNew || i > 0 && spans[i-1].k == sp.k {
				continue
			}
			if es, err := pr.DatasetsOf(sp.k); err != nil {
				return catalog.PostingsShard{}, fmt.Errorf("postings shard %d: %w", s, err)
			} else if len(es) > 0 {
				return catalog.PostingsShard{}, fmt.Errorf("domain key collision: %q shares postings key %d with a domain the index already holds; DHSI cannot index both (nothing was published)", name, sp.k)
			}
		}
		br, err := postings.Open(bytes.NewReader(idxB), int64(len(idxB)), bytes.NewReader(datB), int64(len(datB)))
		if err != nil {
			return catalog.PostingsShard{}, err
		}
		var mIdx, mDat bytes.Buffer
		mw := postings.NewWriter(&mIdx, &mDat)
		if err := postings.Merge(mw, pr, br); err != nil {
			return catalog.PostingsShard{}, fmt.Errorf("merge postings shard %d: %w", s, err)
		}
		if err := mw.Close(); err != nil {
			return catalog.PostingsShard{}, err
		}
		idxB, datB = mIdx.Bytes(), mDat.Bytes()
	}
	ps := catalog.PostingsShard{Shard: s, Idx: fmt.Sprintf("%spostings/%03d/postings.idx", dir, s), Dat: fmt.Sprintf("%spostings/%03d/postings.dat", dir, s)}
	if err := up.put(ps.Idx, idxB); err != nil {
		return ps, err
	}
	return ps, up.put(ps.Dat, datB)
}

// openShard reads a postings shard's two files whole and opens them.
func openShard(ctx context.Context, st store.Store, f shardFiles) (*postings.Reader, error) {
	idx, _, err := store.ReadAll(ctx, st, f.idx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.idx, err)
	}
	dat, _, err := store.ReadAll(ctx, st, f.dat)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.dat, err)
	}
	return postings.Open(bytes.NewReader(idx), int64(len(idx)), bytes.NewReader(dat), int64(len(dat)))
}

func pslMode(n *urlnorm.Normalizer) string {
	if strings.Contains(n.ListVersion(), "icann-only") {
		return "icann"
	}
	return "all"
}

// flagPublicSuffixHost is Summary.Flagged's key for URLs whose host is
// itself a public suffix ("freedesktop.org", "co.uk"), indexed under the
// host (urlnorm.URL.PublicSuffixHost). It is the name of the reason such
// URLs are rejected for under urlnorm.Config.StrictSuffix, so a statistic
// keyed on the name finds them whether they were flagged or rejected.
var flagPublicSuffixHost = urlnorm.ReasonHostIsPublicSuffix.String()

// flagFieldNotTyped counts CDX field values that did not parse as their
// column's type (a status of "2OO"): the URL is indexed, the field NULL.
const flagFieldNotTyped = "cdx-field-not-typed"

func keepNames(ks []KeepColumn) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Name
	}
	return out
}

// normBatch is the unit of work between the reader, the normalizers and the
// spill writer.
const normBatch = 4096

type normRow struct {
	domain, prefix, url, raw string
	ts                       time.Time
	fields                   []any
}

type normResult struct {
	rows    []normRow
	flagged int64 // rows whose host is itself a public suffix
	rejects []Reject
}

// readAll reads every input and stages its URLs. Normalization (the costly
// step) runs on every core; reading and the lake's spill writer stay on one
// goroutine each, since neither is safe to share. Rows arrive in any order:
// the lake is deduplicated and sorted afterwards.
func readAll(ctx context.Context, o Options, inputs []string, lake *lakeWriter, plan *fieldPlan, layout shard.Layout, sum *Summary, reject func(Reject)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []Record, 8)
	results := make(chan normResult, 8)
	workers := max(1, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range batches {
				var res normResult
				res.rows = make([]normRow, 0, len(batch))
				for _, rec := range batch {
					u, err := o.Normalizer.Parse(rec.URL)
					if err != nil {
						var ue *urlnorm.Error
						reason := "bad-url"
						if errors.As(err, &ue) {
							reason = ue.Reason.String()
						}
						res.rejects = append(res.rejects, Reject{Source: rec.Source, Raw: truncate(rec.URL, 2000), Reason: reason, Detail: err.Error()})
						continue
					}
					if u.PublicSuffixHost {
						res.flagged++
					}
					res.rows = append(res.rows, normRow{domain: u.Domain, prefix: layout.Of(u.Domain), url: u.Normalized, raw: rec.URL, ts: rec.TS, fields: rec.Fields})
				}
				select {
				case results <- res:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	// the spill writer: the only goroutine touching lake and the counters
	var appendErr error
	appended := make(chan struct{})
	var mu sync.Mutex // guards sum's counters and reject() against the reader's own rejects
	go func() {
		defer close(appended)
		for res := range results {
			if appendErr != nil {
				continue // drain
			}
			mu.Lock()
			for _, r := range res.rejects {
				reject(r)
			}
			sum.Normalized += int64(len(res.rows))
			if res.flagged > 0 {
				sum.Flagged[flagPublicSuffixHost] += res.flagged
			}
			read, norm := sum.Read, sum.Normalized
			mu.Unlock()
			for _, r := range res.rows {
				if err := lake.add(r.domain, r.prefix, r.url, r.raw, r.ts, r.fields...); err != nil {
					appendErr = err
					cancel()
					break
				}
			}
			if o.Progress != nil {
				o.Progress(Progress{Read: read, Normalized: norm, Rejected: read - norm, Phase: "read"})
			}
		}
	}()

	var readErr error
	batch := make([]Record, 0, normBatch)
	send := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case batches <- batch:
			batch = make([]Record, 0, normBatch)
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, path := range inputs {
		err := scan(ctx, path, o.Format, o.ParquetMemory, plan, func(rec Record) error {
			mu.Lock()
			sum.Read++
			mu.Unlock()
			batch = append(batch, rec)
			if len(batch) == normBatch && !send() {
				return ctx.Err()
			}
			return nil
		}, func(r Reject) {
			mu.Lock()
			sum.Read++
			reject(r)
			mu.Unlock()
		})
		if err != nil {
			readErr = fmt.Errorf("%s: %w", path, err)
			break
		}
	}
	if readErr == nil {
		send()
	}
	close(batches)
	<-appended
	if appendErr != nil {
		return appendErr
	}
	return readErr
}

func rejectsHint(sum Summary) string {
	if sum.RejectsFile == "" {
		return ""
	}
	return ", reasons in " + sum.RejectsFile
}
