// Package storetest is the conformance suite for store.Store. Run asserts
// every sentence of the store package's contract against one backend; the
// local-directory tests, the S3 tests and the tests of every Store decorator
// call it, so all of them are held to one written contract.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dhsi/dhsi/store"
)

// lmSlack is how far two readings of one object's LastModified may differ:
// S3 keeps whole seconds, and the LastModified a put returns comes from the
// response's Date header, which may fall in the next second.
const lmSlack = 2 * time.Second

// Run runs the suite. newStore must return a fresh, empty store for each
// sub-test; the sub-tests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Invalid keys are rejected with ErrInvalidKey before any I/O", testInvalidKeys},
		{"Valid keys with unusual characters round-trip", testUnusualKeys},
		{"Nesting keys either coexist or the nesting put fails with ErrInvalidKey and changes nothing", testNestingKeys},
		{"Get, GetRange and Head on a missing key return ErrNotFound", testMissing},
		{"Get returns the whole object and its Attrs", testGet},
		{"Head returns the same Attrs as Get", testHead},
		{"GetRange returns n bytes from off, fewer at the end, and ErrInvalidRange past the end", testGetRange},
		{"Put returns the new object's Attrs", testPutAttrs},
		{"A concurrent reader sees the old object or the new one, never a part", testPutAtomic},
		{"Put with IfNoneMatch creates a missing object", testIfNoneMatchCreates},
		{"Put with IfNoneMatch on an existing object returns ErrPreconditionFailed and changes nothing", testIfNoneMatchExisting},
		{"Put with a matching IfMatch replaces the object", testIfMatchReplaces},
		{"Put with a stale IfMatch returns ErrPreconditionFailed and changes nothing", testIfMatchStale},
		{"Put with IfMatch on a missing key returns ErrPreconditionFailed and creates nothing", testIfMatchMissing},
		{"Malformed conditions are rejected and change nothing", testMalformedCond},
		{"Of two concurrent IfMatch puts with the same ETag exactly one succeeds", func(t *testing.T, s store.Store) { testRace(t, s, false, 2, 50) }},
		{"Of eight concurrent IfMatch puts with the same ETag exactly one succeeds", func(t *testing.T, s store.Store) { testRace(t, s, false, 8, 10) }},
		{"Of two concurrent IfNoneMatch puts on a new key exactly one succeeds", func(t *testing.T, s store.Store) { testRace(t, s, true, 2, 50) }},
		{"Of eight concurrent IfNoneMatch puts on a new key exactly one succeeds", func(t *testing.T, s store.Store) { testRace(t, s, true, 8, 10) }},
		{"A put whose reader fails returns that error and leaves nothing visible", testPutReaderError},
		{"A put canceled while reading leaves nothing visible", testPutCanceled},
		{"A put that changes the content gives a different ETag", testETagChanges},
		{"Delete removes the object", testDelete},
		{"Concurrent deletes of every key of a prefix all succeed", testDeleteConcurrently},
		{"Deleting a missing key is not an error", testDeleteMissing},
		{"Delete with a matching IfMatch removes the object", testDeleteIfMatch},
		{"Delete with a stale IfMatch returns ErrPreconditionFailed and changes nothing", testDeleteStale},
		{"Delete with IfMatch on a missing key returns ErrNotFound", testDeleteIfMatchMissing},
		{"DeleteMany deletes each item with its condition and answers each alone", testDeleteMany},
		{"DeleteMany deletes more keys than one S3 request takes", testDeleteManyMany},
		{"List visits keys in ascending byte order", testListOrder},
		{"List with a prefix visits exactly the keys that start with it", testListPrefix},
		{"List paginates past 1000 objects", testListMany},
		{"An error returned by fn stops the listing and is returned", testListStop},
		{"Objects present for the whole listing are listed exactly once", testListChurn},
		{"List reports the same Attrs as Head", testListAttrs},
		{"ListFrom visits the keys of the prefix after a key, in order", testListFrom},
		{"LastModified is the store's clock at the time of the put", testLastModified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// invalidKeys break the key rules of the store package comment.
func invalidKeys() []string {
	return []string{
		"", "/", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/./b", "a/../b", "../a",
		"a\x00b", "\xff\xfe", "a/\xc3",
	}
}

func testInvalidKeys(t *testing.T, s store.Store) {
	// A canceled context makes "before any I/O" observable: a backend that
	// did I/O first would fail with context.Canceled instead.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, key := range invalidKeys() {
		check := func(op string, err error) {
			t.Helper()
			if !errors.Is(err, store.ErrInvalidKey) {
				t.Errorf("%s(%q) = %v, want ErrInvalidKey", op, key, err)
			}
		}
		rc, _, err := s.Get(ctx, key)
		closeIf(rc)
		check("Get", err)
		rc, err = s.GetRange(ctx, key, 0, 1)
		closeIf(rc)
		check("GetRange", err)
		_, err = s.Head(ctx, key)
		check("Head", err)
		_, err = s.Put(ctx, key, unreadable{t}, store.Cond{})
		check("Put", err)
		_, err = s.Put(ctx, key, unreadable{t}, store.Cond{IfNoneMatch: true})
		check("Put(IfNoneMatch)", err)
		check("Delete", s.Delete(ctx, key, store.Cond{}))
		check("Delete(IfMatch)", s.Delete(ctx, key, store.Cond{IfMatch: "x"}))
	}
	if keys := listKeys(t, s, ""); len(keys) != 0 {
		t.Errorf("store holds %q after puts of invalid keys", keys)
	}
}

