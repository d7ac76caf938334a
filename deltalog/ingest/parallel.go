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
func Parallel(ctx context.Context, n, width int, task func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	width = max(min(width, n), 1)
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
