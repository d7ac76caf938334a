//go:build !unix

package stream

import "time"

// cpuTime is not measured here; MB/cpu-s then reads as +Inf.
func cpuTime() time.Duration { return 0 }
