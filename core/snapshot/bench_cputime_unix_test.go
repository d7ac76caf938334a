//go:build unix

package snapshot_test

import (
	"syscall"
	"time"
)

// benchCPU is the process's user+system CPU time so far (getrusage).
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
