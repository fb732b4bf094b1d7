// Package s3store is the store.Store on S3 and S3-compatible servers
// (tested against versitygw), built on aws-sdk-go-v2.
//
// Conditional puts are S3 conditional writes: If-None-Match: * and
// If-Match: <etag>. S3 answers a failed condition with 412, and a race
// between conditional writes with 409; both become
// store.ErrPreconditionFailed. An If-Match put of a missing key gets 404
// from S3, which the contract also calls a failed precondition.
//
// Conditional requests are sent once, never retried. A retry after a lost
// response would find the first attempt's own write and fail its
// precondition, reporting a lost race for a put that in fact won. So a
// conditional put that fails with a timeout or a 5xx has an unknown
// outcome, as the store contract says; the caller re-reads. Unconditional
// requests use the SDK's standard retryer (which never retries a 412),
// without its client-side retry quota.
//
// ETags are the server's, quotes included (for a single PUT, usually the
// quoted hex MD5 of the content). The LastModified that Put returns is the
// Date of the server's response, since PutObject returns no Last-Modified;
// like Last-Modified it has whole seconds.
//
// Put sends one PutObject with a known length, so it is limited to S3's
// 5 GiB. The SDK must be able to rewind the body to sign it, so a body that
// cannot seek is first read into memory, or into a temporary file past
// 8 MiB; a reader that fails leaves nothing sent.
//
// DeleteMany (store.MultiDeleter) sends DeleteObjects of up to 1,000 keys,
// each key's IfMatch as its ETag element. A server that ignores that
// element (versitygw v1.8.0 deletes regardless) is found out by a probe the
// first time, and then gets each conditional item as a DeleteObject of its
// own.
//
// The SDK's default flexible checksums (a CRC on every PUT and checksum
// validation of every GET, on by default since 2025) are only used when an
// operation requires them: several S3-compatible servers reject or mangle
// the trailing-checksum encoding, and SigV4 already signs the payload hash
// over plain HTTP.
package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithymiddleware "github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/dhsi/dhsi/internal/parallel"
	"github.com/dhsi/dhsi/store"
)

const (
	// maxPutSize is S3's limit for one PutObject.
	maxPutSize = 5 << 30
	// memBufferSize is how much of an unseekable body is held in memory
	// before the rest goes to a temporary file.
	memBufferSize = 8 << 20
)

// Store is a store.Store on one bucket and prefix. It is safe for
// concurrent use.
type Store struct {
	client  *s3.Client
	bucket  string
	prefix  string
	logger  *slog.Logger
	retries *atomic.Int64 // attempts the SDK's retryer made again (Retries)
	sent    *sentCounts   // requests sent, by operation (Requests)
	probe   *bulkProbe    // whether the server checks DeleteObjects' ETags
}

// sentCounts counts the HTTP requests a store sent, by S3 operation.
type sentCounts struct {
	mu sync.Mutex
	n  map[string]int64
}

// Requests returns how many HTTP requests the store has sent to the server
// since it was opened, by S3 operation ("GetObject", "DeleteObjects", …),
// retries included: what a benchmark divides by its records.
func (s *Store) Requests() map[string]int64 {
	s.sent.mu.Lock()
	defer s.sent.mu.Unlock()
	return maps.Clone(s.sent.n)
}

