package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dhsi/dhsi/compiler"
	"github.com/dhsi/dhsi/store"
	"github.com/dhsi/dhsi/store/localfs"
	"github.com/dhsi/dhsi/store/s3store"
)

// storeFlags are the flags every command that touches the index shares.
type storeFlags struct {
	spec      string
	endpoint  string
	region    string
	pathStyle string
	cacheDir  string
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.spec, "store", defaultStore, "where the index lives: a local directory (the embedded default) or s3://bucket/prefix; only serve creates the default directory when it does not exist")
	fs.StringVar(&f.endpoint, "s3-endpoint", "", "S3 endpoint URL for S3-compatible servers (default $AWS_ENDPOINT_URL, else AWS)")
	fs.StringVar(&f.region, "s3-region", "", "S3 region (default $AWS_REGION, else us-east-1)")
	fs.StringVar(&f.pathStyle, "s3-path-style", "auto", "path-style bucket addressing: auto (on with a custom endpoint), on, off")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "local directory for the DuckDB database and cached objects (default: <store>/.dhsi-cache for a local store, the user cache directory for S3)")
}

// lockFlags are the flags of the commands that take shard locks (compact,
// reshard, migrate-keys).
type lockFlags struct {
	ttl      time.Duration
	workerID string
}

func (f *lockFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.ttl, "lock-ttl", compiler.DefaultLockTTL, "how long a lock of a crashed worker blocks its shard")
	fs.StringVar(&f.workerID, "worker-id", "", "name in lock objects (default host-pid-random)")
}

// checkTTL refuses a --lock-ttl under a second (reshard, migrate-keys).
func (f *lockFlags) checkTTL() error {
	if f.ttl < time.Second {
		return fmt.Errorf("%w: --lock-ttl must be at least 1s", errUsage)
	}
	return nil
}

func (f *storeFlags) isS3() bool { return strings.HasPrefix(f.spec, "s3://") }

// defaultStore is --store when it is not given.
const defaultStore = "./dhsi-data"

// open opens the store named by --store and names it on stderr, so a command
// run from an unexpected directory says where it works. A local store that
// does not exist is created only when --store named it, or by serve (the
// quickstart): a put or compact run from another directory no longer
// creates a stray ./dhsi-data. Credentials come from the standard AWS
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...).
func (f *storeFlags) open(ctx context.Context, log *slog.Logger, cmd string, stderr io.Writer) (store.Store, error) {
	if !f.isS3() {
		if strings.Contains(f.spec, "://") {
			return nil, fmt.Errorf("%w: --store %q: want a directory or s3://bucket/prefix", errUsage, f.spec)
		}
		abs, err := filepath.Abs(f.spec)
		if err != nil {
			return nil, err
		}
		note := ""
		if _, err := os.Stat(abs); os.IsNotExist(err) {
			if f.spec == defaultStore && cmd != "serve" {
				return nil, fmt.Errorf("%w: there is no store at %s (the default --store, relative to this directory); give --store DIR or s3://bucket/prefix, or create one with dhsi serve or dhsi ingest --store %s", errUsage, abs, defaultStore)
			}
			note = " (new: created)"
		}
		fmt.Fprintf(stderr, "dhsi %s: store %s%s\n", cmd, abs, note)
		return localfs.Open(f.spec)
	}
	fmt.Fprintf(stderr, "dhsi %s: store %s\n", cmd, f.spec)
	cfg, err := s3store.ParseURL(f.spec)
	if err != nil {
		return nil, fmt.Errorf("%w: --store: %v", errUsage, err)
	}
	cfg.Endpoint, cfg.Region = f.endpoint, f.region
	switch f.pathStyle {
	case "auto":
	case "on", "off":
		on := f.pathStyle == "on"
		cfg.PathStyle = &on
	default:
		return nil, fmt.Errorf("%w: --s3-path-style must be auto, on or off", errUsage)
	}
	return s3store.Open(ctx, cfg.Defaults(), log)
}

// cachePath returns the local cache directory for this store.
func (f *storeFlags) cachePath() (string, error) {
	if f.cacheDir != "" {
		return f.cacheDir, nil
	}
	if !f.isS3() {
		return filepath.Join(f.spec, ".dhsi-cache"), nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(f.spec + "\x00" + f.endpoint))
	return filepath.Join(base, "dhsi", hex.EncodeToString(sum[:6])), nil
}
