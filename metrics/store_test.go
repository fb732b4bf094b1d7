package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
)

// retrying is a local store that says it retried twice, as s3store does.
type retrying struct{ *localfs.Store }

func (retrying) Retries() int64 { return 2 }

func TestInstrumentStore(t *testing.T) {
	ctx := context.Background()
	base, err := localfs.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	st := r.InstrumentStore(retrying{base})
	if _, ok := st.(interface {
		LocalPath(string) (string, error)
	}); !ok {
		t.Fatal("a local store lost its local paths")
	}
	if ad, ok := st.(store.AtomicDeleter); !ok || !ad.AtomicConditionalDelete() {
		t.Fatal("a local store lost its atomic conditional delete")
	}
	if _, err := st.Put(ctx, "a/b", strings.NewReader("hello"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, "a/b", strings.NewReader("again"), store.Cond{IfNoneMatch: true}); !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatal(err)
	}
	rc, _, err := st.Get(ctx, "a/b")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(rc)
	rc.Close()
	if _, err := st.Head(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	stop := errors.New("enough")
	if err := st.List(ctx, "a/", func(store.Attrs) error { return stop }); !errors.Is(err, stop) {
		t.Fatal(err)
	}
	// a store without a bulk delete: one counted delete per item
	if bulk, _ := store.BulkDelete(ctx, st); bulk {
		t.Fatal("a local store gained a bulk delete")
	}
	if errs := store.DeleteMany(ctx, st, []store.DeleteItem{{Key: "a/b"}, {Key: "a/c"}}); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for _, want := range []string{
		`dhsi_store_requests_total{op="put",outcome="ok"} 1`,
		`dhsi_store_requests_total{op="put",outcome="precondition_failed"} 1`,
		`dhsi_store_requests_total{op="get",outcome="ok"} 1`,
		`dhsi_store_requests_total{op="head",outcome="not_found"} 1`,
		`dhsi_store_requests_total{op="list",outcome="ok"} 1`,
		`dhsi_store_requests_total{op="delete",outcome="ok"} 2`,
		`dhsi_store_bytes_total{direction="read"} 5`,
		`dhsi_store_bytes_total{direction="written"} 5`,
		"dhsi_store_retries_total 2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}