// countRequests is a finalize step after the retry loop's attempt: it runs
// once per request sent.
func (c *sentCounts) countRequests(stack *smithymiddleware.Stack) error {
	return stack.Finalize.Add(smithymiddleware.FinalizeMiddlewareFunc("dhsiCountRequests",
		func(ctx context.Context, in smithymiddleware.FinalizeInput, next smithymiddleware.FinalizeHandler) (smithymiddleware.FinalizeOutput, smithymiddleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			c.mu.Lock()
			c.n[op]++
			c.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), smithymiddleware.After)
}

// Retries is how many times the SDK retried a request since the store was
// opened (a request that needed three attempts counts two).
func (s *Store) Retries() int64 { return s.retries.Load() }

// countingRetryer is the SDK's standard retryer, counting retries: the SDK
// asks RetryDelay once before each retry, and only then.
type countingRetryer struct {
	aws.RetryerV2
	retries *atomic.Int64
}

func (r countingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	r.retries.Add(1)
	return r.RetryerV2.RetryDelay(attempt, err)
}

var _ store.Store = (*Store)(nil)

// maxIdleConns bounds the idle connections kept to the endpoint: above the
// most requests DHSI runs at once against one store.
const maxIdleConns = 256

// Open connects to the bucket of cfg and checks that it is reachable. A nil
// logger discards the SDK's warnings.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (*Store, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	retries := new(atomic.Int64)
	sent := &sentCounts{n: map[string]int64{}}
	opts := []func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		config.WithLogger(sdkLogger{logger}),
		config.WithRetryer(func() aws.Retryer {
			return countingRetryer{retry.NewStandard(func(o *retry.StandardOptions) {
				if cfg.MaxAttempts > 0 {
					o.MaxAttempts = cfg.MaxAttempts
				}
				// The client-side retry quota fails requests outright after
				// a burst of errors, even though the server would recover.
				o.RateLimiter = ratelimit.None
			}), retries}
		}),
	}
	// The SDK's default transport keeps 10 idle connections per host; DHSI
	// runs more requests than that at once against one store (compactions,
	// ingest uploads, cold reads), and each connection past the tenth was
	// closed after use and dialed again.
	opts = append(opts, config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns = maxIdleConns
		tr.MaxIdleConnsPerHost = maxIdleConns
	})))
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3store: open: load aws config: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = aws.ToString(awsCfg.BaseEndpoint) // AWS_ENDPOINT_URL
	}
	pathStyle := endpoint != ""
	if cfg.PathStyle != nil {
		pathStyle = *cfg.PathStyle
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = pathStyle
		o.APIOptions = append(o.APIOptions, sent.countRequests)
	})
	s := &Store{client: client, bucket: cfg.Bucket, prefix: cfg.Prefix, logger: logger, retries: retries, sent: sent, probe: &bulkProbe{}}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
		return nil, fmt.Errorf("s3store: open %s: head bucket: %w", s, err)
	}
	return s, nil
}

// String implements store.Store.
func (s *Store) String() string { return "s3://" + s.bucket + "/" + s.prefix }

func (s *Store) objectKey(key string) (*string, error) {
	if err := store.ValidateKey(key); err != nil {
		return nil, err
	}
	return aws.String(s.prefix + key), nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, store.Attrs, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, store.Attrs{}, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: k})
	if err != nil {
		return nil, store.Attrs{}, opError("get", key, err, false)
	}
	return out.Body, store.Attrs{
		Key:          key,
		Size:         aws.ToInt64(out.ContentLength),
		ETag:         store.ETag(aws.ToString(out.ETag)),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// GetRange implements store.Store.
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("s3store: get range of %q: offset %d: %w", key, off, store.ErrInvalidRange)
	}
	if n == 0 {
		// HTTP cannot ask for zero bytes: "bytes=5-4" is ignored and
		// returns the whole object.
		return s.emptyRange(ctx, key, off)
	}
	rng := fmt.Sprintf("bytes=%d-", off)
	if n > 0 {
		rng += fmt.Sprint(off + n - 1)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: k, Range: &rng})
	if err != nil {
		err = opError("get range of", key, err, false)
		if errors.Is(err, store.ErrInvalidRange) {
			// S3 refuses a range that starts at the end, which the contract
			// answers with an empty body, and any range of an empty object.
			return s.emptyRange(ctx, key, off)
		}
		return nil, err
	}
	if out.ContentRange == nil {
		// The server ignored Range and sent the whole object: cut it here.
		size := aws.ToInt64(out.ContentLength)
		if off > size {
			out.Body.Close()
			return nil, fmt.Errorf("s3store: get range of %q: offset %d, size %d: %w", key, off, size, store.ErrInvalidRange)
		}
		if _, err := io.CopyN(io.Discard, out.Body, off); err != nil {
			out.Body.Close()
			return nil, fmt.Errorf("s3store: get range of %q: %w", key, err)
		}
		if n < 0 {
			n = size - off
		}
		return struct {
			io.Reader
			io.Closer
		}{io.LimitReader(out.Body, n), out.Body}, nil
	}
	return out.Body, nil
}

