// Package httpapi serves the URL index as JSON over HTTP (design 001 §4.2):
//
//	GET /v1/domain/{domain}
//	GET /v1/domain/{domain}/datasets/{dataset_id}/urls?offset=0&limit=1000[&fields=false]
//	GET /cdx?url=…, GET /{dataset}/cdx?url=…, GET /cdx/search/cdx?url=…
//	               (the CDX server API of pywb and of the Wayback CDX server: cdx.go)
//	GET /healthz   (alive; no credentials)
//	GET /readyz    (index loaded and store reachable, else 503; no credentials)
//
// Every /v1 response is JSON, including errors ({"error": "..."}, with 400 for a
// malformed request and 404 for what the index does not hold). Each request
// pins one index snapshot, so a version flip never mixes versions.
//
// With users configured every request needs HTTP Basic credentials (401
// without them), and runs as that user: a dataset its grants hide answers
// exactly as one that does not exist (access A3).
package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/catalog"
	"github.com/dhsi/dhsi/internal/redact"
	"github.com/dhsi/dhsi/urlnorm"
)

// Config wires the API to the index.
type Config struct {
	Snapshot func() *catalog.Snapshot
	// Domain normalizes a user's domain argument; note explains a change.
	Domain func(s string) (domain, note string, err error)
	Log    *slog.Logger
	// Authenticate checks HTTP Basic credentials; nil means no users are
	// configured and every request runs as an admin (loopback only).
	Authenticate func(user, password string) (access.Principal, bool)
	// Ready reports whether the server can answer: its index loaded, its
	// store reachable (GET /readyz); nil means always ready.
	Ready func(ctx context.Context) error
	// Visible returns the dataset-id test for the principal ctx carries
	// (nil test: every dataset); nil means no grants are enforced.
	Visible func(ctx context.Context, snap *catalog.Snapshot) func(id uint32) bool
	// URL parses the url argument of a CDX query as ingest parses URLs (the
	// snapshot's PSL mode); nil: the CDX endpoints answer 400.
	URL func(raw string) (urlnorm.URL, error)
	// CDXMaxLines bounds the lines a CDX query with a negative limit (the
	// last N) sorts in memory (0: DefaultCDXMaxLines).
	CDXMaxLines int
}

// DefaultLimit is the page size when limit is not given.
const DefaultLimit = 1000

// New returns the API's handler.
func New(cfg Config) http.Handler {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	a := &api{cfg: cfg}
	mux.HandleFunc("GET /v1/domain/{domain}", a.domain)
	mux.HandleFunc("GET /v1/domain/{domain}/datasets/{id}/urls", a.urls)
	mux.HandleFunc("GET /cdx", a.cdxHandler(flavourPywb))
	mux.HandleFunc("GET /{dataset}/cdx", a.cdxDataset)
	mux.HandleFunc("GET /cdx/search/cdx", a.cdxHandler(flavourIA))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: use GET /v1/domain/{domain}, GET /v1/domain/{domain}/datasets/{dataset_id}/urls?offset=&limit=, or the CDX API: GET /cdx?url=, /{dataset}/cdx?url=, /cdx/search/cdx?url=")
	})
	// health checks answer without credentials (load balancers, Kubernetes
	// probes) and say nothing about the index's content
	outer := http.NewServeMux()
	outer.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	outer.HandleFunc("GET /readyz", a.ready)
	outer.Handle("/", a.authenticated(mux))
	return outer
}

// ready answers 200 when the index is loaded and the store answers, 503
// with the reason otherwise.
func (a *api) ready(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := a.cfg.Ready(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": redact.Error(err)})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "version": a.cfg.Snapshot().Version.Version})
}

// authenticated runs every request as its user (access A1).
func (a *api) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := access.Principal{User: "", Role: access.Admin} // no users: trust, loopback only
		if a.cfg.Authenticate != nil {
			user, pw, ok := r.BasicAuth()
			if ok {
				p, ok = a.cfg.Authenticate(user, pw)
			}
			if !ok {
				w.Header().Set("WWW-Authenticate", `Basic realm="dhsi", charset="UTF-8"`)
				writeError(w, http.StatusUnauthorized, "authentication required: send HTTP Basic credentials of a DHSI user")
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(access.WithPrincipal(r.Context(), p)))
	})
}

// visible is the dataset-id test of the request's principal (nil: all).
func (a *api) visible(r *http.Request, snap *catalog.Snapshot) func(uint32) bool {
	if a.cfg.Visible == nil {
		return nil
	}
	return a.cfg.Visible(r.Context(), snap)
}

type api struct{ cfg Config }

// DomainResponse is GET /v1/domain/{d}.
type DomainResponse struct {
	Domain string `json:"domain"`
	// DomainID is the domain's position in the index's dictionary. It is
	// left out for a caller that some grant hides a dataset from: ids are
	// dense and in name order, so the gaps would count the domains only
	// hidden datasets hold, and place them (A3).
	DomainID *uint64        `json:"domain_id,omitempty"`
	Note     string         `json:"note,omitempty"`
	Version  string         `json:"version"`
	Datasets []DatasetEntry `json:"datasets"`
}

// DatasetEntry is one dataset holding the domain, with its exact URL count.
type DatasetEntry struct {
	DatasetID uint32 `json:"dataset_id"`
	Dataset   string `json:"dataset"`
	URLCount  uint64 `json:"url_count"`
}

