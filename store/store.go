// Package store owns bytes on object storage and the one primitive that every
// correctness argument in DHSI rests on: a conditional put, i.e. a
// compare-and-swap on an object's ETag.
//
// Two backends implement Store: a local directory (the embedded default,
// package store/localfs) and S3-compatible object storage (package
// store/s3store). Both are checked by one conformance suite,
// store/storetest, which asserts every sentence of the Store documentation.
//
// Contract (each sentence is asserted by storetest):
//
//   - Keys are non-empty, slash-separated UTF-8 strings without a leading
//     slash, without "." or ".." segments, without empty segments and
//     without NUL bytes; an invalid key is rejected with ErrInvalidKey
//     before any I/O.
//   - Keys should not nest: while "a/b" exists, "a" may not be creatable, and
//     the other way round, because a backend that maps keys to file paths
//     (localfs, S3 servers on a POSIX file system) cannot hold a file and a
//     directory of the same name. Such a backend rejects the nesting put
//     with ErrInvalidKey and changes nothing; AWS S3 accepts it.
//   - Get returns the whole object and its Attrs; a missing key returns
//     ErrNotFound.
//   - GetRange returns n bytes starting at off (fewer if the object ends
//     sooner; n < 0 means "to the end"); off equal to the size, or n == 0,
//     gives an empty body; off beyond the end, or negative, returns
//     ErrInvalidRange; a missing key returns ErrNotFound.
//   - Head returns Attrs without the body; a missing key returns ErrNotFound.
//   - Put stores the whole content atomically: a reader sees the old object
//     or the new one, never a part. It returns the new object's Attrs
//     (LastModified to the store's precision, which may be one second).
//   - Put with Cond{IfNoneMatch: true} succeeds only if no object exists at
//     key; with Cond{IfMatch: e} only if an object exists whose ETag is e.
//     Otherwise it returns ErrPreconditionFailed and changes nothing. Of N
//     concurrent conditional puts that all satisfied the condition when they
//     started, exactly one succeeds.
//   - A put that fails with ErrPreconditionFailed or ErrInvalidKey, or
//     because reading r failed (that error is returned, wrapped) or ctx was
//     canceled before the put was sent, leaves nothing visible and the
//     previous version intact. Any other error from a remote backend (a
//     timeout, a dropped connection, a 5xx) leaves the outcome unknown: the
//     put may have taken effect, so callers re-read rather than assume.
//   - ETags are opaque; equal content under the same key may or may not give
//     equal ETags, but a put that changes the content always gives a
//     different ETag than the one it replaced. (So IfMatch does not detect
//     an A-B-A sequence of contents; objects that are CAS'd carry a version.)
//   - Delete removes the object. Deleting a missing key is not an error (S3
//     semantics). Delete with Cond{IfMatch: e} removes the object only if its
//     ETag is e; if the object exists with another ETag it returns
//     ErrPreconditionFailed and changes nothing; if it is missing it returns
//     ErrNotFound. Callers must not rely on a conditional delete being
//     atomic with a concurrent put (versitygw v1.8.0's is not): a put landing
//     between its check and its removal may be lost. Code that deletes
//     objects others write first fences them with a conditional put
//     (compiler I3), unless the store implements AtomicDeleter.
//   - DeleteMany (optional, MultiDeleter; the function DeleteMany on any
//     store) is Delete of each item with its condition, one error per
//     item, except that a conditional delete of a missing key may be
//     reported as done (nil) rather than ErrNotFound. It is not atomic:
//     some items may be deleted and others not.
//   - List calls fn for every object whose key starts with prefix, in
//     ascending byte order of key, paginating internally; an error returned by
//     fn stops the listing and is returned. Objects put before List starts and
//     not deleted before it ends are listed exactly once.
//   - LastModified is the store's clock, not the caller's: it is what lock
//     staleness is judged against.
package store

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dhsi/dhsi/internal/parallel"
)

// Sentinel errors. Backends translate their native errors into these, and
// callers test with errors.Is.
var (
	// ErrNotFound: no object exists at the key.
	ErrNotFound = errors.New("store: not found")
	// ErrPreconditionFailed: a Cond did not hold (S3 412, and S3 409 on a
	// conditional-write race).
	ErrPreconditionFailed = errors.New("store: precondition failed")
	// ErrInvalidKey: the key breaks the key rules above.
	ErrInvalidKey = errors.New("store: invalid key")
	// ErrInvalidRange: a range starts past the end of the object.
	ErrInvalidRange = errors.New("store: invalid range")
)

// ETag identifies one version of one object. It is opaque; compare for
// equality only. The zero value means "no ETag".
type ETag string

// Attrs describe one object.
type Attrs struct {
	Key          string
	Size         int64
	ETag         ETag
	LastModified time.Time // the store's clock
}

// Cond is the condition of a Put or Delete. The zero value is
// unconditional. IfMatch and IfNoneMatch are mutually exclusive.
type Cond struct {
	// IfMatch: the operation applies only if the object exists with this ETag.
	IfMatch ETag
	// IfNoneMatch: the put applies only if no object exists (create-only).
	IfNoneMatch bool
}

// Validate reports whether c is a well-formed condition for op ("put" or
// "delete").
func (c Cond) Validate(op string) error {
	if c.IfMatch != "" && c.IfNoneMatch {
		return errors.New("store: IfMatch and IfNoneMatch are mutually exclusive")
	}
	if op == "delete" && c.IfNoneMatch {
		return errors.New("store: IfNoneMatch is not a delete condition")
	}
	return nil
}

