package parallel

import (
	"sync/atomic"
	"testing"
)

func TestForEachRunsEveryItemOnceWithinTheLimit(t *testing.T) {
	for _, limit := range []int{-1, 0, 1, 3, 100} {
		var running, peak atomic.Int32
		seen := make([]int32, 50)
		ForEach(len(seen), limit, func(i int) {
			if r := running.Add(1); r > peak.Load() {
				peak.Store(r)
			}
			atomic.AddInt32(&seen[i], 1)
			running.Add(-1)
		})
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("limit %d: item %d ran %d times", limit, i, n)
			}
		}
		if want := int32(max(1, limit)); peak.Load() > want {
			t.Fatalf("limit %d: %d ran at once", limit, peak.Load())
		}
	}
}
