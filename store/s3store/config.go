package s3store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/dhsi/dhsi/store"
)

// Config says where the store lives and how to reach it. Empty fields fall
// back to the standard AWS environment (AWS_ENDPOINT_URL, AWS_REGION or
// AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, shared config files, instance roles), read by Open.
type Config struct {
	// Bucket holds the objects. Required.
	Bucket string
	// Prefix is prepended to every key, so several stores can share a
	// bucket. Empty, or a valid key followed by "/" (Defaults adds the "/").
	Prefix string
	// Endpoint is the S3 URL, e.g. "http://127.0.0.1:7070" for versitygw or
	// MinIO. Empty means AWS_ENDPOINT_URL, or AWS itself.
	Endpoint string
	// Region defaults to AWS_REGION / AWS_DEFAULT_REGION, then us-east-1.
	Region string
	// PathStyle addresses buckets as endpoint/bucket rather than
	// bucket.endpoint. Nil means on when an endpoint is set (here or in
	// AWS_ENDPOINT_URL), since S3-compatible servers rarely have wildcard
	// DNS, and off for AWS.
	PathStyle *bool
	// Static credentials. Empty means the SDK's default credential chain.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// MaxAttempts bounds the attempts of one unconditional request; 0 means
	// the SDK's standard 3. Conditional requests are never retried (see the
	// package comment).
	MaxAttempts int
}

// Defaults returns c with defaults filled in where they do not depend on the
// environment; Open fills the rest.
func (c Config) Defaults() Config {
	c.Prefix = strings.TrimLeft(c.Prefix, "/")
	if c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
	if c.PathStyle == nil && c.Endpoint != "" {
		on := true
		c.PathStyle = &on
	}
	return c
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if c.Bucket == "" {
		return errors.New("s3store: config: bucket is required")
	}
	if strings.ContainsAny(c.Bucket, "/ ") {
		return fmt.Errorf("s3store: config: bucket %q contains a slash or space", c.Bucket)
	}
	if c.Prefix != "" {
		p, ok := strings.CutSuffix(c.Prefix, "/")
		if !ok || store.ValidateKey(p) != nil {
			return fmt.Errorf("s3store: config: prefix %q is not a valid key followed by \"/\"", c.Prefix)
		}
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil {
			return fmt.Errorf("s3store: config: endpoint: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("s3store: config: endpoint %q is not an http:// or https:// URL", c.Endpoint)
		}
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return errors.New("s3store: config: access key ID and secret access key go together")
	}
	if c.SessionToken != "" && c.AccessKeyID == "" {
		return errors.New("s3store: config: a session token needs an access key ID and secret")
	}
	if c.MaxAttempts < 0 {
		return fmt.Errorf("s3store: config: max attempts %d is negative", c.MaxAttempts)
	}
	return nil
}

// ParseURL parses "s3://bucket" or "s3://bucket/prefix" into a Config with
// Bucket and Prefix set.
func ParseURL(s string) (Config, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Config{}, fmt.Errorf("s3store: parse url: %w", err)
	}
	if u.Scheme != "s3" {
		return Config{}, fmt.Errorf("s3store: parse url %q: scheme is not s3", s)
	}
	if u.Host == "" {
		return Config{}, fmt.Errorf("s3store: parse url %q: no bucket", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" {
		return Config{}, fmt.Errorf("s3store: parse url %q: want only s3://bucket/prefix", s)
	}
	cfg := Config{Bucket: u.Host, Prefix: strings.TrimPrefix(u.Path, "/")}.Defaults()
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
