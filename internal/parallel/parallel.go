// Package parallel runs independent work items with bounded concurrency.
package parallel

import "sync"

// ForEach calls fn(0), …, fn(n-1), at most limit at a time (at least one),
// and returns when all have returned. fn must be safe to run concurrently;
// items report results through their own index.
func ForEach(n, limit int, fn func(i int)) {
	if limit < 1 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}
