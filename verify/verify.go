// Package verify checks a store end to end (issue 18 §4, `dhsi verify`):
// everything the URL index's manifest references, for every kept version,
// the domain-record shards and inbox, and the grants. It reads with the
// same decoders the server uses, so what they would refuse at query time
// is found here first; it never writes.
//
// What is checked, per kept index version:
//
//	V1. Every object the version references exists (domains dictionary,
//	    dataset→domains bitmaps, or domain→datasets bitmaps in a version
//	    written before 2026-11-28, or both; postings, files.tsv,
//	    datasets.json, sources.json, every Parquet file of files.tsv). A
//	    version that names neither membership file is a warning: readers
//	    build it from the postings.
//	V2. The dictionary opens (its CRCs) and its list hash and size are the
//	    manifest's; the bitmaps and every postings shard pass their own
//	    Verify (CRCs, structure) and cover the dictionary's domains.
//	V3. Every postings entry points inside the files of files.tsv: a known
//	    file, a row group below its count; the spans of each file add up to
//	    at most its rows; entry counts equal their spans' rows; the rows of
//	    all files equal the manifest's urls, and so do all entries' counts.
//	V4. With Deep, every Parquet file is read whole by DuckDB, and its row
//	    groups and rows are those files.tsv records; in layout-4 files every
//	    raw_edit rebuilds a raw URL other than its url, and no row has
//	    both ts and ts_seconds (docs/format/lake.md L5, L6); every column
//	    besides the lake's own is a kept field datasets.json lists for the
//	    file's dataset, of the Parquet type of its type ("Kept fields").
//	V5. A version's dataset→domains file (absent in versions written before
//	    it) passes its own Verify, has one entry per dataset of
//	    datasets.json holding as many domains as the registry says, holds
//	    exactly the (domain, dataset) pairs of the postings, and, where the
//	    version also has domain→datasets bitmaps, is their transpose
//	    (dsdr S5). A version with only the domain→datasets bitmaps has them
//	    held to the postings the same way.
//
// And for the domain records: every shard parses under the schema and its
// records pass the schema's checks (problems); inbox and batch objects the
// record rule refuses are listed as warnings (they are user data, already
// reported in domain_errors, not damage). grants.json parses.
package verify

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	_ "github.com/duckdb/duckdb-go/v2" // DuckDB reads Parquet for Deep

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/index/domaindict"
	"github.com/dhsi/dhsi/index/dsdr"
	"github.com/dhsi/dhsi/index/dtdr"
	"github.com/dhsi/dhsi/index/files"
	"github.com/dhsi/dhsi/index/postings"
	"github.com/dhsi/dhsi/records"
	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/tableschema"
)

// Options configure Run.
type Options struct {
	Deep     bool      // read every Parquet file whole (V4)
	Progress io.Writer // one line per stage; nil: none
}

// Finding is one problem or warning, named by the object it is about.
type Finding struct {
	Key  string
	What string
}

func (f Finding) String() string { return f.Key + ": " + f.What }

// Report is what Run found.
type Report struct {
	Versions int // index versions checked
	Objects  int // objects read or checked for existence
	Problems []Finding
	Warnings []Finding
}

type run struct {
	ctx    context.Context
	st     store.Store
	opt    Options
	rep    Report
	said   map[Finding]bool // versions share objects: each finding once
	parqOK map[string]bool  // Parquet files already checked (versions share them)
}

func (r *run) problem(key, format string, args ...any) {
	f := Finding{key, fmt.Sprintf(format, args...)}
	if !r.said[f] {
		r.said[f] = true
		r.rep.Problems = append(r.rep.Problems, f)
	}
}

func (r *run) progress(format string, args ...any) {
	if r.opt.Progress != nil {
		fmt.Fprintf(r.opt.Progress, format+"\n", args...)
	}
}

