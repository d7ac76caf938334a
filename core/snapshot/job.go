package snapshot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Job is one table's full snapshot: what it reads, where it writes, and how.
type Job struct {
	// AppID is the stream's app_id: the snapshot commit's txn is <AppID>#full.<L> and the
	// facts rows carry it.
	AppID string
	// Target names bronze in facts rows (the table's URL).
	Target string
	// CaptureInstance is the configured capture instance (resolved exactly, then ignoring
	// case).
	CaptureInstance string
	// NumPartitions is the most ranges read at once (connections to SQL Server).
	NumPartitions int
	// MaxRangeRows cuts the table into more ranges than NumPartitions when its row
	// estimate (sys.sp_spaceused) divided by NumPartitions exceeds it, so that each read
	// fits in one Lambda invocation; DefaultMaxRangeRows when 0, no bound when negative.
	MaxRangeRows int64
	// SnapshotKeys, when set, replace the unique index's columns as range keys.
	SnapshotKeys []string
	// Isolation and LockTimeout of the source-table reads.
	Isolation   source.Isolation
	LockTimeout *time.Duration
	// SnapshotLSN, when not zero, stamps the snapshot instead of max_lsn (snapshotLsn).
	SnapshotLSN lsn.LSN
	// Standalone is snapshot(target): no snapshot_open and no bootstrap facts rows (only
	// the stream's bootstrap writes those); the mode lock is still checked.
	Standalone bool
	// Resnapshot takes a new snapshot even when bronze holds one (and ignores the
	// checkpoint).
	Resnapshot bool
	// ReadOptions bound the record batches of the read.
	ReadOptions source.ReadOptions

	Source     source.Source
	Bronze     Bronze
	Staging    Staging
	Facts      Facts      // nil without a facts table
	Checkpoint Checkpoint // nil: no checkpoint to resume from
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (j *Job) now() time.Time {
	if j.Now != nil {
		return j.Now().UTC()
	}
	return time.Now().UTC()
}

// instance resolves the configured capture instance and lists the names of all the
// table's instances, lower-cased (snapshots are found under any of them).
func (j *Job) instance(ctx context.Context) (source.CaptureInstance, []string, error) {
	list, err := j.Source.CaptureInstances(ctx)
	if err != nil {
		return source.CaptureInstance{}, nil, fmt.Errorf("list capture instances: %w", err)
	}
	ci, err := source.Resolve(list, j.CaptureInstance)
	if err != nil {
		return source.CaptureInstance{}, nil, err
	}
	var names []string
	for _, o := range source.InstancesOf(list, ci.SourceSchema, ci.SourceTable) {
		names = append(names, strings.ToLower(o.Name))
	}
	return ci, names, nil
}

// modeLock refuses a full snapshot while a chunked one of the stream is open (seed "One
// mode per run").
func (j *Job) modeLock(ctx context.Context) error {
	if j.Facts == nil {
		return nil
	}
	open, err := j.Facts.OpenSnapshots(ctx, j.AppID)
	if err != nil {
		return fmt.Errorf("read open snapshots: %w", err)
	}
	for _, o := range open {
		if o.Mode != "full" {
			return &ModeLockError{AppID: j.AppID, Snapshot: o.LSN, Mode: o.Mode, Generation: o.Generation}
		}
	}
	return nil
}

// Find returns the newest whole snapshot of the table in bronze, under any of its capture
// instances (names ignoring case). The stream calls it on a fresh checkpoint with
// bootstrap=true and starts after the snapshot's LSN.
func (j *Job) Find(ctx context.Context) (lsn.Offset, bool, error) {
	_, names, err := j.instance(ctx)
	if err != nil {
		return lsn.Offset{}, false, err
	}
	return j.find(ctx, names)
}

func (j *Job) find(ctx context.Context, names []string) (lsn.Offset, bool, error) {
	found, err := j.Bronze.WholeSnapshots(ctx, names)
	if err != nil {
		return lsn.Offset{}, false, fmt.Errorf("look for a snapshot in bronze: %w", err)
	}
	var best *FoundSnapshot
	for i := range found {
		if best == nil || best.LSN.Less(found[i].LSN) {
			best = &found[i]
		}
	}
	if best == nil {
		return lsn.Offset{}, false, nil
	}
	return j.offsetOf(ctx, *best)
}

// findAt returns the whole snapshot bronze holds at exactly l, if any.
func (j *Job) findAt(ctx context.Context, names []string, l lsn.LSN) (lsn.Offset, bool, error) {
	found, err := j.Bronze.WholeSnapshots(ctx, names)
	if err != nil {
		return lsn.Offset{}, false, fmt.Errorf("look for a snapshot in bronze: %w", err)
	}
	for _, f := range found {
		if f.LSN == l {
			return j.offsetOf(ctx, f)
		}
	}
	return lsn.Offset{}, false, nil
}

// offsetOf is the offset of a snapshot found in bronze: its rows' commit time, else (an
// empty table's snapshot, recorded by its txn alone) the source's commit time of its LSN.
func (j *Job) offsetOf(ctx context.Context, f FoundSnapshot) (lsn.Offset, bool, error) {
	if f.CommitTS != nil {
		return lsn.At(f.LSN, *f.CommitTS), true, nil
	}
	off, err := stampOffset(ctx, j.Source, f.LSN)
	if err != nil {
		return lsn.Offset{}, false, err
	}
	return off, true, nil
}

// Open starts a full snapshot (DESIGN.md §6.2): mode lock; a snapshot already in bronze is
// returned (Found) and nothing is read (with Resnapshot, only one at the very stamp L, when
// nothing was committed since it); a checkpoint with offsets resumes (Resume); else
// the stamp L is recorded before anything is read, with a snapshot_open facts row (mode
// full) and the staging state of L (Opened).
func (j *Job) Open(ctx context.Context) (OpenResult, error) {
	if err := j.modeLock(ctx); err != nil {
		return OpenResult{}, err
	}
	ci, names, err := j.instance(ctx)
	if err != nil {
		return OpenResult{}, err
	}
	if !j.Resnapshot {
		if o, ok, err := j.find(ctx, names); err != nil {
			return OpenResult{}, err
		} else if ok {
			return OpenResult{Status: Found, Snapshot: o, CaptureInstance: ci.Name}, nil
		}
		if j.Checkpoint != nil {
			o, ok, err := j.Checkpoint.Latest(ctx)
			if err != nil {
				return OpenResult{}, fmt.Errorf("read checkpoint: %w", err)
			}
			if ok {
				return OpenResult{Status: Resume, Snapshot: o, CaptureInstance: ci.Name}, nil
			}
		}
	}
	started := j.now()
	l := j.SnapshotLSN
	if l.IsZero() {
		if l, err = StampLSN(ctx, j.Source, ci); err != nil {
			return OpenResult{}, err
		}
	} else if err := checkGivenStamp(ctx, j.Source, ci, l); err != nil {
		return OpenResult{}, err
	}
	if j.Resnapshot {
		// Nothing committed since a snapshot bronze holds: the table at l is already there.
		if o, ok, err := j.findAt(ctx, names, l); err != nil {
			return OpenResult{}, err
		} else if ok {
			return OpenResult{Status: Found, Snapshot: o, CaptureInstance: ci.Name}, nil
		}
	}
	off, err := stampOffset(ctx, j.Source, l)
	if err != nil {
		return OpenResult{}, err
	}
	if j.Facts != nil && !j.Standalone {
		kind := "bootstrap"
		if j.Resnapshot {
			kind = "resnapshot"
		}
		ev := FactsEvent{AppID: j.AppID, Target: j.Target, LSN: off.LSN.String(), CommitTS: off.CommitTime(),
			Detail: fmt.Sprintf(`{"mode":"full","kind":%q,"generation":0,"lost_from_ts":null,"lost_to_ts":null}`, kind)}
		if err := j.Facts.SnapshotOpened(ctx, ev); err != nil {
			return OpenResult{}, fmt.Errorf("write snapshot_open row: %w", err)
		}
	}
	st := openState{AppID: j.AppID, CaptureInstance: ci.Name, Snapshot: off, StartedAt: started}
	if err := putJSON(ctx, j.Staging, openKey(off.LSN), st); err != nil {
		return OpenResult{}, err
	}
	return OpenResult{Status: Opened, Snapshot: off, CaptureInstance: ci.Name, StartedAt: &started}, nil
}

// loadOpen reads the staging state of snapshot l.
func (j *Job) loadOpen(ctx context.Context, l lsn.LSN) (openState, bool, error) {
	var st openState
	ok, err := getJSON(ctx, j.Staging, openKey(l), &st)
	return st, ok, err
}

// table is the source table of ci with the job's isolation and lock timeout.
func (j *Job) table(ci source.CaptureInstance) source.Table {
	return source.Table{Schema: ci.SourceSchema, Name: ci.SourceTable, Isolation: j.Isolation, LockTimeout: j.LockTimeout}
}

// columns resolves the snapshot's capture instance by its recorded name and reads its
// captured columns and key columns.
func (j *Job) columns(ctx context.Context, name string) (source.CaptureInstance, []source.Column, []source.Column, error) {
	list, err := j.Source.CaptureInstances(ctx)
	if err != nil {
		return source.CaptureInstance{}, nil, nil, fmt.Errorf("list capture instances: %w", err)
	}
	ci, err := source.Resolve(list, name)
	if err != nil {
		return source.CaptureInstance{}, nil, nil, err
	}
	cols, err := j.Source.CapturedColumns(ctx, ci.Name)
	if err != nil {
		return source.CaptureInstance{}, nil, nil, fmt.Errorf("read captured columns: %w", err)
	}
	keys, _ := keyColumns(ci, cols, j.SnapshotKeys)
	return ci, cols, keys, nil
}

// DefaultMaxRangeRows is the rows one read aims to hold at most: at the seed's slowest
// measured pace (18,000 rows/s over four connections, 4,500 rows/s each) 2,000,000 rows
// read in about 7.5 minutes, half of Lambda's 15.
const DefaultMaxRangeRows = 2_000_000

// rangeCount is how many ranges to cut: n, or more when the table's row estimate would
// put more than MaxRangeRows in a range (only with keys to cut on).
func (j *Job) rangeCount(ctx context.Context, ci source.CaptureInstance, keys []source.Column, n int) int {
	limit := j.MaxRangeRows
	if limit == 0 {
		limit = DefaultMaxRangeRows
	}
	if limit < 0 || len(keys) == 0 {
		return n
	}
	est, err := j.Source.RowEstimate(ctx, j.table(ci))
	if err != nil || est <= 0 {
		return n // an estimate only sizes the plan; the read does not depend on it
	}
	return max(n, int((est+limit-1)/limit))
}

// Plan cuts the table of snapshot snap into key ranges for NumPartitions and records them
// in the staging area. A rerun plans again and replaces the plan (reads not yet committed
// are redone by the Map that follows).
func (j *Job) Plan(ctx context.Context, snap lsn.Offset) (PlanResult, error) {
	st, ok, err := j.loadOpen(ctx, snap.LSN)
	if err != nil {
		return PlanResult{}, err
	}
	if !ok {
		return PlanResult{}, &PlanNotFoundError{Snapshot: snap.LSN.String()}
	}
	ci, _, keys, err := j.columns(ctx, st.CaptureInstance)
	if err != nil {
		return PlanResult{}, err
	}
	n := max(j.NumPartitions, 1)
	ranges, err := planRanges(ctx, j.Source, j.table(ci), keys, j.rangeCount(ctx, ci, keys, n))
	if err != nil {
		return PlanResult{}, err
	}
	ps := planState{Ranges: ranges}
	if len(ranges) > 1 {
		for _, k := range keys {
			ps.Keys = append(ps.Keys, k.Name)
		}
	}
	if err := putJSON(ctx, j.Staging, planKey(snap.LSN), ps); err != nil {
		return PlanResult{}, err
	}
	refs := make([]Range, len(ranges))
	for i, r := range ranges {
		refs[i] = Range{Index: r.Index}
	}
	return PlanResult{NumPartitions: n, Keys: ps.Keys, Ranges: refs}, nil
}
