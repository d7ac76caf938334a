package seed

import (
	"context"
	"sync"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
)

// Close is the offset the stream starts after: the seed's {lsn, commit_ts}. The stream, on
// a fresh checkpoint with bootstrap=true, finds the seed itself (its bootstrap facts row,
// else its rows in bronze) and reads every commit after L. Nothing is read or written.
func Close(seed lsn.Offset) lsn.Offset { return seed }

// Progress is what Run reports after each file group it converted.
type Progress struct {
	// Groups done of GroupsTotal; Files and CopyBytes of the copy read so far, of
	// FilesTotal and CopyBytesTotal; Rows converted so far.
	Groups, GroupsTotal int
	Files, FilesTotal   int
	CopyBytes           int64
	CopyBytesTotal      int64
	Rows                int64
	// Elapsed since the conversion started.
	Elapsed time.Duration
}

// RunResult is what Run did.
type RunResult struct {
	Plan   PlanResult
	Commit CommitResult
	// Offset is where the stream starts after (Close).
	Offset lsn.Offset
}

// Run seeds in-process, as the seed machine does: Plan, then Convert of every group
// (Options.Parallelism at once, as the Map does) and Commit, or Commit alone for a found
// seed, and Close. Each step is the machine's, so a Run after a failed one converges on
// the same tables.
func Run(ctx context.Context, d Deps, req Request) (RunResult, error) {
	plan, err := Plan(ctx, d, req)
	if err != nil {
		return RunResult{}, err
	}
	out := RunResult{Plan: plan}
	if plan.Status == Planned {
		if err := convertAll(ctx, d, plan); err != nil {
			return out, err
		}
	}
	if out.Commit, err = Commit(ctx, d, plan.Seed, plan.Plan); err != nil {
		return out, err
	}
	out.Offset = Close(plan.Seed)
	return out, nil
}

// convertAll runs Convert for every group of plan, plan.Parallelism at once; the first
// error cancels the others.
func convertAll(ctx context.Context, d Deps, plan PlanResult) error {
	var mu sync.Mutex
	p := Progress{GroupsTotal: len(plan.Groups), FilesTotal: plan.Files, CopyBytesTotal: plan.Bytes}
	start := time.Now()
	return ingest.Parallel(ctx, len(plan.Groups), plan.Parallelism, func(ctx context.Context, i int) error {
		r, err := Convert(ctx, d, plan.Seed, plan.Plan, plan.Groups[i])
		if err != nil {
			return err
		}
		if d.Options.Progress != nil {
			mu.Lock()
			p.Groups++
			p.Files += r.Files
			p.CopyBytes += r.CopyBytes
			p.Rows += r.Rows
			p.Elapsed = time.Since(start)
			d.Options.Progress(p)
			mu.Unlock()
		}
		return nil
	})
}