// unreadable is a Put body that must not be read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("Put read the body of an invalid put")
	return 0, io.EOF
}

func testUnusualKeys(t *testing.T, s store.Store) {
	keys := []string{
		"sp ace/x y", "plus+sign", "percent%20sign", "query?x=1&y#frag", `quotes'"!*()~`,
		`back\slash`, "colon:x;y,z", "dot/.hidden", "dot/..x", "dot/x..", "tab\there",
		"utf8/日本語/é", "emoji/🦆", "eq=amp&at@dollar$",
	}
	for _, key := range keys {
		put(t, s, key, key, store.Cond{})
	}
	for _, key := range keys {
		if got, _ := get(t, s, key); got != key {
			t.Errorf("Get(%q) = %q, want the key itself", key, got)
		}
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := listKeys(t, s, ""); !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func testNestingKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, tc := range []struct{ first, second string }{
		{"n/a", "n/a/b"},   // the second would need the file "a" as a directory
		{"m/a/b", "m/a"},   // the second would replace a directory with a file
		{"d/x/y/z", "d/x"}, // the same, two levels up
	} {
		for _, cond := range []store.Cond{{}, {IfNoneMatch: true}} {
			first := put(t, s, tc.first, "first", store.Cond{})
			_, err := s.Put(ctx, tc.second, strings.NewReader("second"), cond)
			if err == nil {
				// The backend lets keys nest (AWS S3): both are objects.
				if got, _ := get(t, s, tc.second); got != "second" {
					t.Errorf("Get(%q) = %q after a successful put", tc.second, got)
				}
				del(t, s, tc.second, store.Cond{})
			} else {
				if !errors.Is(err, store.ErrInvalidKey) {
					t.Errorf("Put(%q, %+v) after %q = %v, want nil or ErrInvalidKey", tc.second, cond, tc.first, err)
				}
				wantMissing(t, s, tc.second)
				// A Delete of the directory-shaped key is a delete of a
				// missing key: no error, and the nested object survives.
				del(t, s, tc.second, store.Cond{})
			}
			got, attrs := get(t, s, tc.first)
			if got != "first" || attrs.ETag != first.ETag {
				t.Errorf("%q = %q (ETag %q) after the nesting put, want it unchanged", tc.first, got, attrs.ETag)
			}
			if keys := listKeys(t, s, ""); !slices.Equal(keys, []string{tc.first}) {
				t.Errorf("List = %q, want only %q", keys, tc.first)
			}
			del(t, s, tc.first, store.Cond{})
		}
	}
}

func testMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	put(t, s, "present", "x", store.Cond{})
	for _, key := range []string{"missing", "present/below", "pres", "a/b/c"} {
		rc, _, err := s.Get(ctx, key)
		closeIf(rc)
		wantErr(t, "Get("+key+")", err, store.ErrNotFound)
		for _, r := range [][2]int64{{0, -1}, {5, 10}, {0, 0}} {
			rc, err := s.GetRange(ctx, key, r[0], r[1])
			closeIf(rc)
			wantErr(t, fmt.Sprintf("GetRange(%s, %d, %d)", key, r[0], r[1]), err, store.ErrNotFound)
		}
		_, err = s.Head(ctx, key)
		wantErr(t, "Head("+key+")", err, store.ErrNotFound)
	}
}

func testGet(t *testing.T, s store.Store) {
	for _, size := range []int{0, 1, 100 << 10} {
		key := fmt.Sprintf("obj/%d", size)
		content := string(randomBytes(size, uint64(size)))
		want := put(t, s, key, content, store.Cond{})
		got, attrs := get(t, s, key)
		if got != content {
			t.Errorf("Get(%q) returned %d bytes, want the %d put", key, len(got), size)
		}
		checkAttrs(t, "Get", attrs, want)
	}
}

func testHead(t *testing.T, s store.Store) {
	put(t, s, "h", "hello", store.Cond{})
	_, fromGet := get(t, s, "h")
	fromHead, err := s.Head(t.Context(), "h")
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if !sameAttrs(fromHead, fromGet) {
		t.Errorf("Head = %+v, Get's Attrs = %+v", fromHead, fromGet)
	}
}

