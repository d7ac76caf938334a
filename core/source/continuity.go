package source

import (
	"context"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// CheckContinuity refuses to go on from a recorded position (a checkpoint's offset, a
// snapshot or wave stamp) on a database that no longer holds the history it was taken on
// (docs/reference/sqlserver-cdc.md §13). recorded is the LSN and
// recordedTime its commit time as recorded then (zero when it was not a commit's LSN, such
// as a start LSN minus one). It returns an *LSNRewoundError when:
//
//   - max_lsn is below recorded: the database was restored or failed over to a point
//     before it, or the DSN names another database or a replica far behind;
//   - recordedTime is set, the mapping still holds a commit at or before recorded, and
//     that commit is not recorded itself (the commit is gone while older ones remain) or
//     its commit time differs from recordedTime: after a restore new commits reuse LSNs
//     the lost ones had.
//
// A recorded position without a commit time may lie above max_lsn when it is below the
// start LSN of a capture instance capture has not reached yet: a snapshot stamped
// start_lsn − 1 on a quiet database, or a stream started there
// (docs/reference/sqlserver-cdc.md §8.3). That passes while the instance exists and
// capture has still not reached it.
//
// When cleanup has removed every mapping row at or before recorded, the commit time cannot
// be compared and only the first check applies (retention loss is the MinLSN checks'
// business). The zero LSN passes. Source errors are returned as they are.
func CheckContinuity(ctx context.Context, src Source, recorded lsn.LSN, recordedTime time.Time) error {
	if recorded.IsZero() {
		return nil
	}
	maxLSN, err := src.MaxLSN(ctx)
	if err != nil {
		return fmt.Errorf("read max_lsn: %w", err)
	}
	if maxLSN.Less(recorded) {
		if recordedTime.IsZero() {
			ahead, err := beforeUnreachedInstance(ctx, src, recorded, maxLSN)
			if err != nil || ahead {
				return err
			}
		}
		return &LSNRewoundError{Recorded: recorded, RecordedTime: recordedTime, MaxLSN: maxLSN}
	}
	if recordedTime.IsZero() {
		return nil
	}
	c, ok, err := src.CommitAtOrBefore(ctx, recorded)
	if err != nil {
		return fmt.Errorf("read commit time of %s: %w", recorded, err)
	}
	if !ok {
		return nil
	}
	if c.LSN != recorded || !c.Time.Truncate(time.Millisecond).Equal(recordedTime.Truncate(time.Millisecond)) {
		return &LSNRewoundError{Recorded: recorded, RecordedTime: recordedTime, MaxLSN: maxLSN, Found: c}
	}
	return nil
}

// beforeUnreachedInstance reports whether recorded (above maxLSN) is below the start LSN of
// a capture instance capture has not reached (its start LSN above maxLSN).
func beforeUnreachedInstance(ctx context.Context, src Source, recorded, maxLSN lsn.LSN) (bool, error) {
	list, err := src.CaptureInstances(ctx)
	if err != nil {
		return false, fmt.Errorf("list capture instances: %w", err)
	}
	for _, ci := range list {
		if !ci.StartLSN.IsZero() && maxLSN.Less(ci.StartLSN) && recorded.Less(ci.StartLSN) {
			return true, nil
		}
	}
	return false, nil
}