// read fetches a whole object, counting it; a missing object is a problem
// (V1) and returns nil.
func (r *run) read(key, what string) []byte {
	r.rep.Objects++
	b, _, err := store.ReadAll(r.ctx, r.st, key)
	if errors.Is(err, store.ErrNotFound) {
		r.problem(key, "missing (%s)", what)
		return nil
	}
	if err != nil {
		r.problem(key, "unreadable (%s): %v", what, err)
		return nil
	}
	return b
}

// Run checks st. The error is for a failure to read the store at all; what
// is wrong inside it is in the report.
func Run(ctx context.Context, st store.Store, opt Options) (Report, error) {
	r := &run{ctx: ctx, st: st, opt: opt, said: map[Finding]bool{}, parqOK: map[string]bool{}}
	m, err := catalog.ReadManifest(ctx, st)
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.progress("no URL index (no %s)", catalog.ManifestKey)
	case err != nil:
		r.problem(catalog.ManifestKey, "%v", err)
	default:
		for _, v := range m.Versions {
			r.progress("index version %s", v.Version)
			r.version(v)
			r.rep.Versions++
		}
	}
	r.progress("domain records")
	if err := r.domainRecords(); err != nil {
		return r.rep, err
	}
	if b, _, err := store.ReadAll(ctx, st, access.GrantsKey); err == nil {
		r.rep.Objects++
		if _, err := access.ParseGrants(b); err != nil {
			r.problem(access.GrantsKey, "%v", err)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		r.problem(access.GrantsKey, "unreadable: %v", err)
	}
	return r.rep, nil
}

// reverse checks the dataset→domains file (V5): its CRCs and structure,
// one entry per dataset of the registry (S1), each holding as many domains
// as the registry counts; and that it holds exactly the pairs of want (the
// transpose of the membership file, or of the postings, named by from).
// It returns the file's reader, or nil after a problem.
func (r *run) reverse(v catalog.Version, registry *catalog.Datasets) *dsdr.Reader {
	key := v.DatasetToDomainsRoar
	b := r.read(key, "dataset→domains bitmaps")
	if b == nil {
		return nil
	}
	rd, err := dsdr.Open(bytes.NewReader(b), int64(len(b)))
	if err == nil {
		err = rd.Verify()
	}
	if err != nil {
		r.problem(key, "%v", err)
		return nil
	}
	if registry == nil {
		return rd // its own problem is reported
	}
	if got := rd.Datasets(); !slices.Equal(got, registry.IDs()) {
		r.problem(key, "datasets %v, %s has %v", got, v.DatasetsJSON, registry.IDs())
		return nil
	}
	for _, d := range registry.Datasets {
		got, _, err := rd.Get(d.ID)
		if err != nil {
			r.problem(key, "dataset %d: %v", d.ID, err)
			return nil
		}
		if int64(got.GetCardinality()) != d.Domains {
			r.problem(key, "dataset %d holds %d domains, %s says %d", d.ID, got.GetCardinality(), v.DatasetsJSON, d.Domains)
		}
	}
	return rd
}

// transposed writes a dataset→domains file with write and opens it.
func transposed(write func(io.Writer) error) (*dsdr.Reader, error) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return nil, err
	}
	return dsdr.Open(bytes.NewReader(b.Bytes()), int64(b.Len()))
}

// sameMembership reports where file (named key) and w (the file from
// implies) differ: each dataset's domains must be equal.
func (r *run) sameMembership(key string, file *dsdr.Reader, from string, w *dsdr.Reader, registry *catalog.Datasets) {
	if file.Len() != w.Len() {
		r.problem(key, "%d domains, %s has %d", file.Len(), from, w.Len())
		return
	}
	for _, id := range registry.IDs() {
		got, _, err1 := file.Get(id)
		exp, _, err2 := w.Get(id)
		if err := errors.Join(err1, err2); err != nil {
			r.problem(key, "dataset %d: %v", id, err)
			return
		}
		if !got.Equals(exp) {
			r.problem(key, "dataset %d holds %d domains, %s says %d (%d differ)", id, got.GetCardinality(), from, exp.GetCardinality(), roaring.Xor(got, exp).GetCardinality())
			return
		}
	}
}

