// Package localfs is the local-directory Store, DHSI's embedded default.
//
// Each object is a plain file at <root>/<key>, so ls shows the store and
// DuckDB reads objects in place (see LocalPath). Files are never rewritten
// in place: a put stages the content in a temporary file, fsyncs it, renames
// it over the key and fsyncs the directory, so a reader that opened the old
// file keeps reading the old object to its end.
//
// The store reserves root-level names starting with ".dhsi-" (keys there are
// rejected with store.ErrInvalidKey and never listed):
//
//	<root>/.dhsi-tmp/    staged puts; empty when no put is in flight
//	<root>/.dhsi-locks/  one lock file per key while an operation holds it
//
// Every put and delete of a key holds an exclusive flock(2) on that key's
// lock file while it checks its condition and renames or unlinks, so
// conditional puts are compare-and-swap across goroutines and across
// processes sharing the directory. A create-only put (If-None-Match: *)
// needs no lock: it links the staged file to the key, which link(2) does
// only if the key does not exist. flock does not work on every network file
// system; keep the root on a local disk.
//
// ETags are the lowercase hex SHA-256 of the content, unquoted. A put
// computes it while streaming and caches it in the extended attribute
// user.dhsi.etag together with the file's size and mtime; a file without a
// valid cache entry (copied in by hand, edited in place, or on a file system
// without user xattrs) is hashed when its ETag is needed. Because the ETag
// is the content's hash, an unconditional put of identical bytes keeps the
// ETag, which the store contract allows.
//
// LastModified is the file's mtime, that is, this machine's clock.
//
// Keys map directly to paths, so keys nest only as the file system allows: a
// put of "a" while "a/b" exists (or the reverse) is rejected with
// store.ErrInvalidKey. On a case-insensitive file system "A" and "a" would
// be one object, which breaks the contract; use a case-sensitive one.
package localfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dhsi/dhsi/store"
)

const (
	// reservedPrefix marks root-level names the store keeps for itself.
	reservedPrefix = ".dhsi-"
	tmpDirName     = ".dhsi-tmp"
	lockDirName    = ".dhsi-locks"

	// etagXattr caches "v1 <size> <mtime-ns> <hex sha-256>" on each object.
	etagXattr = "user.dhsi.etag"

	filePerm = 0o644
	dirPerm  = 0o755
)

// Store is a store.Store on a local directory. It is safe for concurrent
// use, including by several processes opening the same directory.
type Store struct {
	root  string // absolute and clean
	tmp   string // root/.dhsi-tmp
	locks string // root/.dhsi-locks
}

var _ store.Store = (*Store)(nil)

// Open returns the store rooted at dir, creating dir and the hidden
// directories if needed.
func Open(dir string) (*Store, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localfs: open %q: %w", dir, err)
	}
	s := &Store{
		root:  root,
		tmp:   filepath.Join(root, tmpDirName),
		locks: filepath.Join(root, lockDirName),
	}
	for _, d := range []string{s.root, s.tmp, s.locks} {
		if err := os.MkdirAll(d, dirPerm); err != nil {
			return nil, fmt.Errorf("localfs: open %q: %w", dir, err)
		}
	}
	return s, nil
}

// String implements store.Store.
func (s *Store) String() string { return "file://" + s.root }

// LocalPath returns the file that holds key, for readers such as DuckDB that
// want a path. The file may not exist. Reading it is safe while puts run,
// because puts replace the file by rename and never write into it.
func (s *Store) LocalPath(key string) (string, error) {
	return s.path(key)
}

func (s *Store) path(key string) (string, error) {
	if err := store.ValidateKey(key); err != nil {
		return "", err
	}
	if first, _, _ := strings.Cut(key, "/"); strings.HasPrefix(first, reservedPrefix) {
		return "", fmt.Errorf("localfs: key %q: names starting with %q are reserved: %w",
			key, reservedPrefix, store.ErrInvalidKey)
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, store.Attrs, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, store.Attrs{}, err
	}
	f, attrs, err := openObject(p, key)
	if err != nil {
		return nil, store.Attrs{}, fmt.Errorf("localfs: get %q: %w", key, err)
	}
	return f, attrs, nil
}

