package stream

import (
	"context"
	"errors"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// recordedPosition is the furthest position the checkpoint recorded, with its commit time:
// a pending batch's end (its range was planned against the source as it was then), else
// the last committed batch's end. ok is false on a fresh checkpoint.
func recordedPosition(st checkpoint.State) (lsn.Offset, bool) {
	switch {
	case st.Pending != nil:
		return st.Pending.End, true
	case st.Last != nil:
		return st.Last.End, true
	}
	return lsn.Offset{}, false
}

// checkContinuity refuses to go on from off on a database that no longer holds the history
// off was recorded on (source.CheckContinuity; docs/reference/sqlserver-cdc.md §13.2;
// docs/decisions/0011-source-continuity-and-computed-columns.md): after a restore or a
// failover with data loss, every commit below off would be skipped for good. The
// *source.LSNRewoundError is returned as such (Named passes it to Step Functions by name);
// a connection failure is a *SourceUnavailableError.
func (r *run) checkContinuity(ctx context.Context, off lsn.Offset) error {
	err := source.CheckContinuity(ctx, r.src, off.LSN, off.CommitTS)
	var rw *source.LSNRewoundError
	if err == nil || errors.As(err, &rw) {
		return err
	}
	return r.sourceErr("check continuity", err)
}