func (r *run) version(v catalog.Version) {
	// V1, V2: the dictionary
	var nDomains uint64
	var dict *domaindict.Dict
	if b := r.read(v.DomainsDict, "domains dictionary"); b != nil {
		d, err := domaindict.Open(bytes.NewReader(b), int64(len(b)))
		switch {
		case err != nil:
			r.problem(v.DomainsDict, "%v", err)
		case v.DomainListHash != 0 && d.ListHash() != v.DomainListHash:
			r.problem(v.DomainsDict, "list hash %d, the manifest says %d", d.ListHash(), v.DomainListHash)
		case int64(d.Len()) != v.Domains:
			r.problem(v.DomainsDict, "%d domains, the manifest says %d", d.Len(), v.Domains)
		default:
			nDomains, dict = d.Len(), d
		}
	}
	if v.D2DRoar == "" && v.DatasetToDomainsRoar == "" {
		// a release before dataset_to_domains.roar rewrote the manifest of
		// a version that had only it: readers build it from the postings
		r.rep.Warnings = append(r.rep.Warnings, Finding{catalog.ManifestKey, fmt.Sprintf("version %s names no membership file (its manifest entry was rewritten by a release before 2026-11-28?): readers build it from the postings; the next ingest writes it", v.Version)})
	}
	var membership *dtdr.Reader // versions written before 2026-11-28
	if v.D2DRoar != "" {
		if b := r.read(v.D2DRoar, "domain→datasets bitmaps"); b != nil {
			d, err := dtdr.Open(bytes.NewReader(b), int64(len(b)))
			if err == nil {
				err = d.Verify()
			}
			if err != nil {
				r.problem(v.D2DRoar, "%v", err)
			} else if dict != nil && d.Len() != nDomains {
				r.problem(v.D2DRoar, "%d domains, the dictionary has %d", d.Len(), nDomains)
			} else {
				membership = d
			}
		}
	}
	var registry *catalog.Datasets
	if b := r.read(v.DatasetsJSON, "datasets"); b != nil {
		var err error
		if registry, err = catalog.ParseDatasets(b); err != nil {
			r.problem(v.DatasetsJSON, "%v", err)
		}
	}
	var reverse *dsdr.Reader
	if v.DatasetToDomainsRoar != "" { // V5 (versions before it have none)
		reverse = r.reverse(v, registry)
	}
	// the older file as the dataset→domains file it implies, transposed
	// once for both checks below
	var older *dsdr.Reader
	if membership != nil && registry != nil {
		var err error
		if older, err = transposed(func(w io.Writer) error { return dsdr.Transpose(w, membership, registry.IDs()) }); err != nil {
			r.problem(v.D2DRoar, "%v", err) // e.g. a dataset the registry lacks
		}
	}
	if reverse != nil && older != nil {
		r.sameMembership(v.DatasetToDomainsRoar, reverse, v.D2DRoar, older, registry)
	}
	// the pairs of the postings, to hold the membership to (V5)
	var pairs *catalog.PostingsTranspose
	if dict != nil && registry != nil && (reverse != nil || older != nil) {
		var err error
		if pairs, err = catalog.NewPostingsTranspose(r.ctx, dict); err != nil {
			r.problem(v.DomainsDict, "%v", err)
		}
	}
	if v.SourcesJSON != "" {
		r.read(v.SourcesJSON, "ingested inputs")
	}
	// files.tsv, then the Parquet files it lists
	var reg *files.Registry
	if b := r.read(v.FilesTSV, "Parquet file registry"); b != nil {
		var err error
		if reg, err = files.Read(bytes.NewReader(b)); err != nil {
			r.problem(v.FilesTSV, "%v", err)
			reg = nil
		}
	}
	byID := map[uint32]files.File{}
	var lakeRows uint64
	if reg != nil {
		for _, f := range reg.All() {
			byID[f.ID] = f
			lakeRows += f.Rows
			if r.parqOK[f.Path] {
				continue
			}
			r.parqOK[f.Path] = true
			r.rep.Objects++
			a, err := r.st.Head(r.ctx, f.Path)
			switch {
			case errors.Is(err, store.ErrNotFound):
				r.problem(f.Path, "missing (Parquet file %d of %s)", f.ID, v.FilesTSV)
				continue
			case err != nil:
				r.problem(f.Path, "unreadable: %v", err)
				continue
			case a.Size < 12:
				r.problem(f.Path, "%d bytes: too short for Parquet", a.Size)
				continue
			}
			if r.opt.Deep {
				var kept []catalog.Column
				if registry != nil {
					ds, _ := registry.ByID(f.DatasetID)
					kept = ds.Columns
				}
				r.parquet(f, kept)
			}
		}
		if int64(lakeRows) != v.URLs {
			r.problem(v.FilesTSV, "its files hold %d rows, the manifest (version %s) says %d URLs", lakeRows, v.Version, v.URLs)
		}
	}
	// V2, V3: postings
	spanRows := map[uint32]uint64{}
	var entryURLs uint64
	postingsOK := true
	for _, p := range v.Postings {
		idx := r.read(p.Idx, fmt.Sprintf("postings shard %d index", p.Shard))
		dat := r.read(p.Dat, fmt.Sprintf("postings shard %d data", p.Shard))
		if idx == nil || dat == nil {
			postingsOK = false
			continue
		}
		pr, err := postings.Open(bytes.NewReader(idx), int64(len(idx)), bytes.NewReader(dat), int64(len(dat)))
		if err == nil {
			err = pr.Verify()
		}
		if err != nil {
			r.problem(postingsKey(p, err), "postings shard %d: %v", p.Shard, err)
			postingsOK = false
			continue
		}
		for e, err := range pr.All() {
			if err != nil {
				r.problem(postingsKey(p, err), "postings shard %d: %v", p.Shard, err)
				postingsOK = false
				break
			}
			if v.PostingsShards > 0 && postings.ShardOf(e.DomainID, uint32(v.PostingsShards)) != uint32(p.Shard) {
				r.problem(p.Idx, "domain key %d belongs to postings shard %d, not %d", e.DomainID, postings.ShardOf(e.DomainID, uint32(v.PostingsShards)), p.Shard)
			}
			spans, err := pr.Payload(e)
			if err != nil {
				r.problem(p.Dat, "domain %d dataset %d: %v", e.DomainID, e.DatasetID, err)
				continue
			}
			if spans.Rows() != e.URLCount {
				r.problem(p.Dat, "domain %d dataset %d: count %d, spans hold %d rows", e.DomainID, e.DatasetID, e.URLCount, spans.Rows())
			}
			entryURLs += e.URLCount
			if pairs != nil {
				if err := pairs.Add(e); err != nil {
					r.problem(p.Idx, "%v", err)
					pairs = nil
				}
			}
			if reg == nil {
				continue
			}
			for _, sp := range spans {
				f, ok := byID[sp.FileID]
				switch {
				case !ok:
					r.problem(p.Dat, "domain %d dataset %d: file id %d is not in %s", e.DomainID, e.DatasetID, sp.FileID, v.FilesTSV)
				case sp.RowGroup >= f.RowGroups:
					r.problem(p.Dat, "domain %d dataset %d: row group %d of %s, which has %d", e.DomainID, e.DatasetID, sp.RowGroup, f.Path, f.RowGroups)
				case f.DatasetID != e.DatasetID:
					r.problem(p.Dat, "domain %d dataset %d: points into %s of dataset %d", e.DomainID, e.DatasetID, f.Path, f.DatasetID)
				default:
					spanRows[sp.FileID] += uint64(sp.Rows)
				}
			}
		}
	}
	for id, n := range spanRows {
		if f := byID[id]; n > f.Rows {
			r.problem(f.Path, "postings point at %d of its rows, it has %d", n, f.Rows)
		}
	}
	if postingsOK && len(v.Postings) > 0 && int64(entryURLs) != v.URLs {
		r.problem(catalog.ManifestKey, "version %s: its postings count %d URLs in all, the manifest says %d", v.Version, entryURLs, v.URLs)
	}
	if postingsOK && pairs != nil {
		key, file := v.DatasetToDomainsRoar, reverse
		if file == nil { // a version with the older file only
			key, file = v.D2DRoar, older
		}
		want, err := transposed(func(w io.Writer) error { return pairs.Write(w, registry.IDs()) })
		if err != nil {
			r.problem(key, "the postings: %v", err)
			return
		}
		r.sameMembership(key, file, "the postings", want, registry)
	}
}

