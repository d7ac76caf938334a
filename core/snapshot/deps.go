package snapshot

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Deps are what the steps work with: the table spec and the connections, which the caller
// opens and closes. One value serves every step of a snapshot; each step is a function of
// it, so a Lambda invocation builds it, runs one step and drops it.
type Deps struct {
	// Spec is the validated table spec: app_id (the snapshot commit's txn is
	// <app_id>#full.<L>, the facts rows carry it), the bronze URL (the facts rows'
	// target), the capture instance, numPartitions, snapshotKeys, isolationLevel,
	// lockTimeoutMs and snapshotLsn.
	Spec *config.Spec
	// Source is the SQL Server the table is read from.
	Source source.Source
	// Bronze is the table the snapshot is appended to.
	Bronze *deltalog.Table
	// Facts is the facts table: the mode lock reads it, the snapshot_open and bootstrap
	// rows go to it. nil: no facts table (no rows, no mode lock).
	Facts *deltalog.Table
	// Plans is the plans table, <bronze>_snapshot_plans (config.Spec.PlansTable): a
	// chunked snapshot's open, plan and chunk rows, which hold key values. nil for a full
	// snapshot, which does not use it.
	Plans *deltalog.Table
	// Staging is the checkpoint prefix: the stream's checkpoint (Open resumes from it) and
	// the steps' state between invocations, snapshots/<L>/... (docs/snapshots.md).
	Staging storage.Store
	// Options tune the run; the zero value is a bootstrap's.
	Options Options

	// runSchema, set by Run for its reads, is the schema they share (nil: each Read
	// computes its own, as the machine's invocations do).
	runSchema *schemaMemo
	// sameProcess, set by Run, lets a step commit on the state of bronze and the facts
	// table an earlier step of the Run read or committed (Deps.bronzeState, factsState)
	// instead of reading them again.
	sameProcess bool
}

// bronzeState is bronze as a step commits or reads its schema on it: within a Run, the
// state an earlier step read or committed (deltalog.Table.Known), with no request; else
// read now. A commit on a state others have moved past loses the race at the version they
// took and is checked against their commits (deltalog.Transaction.Commit: the snapshot's
// txn committed by another run is skipped, not written twice); through DynamoDB that
// version is taken by the conditional PutItem of its entry (logstore/dynamo).
func (d Deps) bronzeState(ctx context.Context) (*deltalog.Snapshot, error) {
	return d.stateOf(ctx, d.Bronze, "bronze")
}

// factsState is the facts table's state as bronzeState is bronze's.
func (d Deps) factsState(ctx context.Context) (*deltalog.Snapshot, error) {
	return d.stateOf(ctx, d.Facts, "the facts table")
}

func (d Deps) stateOf(ctx context.Context, t *deltalog.Table, name string) (*deltalog.Snapshot, error) {
	if d.sameProcess {
		if s := t.Known(); s != nil {
			return s, nil
		}
	}
	s, err := t.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return s, nil
}

