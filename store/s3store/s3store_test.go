package s3store

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dhsi/dhsi/internal/testenv"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/storetest"
)

// server is one versitygw for a test and its sub-tests.
type server struct {
	endpoint, accessKey, secretKey string
}

func startServer(t *testing.T) server {
	endpoint, ak, sk := testenv.StartVersityGW(t)
	return server{endpoint, ak, sk}
}

func (gw server) config(t *testing.T) Config {
	return Config{
		Bucket:          testenv.CreateBucket(t, gw.endpoint, gw.accessKey, gw.secretKey),
		Endpoint:        gw.endpoint,
		AccessKeyID:     gw.accessKey,
		SecretAccessKey: gw.secretKey,
	}
}

func open(t *testing.T, cfg Config) *Store {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := Open(t.Context(), cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	gw := startServer(t)
	t.Run("A store at the root of a bucket conforms", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store { return open(t, gw.config(t)) })
	})
	t.Run("A store under a prefix conforms and sees nothing outside it", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			cfg := gw.config(t)
			// Neighbours the prefixed store must never list or touch; the
			// suite checks List's full output, so a leak fails it.
			root := open(t, cfg)
			for _, k := range []string{"tenant/a-x", "tenant/b/x", "tenant/ab", "z"} {
				if _, err := root.Put(t.Context(), k, strings.NewReader("neighbour"), store.Cond{}); err != nil {
					t.Fatal(err)
				}
			}
			cfg.Prefix = "tenant/a" // Defaults makes it "tenant/a/"
			return open(t, cfg)
		})
	})
}