// GetRange implements store.Store.
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, attrs, err := openObject(p, key)
	if err != nil {
		return nil, fmt.Errorf("localfs: get range of %q: %w", key, err)
	}
	if off < 0 || off > attrs.Size {
		f.Close()
		return nil, fmt.Errorf("localfs: get range of %q: offset %d, size %d: %w",
			key, off, attrs.Size, store.ErrInvalidRange)
	}
	if n < 0 || n > attrs.Size-off {
		n = attrs.Size - off
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, nil
}

// Head implements store.Store.
func (s *Store) Head(ctx context.Context, key string) (store.Attrs, error) {
	p, err := s.path(key)
	if err != nil {
		return store.Attrs{}, err
	}
	attrs, err := headObject(p, key)
	if err != nil {
		return store.Attrs{}, fmt.Errorf("localfs: head %q: %w", key, err)
	}
	return attrs, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, cond store.Cond) (store.Attrs, error) {
	p, err := s.path(key)
	if err != nil {
		return store.Attrs{}, err
	}
	if err := cond.Validate("put"); err != nil {
		return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, err)
	}
	// Stage and fsync outside the lock: only the check and the rename need it.
	tmp, attrs, err := s.stage(ctx, key, r)
	if err != nil {
		return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, err)
	}
	installed := false
	defer func() {
		if !installed {
			os.Remove(tmp)
		}
	}()

	if cond.IfNoneMatch {
		// create-only: link(2) fails if the key exists, atomically, so no
		// lock is needed. Every locked operation on the key checks
		// existence before it acts, and a link can only create the key, so
		// it cannot slip between another operation's check and its rename
		// or unlink in a way that changes that operation's outcome. This
		// saves creating and unlinking a lock file: a create-only put is
		// how every immutable object (Parquet, index parts) is written.
		if err := s.link(tmp, p); err != nil {
			if errors.Is(err, fs.ErrExist) {
				if fi, serr := os.Lstat(p); serr == nil && fi.IsDir() {
					return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, nestError(syscall.EISDIR))
				}
				return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, store.ErrPreconditionFailed)
			}
			return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, nestError(err))
		}
		return attrs, nil // the deferred Remove drops the staging name
	}

	l, err := s.lock(ctx, key)
	if err != nil {
		return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, err)
	}
	defer l.unlock()

	if cond != (store.Cond{}) {
		cur, err := headObject(p, key)
		exists := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, err)
		}
		if (cond.IfNoneMatch && exists) || (cond.IfMatch != "" && (!exists || cur.ETag != cond.IfMatch)) {
			return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, store.ErrPreconditionFailed)
		}
	}
	if err := s.install(tmp, p); err != nil {
		return store.Attrs{}, fmt.Errorf("localfs: put %q: %w", key, nestError(err))
	}
	installed = true
	return attrs, nil
}