// URLsResponse is GET /v1/domain/{d}/datasets/{id}/urls.
type URLsResponse struct {
	Domain     string    `json:"domain"`
	DatasetID  uint32    `json:"dataset_id"`
	Version    string    `json:"version"`
	Total      uint64    `json:"total"`
	Offset     int64     `json:"offset"`
	Items      []URLItem `json:"items"`
	NextOffset *int64    `json:"next_offset"` // null on the last page
}

// URLItem is one URL.
type URLItem struct {
	URLID string     `json:"url_id"` // 0x-prefixed hex of the xxh3-64 of the raw URL
	URL   string     `json:"url"`
	TS    *time.Time `json:"ts,omitempty"`
	// Fields are what the input said about the URL (the dataset's kept
	// columns: docs/format/lake.md, "Kept fields"), in the dataset's
	// column order, NULL fields left out; absent when it has none, or
	// with ?fields=false.
	Fields json.RawMessage `json:"fields,omitempty"`
}

func (a *api) domain(w http.ResponseWriter, r *http.Request) {
	d, note, err := a.cfg.Domain(r.PathValue("domain"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	snap := a.cfg.Snapshot()
	id, ok, err := snap.DomainID(d)
	if err != nil {
		a.internal(w, r, err)
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s is not in index version %q", d, snap.Version.Version))
		return
	}
	ds, err := snap.DomainDatasets(d)
	if err != nil {
		a.internal(w, r, err)
		return
	}
	visible := a.visible(r, snap)
	resp := DomainResponse{Domain: d, Note: note, Version: snap.Version.Version, Datasets: []DatasetEntry{}}
	if visible == nil {
		resp.DomainID = &id
	}
	for _, x := range ds {
		if visible != nil && !visible(x.DatasetID) {
			continue // A3
		}
		resp.Datasets = append(resp.Datasets, DatasetEntry{DatasetID: x.DatasetID, Dataset: x.Dataset, URLCount: x.URLCount})
	}
	if visible != nil && len(resp.Datasets) == 0 {
		// held only by hidden datasets: as if the index did not hold it
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s is not in index version %q", d, snap.Version.Version))
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (a *api) urls(w http.ResponseWriter, r *http.Request) {
	d, _, err := a.cfg.Domain(r.PathValue("domain"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("dataset id %q: want a non-negative integer", r.PathValue("id")))
		return
	}
	q := r.URL.Query()
	offset, err := intParam(q.Get("offset"), 0)
	if err != nil || offset < 0 {
		writeError(w, http.StatusBadRequest, "offset: want a non-negative integer")
		return
	}
	limit, err := intParam(q.Get("limit"), DefaultLimit)
	if err != nil || limit < 1 || limit > catalog.MaxPageSize {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("limit: want an integer from 1 to %d", catalog.MaxPageSize))
		return
	}
	snap := a.cfg.Snapshot()
	visible := a.visible(r, snap)
	if _, ok := snap.Datasets.ByID(uint32(id)); !ok || (visible != nil && !visible(uint32(id))) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("dataset %d is not in index version %q", id, snap.Version.Version))
		return
	}
	withFields := true
	if v := q.Get("fields"); v != "" {
		if withFields, err = strconv.ParseBool(v); err != nil {
			writeError(w, http.StatusBadRequest, "fields: want true or false")
			return
		}
	}
	var rows []catalog.FieldRow
	var total uint64
	var cols []catalog.Column
	if ds, _ := snap.Datasets.ByID(uint32(id)); withFields && len(ds.Columns) > 0 {
		rows, total, cols, err = snap.DomainURLFields(r.Context(), d, uint32(id), offset, limit)
	} else {
		var plain []catalog.URLRow
		plain, total, err = snap.DomainURLs(r.Context(), d, uint32(id), offset, limit)
		rows = make([]catalog.FieldRow, len(plain))
		for i := range plain {
			rows[i].URLRow = plain[i]
		}
	}
	if err != nil {
		a.internal(w, r, err)
		return
	}
	resp := URLsResponse{Domain: d, DatasetID: uint32(id), Version: snap.Version.Version, Total: total, Offset: offset, Items: make([]URLItem, 0, len(rows))}
	for _, row := range rows {
		it := URLItem{URLID: fmt.Sprintf("0x%016x", row.URLID), URL: row.URL}
		if row.HasTS {
			t := row.TS
			it.TS = &t
		}
		if js, ok := catalog.FieldsJSON(cols, row.Fields); ok {
			it.Fields = json.RawMessage(js)
		}
		resp.Items = append(resp.Items, it)
	}
	if next := offset + int64(len(rows)); uint64(next) < total {
		resp.NextOffset = &next
	}
	writeJSON(w, http.StatusOK, resp)
}

func intParam(s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

// internal answers a failure of the server, not of the request. Only an
// admin is told its cause: it may name where the server keeps its files
// (a lake file it could not read), which a stranger must not learn
// (docs/security.md, "Host paths"); the log keeps it for everyone.
func (a *api) internal(w http.ResponseWriter, r *http.Request, err error) {
	a.cfg.Log.Error("http api", "err", redact.Error(err)) // 001 §8
	writeError(w, http.StatusInternalServerError, internalCause(r, err))
}

// internalCause is what a request's user is told of a failure of the
// server: its cause for an admin, that the log has it for anyone else.
func internalCause(r *http.Request, err error) string {
	if access.FromContext(r.Context()).Role == access.Admin {
		return "internal error: " + err.Error()
	}
	return "internal error: the server's log has its cause"
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
