package ingest

import (
	"context"
	"sync"
)

// Parallel runs task(ctx, i) for every i in [0, n), at most width at once (width < 1 is
// 1), in index order of start. The first error cancels the ctx the other tasks see, no
// task starts after it, and it is returned once all running tasks have returned; a ctx
// cancelled from outside returns ctx's error. Reads that write data files give each task
// a Writer of its own (a Writer is not safe for concurrent use), so memory is width row
// groups.
//
// At width 1 the tasks run one after the other on the caller's goroutine: a stream batch
// reads its one range so (NumPartitions 1), and a goroutine of its own for it cost its
// start, two hand-offs and the growth of a new 8 KiB stack to the depth of the read, the
// Parquet encoding and the SDK's upload, copied at each doubling (docs/performance.md §
// Issue 13: a code-level cut).
func Parallel(ctx context.Context, n, width int, task func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	width = max(min(width, n), 1)
	if width == 1 {
		for i := 0; i < n; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := task(ctx, i); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range width {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := task(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