// stage writes r to a new file in the staging directory, caches its ETag
// and fsyncs it. The caller removes the file if it does not rename it.
func (s *Store) stage(ctx context.Context, key string, r io.Reader) (name string, _ store.Attrs, err error) {
	f, err := os.CreateTemp(s.tmp, "put-*")
	if err != nil {
		return "", store.Attrs{}, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	size, err := io.Copy(io.MultiWriter(f, h), store.ContextReader(ctx, r))
	if err != nil {
		return "", store.Attrs{}, err
	}
	if err := f.Chmod(filePerm); err != nil {
		return "", store.Attrs{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		return "", store.Attrs{}, err
	}
	etag := store.ETag(hex.EncodeToString(h.Sum(nil)))
	// The cache is set before the fsync so it is as durable as the content.
	cacheETag(f, fi, etag)
	if err := f.Sync(); err != nil {
		return "", store.Attrs{}, err
	}
	if err := f.Close(); err != nil {
		return "", store.Attrs{}, err
	}
	return f.Name(), store.Attrs{Key: key, Size: size, ETag: etag, LastModified: fi.ModTime()}, nil
}

// install renames the staged file tmp to p, creating parent directories,
// and makes the rename durable.
func (s *Store) install(tmp, p string) error { return s.place(tmp, p, os.Rename) }

// link creates p as a second name of the staged file tmp (failing with
// fs.ErrExist if p exists), creating parent directories, and makes it
// durable.
func (s *Store) link(tmp, p string) error { return s.place(tmp, p, os.Link) }

// place gives the staged file tmp the name p with op (rename or link).
func (s *Store) place(tmp, p string, op func(oldname, newname string) error) error {
	dir := filepath.Dir(p)
	// A concurrent Delete of a sibling key may prune a parent directory
	// between mkdirs and op (it holds another key's lock), so an ENOENT
	// from op is retried a few times.
	for attempt := 0; ; attempt++ {
		if err := s.mkdirs(dir); err != nil {
			return err
		}
		err := op(tmp, p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt == 10 {
			return err
		}
	}
	return syncDir(dir)
}

// mkdirs is os.MkdirAll below the root that also fsyncs the parent of each
// directory it creates, so that a durable rename is reachable after a crash.
func (s *Store) mkdirs(dir string) error {
	if dir == s.root {
		return nil
	}
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if err := s.mkdirs(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, dirPerm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// nestError turns the errors a file system gives for a file-versus-directory
// clash into the store's answer for nesting keys.
func nestError(err error) error {
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) ||
		errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("key nests with an existing key (%w): %w", err, store.ErrInvalidKey)
	}
	return err
}

// AtomicConditionalDelete reports that a conditional Delete is atomic with
// a concurrent Put (both hold the key's flock): store.AtomicDeleter.
func (s *Store) AtomicConditionalDelete() bool { return true }

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, cond store.Cond) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := cond.Validate("delete"); err != nil {
		return fmt.Errorf("localfs: delete %q: %w", key, err)
	}
	l, err := s.lock(ctx, key)
	if err != nil {
		return fmt.Errorf("localfs: delete %q: %w", key, err)
	}
	defer l.unlock()

	if cond.IfMatch != "" {
		cur, err := headObject(p, key)
		if err != nil {
			return fmt.Errorf("localfs: delete %q: %w", key, err)
		}
		if cur.ETag != cond.IfMatch {
			return fmt.Errorf("localfs: delete %q: %w", key, store.ErrPreconditionFailed)
		}
	}
	// unlink, not os.Remove: a directory at p holds other keys and is not
	// this object, and os.Remove would delete it if it were empty.
	switch err := unix.Unlink(p); {
	case err == nil:
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
		return nil // missing: not an error (S3 semantics)
	default:
		return fmt.Errorf("localfs: delete %q: %w", key, &fs.PathError{Op: "unlink", Path: p, Err: err})
	}
	dir := filepath.Dir(p)
	// a concurrent Delete of the last sibling may have pruned dir already:
	// the entry went with it, and the pruner synced dir's parent
	if err := syncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("localfs: delete %q: %w", key, err)
	}
	s.prune(dir)
	return nil
}

