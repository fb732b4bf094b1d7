package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dhsi/dhsi/store"
)

// uploader puts immutable objects (create-only: M1) from memory with a fixed
// number of workers: each put is a round trip (S3) or an fsync (local), so
// they overlap, while CPU work producing them goes on. put blocks while the
// queue is full, which bounds the bytes held.
type uploader struct {
	ctx    context.Context
	cancel context.CancelFunc
	st     store.Store
	queue  chan upload
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

type upload struct {
	key  string
	data []byte
}

func newUploader(ctx context.Context, st store.Store, workers int) *uploader {
	ctx, cancel := context.WithCancel(ctx)
	u := &uploader{ctx: ctx, cancel: cancel, st: st, queue: make(chan upload, workers)}
	for range workers {
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			for up := range u.queue {
				if u.ctx.Err() != nil {
					continue // drain after a failure
				}
				if _, err := st.Put(u.ctx, up.key, bytes.NewReader(up.data), store.Cond{IfNoneMatch: true}); err != nil {
					u.fail(fmt.Errorf("upload %s: %w", up.key, err))
				}
			}
		}()
	}
	return u
}

func (u *uploader) fail(err error) {
	u.mu.Lock()
	u.errs = append(u.errs, err)
	u.mu.Unlock()
	u.cancel()
}

// put queues one object; it fails early once an upload has failed.
func (u *uploader) put(key string, data []byte) error {
	select {
	case u.queue <- upload{key, data}:
		return nil
	case <-u.ctx.Done():
		u.mu.Lock()
		defer u.mu.Unlock()
		if len(u.errs) > 0 {
			return u.errs[0]
		}
		return u.ctx.Err()
	}
}

// wait ends the queue and returns the uploads' errors. An uploader is used
// once.
func (u *uploader) wait() error {
	close(u.queue)
	u.wg.Wait()
	u.cancel()
	u.mu.Lock()
	defer u.mu.Unlock()
	return errors.Join(u.errs...)
}
