// Package maintain is a Delta table's housekeeping, run by the scheduled maintain Lambda
// (functions/maintain) and by `mssqlcdc maintain` alike: compaction of small files,
// a checkpoint of the newest version, log clean-up, VACUUM and orphaned temporary files,
// in that order, each with the table's own retention (docs/operations.md § Maintenance).
//
// Every operation is safe while the stream appends (compaction commits only removes and
// adds with dataChange false, which blind appends never conflict with; the others delete
// only what no reader within the retention can need) and safe to kill at any point and
// run again.
package maintain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// The table properties that set each deleting operation's retention
// (docs/reference/delta-protocol.md §11.1).
const (
	LogRetentionKey     = "delta.logRetentionDuration"
	DeletedRetentionKey = "delta.deletedFileRetentionDuration"
)

// Options select the operations and tune them. All gives the scheduled function's set.
type Options struct {
	// Compact bin-packs small files (deltalog.Table.Compact) with Compaction's settings.
	Compact    bool
	Compaction deltalog.CompactOptions
	// Checkpoint writes a checkpoint of the newest version when the table's newest
	// checkpoint is older, so that readers open the table from it.
	Checkpoint bool
	// CleanupLog deletes expired log files (deltalog.Table.CleanupLog).
	CleanupLog bool
	// Vacuum deletes unreferenced data files older than the retention.
	Vacuum bool
	// TempFiles deletes orphaned temporary files older than TempFileAge
	// (deltalog.Table.CleanupTempFiles; 0 is deltalog.DefaultTempFileAge).
	TempFiles   bool
	TempFileAge time.Duration
	// Retention applies to CleanupLog and Vacuum; 0 is each one's table property, else the
	// Delta default. One below the table's value is a *RetentionTooShortError unless Force,
	// or DryRun: a dry run deletes nothing, so it reports what that retention would delete
	// and marks the operation NeedsForce.
	Retention time.Duration
	Force     bool
	// DryRun reports what each operation would do and changes nothing.
	DryRun bool
	// VacuumStart, when set, is told the table's URL and version when vacuum's listing
	// starts; VacuumProgress then every VacuumProgressEvery objects listed (0: deltalog's
	// default) with the result so far (deltalog.VacuumOptions.Progress). A table of
	// hundreds of thousands of files takes minutes to list on S3.
	VacuumStart         func(url string, version int64)
	VacuumProgress      func(listed int, soFar deltalog.VacuumResult)
	VacuumProgressEvery int
	// CompactBefore, when set, is the time after which no new compaction group starts
	// (a Lambda's deadline less a margin for the other operations): the groups done stay
	// committed and the rest waits for the next run.
	CompactBefore time.Time
}

// All is every operation with its defaults: what the scheduled function runs.
func All() Options {
	return Options{Compact: true, Checkpoint: true, CleanupLog: true, Vacuum: true, TempFiles: true}
}

// Report is what Run did to one table (with DryRun: would do). An operation not asked for
// is nil (null in JSON).
type Report struct {
	Table      string            `json:"table"`
	DryRun     bool              `json:"dryRun"`
	Compact    *CompactResult    `json:"compact"`
	Checkpoint *CheckpointResult `json:"checkpoint"`
	Vacuum     *OpResult         `json:"vacuum"`
	CleanupLog *OpResult         `json:"cleanupLog"`
	TempFiles  *OpResult         `json:"tempFiles"`
}

// CompactResult is the compaction's outcome (deltalog.CompactResult, in JSON).
type CompactResult struct {
	// Version is the table version after the last compaction commit.
	Version      int64 `json:"version"`
	Commits      int   `json:"commits"`
	FilesRemoved int   `json:"filesRemoved"`
	FilesAdded   int   `json:"filesAdded"`
	BytesRemoved int64 `json:"bytesRemoved"`
	BytesAdded   int64 `json:"bytesAdded"`
	Rows         int64 `json:"rows"`
	// FilesLeft are small files left for the next run (the byte budget or the deadline).
	FilesLeft int `json:"filesLeft"`
	// LiveFiles is the table's live file count afterwards.
	LiveFiles int `json:"liveFiles"`
}

// CheckpointResult says whether a checkpoint was written, and of which version.
type CheckpointResult struct {
	// Version is the newest version; Written is true when a checkpoint of it was written
	// (false when one existed already).
	Version int64 `json:"version"`
	Written bool  `json:"written"`
}