func testGetRange(t *testing.T, s store.Store) {
	ctx := t.Context()
	put(t, s, "digits", "0123456789", store.Cond{})
	put(t, s, "empty", "", store.Cond{})
	for _, tc := range []struct {
		name   string
		key    string
		off, n int64
		want   string
		err    error
	}{
		{"a middle range", "digits", 2, 3, "234", nil},
		{"a range from the start", "digits", 0, 4, "0123", nil},
		{"the whole object", "digits", 0, 10, "0123456789", nil},
		{"n < 0 reads to the end", "digits", 7, -1, "789", nil},
		{"n beyond the end reads to the end", "digits", 8, 100, "89", nil},
		{"the last byte", "digits", 9, 1, "9", nil},
		{"n == 0 gives an empty body", "digits", 3, 0, "", nil},
		{"off == size gives an empty body", "digits", 10, -1, "", nil},
		{"off == size with n > 0 gives an empty body", "digits", 10, 5, "", nil},
		{"off beyond the end is ErrInvalidRange", "digits", 11, -1, "", store.ErrInvalidRange},
		{"off far beyond the end is ErrInvalidRange", "digits", 1 << 40, 1, "", store.ErrInvalidRange},
		{"a negative off is ErrInvalidRange", "digits", -1, 2, "", store.ErrInvalidRange},
		{"the empty object's whole range is empty", "empty", 0, -1, "", nil},
		{"the empty object's first byte is empty", "empty", 0, 1, "", nil},
		{"past the empty object's end is ErrInvalidRange", "empty", 1, -1, "", store.ErrInvalidRange},
	} {
		rc, err := s.GetRange(ctx, tc.key, tc.off, tc.n)
		if tc.err != nil {
			closeIf(rc)
			wantErr(t, tc.name, err, tc.err)
			continue
		}
		if err != nil {
			t.Errorf("%s: GetRange(%q, %d, %d): %v", tc.name, tc.key, tc.off, tc.n, err)
			continue
		}
		got := readClose(t, rc)
		if got != tc.want {
			t.Errorf("%s: GetRange(%q, %d, %d) = %q, want %q", tc.name, tc.key, tc.off, tc.n, got, tc.want)
		}
	}

	// Random ranges of a larger object.
	big := randomBytes(3<<20+17, 1)
	put(t, s, "big", string(big), store.Cond{})
	rng := rand.New(rand.NewPCG(2, 3))
	for range 8 {
		off := rng.Int64N(int64(len(big)))
		n := rng.Int64N(1<<20) - 1 // -1 sometimes
		rc, err := s.GetRange(ctx, "big", off, n)
		if err != nil {
			t.Fatalf("GetRange(big, %d, %d): %v", off, n, err)
		}
		end := int64(len(big))
		if n >= 0 {
			end = min(end, off+n)
		}
		if got := readClose(t, rc); got != string(big[off:end]) {
			t.Errorf("GetRange(big, %d, %d) returned %d wrong bytes, want %d", off, n, len(got), end-off)
		}
	}
}

func testPutAttrs(t *testing.T, s store.Store) {
	ctx := t.Context()
	check := func(what string, got store.Attrs, key string, size int) {
		t.Helper()
		head, err := s.Head(ctx, key)
		if err != nil {
			t.Fatalf("Head(%q): %v", key, err)
		}
		if got.Key != key || got.Size != int64(size) {
			t.Errorf("%s returned Key %q Size %d, want %q %d", what, got.Key, got.Size, key, size)
		}
		checkAttrs(t, what, got, head)
	}
	a := put(t, s, "p", "unconditional", store.Cond{})
	check("Put", a, "p", len("unconditional"))
	b := put(t, s, "q", "create", store.Cond{IfNoneMatch: true})
	check("Put(IfNoneMatch)", b, "q", len("create"))
	c := put(t, s, "q", "swap!", store.Cond{IfMatch: b.ETag})
	check("Put(IfMatch)", c, "q", len("swap!"))
}

func testPutAtomic(t *testing.T, s store.Store) {
	ctx := t.Context()
	const size = 1 << 20
	uniform := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, size) }
	put(t, s, "atomic", string(uniform(0)), store.Cond{})

	done := make(chan struct{})
	var wg sync.WaitGroup
	reads := make([]int, 3)
	for r := range reads {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				var b []byte
				if r == 2 {
					// A range deep inside the object must be uniform too.
					rc, err := s.GetRange(ctx, "atomic", size/2, 64<<10)
					if err != nil {
						t.Errorf("GetRange: %v", err)
						return
					}
					b = []byte(readClose(t, rc))
					if len(b) != 64<<10 {
						t.Errorf("GetRange read %d bytes, want %d", len(b), 64<<10)
						return
					}
				} else {
					rc, attrs, err := s.Get(ctx, "atomic")
					if err != nil {
						t.Errorf("Get: %v", err)
						return
					}
					b = []byte(readClose(t, rc))
					if len(b) != size || attrs.Size != size {
						t.Errorf("Get read %d bytes (Attrs.Size %d), want %d", len(b), attrs.Size, size)
						return
					}
				}
				if i := bytes.IndexFunc(b, func(r rune) bool { return r != rune(b[0]) }); i >= 0 {
					t.Errorf("a read mixes two versions: byte 0 is %q, byte %d is %q", b[0], i, b[i])
					return
				}
				reads[r]++
			}
		})
	}
	for i := 1; i <= 24; i++ {
		put(t, s, "atomic", string(uniform(i)), store.Cond{})
	}
	close(done)
	wg.Wait()
	t.Logf("reads during 24 puts: %v", reads)
}

