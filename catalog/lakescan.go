package catalog

import (
	"context"
	"fmt"
	"sort"
	"time"

	pqfile "github.com/apache/arrow-go/v18/parquet/file"
	"github.com/zeebo/xxh3"

	"github.com/dhsi/dhsi/index/files"
)

// The lake scan reads every row of lake files, in batches of consecutive
// rows of one row group, with only the columns asked for: the urls view on
// a store DuckDB cannot read (S3: no httpfs), where the server reads the
// files through the bounded block cache instead (issue 17 §4). Each batch
// is decoded under the file's reader and released before it returns, so a
// caller that stops early (LIMIT) holds nothing but the batch itself.

// LakeFile is one Parquet file of the lake.
type LakeFile struct{ f files.File }

// DatasetID is the dataset_id partition of the file.
func (f LakeFile) DatasetID() uint32 { return f.f.DatasetID }

// DomainPrefix is its domain_prefix partition, as the urls view reports it.
func (f LakeFile) DomainPrefix() string { return f.f.DomainPrefix }

// Path is its store key.
func (f LakeFile) Path() string { return f.f.Path }

// Rows is how many rows files.tsv says it holds.
func (f LakeFile) Rows() int64 { return int64(f.f.Rows) }

// LakeFiles lists the snapshot's lake files of the datasets keep accepts
// (nil: every file), by path.
func (s *Snapshot) LakeFiles(keep func(datasetID uint32) bool) []LakeFile {
	out := make([]LakeFile, 0, len(s.files))
	for _, f := range s.files {
		if keep == nil || keep(f.DatasetID) {
			out = append(out, LakeFile{f})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].f.Path < out[j].f.Path })
	return out
}

// LakeRowGroups returns the number of rows of each row group of f, from
// its footer (read once per open reader).
func (s *Snapshot) LakeRowGroups(ctx context.Context, f LakeFile) ([]int64, error) {
	cr, err := s.x.reader(ctx, f.f.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.f.Path, err)
	}
	cr.mu.RLock()
	defer cr.mu.RUnlock()
	md := cr.r.MetaData()
	out := make([]int64, md.NumRowGroups())
	for i := range out {
		out[i] = md.RowGroup(i).NumRows()
	}
	return out, nil
}

// LakeColumns are the columns of the urls view a lake scan decodes; the
// others are left empty in the batch.
type LakeColumns struct {
	Domain, URL, Raw, URLID, TS bool
	// Fields are the kept columns to read, with the types of the file's
	// dataset (a column the file lacks reads as NULL)
	Fields []Column
}

// LakeBatch is count consecutive rows of one row group of a lake file:
// per column asked for (LakeColumns), a value per row.
type LakeBatch struct {
	Rows     int
	Domain   []string
	URL      []string
	Raw      []string // valid where RawValid: the raw URL where it differs from url
	RawValid []bool
	URLID    []uint64 // url_id(coalesce(raw, url)), as the view computes it
	TS       []time.Time
	TSValid  []bool
	Fields   [][]any // per row, a value per LakeColumns.Fields (nil: NULL)
}

// ReadLakeRows decodes rows [first, first+count) of row group rg of f
// (count <= 0: none), with the urls view's rules (docs/format/lake.md):
// domain = coalesce(domain, substring(url, domain_offset + 1,
// domain_length)); raw = coalesce(raw, lake_raw(url, raw_edit)); url_id =
// url_id(coalesce(raw, url)); ts = coalesce(ts, ts_seconds as a
// timestamp). Remote files are read by byte range through the block cache.
func (s *Snapshot) ReadLakeRows(ctx context.Context, f LakeFile, rg int, first, count int64, want LakeColumns) (*LakeBatch, error) {
	cr, err := s.x.reader(ctx, f.f.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.f.Path, err)
	}
	cr.mu.RLock()
	defer cr.mu.RUnlock()
	b, err := readLakeRows(cr.r, rg, first, count, want)
	if err != nil {
		return nil, fmt.Errorf("%s row group %d: %w", f.f.Path, rg, err)
	}
	return b, nil
}