// emptyRange answers a range that S3 cannot express or refuses: an empty
// body if off is at most the object's size, else ErrInvalidRange.
func (s *Store) emptyRange(ctx context.Context, key string, off int64) (io.ReadCloser, error) {
	attrs, err := s.Head(ctx, key)
	if err != nil {
		return nil, err
	}
	if off > attrs.Size {
		return nil, fmt.Errorf("s3store: get range of %q: offset %d, size %d: %w", key, off, attrs.Size, store.ErrInvalidRange)
	}
	return io.NopCloser(strings.NewReader("")), nil
}

// Head implements store.Store.
func (s *Store) Head(ctx context.Context, key string) (store.Attrs, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return store.Attrs{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: k})
	if err != nil {
		return store.Attrs{}, opError("head", key, err, false)
	}
	return store.Attrs{
		Key:          key,
		Size:         aws.ToInt64(out.ContentLength),
		ETag:         store.ETag(aws.ToString(out.ETag)),
		LastModified: aws.ToTime(out.LastModified),
	}, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, cond store.Cond) (store.Attrs, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return store.Attrs{}, err
	}
	if err := cond.Validate("put"); err != nil {
		return store.Attrs{}, fmt.Errorf("s3store: put %q: %w", key, err)
	}
	body, size, cleanup, err := seekableBody(ctx, r)
	if err != nil {
		return store.Attrs{}, fmt.Errorf("s3store: put %q: %w", key, err)
	}
	defer cleanup()
	if size > maxPutSize {
		return store.Attrs{}, fmt.Errorf("s3store: put %q: %d bytes is more than one PutObject takes", key, size)
	}
	in := &s3.PutObjectInput{Bucket: &s.bucket, Key: k, Body: body, ContentLength: aws.Int64(size)}
	var optFns []func(*s3.Options)
	if cond != (store.Cond{}) {
		optFns = append(optFns, noRetry)
		if cond.IfNoneMatch {
			in.IfNoneMatch = aws.String("*")
		} else {
			in.IfMatch = aws.String(string(cond.IfMatch))
		}
	}
	out, err := s.client.PutObject(ctx, in, optFns...)
	if err != nil {
		return store.Attrs{}, opError("put", key, err, cond.IfMatch != "")
	}
	attrs := store.Attrs{Key: key, Size: size, ETag: store.ETag(aws.ToString(out.ETag))}
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok {
		attrs.LastModified, _ = http.ParseTime(raw.Header.Get("Date"))
	}
	if attrs.LastModified.IsZero() {
		// No Date header: ask. The object may have been replaced since,
		// but then by a later put, so its time is an upper bound.
		h, err := s.Head(ctx, key)
		if err != nil {
			return store.Attrs{}, fmt.Errorf("s3store: put %q: the put succeeded but: %w", key, err)
		}
		attrs.LastModified = h.LastModified
	}
	return attrs, nil
}

// noRetry sends a conditional request once; see the package comment.
func noRetry(o *s3.Options) { o.Retryer = retry.AddWithMaxAttempts(o.Retryer, 1) }