func testIfNoneMatchCreates(t *testing.T, s store.Store) {
	a := put(t, s, "new", "created", store.Cond{IfNoneMatch: true})
	got, attrs := get(t, s, "new")
	if got != "created" {
		t.Errorf("Get = %q, want %q", got, "created")
	}
	checkAttrs(t, "Get", attrs, a)
	// A key deleted is missing again.
	del(t, s, "new", store.Cond{})
	put(t, s, "new", "recreated", store.Cond{IfNoneMatch: true})
}

func testIfNoneMatchExisting(t *testing.T, s store.Store) {
	a := put(t, s, "k", "original", store.Cond{})
	_, err := s.Put(t.Context(), "k", strings.NewReader("intruder"), store.Cond{IfNoneMatch: true})
	wantErr(t, "Put(IfNoneMatch) on an existing key", err, store.ErrPreconditionFailed)
	wantUnchanged(t, s, "k", "original", a)
}

func testIfMatchReplaces(t *testing.T, s store.Store) {
	a := put(t, s, "k", "v1", store.Cond{})
	b := put(t, s, "k", "v2", store.Cond{IfMatch: a.ETag})
	c := put(t, s, "k", "v3", store.Cond{IfMatch: b.ETag})
	got, attrs := get(t, s, "k")
	if got != "v3" {
		t.Errorf("Get = %q, want %q", got, "v3")
	}
	checkAttrs(t, "Get", attrs, c)
}

func testIfMatchStale(t *testing.T, s store.Store) {
	a := put(t, s, "k", "v1", store.Cond{})
	b := put(t, s, "k", "v2", store.Cond{})
	_, err := s.Put(t.Context(), "k", strings.NewReader("v3"), store.Cond{IfMatch: a.ETag})
	wantErr(t, "Put with a stale IfMatch", err, store.ErrPreconditionFailed)
	wantUnchanged(t, s, "k", "v2", b)
	_, err = s.Put(t.Context(), "k", strings.NewReader("v3"), store.Cond{IfMatch: "not-an-etag"})
	wantErr(t, "Put with a made-up IfMatch", err, store.ErrPreconditionFailed)
	wantUnchanged(t, s, "k", "v2", b)
}

func testIfMatchMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := put(t, s, "other", "v1", store.Cond{})
	_, err := s.Put(ctx, "never", strings.NewReader("x"), store.Cond{IfMatch: a.ETag})
	wantErr(t, "Put(IfMatch) on a never-created key", err, store.ErrPreconditionFailed)
	wantMissing(t, s, "never")

	b := put(t, s, "gone", "v1", store.Cond{})
	del(t, s, "gone", store.Cond{})
	_, err = s.Put(ctx, "gone", strings.NewReader("v1"), store.Cond{IfMatch: b.ETag})
	wantErr(t, "Put(IfMatch) on a deleted key", err, store.ErrPreconditionFailed)
	wantMissing(t, s, "gone")
}

func testMalformedCond(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := put(t, s, "k", "v1", store.Cond{})
	if _, err := s.Put(ctx, "k", strings.NewReader("v2"), store.Cond{IfMatch: a.ETag, IfNoneMatch: true}); err == nil {
		t.Error("Put with IfMatch and IfNoneMatch succeeded")
	}
	if _, err := s.Put(ctx, "new", strings.NewReader("v2"), store.Cond{IfMatch: a.ETag, IfNoneMatch: true}); err == nil {
		t.Error("Put with IfMatch and IfNoneMatch succeeded")
	}
	if err := s.Delete(ctx, "k", store.Cond{IfNoneMatch: true}); err == nil {
		t.Error("Delete with IfNoneMatch succeeded")
	}
	wantUnchanged(t, s, "k", "v1", a)
	wantMissing(t, s, "new")
}

// testRace runs trials of n concurrent conditional puts that all satisfy
// their condition when they start.
func testRace(t *testing.T, s store.Store, create bool, n, trials int) {
	ctx := t.Context()
	for trial := range trials {
		key := fmt.Sprintf("race/%d", trial)
		cond := store.Cond{IfNoneMatch: true}
		if !create {
			base := put(t, s, key, "base", store.Cond{})
			cond = store.Cond{IfMatch: base.ETag}
		}
		start := make(chan struct{})
		results := make([]store.Attrs, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				results[i], errs[i] = s.Put(ctx, key, strings.NewReader(fmt.Sprintf("writer %d", i)), cond)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("trial %d: writers %d and %d both succeeded", trial, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrPreconditionFailed):
				t.Errorf("trial %d: writer %d: %v, want nil or ErrPreconditionFailed", trial, i, err)
			}
		}
		if winner < 0 {
			t.Errorf("trial %d: no writer succeeded: %v", trial, errs)
			continue
		}
		got, attrs := get(t, s, key)
		if want := fmt.Sprintf("writer %d", winner); got != want {
			t.Errorf("trial %d: content %q, want the winner's %q", trial, got, want)
		}
		if attrs.ETag != results[winner].ETag {
			t.Errorf("trial %d: ETag %q, want the winner's %q", trial, attrs.ETag, results[winner].ETag)
		}
	}
}

