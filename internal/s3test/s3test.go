// Package s3test gives tests outside store/ a real S3 store: a versitygw
// server started by internal/testenv, and an s3store on a fresh bucket of
// it. (testenv itself cannot import s3store: s3store's own tests import
// testenv.)
package s3test

import (
	"context"
	"testing"

	"github.com/dhsi/dhsi/internal/testenv"
	"github.com/dhsi/dhsi/store/s3store"
)

// Server is a running versitygw and its root credentials.
type Server struct {
	Endpoint, AccessKey, SecretKey string
}

// Start starts a versitygw for the test (stopped when it ends).
func Start(t testing.TB) Server {
	t.Helper()
	e, k, s := testenv.StartVersityGW(t)
	return Server{Endpoint: e, AccessKey: k, SecretKey: s}
}

// NewStore creates a fresh bucket and returns a store on it and the bucket's
// name (for s3://bucket URLs given to child processes).
func (s Server) NewStore(t testing.TB) (*s3store.Store, string) {
	t.Helper()
	bucket := testenv.CreateBucket(t, s.Endpoint, s.AccessKey, s.SecretKey)
	cfg := s3store.Config{Bucket: bucket, Endpoint: s.Endpoint, Region: "us-east-1", AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}.Defaults()
	st, err := s3store.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("s3test: open bucket %s: %v", bucket, err)
	}
	return st, bucket
}

// Env is the standard AWS environment a child process needs to reach the
// server.
func (s Server) Env() []string {
	return []string{"AWS_ENDPOINT_URL=" + s.Endpoint, "AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey, "AWS_REGION=us-east-1"}
}