// Options tune a snapshot. The zero value is the bootstrap machine's.
type Options struct {
	// Standalone is snapshot(target) (docs/snapshots.md, "A snapshot without the stream"):
	// no snapshot_open and no bootstrap facts rows (only the stream's bootstrap writes
	// them), and no checkpoint to resume from (its offset starts a new one). The mode lock
	// still holds.
	Standalone bool
	// Resnapshot takes a new snapshot even when bronze holds one, and ignores the
	// checkpoint.
	Resnapshot bool
	// Recovery, when set, is the full re-snapshot that opens a generation after data loss
	// (core/recover): Open takes a new snapshot as Resnapshot does, and its snapshot_open
	// row is kind resnapshot, of the generation's app_id, with the gap; Commit writes no
	// event row (the recovery writes the resnapshot row once the snapshot is committed).
	Recovery *Recovery
	// Switch, when set, is the whole snapshot snapshot_on_switch takes after the stream
	// switched to a newer capture instance (core/stream's recover steps): Open takes a new
	// snapshot as Resnapshot does, of capture instance Switch.CaptureInstance, at the
	// spec's snapshotLsn (the stamp the steps chose once), and its snapshot_open row is kind
	// switch, of Switch.AppID; Commit writes no event row (the steps write its bootstrap
	// row once the snapshot is committed). With snapshot "chunked" the stream passes it
	// to OpenChunked instead: a chunked open of kind switch at that stamp, in the live
	// generation, which the backfill completes.
	Switch *Switch
	// MaxRangeRows cuts the table into more ranges than numPartitions when its row
	// estimate (sys.sp_spaceused) divided by numPartitions exceeds it, so that each read
	// fits in one Lambda invocation; DefaultMaxRangeRows when 0, no bound when negative.
	MaxRangeRows int64
	// TargetRangeBytes cuts the table into more ranges than numPartitions when its data
	// size (sys.sp_spaceused's data) divided by numPartitions exceeds it: rows alone
	// mis-size wide tables; DefaultTargetRangeBytes when 0, no bound when negative.
	TargetRangeBytes int64
	// MaxRangeBytes is the most data one range may hold once MaxRanges binds: a plan whose
	// ranges would hold more is refused with *PlanTooLargeError before anything is read
	// (a read that long would not finish within Lambda's 15 minutes); DefaultMaxRangeBytes
	// when 0, no bound when negative (the CLI, which reads in-process without a limit).
	MaxRangeBytes int64
	// MaxRanges caps the ranges a plan cuts, growing each range instead, so that the
	// bootstrap machine's inline Map stays within an execution's event history
	// (docs/decisions/0008-bootstrap-map-inline-400-ranges.md); DefaultMaxRanges when 0.
	MaxRanges int
	// Read bounds the record batches of the table reads.
	Read source.ReadOptions
	// Writer tunes the Parquet files; zero fields take ingest.Options' defaults.
	Writer parquetio.WriterOptions
	// Now is the clock (started_at, written_at, read_at); time.Now when nil.
	Now func() time.Time
	// Progress, when set, is told how the reads go: after each record batch a range
	// writes, and when a range is staged (ReadProgress.Done). Ranges are read
	// concurrently, so it must be safe for concurrent use. The CLI prints rows, MB, MB/s
	// and an ETA from it; the Lambda handlers leave it nil.
	Progress func(ReadProgress)
	// Logger receives warnings (a backfill's chunk_rows other than its plan's);
	// slog.Default() when nil.
	Logger *slog.Logger
	// OnWave, when set, is called after each backfill wave is committed (progress lines).
	OnWave func(WaveReport)
}

// Recovery describes the generation a re-snapshot opens (Options.Recovery).
type Recovery struct {
	// Generation is n >= 1, AppID its app_id (<app_id>.g<n>).
	Generation int
	AppID      string
	// LostFromTS and LostToTS are the gap (nil when unknown).
	LostFromTS, LostToTS *time.Time
}

// Switch describes a snapshot after a switch to a newer capture instance (Options.Switch).
type Switch struct {
	// CaptureInstance is the newer instance, whose columns the snapshot reads; From the
	// older one and S the newer one's start LSN (a chunked switch snapshot records them in
	// its open row for the backfill's completion row).
	CaptureInstance string
	From            string
	S               lsn.LSN
	// Generation and AppID are the stream's live generation and its app_id.
	Generation int
	AppID      string
}

// resnapshot reports whether Open takes a new snapshot whatever bronze holds.
func (o Options) resnapshot() bool { return o.Resnapshot || o.Recovery != nil || o.Switch != nil }

// DefaultMaxRangeRows is the rows one read aims to hold at most: at the slowest measured
// pace (18,000 rows/s over four connections, 4,500 rows/s each) 2,000,000 rows read in
// about 7.5 minutes, half of Lambda's 15.
const DefaultMaxRangeRows = 2_000_000