// Store is object storage with compare-and-swap. See the package comment for
// the contract every implementation keeps.
type Store interface {
	Get(ctx context.Context, key string) (io.ReadCloser, Attrs, error)
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	Head(ctx context.Context, key string) (Attrs, error)
	Put(ctx context.Context, key string, r io.Reader, cond Cond) (Attrs, error)
	Delete(ctx context.Context, key string, cond Cond) error
	List(ctx context.Context, prefix string, fn func(Attrs) error) error
	// String names the store for logs and errors, e.g. "file:///data" or
	// "s3://bucket/prefix".
	String() string
}

// ValidateKey enforces the key rules of the package comment.
func ValidateKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return errInvalidKey(key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return errInvalidKey(key)
		}
	}
	if strings.ContainsRune(key, 0) || !utf8.ValidString(key) {
		return errInvalidKey(key)
	}
	return nil
}

func errInvalidKey(key string) error {
	return &keyError{key: key}
}

type keyError struct{ key string }

func (e *keyError) Error() string { return "store: invalid key " + quote(e.key) }
func (e *keyError) Unwrap() error { return ErrInvalidKey }

func quote(s string) string { return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\"" }

// ReadAll reads a whole object. It is a convenience for small objects
// (manifests, locks, schemas).
func ReadAll(ctx context.Context, s Store, key string) ([]byte, Attrs, error) {
	rc, attrs, err := s.Get(ctx, key)
	if err != nil {
		return nil, Attrs{}, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, Attrs{}, err
	}
	return b, attrs, nil
}

// ContextReader returns a reader that fails once ctx is done, so a canceled
// put stops consuming its body.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx: ctx, r: r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// TempSweeper is implemented by stores that stage writes in files of their
// own (the local-directory store's .dhsi-tmp/put-*): a process killed
// mid-put leaves one behind, which SweepTemp removes once it is older than
// cutoff (dhsi gc). dryRun counts without removing.
type TempSweeper interface {
	SweepTemp(cutoff time.Time, dryRun bool) (files int, bytes int64, err error)
}

// ListerFrom is implemented by stores that can start a listing past a key
// (S3's StartAfter): ListFrom is List restricted to keys greater than
// startAfter, so a listing the caller stops early costs what it returned,
// not the whole prefix.
type ListerFrom interface {
	ListFrom(ctx context.Context, prefix, startAfter string, fn func(Attrs) error) error
}

// ListFrom calls fn, in ascending byte order, for the objects of prefix
// whose key is greater than startAfter: with the store's own ListerFrom
// when it has one, else by skipping the first keys of a List.
func ListFrom(ctx context.Context, s Store, prefix, startAfter string, fn func(Attrs) error) error {
	if lf, ok := s.(ListerFrom); ok {
		return lf.ListFrom(ctx, prefix, startAfter, fn)
	}
	return s.List(ctx, prefix, func(a Attrs) error {
		if a.Key <= startAfter {
			return nil
		}
		return fn(a)
	})
}

// AtomicDeleter is implemented by stores whose Delete with Cond{IfMatch} is
// atomic with a concurrent Put of the same key (the local-directory store:
// one flock covers both). Callers may then skip fencing a delete with a
// conditional put. A store that cannot promise it does not implement it.
type AtomicDeleter interface {
	AtomicConditionalDelete() bool
}

// DeleteItem is one key for DeleteMany and the condition of its delete.
type DeleteItem struct {
	Key  string
	Cond Cond
}

// MultiDeleter is implemented by stores that delete many keys in one
// request (S3's DeleteObjects, up to 1,000 keys a request). DeleteMany
// returns one error per item, in order (see the contract).
type MultiDeleter interface {
	DeleteMany(ctx context.Context, items []DeleteItem) []error
	// BulkDelete says what DeleteMany costs: bulk, whether it sends many
	// keys in one request at all; conditional, whether items with IfMatch
	// go in bulk too. Where not (a server that ignores the per-key ETag of
	// a DeleteObjects, as versitygw v1.8.0 does), each conditional item
	// is a Delete of its own and only unconditional items go in bulk.
	BulkDelete(ctx context.Context) (bulk, conditional bool)
}

// DeleteManyParallel is how many Deletes DeleteMany runs at once on a
// store that is no MultiDeleter.
const DeleteManyParallel = 16

// DeleteMany deletes items with st's own DeleteMany, or else with one
// Delete each, DeleteManyParallel at a time. It returns one error per
// item, in order.
func DeleteMany(ctx context.Context, st Store, items []DeleteItem) []error {
	if len(items) == 0 {
		return nil
	}
	if md, ok := st.(MultiDeleter); ok {
		return md.DeleteMany(ctx, items)
	}
	return DeleteEach(ctx, st, items)
}

// DeleteEach is DeleteMany by one Delete per item, DeleteManyParallel at
// a time: what a store without a bulk delete does, and what a
// MultiDeleter does with the items it cannot send in bulk.
func DeleteEach(ctx context.Context, st Store, items []DeleteItem) []error {
	errs := make([]error, len(items))
	parallel.ForEach(len(items), DeleteManyParallel, func(i int) {
		errs[i] = st.Delete(ctx, items[i].Key, items[i].Cond)
	})
	return errs
}

// BulkDelete reports st's MultiDeleter.BulkDelete, or false, false for a
// store that deletes one key a request.
func BulkDelete(ctx context.Context, st Store) (bulk, conditional bool) {
	if md, ok := st.(MultiDeleter); ok {
		return md.BulkDelete(ctx)
	}
	return false, false
}
