//go:build !unix

package snapshot_test

import "time"

// benchCPU is not measured here; MB/cpu-s then reads as +Inf.
func benchCPU() time.Duration { return 0 }