// prune removes the empty directories from dir up to (not including) the
// root, so deleted keys leave no trace in the tree. It is best-effort: rmdir
// fails harmlessly on a directory that is not empty or already gone.
func (s *Store) prune(dir string) {
	for dir != s.root && strings.HasPrefix(dir, s.root+string(filepath.Separator)) {
		if unix.Rmdir(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
		syncDir(dir)
	}
}

// List implements store.Store. It walks the tree depth-first, holding one
// directory's entries at a time per level, sorted so that keys come out in
// byte order (see walk).
func (s *Store) List(ctx context.Context, prefix string, fn func(store.Attrs) error) error {
	// Start at the deepest directory the prefix names completely. If that
	// directory part is no valid key prefix, no valid key starts with prefix
	// (and it must not be walked: it could be "../").
	dirPart := prefix[:strings.LastIndex(prefix, "/")+1]
	if dirPart != "" {
		if _, err := s.path(strings.TrimSuffix(dirPart, "/")); err != nil {
			return nil
		}
	}
	if err := s.walk(ctx, dirPart, prefix, fn); err != nil {
		if errors.Is(err, errStop) {
			return err.(stopError).err
		}
		return fmt.Errorf("localfs: list %q: %w", prefix, err)
	}
	return nil
}

// errStop marks an error returned by List's fn, which List returns as is.
var errStop = errors.New("stop")

type stopError struct{ err error }

func (e stopError) Error() string        { return e.err.Error() }
func (e stopError) Is(target error) bool { return target == errStop }

// walk lists the keys under the directory rel ("" or "a/b/") that start
// with prefix. A file's key is rel+name and a directory's keys all start
// with rel+name+"/", so sorting the entries by name, with "/" appended to
// directory names, yields the keys in byte order: no name contains "/", so
// two such sort strings differ before either ends, and every key below a
// directory sorts where its sort string does. (Sorting by bare name would
// put "a/b" before "a-c", since "a" < "a-c", though '-' < '/'.)
func (s *Store) walk(ctx context.Context, rel, prefix string, fn func(store.Attrs) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Join(s.root, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // pruned by a concurrent Delete, or a file: no keys below
	}
	if err != nil {
		return err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	type entry struct {
		name, sortKey string
		dir           bool
	}
	list := make([]entry, 0, len(ents))
	for _, e := range ents {
		if rel == "" && strings.HasPrefix(e.Name(), reservedPrefix) {
			continue
		}
		var dir bool
		switch t := e.Type(); {
		case t.IsDir():
			dir = true
		case t.IsRegular():
		case t&fs.ModeSymlink != 0:
			// A symlink to a file is an object; one to a directory is not
			// followed, which also rules out cycles.
			fi, err := os.Stat(filepath.Join(s.root, filepath.FromSlash(rel+e.Name())))
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
		default:
			continue // devices, sockets, FIFOs are not objects
		}
		sk := e.Name()
		if dir {
			sk += "/"
		}
		list = append(list, entry{e.Name(), sk, dir})
	}
	slices.SortFunc(list, func(a, b entry) int { return strings.Compare(a.sortKey, b.sortKey) })

	for _, e := range list {
		key := rel + e.name
		if e.dir {
			sub := key + "/"
			if strings.HasPrefix(sub, prefix) || strings.HasPrefix(prefix, sub) {
				if err := s.walk(ctx, sub, prefix, fn); err != nil {
					return err
				}
			}
			continue
		}
		if !strings.HasPrefix(key, prefix) || store.ValidateKey(key) != nil {
			continue // a file named by hand with, say, invalid UTF-8
		}
		attrs, err := headObject(filepath.Join(s.root, filepath.FromSlash(key)), key)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since ReadDir: it was not there for the whole listing
		}
		if err != nil {
			return err
		}
		if err := fn(attrs); err != nil {
			return stopError{err}
		}
	}
	return nil
}

// openObject opens the object file p and reads its Attrs from the open file,
// so that they describe exactly the content the file returns.
func openObject(p, key string) (*os.File, store.Attrs, error) {
	// O_NONBLOCK: opening a FIFO someone left in the tree must not hang.
	// It has no effect on regular files.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, store.Attrs{}, store.ErrNotFound
		}
		return nil, store.Attrs{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, store.Attrs{}, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, store.Attrs{}, store.ErrNotFound // a directory of other keys
	}
	etag, err := etagOf(f, fi)
	if err != nil {
		f.Close()
		return nil, store.Attrs{}, err
	}
	return f, store.Attrs{Key: key, Size: fi.Size(), ETag: etag, LastModified: fi.ModTime()}, nil
}

func headObject(p, key string) (store.Attrs, error) {
	f, attrs, err := openObject(p, key)
	if err != nil {
		return store.Attrs{}, err
	}
	f.Close()
	return attrs, nil
}

