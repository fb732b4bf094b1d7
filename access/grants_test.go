package access_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/dhsi/dhsi/access"
	"github.com/dhsi/dhsi/store/localfs"
)

func TestVisibility(t *testing.T) {
	g, err := access.ParseGrants([]byte(`{"format":"dhsi-grants","format_version":1,"version":3,"grants":[
		{"dataset":"team","grantee":"rita"},{"dataset":"ops","grantee":"writer"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p       access.Principal
		dataset string
		want    bool
	}{
		{access.Principal{User: "rob", Role: access.Reader}, "open", true},   // no grants: everyone
		{access.Principal{User: "rob", Role: access.Reader}, "team", false},  // granted to someone else
		{access.Principal{User: "rita", Role: access.Reader}, "team", true},  // her grant
		{access.Principal{User: "will", Role: access.Writer}, "ops", true},   // his role's grant
		{access.Principal{User: "rita", Role: access.Reader}, "ops", false},  // not her role
		{access.Principal{User: "root", Role: access.Admin}, "team", true},   // admins see all
		{access.NoPrincipal, "team", false},                                  // A1: no principal is no admin
		{access.Principal{User: "writer", Role: access.Reader}, "ops", true}, // a user named like a role is that grantee
	} {
		if got := g.Visible(c.p, c.dataset); got != c.want {
			t.Errorf("Visible(%+v, %s) = %v, want %v", c.p, c.dataset, got, c.want)
		}
		if got := g.Filter(c.p).Sees(c.dataset); got != c.want {
			t.Errorf("Filter(%+v).Sees(%s) = %v, want %v", c.p, c.dataset, got, c.want)
		}
	}
	if !access.EmptyGrants.Filter(access.NoPrincipal).All() {
		t.Error("without grants every dataset is visible to everyone")
	}
	for _, bad := range []string{`{}`, `{"format":"dhsi-grants","format_version":2,"version":1}`,
		`{"format":"dhsi-grants","format_version":1,"version":0}`,
		`{"format":"dhsi-grants","format_version":1,"version":1,"grants":[{"dataset":"x","grantee":"a b"}]}`} {
		if _, err := access.ParseGrants([]byte(bad)); err == nil {
			t.Errorf("ParseGrants(%s) accepted", bad)
		}
	}
}

// TestConcurrentAdminsLoseNoGrant: admins on many servers granting at once
// (one Book each, one store) never lose a grant, and the version counts
// every change (A4).
func TestConcurrentAdminsLoseNoGrant(t *testing.T) {
	ctx := access.WithPrincipal(context.Background(), access.Principal{User: "root", Role: access.Admin})
	st, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const admins, each = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, admins*each)
	for a := 0; a < admins; a++ {
		b, err := access.OpenBook(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := b.Grant(ctx, fmt.Sprintf("ds%d", i), fmt.Sprintf("user%d", a)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b, err := access.OpenBook(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := b.Current()
	if len(g.List()) != admins*each || g.Version() != admins*each {
		t.Fatalf("%d grants at version %d, want %d at %d", len(g.List()), g.Version(), admins*each, admins*each)
	}
	// a reader may not grant, and a revoke of the last grant reopens
	if _, err := b.Grant(access.WithPrincipal(ctx, access.Principal{User: "rita"}), "ds0", "rita"); err == nil {
		t.Error("a reader granted a dataset")
	}
	for a := 0; a < admins; a++ {
		if _, err := b.Revoke(ctx, "ds0", fmt.Sprintf("user%d", a)); err != nil {
			t.Fatal(err)
		}
	}
	if !b.Current().Visible(access.Principal{User: "anyone"}, "ds0") {
		t.Error("ds0 has no grant left but stays hidden")
	}
}