func testPutReaderError(t *testing.T, s store.Store) {
	ctx := t.Context()
	boom := errors.New("reader exploded")
	for _, after := range []int{0, 300 << 10, 1<<20 + 1} {
		for _, cond := range []store.Cond{{}, {IfNoneMatch: true}} {
			_, err := s.Put(ctx, "new", &failingReader{n: after, err: boom}, cond)
			wantErr(t, fmt.Sprintf("Put(%+v) of a reader failing after %d bytes", cond, after), err, boom)
			wantMissing(t, s, "new")
		}
		a := put(t, s, "old", "previous version", store.Cond{})
		for _, cond := range []store.Cond{{}, {IfMatch: a.ETag}} {
			_, err := s.Put(ctx, "old", &failingReader{n: after, err: boom}, cond)
			wantErr(t, fmt.Sprintf("Put(%+v) over an object of a reader failing after %d bytes", cond, after), err, boom)
			wantUnchanged(t, s, "old", "previous version", a)
		}
	}
	if keys := listKeys(t, s, ""); !slices.Equal(keys, []string{"old"}) {
		t.Errorf("List = %q, want only %q", keys, "old")
	}
}

// failingReader returns n bytes and then err.
type failingReader struct {
	n   int
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

func testPutCanceled(t *testing.T, s store.Store) {
	a := put(t, s, "old", "previous version", store.Cond{})
	for _, key := range []string{"old", "new"} {
		ctx, cancel := context.WithCancel(t.Context())
		r := &cancelingReader{n: 256 << 10, cancel: cancel}
		_, err := s.Put(ctx, key, r, store.Cond{})
		cancel()
		wantErr(t, "Put canceled while reading "+key, err, context.Canceled)
	}
	wantUnchanged(t, s, "old", "previous version", a)
	wantMissing(t, s, "new")
}

// cancelingReader cancels its put's context after n bytes and then goes on
// serving data, as a slow producer would.
type cancelingReader struct {
	n      int
	cancel context.CancelFunc
	total  int
}

func (r *cancelingReader) Read(p []byte) (int, error) {
	if r.total >= r.n {
		r.cancel()
	}
	if r.total > 4*r.n {
		return 0, io.EOF // a backend that ignores ctx still gets a finite body
	}
	k := min(len(p), 32<<10)
	for i := range p[:k] {
		p[i] = 'c'
	}
	r.total += k
	return k, nil
}

func testETagChanges(t *testing.T, s store.Store) {
	a := put(t, s, "k", "content A", store.Cond{})
	b := put(t, s, "k", "content B", store.Cond{})
	c := put(t, s, "k", "content A", store.Cond{})
	d := put(t, s, "k", "content C", store.Cond{IfMatch: c.ETag})
	for _, e := range []store.ETag{a.ETag, b.ETag, c.ETag, d.ETag} {
		if e == "" {
			t.Fatalf("a put returned an empty ETag: %q %q %q %q", a.ETag, b.ETag, c.ETag, d.ETag)
		}
	}
	if a.ETag == b.ETag || b.ETag == c.ETag || c.ETag == d.ETag {
		t.Errorf("ETags A %q -> B %q -> A %q -> C %q: a change kept the ETag", a.ETag, b.ETag, c.ETag, d.ETag)
	}
	// A change of one byte, keeping the size, changes the ETag too.
	x := put(t, s, "same-size", strings.Repeat("x", 4096), store.Cond{})
	y := put(t, s, "same-size", strings.Repeat("x", 2048)+"y"+strings.Repeat("x", 2047), store.Cond{})
	if x.ETag == y.ETag {
		t.Errorf("a one-byte change kept the ETag %q", x.ETag)
	}
}

func testDelete(t *testing.T, s store.Store) {
	put(t, s, "dir/k", "x", store.Cond{})
	put(t, s, "dir/other", "y", store.Cond{})
	del(t, s, "dir/k", store.Cond{})
	wantMissing(t, s, "dir/k")
	if keys := listKeys(t, s, ""); !slices.Equal(keys, []string{"dir/other"}) {
		t.Errorf("List = %q, want only dir/other", keys)
	}
	// The key can be created again.
	put(t, s, "dir/k", "again", store.Cond{IfNoneMatch: true})
}

// testDeleteConcurrently: a compaction retires a shard's batch objects in
// parallel; on the local directory the last delete prunes the directory
// under the others (measured: "open …/batches/1b: no such file or
// directory" from a delete that had already unlinked its file).
func testDeleteConcurrently(t *testing.T, s store.Store) {
	for round := 0; round < 5; round++ {
		var keys []string
		for i := 0; i < 16; i++ {
			keys = append(keys, fmt.Sprintf("batches/%d/k%02d", round, i))
			put(t, s, keys[i], "x", store.Cond{})
		}
		var wg sync.WaitGroup
		errs := make([]error, len(keys))
		for i, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Delete(context.Background(), k, store.Cond{})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: Delete(%s) = %v", round, keys[i], err)
			}
		}
		if got := listKeys(t, s, fmt.Sprintf("batches/%d/", round)); len(got) != 0 {
			t.Fatalf("round %d: keys left after the deletes: %q", round, got)
		}
	}
}

