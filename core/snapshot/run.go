package snapshot

import (
	"context"
	"sync"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// Close is the offset the stream starts from: the snapshot's {lsn, commit_ts}, or the
// checkpoint's latest offset when Open resumed. The stream, finding its checkpoint fresh
// with bootstrap=true, finds the same snapshot in bronze (Find) and reads every commit
// after its LSN.
func (j *Job) Close(_ context.Context, open OpenResult) (lsn.Offset, error) {
	return open.Snapshot, nil
}

// Run takes (or finds) the snapshot in-process, as the bootstrap state machine does:
// Open, then Plan, Read of every range (NumPartitions at once) and Commit when it opened
// a snapshot, Commit alone when it found one, and Close. Each step is the same as the
// machine's, so a Run after a failed one converges on the same tables.
func (j *Job) Run(ctx context.Context) (lsn.Offset, error) {
	open, err := j.Open(ctx)
	if err != nil {
		return lsn.Offset{}, err
	}
	switch open.Status {
	case Opened:
		plan, err := j.Plan(ctx, open.Snapshot)
		if err != nil {
			return lsn.Offset{}, err
		}
		if err := j.readAll(ctx, open.Snapshot, plan); err != nil {
			return lsn.Offset{}, err
		}
		if _, err := j.Commit(ctx, open.Snapshot); err != nil {
			return lsn.Offset{}, err
		}
	case Found:
		if _, err := j.Commit(ctx, open.Snapshot); err != nil {
			return lsn.Offset{}, err
		}
	}
	return j.Close(ctx, open)
}

// readAll reads every range of plan, at most plan.NumPartitions at once; the first error
// cancels the others.
func (j *Job) readAll(ctx context.Context, snap lsn.Offset, plan PlanResult) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(plan.NumPartitions, 1))
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, r := range plan.Ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			if _, err := j.Read(ctx, snap, r); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
