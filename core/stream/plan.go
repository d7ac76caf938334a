package stream

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// instances resolves the configured capture instance and returns every instance of its
// table, oldest first (TableInstances).
func (r *run) instances(ctx context.Context) ([]source.CaptureInstance, error) {
	insts, err := TableInstances(ctx, r.src, r.spec.Source.CaptureInstance)
	var nf *source.CaptureInstanceNotFoundError
	if err != nil && !errors.As(err, &nf) {
		return nil, r.sourceErr("list capture instances", err)
	}
	return insts, err
}

// TableInstances lists the capture instances and resolves name among them
// (source.TableInstances): every instance of its table, oldest first, following a
// disabled default-named instance to its table's newest.
func TableInstances(ctx context.Context, src source.Source, name string) ([]source.CaptureInstance, error) {
	list, err := src.CaptureInstances(ctx)
	if err != nil {
		return nil, err
	}
	return source.TableInstances(list, name)
}

// initialOffset is where a fresh checkpoint starts (docs/reference/original-library.md §2.2).
// An explicit LSN is checked first (checkStartingLSN): a *config.ConfigError when the
// stream cannot start after it.
func (r *run) initialOffset(ctx context.Context, insts []source.CaptureInstance, maxLSN lsn.LSN) (lsn.Offset, error) {
	if r.gens.Live.Generation > 0 {
		// A generation opened after data loss starts at its snapshot, whatever startingLsn
		// and bootstrap say (docs/stream.md "Generations").
		return r.gens.Live.Snapshot, nil
	}
	if r.spec.Bootstrap {
		return r.bootstrapOffset(ctx)
	}
	kind, at := r.spec.Starting()
	switch kind {
	case config.StartEarliest:
		oldest := insts[0]
		min, err := r.src.MinLSN(ctx, oldest.Name)
		if err != nil {
			return lsn.Offset{}, r.sourceErr("min_lsn", err)
		}
		return r.offsetAt(ctx, min.Prev())
	case config.StartLatest:
		newest := insts[len(insts)-1]
		switch {
		case !maxLSN.IsZero() && !maxLSN.Less(newest.StartLSN):
			return r.offsetAt(ctx, maxLSN)
		case !newest.StartLSN.IsZero():
			// Capture has not reached the just-enabled instance: start just before it, as
			// a snapshot would be stamped (docs/reference/known-failures.md §B6).
			return r.offsetAt(ctx, newest.StartLSN.Prev())
		}
		return lsn.Offset{}, &config.ConfigError{Problems: []config.Problem{{Field: "options.startingLsn",
			Reason: "latest: neither max_lsn nor the capture instance's start LSN is known yet; retry once the capture job has run"}}}
	default:
		if err := r.checkStartingLSN(ctx, insts, at, maxLSN); err != nil {
			return lsn.Offset{}, err
		}
		return r.offsetAt(ctx, at)
	}
}

// offsetAt is l with its commit time ("" when l is no commit's).
func (r *run) offsetAt(ctx context.Context, l lsn.LSN) (lsn.Offset, error) {
	if l.IsZero() {
		return lsn.Offset{}, nil
	}
	t, ok, err := r.src.CommitTime(ctx, l)
	if err != nil {
		return lsn.Offset{LSN: l}, r.sourceErr("commit time", err)
	}
	if !ok {
		t = time.Time{}
	}
	return lsn.At(l, t), nil
}

// planEnd is the end of the next batch after start (docs/reference/original-library.md
// §3.1): the target recorded at the invocation's start, or the maxCommitsPerBatch-th commit
// after start when that is below. ok is false when nothing is new.
func (r *run) planEnd(ctx context.Context, start lsn.LSN, target lsn.LSN) (lsn.LSN, bool, error) {
	if !start.Less(target) {
		return start, false, nil
	}
	upper := target
	if n := r.spec.Options.MaxCommitsPerBatch; n != nil {
		nth, ok, err := r.src.NthCommitAfter(ctx, start, *n)
		if err != nil {
			return start, false, r.sourceErr("n-th commit", err)
		}
		if ok && nth.Less(upper) {
			upper = nth
		}
	}
	return upper, start.Less(upper), nil
}

// span is one capture instance's part of a batch: the closed range [From, To].
type span struct {
	CI       source.CaptureInstance
	From, To lsn.LSN
}

// spans cuts the batch range [from, to] at each newer instance's start LSN S: the older
// instance for [from, S-1], the newer for [S, to] (docs/reference/original-library.md §3.2
// step 9; docs/reference/known-failures.md §C7, §C8). Empty spans are left out. A newer
// instance whose S is above to is not read.
func spans(insts []source.CaptureInstance, from, to lsn.LSN) []span {
	var out []span
	for i, ci := range insts {
		if i > 0 && to.Less(ci.StartLSN) {
			continue // capture has not reached the newer instance inside this range
		}
		lo := from
		if i > 0 {
			lo = lsn.MaxOf(from, ci.StartLSN)
		}
		hi := to
		if i+1 < len(insts) {
			if s := insts[i+1].StartLSN; !s.IsZero() && s.Compare(to) <= 0 {
				hi = s.Prev()
			}
		}
		if hi.Less(lo) {
			continue
		}
		out = append(out, span{CI: ci, From: lo, To: hi})
	}
	return out
}

// ciLabel is the _capture_instance value: the configured spelling when the instance is
// the configured one, else the instance's own name (docs/bronze.md).
func (r *run) ciLabel(ci source.CaptureInstance) string {
	if strings.EqualFold(ci.Name, r.spec.Source.CaptureInstance) {
		return r.spec.Source.CaptureInstance
	}
	return ci.Name
}

// sourceErr maps a Source failure: connection failures become *SourceUnavailableError
// (retried by Step Functions); typed errors the caller branches on, a refused login
// (source.LoginError) among them, pass through wrapped, for the handler to name
// (functions/lambdaerr).
func (r *run) sourceErr(op string, err error) error {
	if source.IsTransient(err) {
		return &SourceUnavailableError{Op: op, Err: err}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return source.WithOp(op, err)
}
