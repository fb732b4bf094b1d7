package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dhsi/dhsi/index/files"
	"github.com/dhsi/dhsi/store"
)

// GCResult reports one garbage collection.
type GCResult struct {
	KeptVersions    []string
	DroppedVersions []string
	Deleted         int   // objects deleted
	DeletedBytes    int64 // their size
	Young           int   // unreferenced but younger than the grace period: kept
}

// GC trims the manifest to the newest keep versions, then deletes every
// object under index/, urls/ and ingest/ that no kept version references.
//
// Readers and writers are protected by time, not by locks: an object is
// deleted only if it is older than grace. A server re-reads the manifest
// every few seconds and pins a version for one query, and an ingest in
// flight writes its files moments before publishing them, so with a grace
// well above both (default one hour) nothing in use disappears.
func GC(ctx context.Context, st store.Store, keep int, grace time.Duration, dryRun bool) (GCResult, error) {
	var res GCResult
	if keep < 1 {
		return res, fmt.Errorf("keep must be at least 1 (the current version)")
	}
	m, err := ReadManifest(ctx, st)
	if err != nil {
		return res, err
	}
	if len(m.Versions) > keep {
		res.DroppedVersions = m.VersionNames()[:len(m.Versions)-keep]
		trimmed := *m
		trimmed.Versions = append([]Version(nil), m.Versions[len(m.Versions)-keep:]...)
		if !dryRun {
			if err := rewriteManifest(ctx, st, m, &trimmed); err != nil {
				return res, err
			}
		}
		m = &trimmed
	}
	res.KeptVersions = m.VersionNames()
	referenced, err := m.Referenced(func(v Version) ([]string, error) { return versionObjects(ctx, st, v) })
	if err != nil {
		return res, err
	}
	cutoff := time.Now().Add(-grace)
	for _, prefix := range []string{"index/", "urls/", "ingest/"} {
		var doomed []store.Attrs
		err := st.List(ctx, prefix, func(a store.Attrs) error {
			if referenced[a.Key] || ingestReportKept(a.Key, referenced) {
				return nil
			}
			if a.LastModified.After(cutoff) {
				res.Young++
				return nil
			}
			doomed = append(doomed, a)
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, a := range doomed {
			if !dryRun {
				if err := st.Delete(ctx, a.Key, store.Cond{IfMatch: a.ETag}); err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPreconditionFailed) {
					return res, fmt.Errorf("delete %s: %w", a.Key, err)
				}
			}
			res.Deleted++
			res.DeletedBytes += a.Size
		}
	}
	return res, nil
}

// ingestReportKept keeps ingest/{version}/... reports of kept versions.
func ingestReportKept(key string, referenced map[string]bool) bool {
	rest, ok := strings.CutPrefix(key, "ingest/")
	if !ok {
		return false
	}
	version, _, _ := strings.Cut(rest, "/")
	return referenced["version:"+version]
}

func rewriteManifest(ctx context.Context, st store.Store, base, next *Manifest) error {
	body, err := jsonIndent(next)
	if err != nil {
		return err
	}
	_, err = st.Put(ctx, ManifestKey, bytes.NewReader(body), store.Cond{IfMatch: base.etag})
	if errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("%w: the manifest changed during gc; run it again", ErrConflict)
	}
	return err
}

// versionObjects lists every object a version references.
func versionObjects(ctx context.Context, st store.Store, v Version) ([]string, error) {
	keys := []string{"version:" + v.Version, v.DomainsDict, v.FilesTSV, v.DatasetsJSON,
		"index/" + v.Version + "/url_id_collisions.tsv"}
	for _, k := range []string{v.SourcesJSON, v.D2DRoar, v.DatasetToDomainsRoar} {
		if k != "" { // each absent in some versions (manifest.go)
			keys = append(keys, k)
		}
	}
	for _, p := range v.Postings {
		keys = append(keys, p.Idx, p.Dat)
	}
	body, _, err := store.ReadAll(ctx, st, v.FilesTSV)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", v.FilesTSV, err)
	}
	reg, err := files.Read(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, f := range reg.All() {
		keys = append(keys, f.Path)
	}
	return keys, nil
}