// seekableBody returns r as a body the SDK can rewind, and its length.
func seekableBody(ctx context.Context, r io.Reader) (io.ReadSeeker, int64, func(), error) {
	nop := func() {}
	if rs, ok := r.(interface {
		io.ReaderAt
		io.Seeker
	}); ok {
		// *os.File, *bytes.Reader, *strings.Reader: send from the current
		// position to the end without copying.
		cur, err := rs.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, 0, nop, err
		}
		end, err := rs.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, 0, nop, err
		}
		if _, err := rs.Seek(cur, io.SeekStart); err != nil {
			return nil, 0, nop, err
		}
		return io.NewSectionReader(rs, cur, end-cur), end - cur, nop, nil
	}
	cr := store.ContextReader(ctx, r)
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, cr, memBufferSize+1)
	if err == io.EOF {
		return bytes.NewReader(buf.Bytes()), n, nop, nil
	}
	if err != nil {
		return nil, 0, nop, err
	}
	f, err := os.CreateTemp("", "dhsi-s3put-*")
	if err != nil {
		return nil, 0, nop, fmt.Errorf("buffer body: %w", err)
	}
	cleanup := func() {
		f.Close()
		os.Remove(f.Name())
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		cleanup()
		return nil, 0, nop, fmt.Errorf("buffer body: %w", err)
	}
	// At most maxPutSize more: enough to tell an oversized body without
	// copying all of it.
	rest, err := io.CopyN(f, cr, maxPutSize)
	if err != nil && err != io.EOF {
		cleanup()
		return nil, 0, nop, err
	}
	return io.NewSectionReader(f, 0, n+rest), n + rest, cleanup, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, cond store.Cond) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	if err := cond.Validate("delete"); err != nil {
		return fmt.Errorf("s3store: delete %q: %w", key, err)
	}
	in := &s3.DeleteObjectInput{Bucket: &s.bucket, Key: k}
	var optFns []func(*s3.Options)
	if cond.IfMatch != "" {
		// AWS answers a conditional delete of a missing key with 404, but
		// versitygw (v1.8.0) with 204 as if it had deleted something. A
		// HEAD first gives ErrNotFound on both; the conditional DELETE
		// still decides. (On versitygw, an object deleted by someone else
		// between the two is reported as deleted by us.)
		cur, err := s.Head(ctx, key)
		if err != nil {
			return fmt.Errorf("s3store: delete %q: %w", key, err)
		}
		if cur.ETag != cond.IfMatch {
			return fmt.Errorf("s3store: delete %q: %w", key, store.ErrPreconditionFailed)
		}
		in.IfMatch = aws.String(string(cond.IfMatch))
		optFns = append(optFns, noRetry)
	}
	if _, err := s.client.DeleteObject(ctx, in, optFns...); err != nil {
		err = opError("delete", key, err, false)
		if cond.IfMatch == "" && errors.Is(err, store.ErrNotFound) {
			return nil // some S3-compatible servers answer 404; S3 says 204
		}
		return err
	}
	return nil
}

// maxDeleteObjects is the most keys S3 takes in one DeleteObjects.
const maxDeleteObjects = 1000

// deleteObjectsParallel bounds the DeleteObjects requests of one
// DeleteMany in flight at once.
const deleteObjectsParallel = 4

var _ store.MultiDeleter = (*Store)(nil)

// DeleteMany implements store.MultiDeleter with DeleteObjects, up to 1,000
// keys a request, each item's IfMatch sent as its key's ETag. The server
// answers each key on its own: PreconditionFailed (and the 409 of a race)
// becomes ErrPreconditionFailed, NoSuchKey ErrNotFound for a conditional
// item and success for an unconditional one (as Delete), any other code an
// error of that key alone. A request that fails as a whole fails each of
// its items. On a server that ignores those ETags (BulkDelete), each
// conditional item is a Delete of its own instead. A request that carries a
// condition is sent once (see the package comment); one without is retried.
func (s *Store) DeleteMany(ctx context.Context, items []store.DeleteItem) []error {
	errs := make([]error, len(items))
	if len(items) == 0 {
		return errs
	}
	_, conditional := s.BulkDelete(ctx)
	var bulk []int
	var each []store.DeleteItem
	var eachAt []int
	for i, it := range items {
		if err := store.ValidateKey(it.Key); err != nil {
			errs[i] = err
			continue
		}
		if err := it.Cond.Validate("delete"); err != nil {
			errs[i] = fmt.Errorf("s3store: delete %q: %w", it.Key, err)
			continue
		}
		if it.Cond.IfMatch != "" && !conditional {
			each = append(each, it)
			eachAt = append(eachAt, i)
			continue
		}
		bulk = append(bulk, i)
	}
	chunks := (len(bulk) + maxDeleteObjects - 1) / maxDeleteObjects
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		parallel.ForEach(chunks, deleteObjectsParallel, func(c int) {
			s.deleteObjects(ctx, items, bulk[c*maxDeleteObjects:min(len(bulk), (c+1)*maxDeleteObjects)], errs)
		})
	}()
	for j, err := range store.DeleteEach(ctx, s, each) {
		errs[eachAt[j]] = err
	}
	wg.Wait()
	return errs
}

