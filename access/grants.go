package access

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sort"
	"sync/atomic"
	"time"

	"github.com/dhsi/dhsi/store"
)

// Object keys of the grants (docs/format/grants.md).
const (
	GrantsKey       = "access/grants.json"
	grantsHistory   = "access/grants/"
	GrantsFormat    = "dhsi-grants"
	GrantsFormatVer = 1
)

// Grant lets a grantee (a user name or a role name) see a dataset.
type Grant struct {
	Dataset string    `json:"dataset"`
	Grantee string    `json:"grantee"`
	By      string    `json:"by,omitempty"` // the admin who granted it
	At      time.Time `json:"at"`
}

// grantsDoc is the JSON object at GrantsKey and at each history key.
type grantsDoc struct {
	Format        string    `json:"format"`
	FormatVersion int       `json:"format_version"`
	Version       int64     `json:"version"` // A4: only grows
	Updated       time.Time `json:"updated"`
	Grants        []Grant   `json:"grants"` // sorted by dataset, then grantee
}

// Grants is one immutable version of the grants.
type Grants struct {
	version   int64
	list      []Grant
	byDataset map[string]map[string]bool // dataset → grantees
}

// EmptyGrants is the version before any grant: every dataset is public.
var EmptyGrants = newGrants(0, nil)

func newGrants(version int64, list []Grant) *Grants {
	g := &Grants{version: version, list: list, byDataset: map[string]map[string]bool{}}
	for _, gr := range list {
		m := g.byDataset[gr.Dataset]
		if m == nil {
			m = map[string]bool{}
			g.byDataset[gr.Dataset] = m
		}
		m[gr.Grantee] = true
	}
	return g
}

// Version is the grants' version number (0 before any grant).
func (g *Grants) Version() int64 { return g.version }

// List returns every grant, sorted by dataset and grantee.
func (g *Grants) List() []Grant { return append([]Grant(nil), g.list...) }

// Restricts reports whether any dataset has grants: when none does, every
// principal sees everything and callers skip the per-dataset check (the
// hot path pays one branch).
func (g *Grants) Restricts() bool { return len(g.byDataset) > 0 }

// Restricted reports whether the dataset has grants, so that not every
// principal sees it.
func (g *Grants) Restricted(dataset string) bool {
	_, ok := g.byDataset[dataset]
	return ok
}

// Visible applies A2: may p see the dataset named dataset?
func (g *Grants) Visible(p Principal, dataset string) bool {
	if p.Role == Admin {
		return true
	}
	m, restricted := g.byDataset[dataset]
	if !restricted {
		return true
	}
	return (p.User != "" && m[p.User]) || m[p.Role.String()]
}

// Filter returns the visibility test for p. Its All reports that p sees
// every dataset (no grants, or an admin), so callers skip the per-dataset
// lookups; it is a value, so the hot path allocates nothing.
func (g *Grants) Filter(p Principal) Visibility {
	return Visibility{g: g, p: p, all: !g.Restricts() || p.Role == Admin}
}

// Visibility is one principal's view of one version of the grants.
type Visibility struct {
	g   *Grants
	p   Principal
	all bool
}

// All reports whether every dataset is visible.
func (v Visibility) All() bool { return v.all }

// Sees applies A2 to one dataset name.
func (v Visibility) Sees(dataset string) bool { return v.all || v.g.Visible(v.p, dataset) }

