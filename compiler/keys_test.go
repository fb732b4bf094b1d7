package compiler

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/shard"
	"github.com/dhsi/dhsi/store"
)

// plantLegacy adds rows to the shard their key hashes to, as releases
// before K1 stored them.
func plantLegacy(t *testing.T, st store.Store, l shard.Layout, rows ...[]string) {
	t.Helper()
	ctx := context.Background()
	for _, r := range rows {
		id := l.Of(r[0])
		b, _, err := store.ReadAll(ctx, st, ShardKey(id))
		tb := Table{Header: fields}
		if err == nil {
			if tb, err = ParseTable(b); err != nil {
				t.Fatal(err)
			}
		}
		tb.Rows = append(tb.Rows, r)
		var buf bytes.Buffer
		if err := tb.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Put(ctx, ShardKey(id), &buf, store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrateKeys: records an earlier release stored under keys that are
// not domain keys end up under their domain keys, in those keys' shards,
// merged with what was written there since; a key that names no registered
// domain goes to quarantine; a second run changes nothing.
func TestMigrateKeys(t *testing.T) {
	ctx := context.Background()
	backends(t, func(t *testing.T, newStore func(t *testing.T) store.Store) {
		st := newStore(t)
		l := shard.Layout{Width: 1} // 16 shards: a spelling and its key share one often
		c := newCompiler(t, st, Config{Layout: l})
		put(t, st, "plain.example", "plain", 1, "2025-01-01T00:00:00Z")
		put(t, st, "xn--bcher-kva.de", "written since", 2, "2026-01-01T00:00:00Z")
		if _, err := c.CompactAll(ctx); err != nil {
			t.Fatal(err)
		}
		// a spelling in the same shard as its key, and one in another
		var same, other string
		for i := 0; same == "" || other == ""; i++ {
			d := fmt.Sprintf("site%d.example", i)
			if l.Of(strings.ToUpper(d)) == l.Of(d) && same == "" {
				same = d
			} else if l.Of(strings.ToUpper(d)) != l.Of(d) && other == "" {
				other = d
			}
		}
		plantLegacy(t, st, l,
			[]string{"bücher.de", "legacy", "1", "2025-01-01T00:00:00Z"}, // older than the record written since
			[]string{strings.ToUpper(same), "legacy same", "1", "2025-01-01T00:00:00Z"},
			[]string{strings.ToUpper(other) + ".", "legacy other", "1", "2025-01-01T00:00:00Z"},
			// no domain key names these: merging a host's record into its
			// registered domain's would be a guess
			[]string{"com", "a suffix", "1", "2025-01-01T00:00:00Z"},
			[]string{"www.plain.example", "a host", "1", "2025-01-01T00:00:00Z"},
		)
		migrate := func() (renamed, quarantined int, refused []string) {
			ids, err := c.ShardIDs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				r, err := c.MigrateKeys(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				renamed += r.Renamed
				quarantined += r.Quarantined
				for _, e := range r.Refused {
					refused = append(refused, e.Key+": "+e.Reason)
					b, _, err := store.ReadAll(ctx, st, r.Quarantine)
					if err != nil || !strings.Contains(string(b), e.Key+"\u241F") {
						t.Errorf("quarantine object %s: %q, %v; want the record of %q", r.Quarantine, b, err, e.Key)
					}
				}
			}
			return
		}
		renamed, quarantined, refused := migrate()
		sort.Strings(refused)
		if renamed != 3 || quarantined != 2 || len(refused) != 2 || !strings.Contains(refused[0], "public suffix") || !strings.Contains(refused[1], `registered domain (eTLD+1) is "plain.example"`) {
			t.Fatalf("first run: %d renamed, %d quarantined (%q); want 3, and com's and www.plain.example's", renamed, quarantined, refused)
		}
		got := map[string]string{}
		for d, r := range allShardRecords(t, st) {
			got[d] = strings.Split(r[1], "|")[1]
		}
		want := map[string]string{
			"plain.example":    "plain",
			"xn--bcher-kva.de": "written since", // the newer record wins
			same:               "legacy same",
			other:              "legacy other",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("records after the migration: %v\nwant %v", got, want)
		}
		if renamed, quarantined, _ := migrate(); renamed+quarantined != 0 {
			t.Errorf("second run moved %d and quarantined %d; want nothing", renamed, quarantined)
		}
	})
}
