package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// StampLSN is the snapshot LSN L recorded before a read (docs/reference/sqlserver-cdc.md
// §8.3): the larger of sys.fn_cdc_get_max_lsn() and
// start_lsn − 1 of ci. The second covers a capture instance capture has not reached yet:
// on a quiet database max_lsn stays below its first LSN for minutes, and every commit
// before that LSN is in the table. Neither known is a *NoLSNError.
func StampLSN(ctx context.Context, src source.Source, ci source.CaptureInstance) (lsn.LSN, error) {
	maxLSN, err := src.MaxLSN(ctx)
	if err != nil {
		return lsn.Zero, fmt.Errorf("read max_lsn: %w", err)
	}
	l := maxLSN
	if !ci.StartLSN.IsZero() {
		l = lsn.MaxOf(l, ci.StartLSN.Prev())
	}
	if l.IsZero() {
		return lsn.Zero, &NoLSNError{CaptureInstance: ci.Name}
	}
	return l, nil
}

// checkGivenStamp refuses a given stamp (snapshotLsn, export --snapshot-lsn) above what
// StampLSN records now: every commit at or before the stamp must already be in what the
// read returns, and commits between now and a stamp from the future would be in neither the
// snapshot nor the changes after it (docs/reference/sqlserver-cdc.md
// §8.3).
func checkGivenStamp(ctx context.Context, src source.Source, ci source.CaptureInstance, given lsn.LSN) error {
	now, err := StampLSN(ctx, src, ci)
	if err != nil {
		return err
	}
	if now.Less(given) {
		return &StampAheadError{Given: given, Now: now}
	}
	return nil
}

// stampOffset is the offset of stamp l: with l's commit time, none when l is no commit's (a
// decremented start LSN): the snapshot rows' _commit_ts is then NULL.
func stampOffset(ctx context.Context, src source.Source, l lsn.LSN) (lsn.Offset, error) {
	t, ok, err := src.CommitTime(ctx, l)
	if err != nil {
		return lsn.Offset{}, fmt.Errorf("read commit time of %s: %w", l, err)
	}
	if !ok {
		t = time.Time{}
	}
	return lsn.At(l, t), nil
}

// CheckStamp refuses to go on with a snapshot stamped at off (a full snapshot's L, a
// chunked snapshot's S or a wave's stamp) on a database that no longer holds the history
// off was recorded on: max_lsn below it, or the commit at it gone or committed at another
// time (*source.LSNRewoundError; docs/reference/sqlserver-cdc.md §13.2;
// docs/decisions/0011-source-continuity-and-computed-columns.md). After a restore between
// the stamp and a read, the read would see the table as it was before commits the stamp
// claims, and the stream, starting after the stamp, would never read them. Every step
// that goes on from a recorded stamp calls it first, with the stamp as recorded (its
// commit time from staging, not from the source now). Source errors are returned wrapped,
// the stamp named as a snapshot's ("snapshot stamp L: ...").
func CheckStamp(ctx context.Context, src source.Source, off lsn.Offset) error {
	return CheckStampAs(ctx, src, off, source.RecordedBySnapshotStamp)
}

// CheckStampAs is CheckStamp whose errors name the stamp as what:
// source.RecordedBySnapshotStamp ("snapshot stamp") for a snapshot's L or S,
// source.RecordedByWaveStamp ("wave stamp") for a backfill wave's L,
// source.RecordedBySeedStamp ("seed stamp") for a seed's L (core/seed), so that a wave's
// or a seed's refusal is not read as a snapshot's; the *source.LSNRewoundError's
// RecordedBy is what, so its advice is the stamp's, not the stream checkpoint's
// (docs/operations.md "LSNRewoundError").
func CheckStampAs(ctx context.Context, src source.Source, off lsn.Offset, what string) error {
	if err := source.CheckContinuity(ctx, src, off.LSN, off.CommitTS); err != nil {
		if rw := (*source.LSNRewoundError)(nil); errors.As(err, &rw) {
			rw.RecordedBy = what
		}
		return fmt.Errorf("%s %s: %w", what, off.LSN, err)
	}
	return nil
}
