//go:build unix

package benchmetrics

import (
	"syscall"
	"time"
)

// CPUTime is the process's user+system CPU time so far (getrusage(2), every goroutine
// and the GC included); 0 if getrusage fails.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