// OpResult is a deleting operation's outcome.
type OpResult struct {
	// RetentionHours is the retention used, in hours; MinimumHours the table's configured
	// retention (its property, else the Delta default), the lowest accepted without Force.
	// Temporary files: both are the minimum age.
	RetentionHours float64 `json:"retentionHours"`
	MinimumHours   float64 `json:"minimumHours"`
	// NeedsForce (a dry run only) is true when RetentionHours is below MinimumHours and
	// Force was not set: a real run with this retention would be refused
	// (*RetentionTooShortError) unless forced.
	NeedsForce bool `json:"needsForce,omitempty"`
	// DeletedFiles and DeletedBytes count what was deleted (with DryRun: would be).
	DeletedFiles int   `json:"deletedFiles"`
	DeletedBytes int64 `json:"deletedBytes"`
	// Deleted are the keys, relative to the table root.
	Deleted []string `json:"deleted"`
	// Vacuum only: the snapshot version whose references were kept, and the files kept
	// because that snapshot references them (Protected: Live, its live files, plus
	// Removed, the files of its removes within the retention) or because they are
	// younger than the retention (TooNew).
	Version   *int64 `json:"version,omitempty"`
	Protected *int   `json:"protected,omitempty"`
	Live      *int   `json:"live,omitempty"`
	Removed   *int   `json:"removed,omitempty"`
	TooNew    *int   `json:"tooNew,omitempty"`
	// Log clean-up only: the checkpoint the kept log starts from; null when no checkpoint
	// is old enough and nothing was deleted.
	Checkpoint *int64 `json:"checkpoint,omitempty"`
	// Log clean-up only: the cut-off, midnight UTC of the day the retention ago; only
	// commits at or before it expire.
	Cutoff *time.Time `json:"cutoff,omitempty"`
}

// RetentionTooShortError: Options.Retention is below the table's configured retention for
// an operation, and Force is not set. Nothing was done.
type RetentionTooShortError struct {
	// Op is "vacuum" or "cleanup-log"; Property the table property that sets Minimum.
	Op, Property       string
	Retention, Minimum time.Duration
}

func (e *RetentionTooShortError) Error() string {
	return fmt.Sprintf("%s: retention %s is below the table's %s (%s): readers of older versions and writers mid-commit could lose files; pass --force to do it anyway",
		e.Op, Readable(e.Retention), e.Property, Readable(e.Minimum))
}

// ErrNoTable: the location holds no Delta table (no commit).
var ErrNoTable = errors.New("no Delta table here (no _delta_log commits)")

