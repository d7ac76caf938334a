// Package benchmetrics holds the measurement plumbing of the throughput benchmarks of
// core/snapshot and core/stream: a Meter that reports rows/s, MB/s (wall-clock) and
// MB/cpu-s (process user+system CPU time) with allocation and GC counts; ArrowBytes, the
// Arrow size of a record as docs/performance.md defines MB; and a ReplayCache and Replay
// rows that serve records read once from memory, to measure a job without its source's
// cost. Benchmarks only import it.
package benchmetrics