// postingsKey names the file of a postings shard a problem is in: the data
// file for a payload, else the index.
func postingsKey(p catalog.PostingsShard, err error) string {
	if strings.Contains(err.Error(), "payload") {
		return p.Dat
	}
	return p.Idx
}

// parquet reads one Parquet file whole with DuckDB (V4).
func (r *run) parquet(f files.File, kept []catalog.Column) {
	path, cleanup, err := r.localCopy(f.Path)
	if err != nil {
		r.problem(f.Path, "unreadable: %v", err)
		return
	}
	defer cleanup()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		r.problem(f.Path, "open DuckDB: %v", err)
		return
	}
	defer db.Close()
	lit := "'" + strings.ReplaceAll(path, "'", "''") + "'"
	var groups, rows int64
	if err := db.QueryRowContext(r.ctx, "SELECT count(DISTINCT row_group_id), coalesce(sum(row_group_num_rows) // count(DISTINCT path_in_schema), 0) FROM parquet_metadata("+lit+")").Scan(&groups, &rows); err != nil {
		r.problem(f.Path, "Parquet metadata: %v", firstLine(err))
		return
	}
	if uint64(groups) != uint64(f.RowGroups) || uint64(rows) != f.Rows {
		r.problem(f.Path, "%d row groups and %d rows, files.tsv says %d and %d", groups, rows, f.RowGroups, f.Rows)
	}
	// hash(t) reads every column of every row group
	var n int64
	if err := db.QueryRowContext(r.ctx, "SELECT count(hash(t)) FROM read_parquet("+lit+") t").Scan(&n); err != nil {
		r.problem(f.Path, "reading its rows: %v", firstLine(err))
		return
	}
	r.lakeRows(db, f.Path, lit, kept)
}

