// Package lambdagc sets the Go garbage collector of a Lambda function's process from the
// memory the function is given, before the handler starts.
//
// Go's defaults (GOGC=100, no memory limit) size the heap to twice what is live. A stream
// process keeps 5–15 MB live and allocates about 3 MB per batch, so at the defaults it
// collects every few batches, on a function given 2,048 MB. Configure collects four times
// less often (GOGC=400) and sets a soft memory limit at 80 % of the function's memory, so a
// step whose live heap grows collects harder as it nears the limit instead of being killed
// for exceeding it. Figures and the measurement are in docs/performance.md § The garbage
// collector in a Lambda; docs/operations.md § Memory and the garbage collector says how to
// override it.
package lambdagc

import (
	"runtime/debug"
	"strconv"
	"strings"
)

const (
	// GCPercent is the GOGC Configure sets when the environment sets none.
	GCPercent = 400
	// LimitFraction is the share of the function's memory Configure sets as the soft
	// memory limit (runtime/debug.SetMemoryLimit) when the environment sets no GOMEMLIMIT.
	// The limit counts what the Go runtime maps (heap, stacks, its own metadata); the rest
	// of the function's memory is for what it does not count: the binary's mapped text and
	// Lambda extensions in the same sandbox.
	LimitFraction = 0.8

	// MemoryEnv is the variable Lambda sets to the function's memory in MB.
	MemoryEnv = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"
)

// Settings is what Configure set: GCPercent 0 and MemoryLimit 0 mean left as the
// environment (or Go's default) had it.
type Settings struct {
	// GCPercent is the GOGC set, 0 when GOGC was set in the environment.
	GCPercent int
	// MemoryLimit is the soft memory limit set in bytes, 0 when GOMEMLIMIT was set in the
	// environment or the function's memory is not known (not in Lambda, or MemoryEnv not a
	// positive integer).
	MemoryLimit int64
}

// Configure sets GOGC to GCPercent unless the environment sets GOGC, and the soft memory
// limit to LimitFraction of MemoryEnv's megabytes unless the environment sets GOMEMLIMIT or
// MemoryEnv is missing or not a positive integer. getenv is os.Getenv in a function's main.
// It never fails: a setting it cannot derive is left alone.
func Configure(getenv func(string) string) Settings {
	var s Settings
	if strings.TrimSpace(getenv("GOGC")) == "" {
		debug.SetGCPercent(GCPercent)
		s.GCPercent = GCPercent
	}
	if strings.TrimSpace(getenv("GOMEMLIMIT")) == "" {
		mb, err := strconv.ParseInt(strings.TrimSpace(getenv(MemoryEnv)), 10, 64)
		if err == nil && mb > 0 {
			s.MemoryLimit = int64(float64(mb<<20) * LimitFraction)
			debug.SetMemoryLimit(s.MemoryLimit)
		}
	}
	return s
}
