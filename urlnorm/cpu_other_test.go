//go:build !unix

package urlnorm

import "time"

// processCPU is unavailable here; benchmarks then report wall time only.
func processCPU() time.Duration { return 0 }