// etagOf returns the cached ETag of f if the cache matches f's size and
// mtime, and otherwise hashes f and refreshes the cache.
func etagOf(f *os.File, fi fs.FileInfo) (store.ETag, error) {
	if etag, ok := cachedETag(f, fi); ok {
		return etag, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, fi.Size())); err != nil {
		return "", err
	}
	etag := store.ETag(hex.EncodeToString(h.Sum(nil)))
	cacheETag(f, fi, etag)
	return etag, nil
}

func cacheValue(fi fs.FileInfo, etag store.ETag) string {
	return fmt.Sprintf("v1 %d %d %s", fi.Size(), fi.ModTime().UnixNano(), etag)
}

func cachedETag(f *os.File, fi fs.FileInfo) (store.ETag, bool) {
	buf := make([]byte, 128)
	var n int
	var err error
	if cerr := control(f, func(fd int) { n, err = unix.Fgetxattr(fd, etagXattr, buf) }); cerr != nil || err != nil {
		return "", false
	}
	fields := strings.Fields(string(buf[:n]))
	if len(fields) != 4 || fields[0] != "v1" {
		return "", false
	}
	etag := store.ETag(fields[3])
	if string(buf[:n]) != cacheValue(fi, etag) {
		return "", false // stale: the file was changed in place
	}
	return etag, true
}

// cacheETag records etag on f. Failure is fine (no user xattrs, read-only
// file system): the ETag is then recomputed on demand.
func cacheETag(f *os.File, fi fs.FileInfo, etag store.ETag) {
	v := []byte(cacheValue(fi, etag))
	control(f, func(fd int) { unix.Fsetxattr(fd, etagXattr, v, 0) })
}

func control(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// keyLock is an exclusive flock(2) on one key's lock file.
type keyLock struct {
	f    *os.File
	path string
}

// lock takes the key's lock, polling so that ctx can cancel the wait.
//
// The lock file is unlinked on every unlock so the lock directory does not
// grow with the key space. A waiter may therefore acquire a file that has
// since been unlinked, which no longer excludes anyone; it checks that its
// file is still the one at the path and starts over if not. Only a holder
// unlinks, so a file still at the path after acquiring it is the lock.
func (s *Store) lock(ctx context.Context, key string) (*keyLock, error) {
	sum := sha256.Sum256([]byte(key))
	path := filepath.Join(s.locks, hex.EncodeToString(sum[:16]))
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, filePerm)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if err := flockCtx(ctx, f); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock: %w", err)
		}
		held, err := samePath(f, path)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock: %w", err)
		}
		if held {
			return &keyLock{f: f, path: path}, nil
		}
		f.Close() // releases the stale lock
	}
}

func (l *keyLock) unlock() {
	os.Remove(l.path) // while still holding the lock; see Store.lock
	l.f.Close()       // releases the flock
}

func flockCtx(ctx context.Context, f *os.File) error {
	wait := 50 * time.Microsecond
	for {
		var err error
		if cerr := control(f, func(fd int) { err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) }); cerr != nil {
			return cerr
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return &fs.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Millisecond)
	}
}

// samePath reports whether the open file f is still the file at path.
func samePath(f *os.File, path string) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, pi), nil
}

// SweepTemp removes staged puts (.dhsi-tmp/put-*) older than cutoff: what a
// process killed mid-put left (store.TempSweeper). A live put is never that
// old: it renames or removes its file within the call.
func (s *Store) SweepTemp(cutoff time.Time, dryRun bool) (files int, bytes int64, err error) {
	entries, err := os.ReadDir(s.tmp)
	if err != nil {
		return 0, 0, fmt.Errorf("localfs: sweep %s: %w", s.tmp, err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "put-") {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cutoff) {
			continue
		}
		if !dryRun {
			if err := os.Remove(filepath.Join(s.tmp, e.Name())); err != nil && !os.IsNotExist(err) {
				return files, bytes, fmt.Errorf("localfs: sweep: %w", err)
			}
		}
		files++
		bytes += fi.Size()
	}
	return files, bytes, nil
}

var _ store.TempSweeper = (*Store)(nil)