func readLakeRows(r *pqfile.Reader, rg int, first, count int64, want LakeColumns) (*LakeBatch, error) {
	if rg < 0 || rg >= r.NumRowGroups() {
		return nil, fmt.Errorf("row group %d out of range (file has %d)", rg, r.NumRowGroups())
	}
	g := r.RowGroup(rg)
	if first < 0 || first+count > g.NumRows() {
		return nil, fmt.Errorf("rows %d+%d past the group's %d", first, count, g.NumRows())
	}
	b := &LakeBatch{Rows: int(max(count, 0))}
	if count <= 0 {
		return b, nil
	}
	schema := r.MetaData().Schema
	col := func(name string) int { return schema.ColumnIndexByName(name) }
	needURL := want.URL || want.Domain || want.Raw || want.URLID
	needRaw := want.Raw || want.URLID
	var urls []string
	var err error
	if needURL {
		if urls, _, err = readStrings(g, col("url"), first, count); err != nil {
			return nil, fmt.Errorf("url column: %w", err)
		}
		if want.URL {
			b.URL = urls
		}
	}
	if needRaw {
		// edits of url (layout 4, L5), or raw URLs stored whole (older files)
		rawCol, edited := col("raw_edit"), true
		if rawCol < 0 {
			rawCol, edited = col("raw"), false
		}
		raws, valid, err := readStrings(g, withValues(g, rawCol), first, count)
		if err != nil {
			return nil, fmt.Errorf("raw column: %w", err)
		}
		if edited {
			if err := applyRawEdits(urls, raws, valid); err != nil {
				return nil, fmt.Errorf("raw_edit column: %w", err)
			}
		}
		if want.Raw {
			b.Raw, b.RawValid = raws, valid
		}
		if want.URLID {
			b.URLID = make([]uint64, count)
			for i := range b.URLID {
				if valid[i] {
					b.URLID[i] = xxh3.HashString(raws[i])
				} else {
					b.URLID[i] = xxh3.HashString(urls[i])
				}
			}
		}
	}
	if want.Domain {
		// the stored domain (every row of files before layout 3; else
		// only rows whose URL cannot give it), or bytes of url (L4)
		doms, domValid, err := readStrings(g, withValues(g, col("domain")), first, count)
		if err != nil {
			return nil, fmt.Errorf("domain column: %w", err)
		}
		offs, offValid, err := readInt32s(g, withValues(g, col("domain_offset")), first, count)
		if err != nil {
			return nil, fmt.Errorf("domain_offset column: %w", err)
		}
		lens, lenValid, err := readInt32s(g, withValues(g, col("domain_length")), first, count)
		if err != nil {
			return nil, fmt.Errorf("domain_length column: %w", err)
		}
		for i := range doms {
			if domValid[i] || !offValid[i] || !lenValid[i] {
				continue
			}
			u, o, n := urls[i], int(offs[i]), int(lens[i])
			if o < 0 || n < 0 || o+n > len(u) {
				return nil, fmt.Errorf("row %d: domain at %d+%d of a URL of %d bytes", first+int64(i), o, n, len(u))
			}
			doms[i] = u[o : o+n]
		}
		b.Domain = doms
	}
	if want.TS {
		tss, tsValid, err := readInt64s(g, withValues(g, col("ts")), first, count)
		if err != nil {
			return nil, fmt.Errorf("ts column: %w", err)
		}
		secs, secValid, err := readInt64s(g, withValues(g, col("ts_seconds")), first, count)
		if err != nil {
			return nil, fmt.Errorf("ts_seconds column: %w", err)
		}
		b.TS, b.TSValid = make([]time.Time, count), make([]bool, count)
		for i := range b.TS {
			switch {
			case tsValid[i]:
				b.TS[i], b.TSValid[i] = time.UnixMicro(tss[i]).UTC(), true
			case secValid[i]:
				b.TS[i], b.TSValid[i] = time.Unix(secs[i], 0).UTC(), true
			}
		}
	}
	if len(want.Fields) > 0 {
		if b.Fields, err = readFields(g, col, want.Fields, first, count); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// readInt32s decodes rows [first, first+count) of an INT32 column.
func readInt32s(g *pqfile.RowGroupReader, c int, first, count int64) ([]int32, []bool, error) {
	vals, valid, release, err := readColumn[int32, *pqfile.Int32ColumnChunkReader](g, c, first, count)
	if err == nil {
		release() // the values are copies
	}
	return vals, valid, err
}