// deleteObjects sends one DeleteObjects for items[idx...] and sets their
// errors.
func (s *Store) deleteObjects(ctx context.Context, items []store.DeleteItem, idx []int, errs []error) {
	objs := make([]types.ObjectIdentifier, len(idx))
	at := make(map[string][]int, len(idx))
	conditional := false
	for j, i := range idx {
		k := s.prefix + items[i].Key
		objs[j] = types.ObjectIdentifier{Key: aws.String(k)}
		if e := items[i].Cond.IfMatch; e != "" {
			objs[j].ETag = aws.String(string(e))
			conditional = true
		}
		at[k] = append(at[k], i)
	}
	var optFns []func(*s3.Options)
	if conditional {
		optFns = append(optFns, noRetry)
	}
	out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: &s.bucket,
		Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)},
	}, optFns...)
	if err != nil {
		for _, i := range idx {
			errs[i] = opError("delete", items[i].Key, err, false)
		}
		return
	}
	for _, e := range out.Errors {
		for _, i := range at[aws.ToString(e.Key)] {
			errs[i] = deleteObjectsError(items[i], e)
		}
	}
}

// deleteObjectsError translates DeleteObjects' answer for one key.
func deleteObjectsError(it store.DeleteItem, e types.Error) error {
	code := aws.ToString(e.Code)
	var sentinel error
	switch code {
	case "NoSuchKey", "NotFound":
		if it.Cond.IfMatch == "" {
			return nil // as Delete: deleting a missing key is no error
		}
		sentinel = store.ErrNotFound
	case "PreconditionFailed", "ConditionalRequestConflict", "OperationAborted":
		sentinel = store.ErrPreconditionFailed
	case "ObjectParentIsFile", "ExistingObjectIsDirectory":
		sentinel = store.ErrInvalidKey
	}
	err := fmt.Errorf("%s: %s", code, aws.ToString(e.Message))
	if sentinel == nil {
		return fmt.Errorf("s3store: delete %q: %w", it.Key, err)
	}
	return fmt.Errorf("s3store: delete %q: %w: %w", it.Key, sentinel, err)
}

// bulkProbe remembers what probeDeleteObjects found.
type bulkProbe struct {
	mu          sync.Mutex
	done        bool
	conditional bool
}

// BulkDelete implements store.MultiDeleter: DeleteObjects sends 1,000
// keys a request; whether it sends conditional items in bulk is found out
// once per store, by probing the server (probeDeleteObjects). A probe that
// fails is tried again next time, and meanwhile conditional items go one
// by one.
func (s *Store) BulkDelete(ctx context.Context) (bulk, conditional bool) {
	s.probe.mu.Lock()
	defer s.probe.mu.Unlock()
	if !s.probe.done {
		c, err := s.probeDeleteObjects(ctx)
		if err != nil {
			s.logger.Warn("s3store: could not find out whether the server checks the ETags of a DeleteObjects", "store", s.String(), "err", err)
			return true, false
		}
		s.probe.done, s.probe.conditional = true, c
	}
	return true, s.probe.conditional
}

// probeKeyStem is where probeDeleteObjects puts the object it deletes.
const probeKeyStem = ".dhsi-probe/delete-objects-"