// lakeColumns are the lake's own columns, of every layout.
var lakeColumns = map[string]bool{"url": true, "raw": true, "raw_edit": true, "ts": true, "ts_seconds": true,
	"domain": true, "domain_offset": true, "domain_length": true, "url_id": true}

// keptPhysical is the Parquet physical type of each kept column type.
var keptPhysical = map[string]string{catalog.TypeInt32: "INT32", catalog.TypeInt64: "INT64", catalog.TypeTimestamp: "INT64",
	catalog.TypeDouble: "DOUBLE", catalog.TypeBool: "BOOLEAN", catalog.TypeString: "BYTE_ARRAY"}

// lakeRows checks a lake file's columns and the rules of a layout-4
// file's rows that its columns alone do not show (V4; docs/format/lake.md
// L5, L6, "Kept fields"): every column besides the lake's own is a kept
// field of its dataset, of that field's Parquet type; every raw_edit
// decodes against its url to a raw URL other than url; no row has both ts
// and ts_seconds. Files of older layouts have neither of the last two.
func (r *run) lakeRows(db *sql.DB, key, lit string, kept []catalog.Column) {
	cols := map[string]bool{}
	rows, err := db.QueryContext(r.ctx, "SELECT name, coalesce(type, '') FROM parquet_schema("+lit+") WHERE num_children IS NULL OR num_children = 0")
	if err != nil {
		r.problem(key, "Parquet schema: %v", firstLine(err))
		return
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			r.problem(key, "Parquet schema: %v", firstLine(err))
			return
		}
		cols[name] = true
		if lakeColumns[name] {
			continue
		}
		if i := catalog.ColumnIndex(kept, name); i < 0 {
			r.problem(key, "column %s is neither the lake's nor a kept field of its dataset in datasets.json", name)
		} else if want := keptPhysical[kept[i].Type]; typ != want {
			r.problem(key, "column %s is %s, datasets.json says %s (%s)", name, typ, kept[i].Type, want)
		}
	}
	rows.Close()
	if cols["ts"] && cols["ts_seconds"] {
		var both int64
		if err := db.QueryRowContext(r.ctx, "SELECT count(*) FROM read_parquet("+lit+") WHERE ts IS NOT NULL AND ts_seconds IS NOT NULL").Scan(&both); err != nil {
			r.problem(key, "reading ts: %v", firstLine(err))
		} else if both > 0 {
			r.problem(key, "%d rows have both ts and ts_seconds (L6)", both)
		}
	}
	if !cols["raw_edit"] {
		return
	}
	edits, err := db.QueryContext(r.ctx, "SELECT url, raw_edit FROM read_parquet("+lit+") WHERE raw_edit IS NOT NULL")
	if err != nil {
		r.problem(key, "reading raw_edit: %v", firstLine(err))
		return
	}
	defer edits.Close()
	var buf []byte
	bad := 0
	for edits.Next() {
		var url string
		var edit []byte
		if err := edits.Scan(&url, &edit); err != nil {
			r.problem(key, "reading raw_edit: %v", firstLine(err))
			return
		}
		buf, err = catalog.AppendRaw(buf[:0], url, edit)
		switch {
		case err != nil:
			if bad == 0 {
				r.problem(key, "the raw_edit of %s: %v", url, err)
			}
			bad++
		case string(buf) == url:
			if bad == 0 {
				r.problem(key, "the raw_edit of %s rebuilds the url itself (L5)", url)
			}
			bad++
		}
	}
	if err := edits.Err(); err != nil {
		r.problem(key, "reading raw_edit: %v", firstLine(err))
	}
	if bad > 1 {
		r.problem(key, "%d raw edits in all do not rebuild a raw URL", bad)
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// localCopy gives DuckDB a file path for key: the store's own file for a
// local store, else a temporary copy.
func (r *run) localCopy(key string) (string, func(), error) {
	if lp, ok := r.st.(catalog.LocalPather); ok {
		if p, err := lp.LocalPath(key); err == nil {
			return p, func() {}, nil
		}
	}
	b, _, err := store.ReadAll(r.ctx, r.st, key)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "dhsi-verify-*")
	if err != nil {
		return "", nil, err
	}
	p := filepath.Join(dir, "file.parquet")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return p, func() { os.RemoveAll(dir) }, nil
}