// DefaultTargetRangeBytes is the data one read aims to hold at most: at the slowest
// measured pace per connection (about 0.9 MB/s: 4,500 rows/s of 200 bytes) 400 MB read in
// about 7.4 minutes, half of Lambda's 15 (decision 0008).
const DefaultTargetRangeBytes = 400 << 20

// DefaultMaxRangeBytes is the most data a range may hold when MaxRanges binds: twice the
// target, about 15 minutes at the slowest pace.
const DefaultMaxRangeBytes = 2 * DefaultTargetRangeBytes

// DefaultMaxRanges is the most ranges one plan holds: 400 × the worst-case events of one
// range stay under Step Functions' 25,000-event history with 20 % to spare (decision 0008).
const DefaultMaxRanges = 400

func (d Deps) now() time.Time {
	if d.Options.Now != nil {
		return d.Options.Now().UTC()
	}
	return time.Now().UTC()
}

func (d Deps) logger() *slog.Logger {
	if d.Options.Logger != nil {
		return d.Options.Logger
	}
	return slog.Default()
}

// table is the source table of ci, read with the spec's isolation and lock timeout.
func (d Deps) table(ci source.CaptureInstance) source.Table { return SourceTable(d.Spec, ci) }

// SourceTable is the source table of ci as spec reads it: its snapshot isolation and lock
// timeout (docs/spec.md).
func SourceTable(spec *config.Spec, ci source.CaptureInstance) source.Table {
	t := source.Table{Schema: ci.SourceSchema, Name: ci.SourceTable, Isolation: source.ReadCommitted}
	if spec.EffectiveIsolation() == config.IsolationSnapshot {
		t.Isolation = source.Snapshot
	}
	if ms := spec.Options.LockTimeoutMs; ms != nil {
		lt := time.Duration(*ms) * time.Millisecond
		t.LockTimeout = &lt
	}
	return t
}

// givenStamp is the spec's snapshotLsn, zero when unset (validated by config).
func (d Deps) givenStamp() lsn.LSN {
	l, _ := lsn.Parse(d.Spec.Options.SnapshotLsn)
	return l
}

// instances resolves the capture instance name (exactly, then ignoring case; a disabled
// default-named instance follows its table's newest, source.TableInstances) and lists the
// names of all the table's instances, lower-cased (snapshots are found under any). The
// instance returned is the one resolved, or the table's newest when the name was
// followed.
func instances(ctx context.Context, src source.Source, name string) (source.CaptureInstance, []string, error) {
	list, err := src.CaptureInstances(ctx)
	if err != nil {
		return source.CaptureInstance{}, nil, source.WithOp("list capture instances", err)
	}
	insts, err := source.TableInstances(list, name)
	if err != nil {
		return source.CaptureInstance{}, nil, err
	}
	ci := insts[len(insts)-1]
	if r, err := source.Resolve(list, name); err == nil {
		ci = r
	}
	var names []string
	for _, o := range insts {
		names = append(names, strings.ToLower(o.Name))
	}
	return ci, names, nil
}

// columns resolves the snapshot's capture instance by its recorded name and reads its
// captured columns bronze stores (bronze.StoredColumns: computed columns left out) and the
// key columns ranges are cut on.
func (d Deps) columns(ctx context.Context, name string) (source.CaptureInstance, []source.Column, []source.Column, error) {
	ci, _, err := instances(ctx, d.Source, name)
	if err != nil {
		return source.CaptureInstance{}, nil, nil, err
	}
	cols, err := d.Source.CapturedColumns(ctx, ci.Name)
	if err != nil {
		return source.CaptureInstance{}, nil, nil, fmt.Errorf("read captured columns: %w", err)
	}
	stored, _ := bronze.ReadColumns(cols, nil) // computed columns are not stored, as in the stream
	keys, _ := KeyColumns(ci, stored, d.Spec.Options.SnapshotKeys)
	cols, _ = bronze.ReadColumns(cols, d.Spec.Options.Columns) // and only the declared ones
	return ci, cols, keys, nil
}