var granteeName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,127}$`)

// ValidateGrantee says what a grantee may be: a user or role name.
func ValidateGrantee(s string) error {
	if !granteeName.MatchString(s) {
		return fmt.Errorf("grantee %q: want a user or role name (letters, digits, '_', '.', '@', '-')", s)
	}
	return nil
}

// Book holds the current grants of a store and changes them.
type Book struct {
	st  store.Store
	log *slog.Logger
	cur atomic.Pointer[book]
	// Validate checks a grant's dataset name before it is written (nil: any
	// name the registry would accept is the caller's business).
	ValidateDataset func(name string) error
	// OnChange runs after the grants in force changed, by this server's
	// Grant or Revoke or by a Refresh that found another server's (the
	// server re-creates the views that bind grants into plans).
	OnChange func()
}

func (b *Book) changed() {
	if b.OnChange != nil {
		b.OnChange()
	}
}

type book struct {
	grants *Grants
	etag   store.ETag // of GrantsKey, "" when it does not exist
}

// OpenBook reads the store's grants.
func OpenBook(ctx context.Context, st store.Store, log *slog.Logger) (*Book, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Book{st: st, log: log}
	b.cur.Store(&book{grants: EmptyGrants})
	if _, err := b.Refresh(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// Current returns the grants the server enforces now.
func (b *Book) Current() *Grants { return b.cur.Load().grants }

// Refresh re-reads the grants object; it reports whether they changed. A
// HEAD first keeps the common case (nothing changed) to one small request.
func (b *Book) Refresh(ctx context.Context) (bool, error) {
	cur := b.cur.Load()
	a, err := b.st.Head(ctx, GrantsKey)
	if errors.Is(err, store.ErrNotFound) {
		if cur.etag == "" {
			return false, nil
		}
		// grants are never deleted by DHSI; treat it as tampering and keep
		// enforcing what we had rather than opening every dataset
		return false, fmt.Errorf("%s disappeared from the store; keeping grants version %d", GrantsKey, cur.grants.version)
	}
	if err != nil {
		return false, fmt.Errorf("read grants: %w", err)
	}
	if a.ETag == cur.etag {
		return false, nil
	}
	g, etag, err := b.read(ctx)
	if err != nil {
		return false, err
	}
	if g.version < cur.grants.version {
		return false, fmt.Errorf("%s went back from version %d to %d; keeping %d", GrantsKey, cur.grants.version, g.version, cur.grants.version)
	}
	b.cur.Store(&book{grants: g, etag: etag})
	if g.version != cur.grants.version {
		b.log.Info("grants loaded", "version", g.version, "grants", len(g.list))
		b.changed()
	}
	return true, nil
}

func (b *Book) read(ctx context.Context) (*Grants, store.ETag, error) {
	rc, a, err := b.st.Get(ctx, GrantsKey)
	if errors.Is(err, store.ErrNotFound) {
		return EmptyGrants, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read grants: %w", err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, 64<<20))
	if err != nil {
		return nil, "", fmt.Errorf("read grants: %w", err)
	}
	g, err := ParseGrants(raw)
	if err != nil {
		return nil, "", err
	}
	return g, a.ETag, nil
}

// ParseGrants decodes and validates a grants object.
func ParseGrants(raw []byte) (*Grants, error) {
	var d grantsDoc
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w", GrantsKey, err)
	}
	if d.Format != GrantsFormat || d.FormatVersion != GrantsFormatVer {
		return nil, fmt.Errorf("%s: format %q version %d is not supported (want %q %d)", GrantsKey, d.Format, d.FormatVersion, GrantsFormat, GrantsFormatVer)
	}
	if d.Version < 1 {
		return nil, fmt.Errorf("%s: version %d: want 1 or more", GrantsKey, d.Version)
	}
	for i, g := range d.Grants {
		if g.Dataset == "" {
			return nil, fmt.Errorf("%s: grants[%d]: empty dataset", GrantsKey, i)
		}
		if err := ValidateGrantee(g.Grantee); err != nil {
			return nil, fmt.Errorf("%s: grants[%d]: %w", GrantsKey, i, err)
		}
	}
	return newGrants(d.Version, d.Grants), nil
}

// Change is the outcome of Grant or Revoke.
type Change struct {
	Version int64 // the grants' version after the call
	Changed bool  // false: the grant already existed (Grant) or did not (Revoke)
}

// Grant lets grantee see dataset. Only admins may (the caller's principal
// comes from ctx); granting what is already granted changes nothing.
func (b *Book) Grant(ctx context.Context, dataset, grantee string) (Change, error) {
	if err := Require(ctx, Admin, "grant datasets"); err != nil {
		return Change{}, err
	}
	if err := b.validate(dataset, grantee); err != nil {
		return Change{}, err
	}
	by := FromContext(ctx).User
	return b.update(ctx, func(list []Grant) ([]Grant, bool) {
		for _, g := range list {
			if g.Dataset == dataset && g.Grantee == grantee {
				return list, false
			}
		}
		return append(list, Grant{Dataset: dataset, Grantee: grantee, By: by, At: time.Now().UTC()}), true
	})
}

// Revoke takes grantee's grant on dataset away. When a dataset's last grant
// goes, the dataset is visible to everyone again (A2).
func (b *Book) Revoke(ctx context.Context, dataset, grantee string) (Change, error) {
	if err := Require(ctx, Admin, "revoke datasets"); err != nil {
		return Change{}, err
	}
	if err := b.validate(dataset, grantee); err != nil {
		return Change{}, err
	}
	return b.update(ctx, func(list []Grant) ([]Grant, bool) {
		out := list[:0:0]
		for _, g := range list {
			if !(g.Dataset == dataset && g.Grantee == grantee) {
				out = append(out, g)
			}
		}
		return out, len(out) != len(list)
	})
}

func (b *Book) validate(dataset, grantee string) error {
	if b.ValidateDataset != nil {
		if err := b.ValidateDataset(dataset); err != nil {
			return err
		}
	} else if dataset == "" {
		return errors.New("empty dataset name")
	}
	return ValidateGrantee(grantee)
}

// update applies fn to the latest grants and publishes the result (A4),
// retrying when another admin published first.
func (b *Book) update(ctx context.Context, fn func([]Grant) ([]Grant, bool)) (Change, error) {
	for attempt := 0; ; attempt++ {
		if attempt == 50 {
			return Change{}, errors.New("grants: gave up after 50 concurrent updates")
		}
		g, etag, err := b.read(ctx)
		if err != nil {
			return Change{}, err
		}
		list, changed := fn(g.List())
		if !changed {
			b.cur.Store(&book{grants: g, etag: etag})
			return Change{Version: g.version}, nil
		}
		sort.Slice(list, func(i, j int) bool {
			if list[i].Dataset != list[j].Dataset {
				return list[i].Dataset < list[j].Dataset
			}
			return list[i].Grantee < list[j].Grantee
		})
		doc := grantsDoc{Format: GrantsFormat, FormatVersion: GrantsFormatVer, Version: g.version + 1, Updated: time.Now().UTC(), Grants: list}
		if doc.Grants == nil {
			doc.Grants = []Grant{}
		}
		raw, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return Change{}, err
		}
		raw = append(raw, '\n')
		// the version's immutable copy first, under a name of its own (a
		// writer that loses the flip below, or dies before it, leaves a copy
		// nobody points to, which is harmless); the flip decides the order
		hist := fmt.Sprintf("%s%012d-%s.json", grantsHistory, doc.Version, randomSuffix())
		if _, err := b.st.Put(ctx, hist, bytes.NewReader(raw), store.Cond{IfNoneMatch: true}); err != nil {
			return Change{}, fmt.Errorf("grants: write %s: %w", hist, err)
		}
		cond := store.Cond{IfMatch: etag}
		if etag == "" {
			cond = store.Cond{IfNoneMatch: true}
		}
		a, err := b.st.Put(ctx, GrantsKey, bytes.NewReader(raw), cond)
		if errors.Is(err, store.ErrPreconditionFailed) {
			continue
		}
		if err != nil {
			return Change{}, fmt.Errorf("grants: publish version %d: %w", doc.Version, err)
		}
		b.cur.Store(&book{grants: newGrants(doc.Version, list), etag: a.ETag})
		b.log.Info("grants published", "version", doc.Version, "grants", len(list))
		b.changed()
		return Change{Version: doc.Version, Changed: true}, nil
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
