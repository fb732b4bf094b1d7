package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/ingest"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/urlnorm"
)

// urlService ties the URL index to the server: the snapshot, the domain
// normalizer matching the snapshot's PSL mode, and the urls view.
type urlService struct {
	x     *catalog.URLIndex
	st    store.Store
	db    *sql.DB
	log   *slog.Logger
	mu    sync.Mutex
	norms map[bool]*urlnorm.Normalizer // by ICANN-only
}

func newURLService(ctx context.Context, st store.Store, db *sql.DB, o catalog.URLIndexOptions) (*urlService, error) {
	log := o.Log
	x, err := catalog.OpenURLIndexWith(ctx, st, o)
	if err != nil {
		return nil, fmt.Errorf("url index: %w", err)
	}
	s := &urlService{x: x, st: st, db: db, log: log, norms: map[bool]*urlnorm.Normalizer{}}
	if err := s.updateURLsView(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// domain normalizes a user's domain argument the way the current version's
// domains were computed.
func (s *urlService) domain(arg string) (string, error) {
	d, _, err := s.domainNote(arg)
	return d, err
}

// domainNote is domain with the note that explains a normalization.
func (s *urlService) domainNote(arg string) (string, string, error) {
	icann := s.x.Current().Version.PSLMode == "icann"
	s.mu.Lock()
	n := s.norms[icann]
	if n == nil {
		var err error
		if n, err = urlnorm.NewNormalizer(urlnorm.Config{ICANNOnly: icann}); err != nil {
			s.mu.Unlock()
			return "", "", err
		}
		s.norms[icann] = n
	}
	s.mu.Unlock()
	return n.QueryDomain(arg)
}

// refresh follows the manifest; a new version also rebuilds the urls view.
func (s *urlService) refresh(ctx context.Context) error {
	changed, err := s.x.Refresh(ctx)
	if err != nil || !changed {
		return err
	}
	return s.updateURLsView(ctx)
}

// updateURLsView points the urls view at exactly the current version's
// Parquet files (never at files an ingest has written but not published).
func (s *urlService) updateURLsView(ctx context.Context) error {
	snap := s.x.Current()
	lp, local := s.st.(catalog.LocalPather)
	var body string
	paths := snap.FilePaths()
	switch {
	case len(paths) == 0:
		body = "SELECT NULL::INTEGER AS dataset_id, NULL::VARCHAR AS domain_prefix, NULL::VARCHAR AS domain, NULL::UBIGINT AS url_id, NULL::VARCHAR AS url, NULL::VARCHAR AS raw, NULL::TIMESTAMP AS ts WHERE false"
	case !local:
		body = "SELECT * FROM (SELECT NULL::INTEGER AS dataset_id, NULL::VARCHAR AS domain_prefix, NULL::VARCHAR AS domain, NULL::UBIGINT AS url_id, NULL::VARCHAR AS url, NULL::VARCHAR AS raw, NULL::TIMESTAMP AS ts) WHERE error('the urls view scans the whole lake, which DuckDB can read only from a local store; on S3 use domain_urls(domain, dataset_id, offset, limit), or mirror urls/ locally') IS NULL"
	default:
		var quoted []string
		for _, p := range paths {
			fp, err := lp.LocalPath(p)
			if err != nil {
				return err
			}
			quoted = append(quoted, "'"+strings.ReplaceAll(fp, "'", "''")+"'")
		}
		src := "read_parquet([" + strings.Join(quoted, ", ") + "], hive_partitioning = true, union_by_name = true)"
		// Files store a row's domain as an offset into its URL
		// (ingest.LakeDomainSQL); a store of only older files, which
		// store the domain itself, has no domain_offset column to name,
		// and the view then fails to bind. (Asking DuckDB for the schema
		// first read every footer once more: 0.2 s at 1,000 files.)
		view := func(domain string) string {
			// url_id is derived (docs/format/lake.md): the url_id() function
			return "SELECT CAST(dataset_id AS INTEGER) AS dataset_id, domain_prefix, " + domain + " AS domain, url_id(coalesce(raw, url)) AS url_id, url, raw, ts FROM " + src
		}
		err := s.createURLsView(ctx, view(ingest.LakeDomainSQL))
		if err != nil && strings.Contains(err.Error(), "domain_offset") {
			err = s.createURLsView(ctx, view("domain"))
		}
		return err
	}
	return s.createURLsView(ctx, body)
}

func (s *urlService) createURLsView(ctx context.Context, body string) error {
	for _, q := range []string{
		"CREATE OR REPLACE VIEW public.urls AS " + body,
		"COMMENT ON VIEW public.urls IS 'dhsi: every URL of the current index version (the Parquet lake)'",
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create view urls: %w", err)
		}
	}
	return nil
}