func testDeleteMissing(t *testing.T, s store.Store) {
	del(t, s, "never", store.Cond{})
	put(t, s, "twice", "x", store.Cond{})
	del(t, s, "twice", store.Cond{})
	del(t, s, "twice", store.Cond{})
	del(t, s, "deep/never/there", store.Cond{})
}

func testDeleteIfMatch(t *testing.T, s store.Store) {
	a := put(t, s, "k", "x", store.Cond{})
	del(t, s, "k", store.Cond{IfMatch: a.ETag})
	wantMissing(t, s, "k")
}

func testDeleteStale(t *testing.T, s store.Store) {
	a := put(t, s, "k", "v1", store.Cond{})
	b := put(t, s, "k", "v2", store.Cond{})
	err := s.Delete(t.Context(), "k", store.Cond{IfMatch: a.ETag})
	wantErr(t, "Delete with a stale IfMatch", err, store.ErrPreconditionFailed)
	wantUnchanged(t, s, "k", "v2", b)
}

func testDeleteIfMatchMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := put(t, s, "k", "v1", store.Cond{})
	err := s.Delete(ctx, "never", store.Cond{IfMatch: a.ETag})
	wantErr(t, "Delete(IfMatch) of a never-created key", err, store.ErrNotFound)
	del(t, s, "k", store.Cond{})
	err = s.Delete(ctx, "k", store.Cond{IfMatch: a.ETag})
	wantErr(t, "Delete(IfMatch) of a deleted key", err, store.ErrNotFound)
}

// testDeleteMany: a compaction retires many inbox objects at once
// (store.DeleteMany), each under its own condition.
func testDeleteMany(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := put(t, s, "d/a", "a", store.Cond{})
	b := put(t, s, "d/b", "b", store.Cond{})
	stale := put(t, s, "d/stale", "v1", store.Cond{})
	fresh := put(t, s, "d/stale", "v2", store.Cond{})
	put(t, s, "d/keep", "k", store.Cond{})
	items := []store.DeleteItem{
		{Key: "d/a"}, // 0: deleted
		{Key: "d/b", Cond: store.Cond{IfMatch: b.ETag}},         // 1: deleted
		{Key: "d/stale", Cond: store.Cond{IfMatch: stale.ETag}}, // 2: refused, kept
		{Key: "d/never"}, // 3: no error
		{Key: "d/never2", Cond: store.Cond{IfMatch: a.ETag}}, // 4: ErrNotFound or done
		{Key: "/bad"}, // 5: ErrInvalidKey
		{Key: "d/keep", Cond: store.Cond{IfNoneMatch: true}}, // 6: malformed, kept
	}
	errs := store.DeleteMany(ctx, s, items)
	if len(errs) != len(items) {
		t.Fatalf("DeleteMany returned %d errors for %d items", len(errs), len(items))
	}
	for _, i := range []int{0, 1, 3} {
		if errs[i] != nil {
			t.Errorf("item %d (%s): %v", i, items[i].Key, errs[i])
		}
	}
	wantErr(t, "DeleteMany with a stale IfMatch", errs[2], store.ErrPreconditionFailed)
	if errs[4] != nil {
		wantErr(t, "DeleteMany with IfMatch of a missing key", errs[4], store.ErrNotFound)
	}
	wantErr(t, "DeleteMany of an invalid key", errs[5], store.ErrInvalidKey)
	if errs[6] == nil {
		t.Errorf("DeleteMany with IfNoneMatch: no error")
	}
	wantMissing(t, s, "d/a")
	wantMissing(t, s, "d/b")
	wantUnchanged(t, s, "d/stale", "v2", fresh)
	if keys := listKeys(t, s, ""); !slices.Equal(keys, []string{"d/keep", "d/stale"}) {
		t.Errorf("List after DeleteMany = %q, want d/keep and d/stale", keys)
	}
	if errs := store.DeleteMany(ctx, s, nil); len(errs) != 0 {
		t.Errorf("DeleteMany of nothing = %v", errs)
	}
}

// testDeleteManyMany: S3 takes 1,000 keys a request; the answers of the
// later requests reach the right items.
func testDeleteManyMany(t *testing.T, s store.Store) {
	var keys []string
	for i := 0; i < 1010; i++ {
		keys = append(keys, fmt.Sprintf("m/%04d", i))
	}
	parallelPut(t, s, keys)
	stale := put(t, s, "m/1005", "v1", store.Cond{})
	fresh := put(t, s, "m/1005", "v2", store.Cond{})
	cur, err := s.Head(t.Context(), "m/1003")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]store.DeleteItem, len(keys))
	for i, k := range keys {
		items[i].Key = k
	}
	items[1003].Cond.IfMatch = cur.ETag
	items[1005].Cond.IfMatch = stale.ETag
	for i, err := range store.DeleteMany(t.Context(), s, items) {
		if i == 1005 {
			wantErr(t, "DeleteMany item 1005 with a stale IfMatch", err, store.ErrPreconditionFailed)
		} else if err != nil {
			t.Errorf("item %d: %v", i, err)
		}
	}
	if got := listKeys(t, s, "m/"); !slices.Equal(got, []string{"m/1005"}) {
		t.Errorf("List after DeleteMany = %d keys (%.5q…), want only m/1005", len(got), got)
	}
	wantUnchanged(t, s, "m/1005", "v2", fresh)
}