// domainRecords checks the shards (problems) and the inbox (warnings).
func (r *run) domainRecords() error {
	var keys []string
	if err := r.st.List(r.ctx, compiler.InboxPrefix, func(a store.Attrs) error {
		keys = append(keys, a.Key)
		return nil
	}); err != nil {
		return fmt.Errorf("list %s: %w", compiler.InboxPrefix, err)
	}
	if len(keys) == 0 {
		return nil
	}
	pkg, err := records.ReadPackage(r.ctx, r.st) // verify writes nothing
	if err != nil {
		r.problem(compiler.SchemaKey, "%v", err)
		return nil
	}
	sch, err := records.SchemaOf(pkg)
	if err != nil {
		r.problem(compiler.SchemaKey, "%v", err)
		return nil
	}
	layouts, err := records.LayoutsOf(pkg)
	if err != nil {
		r.problem(compiler.SchemaKey, "%v", err)
		return nil
	}
	layout := layouts.Current
	previous := 0 // shards of the previous width, during a resharding
	rule, err := compiler.NewRule(sch)
	if err != nil {
		r.problem(compiler.SchemaKey, "%v", err)
		return nil
	}
	for _, key := range keys {
		id, isShard := compiler.ShardOfKey(key)
		switch {
		case isShard:
			b := r.read(key, "domain-record shard")
			if b == nil {
				continue
			}
			own := shard.LayoutOfID(id) // the layout the shard's name says
			switch {
			case !shard.ValidID(id):
				r.problem(key, "not a shard id (1 to %d lower-case hex characters)", shard.MaxWidth)
			case layouts.Resharding() && len(id) == layouts.Previous.Width:
				previous++ // the mover has yet to move it (docs/format/resharding.md)
			case len(id) != layout.Width:
				r.problem(key, "a shard of width %d in a store of width %d with no resharding recorded: run dhsi reshard --width %d to move it", len(id), layout.Width, layout.Width)
			}
			t, err := compiler.ParseTable(b)
			if err != nil {
				r.problem(key, "%v", err)
				continue
			}
			checker, err := sch.NewRowChecker()
			if err == nil {
				_, err = checker.SetHeader(t.Header)
			}
			if err != nil {
				r.problem(key, "header: %v", err)
				continue
			}
			di := slices.Index(t.Header, compiler.DomainField)
			bad := 0
			var oldKeys []string // keys of earlier releases (compiler I8)
			for i, row := range t.Rows {
				if di >= 0 && row[di] != "" {
					if d, err := compiler.NormalizeDomain(row[di]); err != nil || d != row[di] {
						oldKeys = append(oldKeys, row[di])
					}
				}
				_, ferrs := checker.Check(row)
				var says []string
				for _, fe := range ferrs {
					var ce *tableschema.ConstraintError
					if errors.As(fe.Err, &ce) && (ce.Constraint == "unique" || ce.Constraint == "primaryKey") && di >= 0 && row[di] == "" {
						continue // records without a domain are carried, never merged (compiler.Merge)
					}
					says = append(says, fe.Error())
				}
				if di >= 0 && row[di] != "" && shard.ValidID(id) && own.Of(row[di]) != id {
					says = append(says, fmt.Sprintf("domain %q belongs to shard %s", row[di], own.Of(row[di])))
				}
				for _, s := range says {
					if bad++; bad <= 20 {
						r.problem(key, "record %d: %s", t.RecordNo(i), s)
					}
				}
			}
			if bad > 20 {
				r.problem(key, "%d more problems", bad-20)
			}
			if len(oldKeys) > 0 {
				r.rep.Warnings = append(r.rep.Warnings, Finding{key, fmt.Sprintf("%d records under keys that are not domain keys, as earlier releases wrote them (first: %q): dhsi migrate-keys moves them to their domain keys",
					len(oldKeys), oldKeys[0])})
			}
		case compiler.IsPendingKey(key): // inbox and batch objects
			b := r.read(key, "pending domain records")
			if len(b) == 0 {
				continue // unreadable (a problem already), or a tombstone
			}
			if _, problems, _ := rule.CheckPending(key, b); len(problems) > 0 {
				r.rep.Warnings = append(r.rep.Warnings, Finding{key, "pending records the record rule refuses (listed in domain_errors): " + compiler.JoinProblems(problems)})
			}
		}
	}
	if layouts.Resharding() {
		r.rep.Warnings = append(r.rep.Warnings, Finding{compiler.SchemaKey, fmt.Sprintf("a resharding from width %d to %d is in progress: %d shards of width %d remain (readers serve both; dhsi reshard --width %d finishes it)",
			layouts.Previous.Width, layout.Width, previous, layouts.Previous.Width, layout.Width)})
	}
	return nil
}
