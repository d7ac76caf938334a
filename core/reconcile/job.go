package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Job is one reconcile of a table spec's silver table, as `mssqlcdc reconcile` and
// functions/reconcile run it: the capture instance, columns and keys resolved from the
// spec, silver and bronze read at their latest versions, the report appended.
type Job struct {
	Spec   *config.Spec
	Source source.Source
	// Silver is the table compared; Bronze is read for changes in flight (nil: only the
	// change table is); Report receives the report rows (nil: none written).
	Silver, Bronze, Report *deltalog.Table
	// Facts and Plans are the facts and plans tables (config.Spec.FactsTable,
	// config.Spec.PlansTable), read for the chunk checks of a chunked snapshot; nil Plans:
	// no chunk checks.
	Facts, Plans *deltalog.Table
	// Keys are silver's key columns; empty takes those silver's position records, else the
	// spec's snapshotKeys, else the capture instance's unique index.
	Keys []string
	// AppliedLSN overrides silver's position (zero: the one silver's commits record, else
	// the newest _start_lsn among its rows).
	AppliedLSN lsn.LSN
	// RunKey, when set, keys the report: a run whose key the report table's newest
	// reports already hold returns that report (Replayed) without comparing again, so an
	// invocation killed after its report's commit and run again leaves one report.
	RunKey string
	// BucketRows, Sample and Seed as in Options.
	BucketRows int64
	Sample     float64
	Seed       uint64
	Now        func() time.Time
	Logger     *slog.Logger
}

// JobResult is what a job found and where it wrote it.
type JobResult struct {
	Result
	// Run is the report's run number (0 when no report table was given).
	Run int64
	// Replayed is true when the report table already held RunKey's report: Run is its
	// number and Result holds only its counts.
	Replayed bool
}

// Run resolves the spec's table, compares silver with it and writes the report.
// Errors: *config.ConfigError, the source's typed errors (a capture instance not found, a lock
// timeout), deltalog's.
func (j Job) Run(ctx context.Context) (JobResult, error) {
	if j.Report != nil && j.RunKey != "" {
		run, counts, ok, err := ReportedRun(ctx, j.Report, j.Spec.AppID, j.RunKey)
		if err != nil || ok {
			return JobResult{Result: Result{Counts: counts}, Run: run, Replayed: ok}, err
		}
	}
	list, err := j.Source.CaptureInstances(ctx)
	if err != nil {
		return JobResult{}, fmt.Errorf("reconcile: list capture instances: %w", err)
	}
	ci, err := source.Resolve(list, j.Spec.Source.CaptureInstance)
	if err != nil {
		return JobResult{}, err
	}
	cols, err := j.Source.CapturedColumns(ctx, ci.Name)
	if err != nil {
		return JobResult{}, fmt.Errorf("reconcile: captured columns of %s: %w", ci.Name, err)
	}
	silverSnap, err := j.Silver.Snapshot(ctx)
	if err != nil {
		return JobResult{}, fmt.Errorf("reconcile: read silver: %w", err)
	}
	// Silver's own commits say how far it has applied bronze and on which keys
	// (docs/silver.md § Position).
	pos, havePos, err := silver.ReadPosition(silverSnap)
	if err != nil {
		return JobResult{}, err
	}
	applied := j.AppliedLSN
	if applied.IsZero() && havePos && pos.AppliedLSN != "" {
		if applied, err = lsn.Parse(pos.AppliedLSN); err != nil {
			return JobResult{}, fmt.Errorf("reconcile: silver's position: %w", err)
		}
	}
	names := j.Keys
	if len(names) == 0 && havePos {
		names = pos.Keys
	}
	if len(names) == 0 {
		names = j.Spec.Options.SnapshotKeys
	}
	keys, ok := snapshot.KeyColumns(ci, cols, names)
	if !ok {
		return JobResult{}, configError("keys", fmt.Sprintf("capture instance %s has no unique index, or a key column is not a captured column of the table: set snapshotKeys (or silver's keys)", ci.Name))
	}
	var position *silver.Position
	if havePos {
		position = &pos
	}
	d := Deps{Source: j.Source, Silver: silverSnap}
	if j.Plans != nil && j.Bronze != nil {
		// Before bronze: a wave commits bronze, then its plans and facts rows.
		if d.Chunks, err = ReadChunkRecords(ctx, j.Facts, j.Plans, j.Spec.AppID); err != nil {
			return JobResult{}, err
		}
	}
	if j.Bronze != nil {
		if d.Bronze, err = j.Bronze.Snapshot(ctx); err != nil {
			return JobResult{}, fmt.Errorf("reconcile: read bronze: %w", err)
		}
	}
	res, err := Run(ctx, d, Options{Table: snapshot.SourceTable(j.Spec, ci), Columns: cols, Keys: keys,
		CaptureInstance: ci.Name, WithoutCommandID: !j.Spec.Options.CommandID(), AppliedLSN: applied, Position: position,
		BucketRows: j.BucketRows, Sample: j.Sample, Seed: j.Seed, Logger: j.Logger})
	if err != nil {
		return JobResult{}, err
	}
	out := JobResult{Result: res}
	if j.Report != nil {
		now := time.Now
		if j.Now != nil {
			now = j.Now
		}
		if out.Run, err = WriteReport(ctx, j.Report, j.Spec.AppID, j.RunKey, now(), res); err != nil {
			return out, err
		}
	}
	return out, nil
}