func TestOpenFallsBackToTheAWSEnvironment(t *testing.T) {
	gw := startServer(t)
	bucket := gw.config(t).Bucket
	t.Setenv("AWS_ENDPOINT_URL", gw.endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", gw.accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", gw.secretKey)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")

	s := open(t, Config{Bucket: bucket})
	if got := s.client.Options().Region; got != "us-east-1" {
		t.Errorf("region = %q, want the us-east-1 default", got)
	}
	if !s.client.Options().UsePathStyle {
		t.Error("path style is off though AWS_ENDPOINT_URL is set")
	}
	if _, err := s.Put(t.Context(), "k", strings.NewReader("v"), store.Cond{IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	if b, _, err := store.ReadAll(t.Context(), s, "k"); err != nil || string(b) != "v" {
		t.Errorf("ReadAll = %q, %v", b, err)
	}
}

func TestOpenFailsWhenTheBucketIsMissing(t *testing.T) {
	gw := startServer(t)
	cfg := gw.config(t)
	cfg.Bucket = "no-such-bucket"
	if _, err := Open(t.Context(), cfg, nil); err == nil {
		t.Fatal("Open of a missing bucket succeeded")
	}
	cfg.SecretAccessKey = "wrong"
	cfg.Bucket = gw.config(t).Bucket
	if _, err := Open(t.Context(), cfg, nil); err == nil {
		t.Fatal("Open with a wrong secret succeeded")
	}
}

func TestBodiesOfEveryShapeRoundTrip(t *testing.T) {
	gw := startServer(t)
	s := open(t, gw.config(t))
	big := bytes.Repeat([]byte("0123456789abcdef"), (memBufferSize+memBufferSize/2)/16)
	partly := strings.NewReader("skip:the rest")
	partly.Seek(5, io.SeekStart)
	for _, tc := range []struct {
		name string
		r    io.Reader
		want string
	}{
		{"an unseekable body larger than the memory buffer", io.MultiReader(bytes.NewReader(big)), string(big)},
		{"an unseekable body of exactly the memory buffer", io.MultiReader(bytes.NewReader(big[:memBufferSize])), string(big[:memBufferSize])},
		{"an unseekable empty body", io.MultiReader(), ""},
		{"a seekable body is sent from its current position", partly, "the rest"},
	} {
		a, err := s.Put(t.Context(), "k", tc.r, store.Cond{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, attrs, err := store.ReadAll(t.Context(), s, "k")
		if err != nil || string(b) != tc.want || attrs.Size != int64(len(tc.want)) || a.Size != attrs.Size {
			t.Errorf("%s: read %d bytes (size %d, put said %d), %v; want %d", tc.name, len(b), attrs.Size, a.Size, err, len(tc.want))
		}
	}
}

// TestALostResponseLeavesAConditionalPutUndecided drops the response to a
// PUT that the server applied. A conditional put is not retried, so it
// reports a plain error, not ErrPreconditionFailed (which a retry would get
// from its own first attempt), and the object is there: the outcome is
// unknown, as the store contract says. An unconditional put is retried.
func TestALostResponseLeavesAConditionalPutUndecided(t *testing.T) {
	gw := startServer(t)
	cfg := gw.config(t)
	direct := open(t, cfg)

	backend, err := url.Parse(gw.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var drop atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(backend)
	proxy.ErrorLog = log.New(io.Discard, "", 0)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodPut && drop.CompareAndSwap(true, false) {
			return errors.New("response dropped by the test")
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	cfg.Endpoint = front.URL
	viaProxy := open(t, cfg)

	drop.Store(true)
	_, err = viaProxy.Put(t.Context(), "cas", strings.NewReader("mine"), store.Cond{IfNoneMatch: true})
	if err == nil || errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("conditional Put with a lost response = %v, want an error other than ErrPreconditionFailed", err)
	}
	if b, _, err := store.ReadAll(t.Context(), direct, "cas"); err != nil || string(b) != "mine" {
		t.Errorf("after the lost response the object is %q, %v; want the put applied", b, err)
	}

	drop.Store(true)
	if _, err := viaProxy.Put(t.Context(), "plain", strings.NewReader("retried"), store.Cond{}); err != nil {
		t.Errorf("unconditional Put with a lost response: %v, want the retry to succeed", err)
	}
}

func TestServerErrorsMapToSentinels(t *testing.T) {
	apiErr := func(status int, code string) error {
		return &smithy.OperationError{ServiceID: "S3", OperationName: "PutObject", Err: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
			Err:      &smithy.GenericAPIError{Code: code},
		}}
	}
	for _, tc := range []struct {
		name       string
		err        error
		ifMatchPut bool
		want       error
	}{
		{"412 is a failed precondition", apiErr(412, "PreconditionFailed"), false, store.ErrPreconditionFailed},
		{"409 ConditionalRequestConflict is a failed precondition", apiErr(409, "ConditionalRequestConflict"), false, store.ErrPreconditionFailed},
		{"404 NoSuchKey is not found", apiErr(404, "NoSuchKey"), false, store.ErrNotFound},
		{"404 from HEAD without a code is not found", apiErr(404, ""), false, store.ErrNotFound},
		{"404 on an IfMatch put is a failed precondition", apiErr(404, "NoSuchKey"), true, store.ErrPreconditionFailed},
		{"416 is an invalid range", apiErr(416, "InvalidRange"), false, store.ErrInvalidRange},
		{"a file where a directory must go is an invalid key", apiErr(409, "ObjectParentIsFile"), false, store.ErrInvalidKey},
		{"a directory where a file must go is an invalid key", apiErr(409, "ExistingObjectIsDirectory"), false, store.ErrInvalidKey},
		{"a missing bucket is no sentinel", apiErr(404, "NoSuchBucket"), false, nil},
		{"a 503 is no sentinel", apiErr(503, "SlowDown"), false, nil},
	} {
		got := opError("put", "k", tc.err, tc.ifMatchPut)
		for _, s := range []error{store.ErrNotFound, store.ErrPreconditionFailed, store.ErrInvalidRange, store.ErrInvalidKey} {
			if errors.Is(got, s) != (s == tc.want) {
				t.Errorf("%s: %v: errors.Is(%v) = %v", tc.name, got, s, !(s == tc.want))
			}
		}
		var api smithy.APIError
		if !errors.As(got, &api) {
			t.Errorf("%s: the SDK error is not kept in %v", tc.name, got)
		}
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		name, url      string
		bucket, prefix string
		ok             bool
	}{
		{"a bare bucket has no prefix", "s3://bkt", "bkt", "", true},
		{"a bucket with a slash has no prefix", "s3://bkt/", "bkt", "", true},
		{"a prefix gains a trailing slash", "s3://bkt/a/b", "bkt", "a/b/", true},
		{"a prefix keeps its trailing slash", "s3://bkt/a/b/", "bkt", "a/b/", true},
		{"another scheme is rejected", "https://bkt/a", "", "", false},
		{"a missing bucket is rejected", "s3:///a", "", "", false},
		{"a query is rejected", "s3://bkt/a?x=1", "", "", false},
		{"a prefix with an empty segment is rejected", "s3://bkt/a//b", "", "", false},
		{"a prefix with a dot-dot segment is rejected", "s3://bkt/a/../b", "", "", false},
	} {
		cfg, err := ParseURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("%s: ParseURL(%q) error = %v", tc.name, tc.url, err)
			continue
		}
		if tc.ok && (cfg.Bucket != tc.bucket || cfg.Prefix != tc.prefix) {
			t.Errorf("%s: ParseURL(%q) = bucket %q prefix %q, want %q %q", tc.name, tc.url, cfg.Bucket, cfg.Prefix, tc.bucket, tc.prefix)
		}
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
		path *bool // PathStyle after Defaults
	}{
		{"a bucket alone is valid", Config{Bucket: "b"}, true, nil},
		{"an endpoint turns path style on", Config{Bucket: "b", Endpoint: "http://h:1"}, true, new(true)},
		{"an explicit path style wins", Config{Bucket: "b", Endpoint: "http://h:1", PathStyle: &off}, true, &off},
		{"a leading slash of the prefix is dropped", Config{Bucket: "b", Prefix: "/p"}, true, nil},
		{"no bucket is invalid", Config{}, false, nil},
		{"an endpoint without a scheme is invalid", Config{Bucket: "b", Endpoint: "h:1"}, false, new(true)},
		{"an access key without a secret is invalid", Config{Bucket: "b", AccessKeyID: "a"}, false, nil},
		{"a session token without keys is invalid", Config{Bucket: "b", SessionToken: "t"}, false, nil},
		{"a negative MaxAttempts is invalid", Config{Bucket: "b", MaxAttempts: -1}, false, nil},
		{"an invalid prefix is invalid", Config{Bucket: "b", Prefix: "a/./b"}, false, nil},
	} {
		cfg := tc.cfg.Defaults()
		if err := cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v", tc.name, err)
		}
		if (cfg.PathStyle == nil) != (tc.path == nil) || (cfg.PathStyle != nil && *cfg.PathStyle != *tc.path) {
			t.Errorf("%s: PathStyle = %v, want %v", tc.name, cfg.PathStyle, tc.path)
		}
	}
	if got := (Config{Bucket: "b", Prefix: "/p"}).Defaults().Prefix; got != "p/" {
		t.Errorf("Defaults().Prefix = %q, want %q", got, "p/")
	}
}

// TestDeleteManyOnVersityGW: versitygw v1.8.0 deletes the keys of a
// DeleteObjects whatever their ETag elements say; the store finds that out
// with its probe, sends conditional items one by one, and leaves no probe
// object behind.
func TestDeleteManyOnVersityGW(t *testing.T) {
	gw := startServer(t)
	s := open(t, gw.config(t))
	if bulk, conditional := s.BulkDelete(t.Context()); !bulk || conditional {
		t.Errorf("BulkDelete on versitygw = %v, %v; want true, false (it ignores the ETags of a DeleteObjects)", bulk, conditional)
	}
	var left []string
	s.List(t.Context(), "", func(a store.Attrs) error { left = append(left, a.Key); return nil })
	if len(left) != 0 {
		t.Errorf("the probe left %q", left)
	}
	before := s.Requests()
	a, _ := s.Put(t.Context(), "x/a", strings.NewReader("a"), store.Cond{})
	s.Put(t.Context(), "x/b", strings.NewReader("b"), store.Cond{})
	s.Put(t.Context(), "x/c", strings.NewReader("c"), store.Cond{})
	errs := store.DeleteMany(t.Context(), s, []store.DeleteItem{{Key: "x/a", Cond: store.Cond{IfMatch: a.ETag}}, {Key: "x/b"}, {Key: "x/c"}})
	if errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	after := s.Requests()
	if n := after["DeleteObjects"] - before["DeleteObjects"]; n != 1 {
		t.Errorf("%d DeleteObjects for two unconditional keys, want 1", n)
	}
	if n := after["DeleteObject"] - before["DeleteObject"]; n != 1 {
		t.Errorf("%d DeleteObject for one conditional key, want 1", n)
	}
}

// TestDeleteManyReadsEachKeysAnswer: against a server that checks the
// ETags of a DeleteObjects, as AWS S3 does, each key's <Error> reaches its
// item: PreconditionFailed and a 409 race are failed preconditions,
// NoSuchKey is not found for a conditional item and done for another, any
// other code fails that item alone; the keys carry the store's prefix on
// the wire and not in the answers.
func TestDeleteManyReadsEachKeysAnswer(t *testing.T) {
	var mu sync.Mutex
	var sentETags []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodHead && r.URL.Path == "/bkt":
		case r.Method == http.MethodPut:
			w.Header().Set("ETag", `"probe"`)
		case r.Method == http.MethodHead:
			w.Header().Set("ETag", `"probe"`)
			w.Header().Set("Content-Length", "5")
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodPost && r.URL.Query().Has("delete"):
			var req struct {
				Objects []struct {
					Key  string
					ETag string
				} `xml:"Object"`
			}
			body, _ := io.ReadAll(r.Body)
			if err := xml.Unmarshal(body, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var out strings.Builder
			out.WriteString(`<?xml version="1.0" encoding="UTF-8"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
			for _, o := range req.Objects {
				code := ""
				switch {
				case strings.HasPrefix(o.Key, "pre/.dhsi-probe/"):
					code = "PreconditionFailed" // an ETag-checking server
				case strings.HasSuffix(o.Key, "/pf"):
					code = "PreconditionFailed"
				case strings.HasSuffix(o.Key, "/race"):
					code = "ConditionalRequestConflict"
				case strings.HasSuffix(o.Key, "/nsk"), strings.HasSuffix(o.Key, "/nsk-cond"):
					code = "NoSuchKey"
				case strings.HasSuffix(o.Key, "/denied"):
					code = "AccessDenied"
				}
				if !strings.HasPrefix(o.Key, "pre/.dhsi-probe/") {
					mu.Lock()
					sentETags = append(sentETags, o.Key+"="+o.ETag)
					mu.Unlock()
				}
				if code != "" {
					fmt.Fprintf(&out, "<Error><Key>%s</Key><Code>%s</Code><Message>m</Message></Error>", o.Key, code)
				}
			}
			out.WriteString(`</DeleteResult>`)
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, out.String())
		default:
			http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	s := open(t, Config{Bucket: "bkt", Prefix: "pre", Endpoint: srv.URL, AccessKeyID: "k", SecretAccessKey: "s", Region: "us-east-1"}.Defaults())
	if bulk, conditional := s.BulkDelete(t.Context()); !bulk || !conditional {
		t.Fatalf("BulkDelete = %v, %v; want true, true from a server that refuses a wrong ETag", bulk, conditional)
	}
	items := []store.DeleteItem{
		{Key: "k/ok", Cond: store.Cond{IfMatch: `"e1"`}},
		{Key: "k/pf", Cond: store.Cond{IfMatch: `"e2"`}},
		{Key: "k/race", Cond: store.Cond{IfMatch: `"e3"`}},
		{Key: "k/nsk"},
		{Key: "k/nsk-cond", Cond: store.Cond{IfMatch: `"e4"`}},
		{Key: "k/denied"},
		{Key: "k/plain"},
	}
	errs := s.DeleteMany(t.Context(), items)
	for i, want := range []error{nil, store.ErrPreconditionFailed, store.ErrPreconditionFailed, nil, store.ErrNotFound, errors.New("other"), nil} {
		switch {
		case want == nil && errs[i] != nil:
			t.Errorf("%s: %v, want nil", items[i].Key, errs[i])
		case want != nil && errs[i] == nil:
			t.Errorf("%s: nil, want an error", items[i].Key)
		case want == store.ErrPreconditionFailed || want == store.ErrNotFound:
			if !errors.Is(errs[i], want) {
				t.Errorf("%s: %v, want %v", items[i].Key, errs[i], want)
			}
		case want != nil:
			if errors.Is(errs[i], store.ErrPreconditionFailed) || errors.Is(errs[i], store.ErrNotFound) || !strings.Contains(errs[i].Error(), "AccessDenied") {
				t.Errorf("%s: %v, want the server's AccessDenied and no sentinel", items[i].Key, errs[i])
			}
		}
	}
	want := []string{`pre/k/ok="e1"`, `pre/k/pf="e2"`, `pre/k/race="e3"`, `pre/k/nsk=`, `pre/k/nsk-cond="e4"`, `pre/k/denied=`, `pre/k/plain=`}
	if !slices.Equal(sentETags, want) {
		t.Errorf("sent %q, want %q in one request", sentETags, want)
	}
}