// Run maintains tbl: it checks both retentions before anything is changed, then compacts,
// writes a checkpoint of the newest version, cleans the log, vacuums and deletes orphaned
// temporary files, as o asks. The first failing operation ends the run with its error
// (the report holds what was done before it); a compaction stopped by CompactBefore is no
// error. ErrNoTable when the table has no commit; *deltalog.UncoordinatedCommitError,
// before anything is done, when the table's writers coordinate through DynamoDB and tbl
// does not commit through it (Table.CheckCoordination).
func Run(ctx context.Context, tbl *deltalog.Table, o Options) (*Report, error) {
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if snap.Version() < 0 {
		return nil, ErrNoTable
	}
	// Compaction commits, and the other operations are no business of a process that
	// cannot commit to the table: a table whose writers coordinate through DynamoDB is
	// refused before anything is done, dry runs included, when tbl does not commit
	// through DynamoDB (docs/decisions/0029-mixed-log-stores.md).
	if err := tbl.CheckCoordination(ctx); err != nil {
		return nil, err
	}
	md := snap.Metadata()
	rep := &Report{Table: tbl.Store().URL(), DryRun: o.DryRun}
	vacRet, vacMin, vacForce, err := retention(md, o, "vacuum", DeletedRetentionKey, deltalog.DefaultTombstoneRetention)
	if err != nil && o.Vacuum {
		return nil, err
	}
	logRet, logMin, logForce, err := retention(md, o, "cleanup-log", LogRetentionKey, deltalog.DefaultLogRetention)
	if err != nil && o.CleanupLog {
		return nil, err
	}

	if o.Compact {
		copts := o.Compaction
		copts.DryRun = o.DryRun
		cctx := ctx
		if !o.CompactBefore.IsZero() {
			var cancel context.CancelFunc
			cctx, cancel = context.WithDeadline(ctx, o.CompactBefore)
			defer cancel()
		}
		res, err := tbl.Compact(cctx, copts)
		rep.Compact = &CompactResult{Version: res.Version, Commits: res.Commits, FilesRemoved: res.FilesRemoved,
			FilesAdded: res.FilesAdded, BytesRemoved: res.BytesRemoved, BytesAdded: res.BytesAdded, Rows: res.Rows,
			FilesLeft: res.FilesLeft, LiveFiles: res.LiveFiles}
		if err != nil && (ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded)) {
			return rep, fmt.Errorf("compact: %w", err)
		}
	}
	if o.Checkpoint {
		snap, err := tbl.Snapshot(ctx)
		if err != nil {
			return rep, err
		}
		rep.Checkpoint = &CheckpointResult{Version: snap.Version()}
		if snap.CheckpointVersion() < snap.Version() {
			rep.Checkpoint.Written = true
			if !o.DryRun {
				if err := deltalog.WriteCheckpoint(ctx, snap); err != nil {
					return rep, fmt.Errorf("checkpoint: %w", err)
				}
			}
		}
	}
	if o.CleanupLog {
		res, err := tbl.CleanupLog(ctx, deltalog.CleanupOptions{Retention: logRet, DryRun: o.DryRun})
		if err != nil {
			return rep, fmt.Errorf("cleanup-log: %w", err)
		}
		r := newOpResult(logRet, logMin, res.Deleted, res.DeletedBytes)
		r.NeedsForce = logForce
		if res.Checkpoint >= 0 {
			r.Checkpoint = &res.Checkpoint
		}
		if !res.Cutoff.IsZero() {
			r.Cutoff = &res.Cutoff
		}
		rep.CleanupLog = r
	}
	if o.Vacuum {
		vo := deltalog.VacuumOptions{Retention: vacRet, DryRun: o.DryRun,
			Progress: o.VacuumProgress, ProgressEvery: o.VacuumProgressEvery}
		if o.VacuumStart != nil {
			snap, err := tbl.Snapshot(ctx)
			if err != nil {
				return rep, err
			}
			o.VacuumStart(tbl.Store().URL(), snap.Version())
		}
		res, err := tbl.Vacuum(ctx, vo)
		if err != nil {
			return rep, fmt.Errorf("vacuum: %w", err)
		}
		r := newOpResult(vacRet, vacMin, res.Deleted, res.DeletedBytes)
		r.Version, r.Protected, r.TooNew, r.NeedsForce = &res.Version, &res.Protected, &res.TooNew, vacForce
		r.Live, r.Removed = &res.Live, &res.Removed
		rep.Vacuum = r
	}
	if o.TempFiles {
		age := o.TempFileAge
		if age <= 0 {
			age = deltalog.DefaultTempFileAge
		}
		res, err := tbl.CleanupTempFiles(ctx, deltalog.TempFileOptions{MinAge: age, DryRun: o.DryRun})
		if err != nil {
			return rep, err
		}
		rep.TempFiles = newOpResult(age, age, res.Deleted, res.DeletedBytes)
	}
	return rep, nil
}

// retention is the retention an operation uses (o.Retention, else the table's property,
// else def) and the table's configured minimum; an error when the property does not parse
// or o.Retention is below the minimum without Force, except in a dry run, which deletes
// nothing: there needsForce says a real run would be refused.
func retention(md deltalog.Metadata, o Options, op, property string, def time.Duration) (use, minimum time.Duration, needsForce bool, err error) {
	minimum = def
	if v, ok := md.Configuration[property]; ok {
		if minimum, err = deltalog.ParseInterval(v); err != nil {
			return 0, 0, false, fmt.Errorf("%s: %w", property, err)
		}
	}
	use = o.Retention
	if use == 0 {
		use = minimum
	}
	if use < minimum && !o.Force {
		if !o.DryRun {
			return 0, 0, false, &RetentionTooShortError{Op: op, Property: property, Retention: use, Minimum: minimum}
		}
		needsForce = true
	}
	return use, minimum, needsForce, nil
}

// newOpResult is a deleting operation's result; bytes is the deleted files' size as the
// operation listed them (each lists only what it may delete, so the report costs no
// listing of its own).
func newOpResult(retention, minimum time.Duration, deleted []string, bytes int64) *OpResult {
	r := &OpResult{RetentionHours: retention.Hours(), MinimumHours: minimum.Hours(),
		DeletedFiles: len(deleted), Deleted: deleted, DeletedBytes: bytes}
	if r.Deleted == nil {
		r.Deleted = []string{}
	}
	return r
}
