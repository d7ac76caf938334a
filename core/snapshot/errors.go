package snapshot

import (
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// ModeLockError: the stream has an open snapshot of the other mode (docs/snapshots.md
// "One mode per run"; docs/reference/original-library.md §9.5). The message names the
// snapshot's LSN and generation and the way out:
//   - a chunked snapshot refuses a full one: run the backfill until it returns done (or
//     keep snapshot "chunked" in the spec and the stream and backfill running);
//   - a full snapshot a run may still be reading refuses a chunked one: rerun the
//     bootstrap with snapshot "full", which reads the table again and closes it, or wait
//     until CDC cleanup passes its LSN (the retention at most): it then no longer holds
//     the mode.
type ModeLockError struct {
	AppID      string
	Snapshot   lsn.LSN // the open snapshot's LSN
	Mode       string  // its mode
	Generation int
	// Refused is the mode that was refused ("" reads as the other one).
	Refused string
}

func (e *ModeLockError) Error() string {
	if e.Mode == "full" {
		return fmt.Sprintf("app_id %s has a full snapshot %s (generation %d) still open: one snapshot mode per run, so a chunked one cannot open. "+
			"Finish it: rerun the bootstrap with snapshot \"full\" (mssqlcdc bootstrap, or the bootstrap machine), which reads the table again and writes "+
			"its bootstrap row; or, if its run was killed, wait until CDC cleanup passes its LSN (the retention at most) before switching to chunked",
			e.AppID, e.Snapshot, e.Generation)
	}
	return fmt.Sprintf("app_id %s has an open %s snapshot %s (generation %d): one snapshot mode per run, so a full one cannot open. "+
		"Finish it first: run the backfill (mssqlcdc backfill --spec FILE, or the backfill machine) until it returns done, with snapshot \"chunked\" "+
		"in the spec and the stream running; or use another target and app_id",
		e.AppID, e.Mode, e.Snapshot, e.Generation)
}

// MissingRangeError: Commit found no staging manifest for a planned range: its read did
// not finish. Rerun the read of that range.
type MissingRangeError struct {
	Snapshot lsn.LSN
	Range    int
}

func (e *MissingRangeError) Error() string {
	return fmt.Sprintf("snapshot %s: range %d has no manifest; its read has not finished: run the read step of that range again "+
		"(or rerun the bootstrap machine, which takes the snapshot again)", e.Snapshot, e.Range)
}

// PlanNotFoundError: a step after Plan ran for a snapshot whose plan is not in the staging
// area (Plan did not run for this LSN, or the checkpoint prefix changed).
type PlanNotFoundError struct {
	Snapshot lsn.LSN
}

func (e *PlanNotFoundError) Error() string {
	return fmt.Sprintf("snapshot %s: no plan in the checkpoint's staging area; run the plan step first", e.Snapshot)
}

// KeyError: a key column (snapshotKeys or the unique index) cannot bound ranges: it is not
// a present captured column, or a bound does not fit its type.
type KeyError struct {
	Column string
	Reason string
}

func (e *KeyError) Error() string { return fmt.Sprintf("snapshot key %s: %s", e.Column, e.Reason) }

// NoLSNError: neither max_lsn nor the capture instance's start LSN is known (capture has
// never run): retry once the capture job has run.
type NoLSNError struct {
	CaptureInstance string
}

func (e *NoLSNError) Error() string {
	return fmt.Sprintf("capture instance %s: no max_lsn and no start_lsn yet; retry once the capture job has run", e.CaptureInstance)
}

// StampAheadError: a given snapshot LSN (snapshotLsn, export --snapshot-lsn) is above the
// LSN a stamp would record now, so it was not recorded on this server before the read:
// the commits between Now and Given would be missing from the snapshot and skipped by the
// stream. Use an LSN recorded before the read, or leave it unset.
type StampAheadError struct {
	Given, Now lsn.LSN
	// Field is what gave the LSN, named in the advice: "" for the spec's snapshotLsn,
	// or a flag ("--snapshot-lsn", export's).
	Field string
}

func (e *StampAheadError) Error() string {
	leave := "leave snapshotLsn unset"
	if e.Field != "" {
		leave = "leave " + e.Field + " out"
	}
	return fmt.Sprintf("snapshot LSN %s is above the source's current max_lsn %s: a given stamp must be recorded on this server before the read "+
		"(SELECT CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1)); use such an LSN or %s", e.Given, e.Now, leave)
}

// TargetNotEmptyError: an export's target already holds files (Key is one of them).
// Export writes new file names beside whatever is there, so a second export into the same
// URL would double the rows for a reader of the folder. Finished is true when the target
// holds a finished export's marker (ExportMarker); otherwise what is there may be the
// partial export of an interrupted run, which no reader may use. Export into an empty
// URL, or delete what is there first.
type TargetNotEmptyError struct {
	URL      string
	Key      string
	Finished bool
}

func (e *TargetNotEmptyError) Error() string {
	what := "files (" + e.Key + ", ...), with no " + ExportMarker + " marker: a partial export (interrupted, or still running) or other files"
	if e.Finished {
		what = "a finished export (its " + ExportMarker + " gives the LSN and files)"
	}
	return fmt.Sprintf("export target %s already holds %s: exporting again would add files beside them and double the rows; "+
		"pick an empty URL or delete what is there", e.URL, what)
}

// PlanTooLargeError: the table is too large for the bootstrap machine: even cut into
// Ranges ranges (the most one execution's history holds, decision 0008) each would hold
// more than MaxRangeBytes of data, a read that would not finish within Lambda's 15
// minutes. Nothing was read. Take a chunked snapshot (snapshot "chunked", which reads the
// table in waves beside the stream), or run the full snapshot from a machine that reaches
// SQL Server and the lake (mssqlcdc bootstrap --spec FILE, which has no such limit).
type PlanTooLargeError struct {
	EstimatedBytes, EstimatedRows int64
	Ranges                        int
	MaxRangeBytes                 int64
}

func (e *PlanTooLargeError) Error() string {
	return fmt.Sprintf("the table holds about %d MB (%d rows): %d ranges, the most one bootstrap execution holds, would read %d MB each, over the %d MB a "+
		"read can finish within Lambda's 15 minutes; nothing was read. Use snapshot \"chunked\" (docs/snapshots.md), or run mssqlcdc bootstrap --spec FILE "+
		"from a machine that reaches SQL Server and the lake",
		e.EstimatedBytes>>20, e.EstimatedRows, e.Ranges, (e.EstimatedBytes/int64(max(e.Ranges, 1)))>>20, e.MaxRangeBytes>>20)
}
