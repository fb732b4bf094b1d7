package catalog

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dhsi/dhsi/internal/s3test"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

func stores(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"localfs": func(t *testing.T) store.Store {
			st, err := localfs.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"s3": func(t *testing.T) store.Store {
			st, _ := s3test.Start(t).NewStore(t)
			return st
		},
	}
}

func TestPublish(t *testing.T) {
	ctx := context.Background()
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("the first publish creates the manifest and names the current version", func(t *testing.T) {
				st := newStore(t)
				m, err := ReadManifest(ctx, st)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := m.Current(); ok {
					t.Fatal("an empty store has a current version")
				}
				v := Version{Version: NewVersionName(time.Now(), 1), PSLMode: "icann"}
				if _, err := Publish(ctx, st, m, v, 0); err != nil {
					t.Fatal(err)
				}
				back, err := ReadManifest(ctx, st)
				if err != nil {
					t.Fatal(err)
				}
				if cur, ok := back.Current(); !ok || cur.Version != v.Version {
					t.Fatalf("current = %+v", cur)
				}
			})
			t.Run("of concurrent publishers on one base exactly one wins, every time", func(t *testing.T) {
				st := newStore(t)
				for trial := 0; trial < 20; trial++ {
					base, err := ReadManifest(ctx, st)
					if err != nil {
						t.Fatal(err)
					}
					var wg sync.WaitGroup
					errs := make([]error, 4)
					for i := range errs {
						wg.Add(1)
						go func() {
							defer wg.Done()
							v := Version{Version: NewVersionName(time.Now(), trial*10+i), Parent: base.CurrentVersion}
							_, errs[i] = Publish(ctx, st, base, v, 0)
						}()
					}
					wg.Wait()
					wins := 0
					for _, err := range errs {
						switch {
						case err == nil:
							wins++
						case !errors.Is(err, ErrConflict):
							t.Fatalf("trial %d: unexpected error %v", trial, err)
						}
					}
					if wins != 1 {
						t.Fatalf("trial %d: %d publishers won, want exactly 1", trial, wins)
					}
				}
				m, _ := ReadManifest(ctx, st)
				if len(m.Versions) != 20 {
					t.Fatalf("%d versions after 20 trials", len(m.Versions))
				}
			})
			t.Run("a version built on a stale base is refused before writing", func(t *testing.T) {
				st := newStore(t)
				m, _ := ReadManifest(ctx, st)
				m2, err := Publish(ctx, st, m, Version{Version: "v1"}, 0)
				if err != nil {
					t.Fatal(err)
				}
				_, err = Publish(ctx, st, m2, Version{Version: "v2", Parent: "v0"}, 0)
				if !errors.Is(err, ErrConflict) {
					t.Fatalf("err = %v", err)
				}
			})
			t.Run("keep bounds the versions listed", func(t *testing.T) {
				st := newStore(t)
				m, _ := ReadManifest(ctx, st)
				for i := 1; i <= 5; i++ {
					var err error
					m, err = Publish(ctx, st, m, Version{Version: NewVersionName(time.Now(), i), Parent: m.CurrentVersion}, 3)
					if err != nil {
						t.Fatal(err)
					}
				}
				if len(m.Versions) != 3 || !strings.HasPrefix(m.Versions[0].Version, "v000003") {
					t.Fatalf("versions %v", m.VersionNames())
				}
			})
		})
	}
}

func TestParseManifestRejects(t *testing.T) {
	for _, c := range []struct{ name, body, says string }{
		{"an unknown format version", `{"format":"dhsi-url-index-manifest","format_version":2}`, "not supported"},
		{"a foreign file", `{"format":"other","format_version":1}`, "format"},
		{"a current version that is not listed", `{"format":"dhsi-url-index-manifest","format_version":1,"current_version":"x","versions":[]}`, "not among"},
		{"broken JSON", `{`, "manifest.json"},
	} {
		t.Run(c.name+" is rejected", func(t *testing.T) {
			if _, err := ParseManifest([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v, want it to mention %q", err, c.says)
			}
		})
	}
}