func testListFrom(t *testing.T, s store.Store) {
	keys := orderKeys()
	for _, k := range keys {
		put(t, s, k, k, store.Cond{})
	}
	slices.Sort(keys)
	for _, c := range []struct{ prefix, after string }{
		{"", ""}, {"", "a/b"}, {"", "a-c"}, {"a", "a/c"}, {"a/", "a/b-c"}, {"x/", "x/y-z"}, {"", "~"}, {"a/", "zzz"}, {"日本", "日"},
	} {
		var want []string
		for _, k := range keys {
			if strings.HasPrefix(k, c.prefix) && k > c.after {
				want = append(want, k)
			}
		}
		var got []string
		if err := store.ListFrom(t.Context(), s, c.prefix, c.after, func(a store.Attrs) error { got = append(got, a.Key); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ListFrom(%q, after %q):\n got %q\nwant %q", c.prefix, c.after, got, want)
		}
	}
}

// orderKeys are chosen so that walking a directory tree in name order gives
// the wrong answer: "a" < "a-c" as names, but "a-c" < "a/b" as keys.
func orderKeys() []string {
	return []string{
		"a/b", "a-c", "a/b-c", "a/bc", "a b", "a.d", "a0", "ab", "a/c/d", "a/c-d", "a/c/d-e/f",
		"B", "z", "~", "é", "éa/b", "日本/語", "日本-語", "x/y/z/w", "x/y-z", "x/y.z/q", "x-",
	}
}

func testListOrder(t *testing.T, s store.Store) {
	rng := rand.New(rand.NewPCG(4, 5))
	keys := orderKeys()
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for _, k := range keys {
		put(t, s, k, k, store.Cond{})
	}
	want := orderKeys()
	slices.Sort(want) // byte order
	if got := listKeys(t, s, ""); !slices.Equal(got, want) {
		t.Errorf("List order:\n got %q\nwant %q", got, want)
	}
}

func testListPrefix(t *testing.T, s store.Store) {
	keys := orderKeys()
	for _, k := range keys {
		put(t, s, k, k, store.Cond{})
	}
	for _, prefix := range []string{
		"", "a", "a/", "a/b", "a/b-", "a/c", "a/c/", "a/c/d", "a/c/d/", "a-", "x/y", "x/y/",
		"é", "日", "日本/", "nothing", "zz/", "../", "/", "./a", "a//", "B",
	} {
		var want []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if got := listKeys(t, s, prefix); !slices.Equal(got, want) {
			t.Errorf("List(%q):\n got %q\nwant %q", prefix, got, want)
		}
	}
}

func testListMany(t *testing.T, s store.Store) {
	const n = 1100
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("p/%05d", i)
	}
	parallelPut(t, s, keys)
	put(t, s, "q", "outside the prefix", store.Cond{})
	if got := listKeys(t, s, "p/"); !slices.Equal(got, keys) {
		t.Errorf("List(p/) returned %d keys, want %d in order", len(got), n)
	}
	if got := listKeys(t, s, ""); len(got) != n+1 {
		t.Errorf("List() returned %d keys, want %d", len(got), n+1)
	}
}

func testListStop(t *testing.T, s store.Store) {
	for i := range 5 {
		put(t, s, fmt.Sprintf("k%d", i), "x", store.Cond{})
	}
	stop := errors.New("enough")
	calls := 0
	err := s.List(t.Context(), "", func(store.Attrs) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("List = %v, want the error fn returned", err)
	}
	if calls != 3 {
		t.Errorf("fn was called %d times, want 3", calls)
	}
}

func testListChurn(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Stable keys are even; odd keys are created and deleted while the
	// listing runs, both ahead of its position and behind it.
	const n = 300
	var stable []string
	for i := 0; i < n; i += 2 {
		stable = append(stable, fmt.Sprintf("s/%04d", i))
	}
	parallelPut(t, s, stable)
	rng := rand.New(rand.NewPCG(6, 7))
	var churned []string
	seen := map[string]int{}
	var last string
	err := s.List(ctx, "s/", func(a store.Attrs) error {
		if a.Key <= last {
			t.Errorf("List went from %q to %q", last, a.Key)
		}
		last = a.Key
		seen[a.Key]++
		k := fmt.Sprintf("s/%04d", 2*rng.IntN(n/2)+1)
		if _, err := s.Put(ctx, k, strings.NewReader("churn"), store.Cond{}); err != nil {
			return err
		}
		churned = append(churned, k)
		if len(churned) > 3 {
			if err := s.Delete(ctx, churned[0], store.Cond{}); err != nil {
				return err
			}
			churned = churned[1:]
		}
		return nil
	})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, k := range stable {
		if seen[k] != 1 {
			t.Errorf("stable key %q listed %d times, want once", k, seen[k])
		}
	}
	for k, c := range seen {
		if c > 1 {
			t.Errorf("key %q listed %d times", k, c)
		}
	}
}

