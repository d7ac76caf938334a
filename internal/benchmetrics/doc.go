// Package benchmetrics holds the measurement plumbing of the throughput benchmarks of
// core/snapshot and core/stream: a Meter that reports rows/s, MB/s (wall-clock) and
// MB/cpu-s (process user+system CPU time) with allocation and GC counts, and ArrowBytes,
// the Arrow size of a record as docs/performance.md defines MB. Benchmarks only import it.
package benchmetrics