// probeDeleteObjects asks the server whether it checks the per-key ETag of
// a DeleteObjects (AWS S3 does; versitygw v1.8.0 deletes regardless): it
// puts an object of its own and asks to delete it with a wrong ETag. An
// object a process killed meanwhile leaves under .dhsi-probe/ is garbage.
func (s *Store) probeDeleteObjects(ctx context.Context) (bool, error) {
	b := make([]byte, 8)
	rand.Read(b)
	key := probeKeyStem + hex.EncodeToString(b)
	a, err := s.Put(ctx, key, strings.NewReader("probe"), store.Cond{})
	if err != nil {
		return false, err
	}
	wrong := store.ETag(`"00000000000000000000000000000000"`)
	if a.ETag == wrong {
		wrong = `"11111111111111111111111111111111"`
	}
	errs := make([]error, 1)
	s.deleteObjects(ctx, []store.DeleteItem{{Key: key, Cond: store.Cond{IfMatch: wrong}}}, []int{0}, errs)
	_, herr := s.Head(ctx, key)
	switch {
	case errors.Is(herr, store.ErrNotFound):
		return false, nil // deleted against a wrong ETag
	case herr != nil:
		return false, herr
	}
	if err := s.Delete(ctx, key, store.Cond{}); err != nil {
		return false, err
	}
	if !errors.Is(errs[0], store.ErrPreconditionFailed) {
		// kept, but not refused as the contract says: not to be trusted
		s.logger.Warn("s3store: a DeleteObjects with a wrong ETag kept the object but answered otherwise than PreconditionFailed; conditional deletes go one by one", "store", s.String(), "answer", errs[0])
		return false, nil
	}
	return true, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string, fn func(store.Attrs) error) error {
	return s.ListFrom(ctx, prefix, "", fn)
}

// ListFrom is List from the first key after startAfter (store.ListerFrom):
// S3 starts the listing there (StartAfter), so a bounded listing of a large
// prefix costs one page.
func (s *Store) ListFrom(ctx context.Context, prefix, startAfter string, fn func(store.Attrs) error) error {
	in := &s3.ListObjectsV2Input{
		Bucket: &s.bucket,
		Prefix: aws.String(s.prefix + prefix),
	}
	if startAfter != "" {
		in.StartAfter = aws.String(s.prefix + startAfter)
	}
	p := s3.NewListObjectsV2Paginator(s.client, in)
	var last string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return opError("list", prefix, err, false)
		}
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), s.prefix)
			// The contract promises byte order; a server that sorts
			// otherwise would break callers silently, so refuse it loudly.
			if last != "" && key <= last {
				return fmt.Errorf("s3store: list %q: server listed %q after %q, not in byte order", prefix, key, last)
			}
			last = key
			if store.ValidateKey(key) != nil {
				// e.g. a "folder/" marker made by a console: not an object
				// this store could have written, and not one it can read.
				s.logger.Debug("s3store: list skips an invalid key", "store", s.String(), "key", key)
				continue
			}
			err := fn(store.Attrs{
				Key:          key,
				Size:         aws.ToInt64(o.Size),
				ETag:         store.ETag(aws.ToString(o.ETag)),
				LastModified: aws.ToTime(o.LastModified),
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// opError translates an SDK error into the store's sentinels and wraps it
// with the operation and key. ifMatchPut marks a Put with IfMatch, where a
// missing key is a failed precondition rather than ErrNotFound.
func opError(op, key string, err error, ifMatchPut bool) error {
	var code string
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	status := 0
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	var sentinel error
	switch {
	case code == "NoSuchBucket":
		// Not ErrNotFound: a missing bucket is a configuration error, and
		// callers treat ErrNotFound as "create it".
	case status == http.StatusNotFound || code == "NoSuchKey" || code == "NotFound":
		sentinel = store.ErrNotFound
		if ifMatchPut {
			sentinel = store.ErrPreconditionFailed
		}
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed":
		sentinel = store.ErrPreconditionFailed
	case code == "ObjectParentIsFile" || code == "ExistingObjectIsDirectory":
		// S3 servers on a POSIX file system (versitygw) cannot nest keys.
		sentinel = store.ErrInvalidKey
	case status == http.StatusConflict:
		// ConditionalRequestConflict (and OperationAborted): a concurrent
		// write to the key won.
		sentinel = store.ErrPreconditionFailed
	case status == http.StatusRequestedRangeNotSatisfiable || code == "InvalidRange":
		sentinel = store.ErrInvalidRange
	}
	if sentinel == nil {
		return fmt.Errorf("s3store: %s %q: %w", op, key, err)
	}
	return fmt.Errorf("s3store: %s %q: %w: %w", op, key, sentinel, err)
}

// sdkLogger sends the SDK's log lines to slog.
type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	s.l.Log(context.Background(), level, "aws sdk: "+fmt.Sprintf(format, v...))
}