func testListAttrs(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, k := range []string{"l/a", "l/b/c", "l/d"} {
		put(t, s, k, strings.Repeat("z", 10*i), store.Cond{})
	}
	n := 0
	err := s.List(ctx, "l/", func(a store.Attrs) error {
		n++
		h, err := s.Head(ctx, a.Key)
		if err != nil {
			return err
		}
		checkAttrs(t, "List", a, h)
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("List visited %d objects, error %v; want 3, nil", n, err)
	}
}

func testLastModified(t *testing.T, s store.Store) {
	// In a test the store and the caller share a clock, so "the store's
	// clock" is checked as "the time of the put", within S3's precision.
	ctx := t.Context()
	before := time.Now()
	a := put(t, s, "k", "x", store.Cond{})
	after := time.Now()
	head, err := s.Head(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	_, got := get(t, s, "k")
	var listed store.Attrs
	if err := s.List(ctx, "k", func(a store.Attrs) error { listed = a; return nil }); err != nil {
		t.Fatal(err)
	}
	for what, lm := range map[string]time.Time{"Put": a.LastModified, "Head": head.LastModified, "Get": got.LastModified, "List": listed.LastModified} {
		if lm.Before(before.Add(-lmSlack)) || lm.After(after.Add(lmSlack)) {
			t.Errorf("%s LastModified %v is not within %v of the put at [%v, %v]", what, lm, lmSlack, before, after)
		}
	}
	// A later put has a later LastModified; S3 counts whole seconds.
	time.Sleep(1100 * time.Millisecond)
	b := put(t, s, "k", "y", store.Cond{})
	if head2, _ := s.Head(ctx, "k"); !head2.LastModified.After(head.LastModified) || b.LastModified.Before(a.LastModified) {
		t.Errorf("LastModified went from %v to %v (put said %v to %v)", head.LastModified, head2.LastModified, a.LastModified, b.LastModified)
	}
}

// Helpers.

func put(t *testing.T, s store.Store, key, content string, cond store.Cond) store.Attrs {
	t.Helper()
	a, err := s.Put(t.Context(), key, strings.NewReader(content), cond)
	if err != nil {
		t.Fatalf("Put(%q, %+v): %v", key, cond, err)
	}
	return a
}

func get(t *testing.T, s store.Store, key string) (string, store.Attrs) {
	t.Helper()
	rc, a, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return readClose(t, rc), a
}

func del(t *testing.T, s store.Store, key string, cond store.Cond) {
	t.Helper()
	if err := s.Delete(t.Context(), key, cond); err != nil {
		t.Fatalf("Delete(%q, %+v): %v", key, cond, err)
	}
}

func listKeys(t *testing.T, s store.Store, prefix string) []string {
	t.Helper()
	var keys []string
	err := s.List(t.Context(), prefix, func(a store.Attrs) error {
		keys = append(keys, a.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

func parallelPut(t *testing.T, s store.Store, keys []string) {
	t.Helper()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for _, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.Put(t.Context(), k, strings.NewReader(k), store.Cond{}); err != nil {
				t.Errorf("Put(%q): %v", k, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func readClose(t *testing.T, rc io.ReadCloser) string {
	t.Helper()
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

func closeIf(rc io.ReadCloser) {
	if rc != nil {
		rc.Close()
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", what, err, want)
	}
}

// wantMissing checks that key is visible nowhere.
func wantMissing(t *testing.T, s store.Store, key string) {
	t.Helper()
	_, err := s.Head(t.Context(), key)
	wantErr(t, "Head("+key+")", err, store.ErrNotFound)
	rc, _, err := s.Get(t.Context(), key)
	closeIf(rc)
	wantErr(t, "Get("+key+")", err, store.ErrNotFound)
	if slices.Contains(listKeys(t, s, key), key) {
		t.Errorf("List lists %q", key)
	}
}

// wantUnchanged checks that key still holds content with the Attrs of was.
func wantUnchanged(t *testing.T, s store.Store, key, content string, was store.Attrs) {
	t.Helper()
	got, a := get(t, s, key)
	if got != content {
		t.Errorf("%q holds %q, want %q unchanged", key, got, content)
	}
	if a.ETag != was.ETag || a.Size != was.Size {
		t.Errorf("%q has ETag %q size %d, want %q %d unchanged", key, a.ETag, a.Size, was.ETag, was.Size)
	}
}

// checkAttrs compares Attrs exactly except LastModified, which may differ
// by the store's precision.
func checkAttrs(t *testing.T, what string, got, want store.Attrs) {
	t.Helper()
	if got.Key != want.Key || got.Size != want.Size || got.ETag != want.ETag {
		t.Errorf("%s Attrs = %+v, want %+v", what, got, want)
	}
	if d := got.LastModified.Sub(want.LastModified).Abs(); d > lmSlack || got.LastModified.IsZero() {
		t.Errorf("%s LastModified = %v, want %v", what, got.LastModified, want.LastModified)
	}
}

// sameAttrs compares Attrs exactly, LastModified as an instant.
func sameAttrs(a, b store.Attrs) bool {
	return a.Key == b.Key && a.Size == b.Size && a.ETag == b.ETag && a.LastModified.Equal(b.LastModified)
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	r.Read(b)
	return b
}
