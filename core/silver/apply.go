package silver

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// Defaults of Options.
const (
	// DefaultMemoryBytes bounds the bronze rows one key range holds in memory (estimated
	// from the files' sizes, docs/silver.md § Memory).
	DefaultMemoryBytes int64 = 256 << 20
	// DefaultTargetFileSize is the size silver's data files are cut at: smaller than
	// bronze's 128 MiB, since a file is read and rewritten whenever enough of its keys
	// change.
	DefaultTargetFileSize int64 = 32 << 20
	// DefaultMaxDeletedFraction is Options.MaxDeletedFraction's default: a file with more
	// than a quarter of its rows deleted is rewritten.
	DefaultMaxDeletedFraction = 0.25
	// foldDivisor: the delta layer over a key span is folded into the base files once it
	// holds more than 1/foldDivisor of their rows (docs/silver.md § Deletion vectors).
	foldDivisor = 8
	// maxConflicts bounds how often one Apply re-reads silver after losing a commit race
	// (another apply, a compaction) before it returns the conflict.
	maxConflicts = 5
)

// Tables are the tables an apply reads and writes.
type Tables struct {
	// Bronze is read (its log and the files its commits added), never written.
	Bronze *deltalog.Table
	// Silver is created by the first apply and written by every one.
	Silver *deltalog.Table
}

// Options tune Apply. AppID is required; the zero value of the rest is usable.
type Options struct {
	// AppID is the table spec's app_id: silver's commits carry txn(AppID#silver, step).
	AppID string
	// Keys are silver's key columns (the source table's primary key, captured column
	// names). Nil uses the keys silver recorded at its first apply; keys that differ from
	// those are a *KeyError.
	Keys []string
	// Deadline, when set, stops Apply before it starts a key range after it (the range in
	// progress finishes): Result.CaughtUp is then false.
	Deadline time.Time
	// MemoryBytes bounds the bronze rows one key range holds (DefaultMemoryBytes when 0):
	// a run whose rows would need more is applied in several key ranges.
	MemoryBytes int64
	// TargetFileSize is the size data files are cut at (DefaultTargetFileSize when 0).
	TargetFileSize int64
	// CopyOnWrite turns deletion vectors off: every file that loses or gains a row is
	// rewritten (docs/silver.md § Deletion vectors). The default marks removed rows with
	// deletion vectors and writes new rows to the delta layer.
	CopyOnWrite bool
	// MaxDeletedFraction is the share of a file's rows its deletion vector may mark
	// deleted before the file is rewritten instead (DefaultMaxDeletedFraction when 0).
	MaxDeletedFraction float64
	// InlineDVBytes: a deletion vector whose bitmap takes at most this many bytes is
	// stored inline in the log; larger ones go to a DV file (one per commit). 0 keeps
	// every DV in a file, as Spark writes them.
	InlineDVBytes int
	// TempDir holds the Parquet writer's temporary files ("" is the system's).
	TempDir string
	// Now is the clock (remove timestamps, the deadline); nil is time.Now.
	Now func() time.Time
	// Logger receives one line per key range; nil discards.
	Logger *slog.Logger
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Options) targetFileSize() int64 {
	if o.TargetFileSize > 0 {
		return o.TargetFileSize
	}
	return DefaultTargetFileSize
}

func (o *Options) maxDeletedFraction() float64 {
	if o.MaxDeletedFraction > 0 {
		return o.MaxDeletedFraction
	}
	return DefaultMaxDeletedFraction
}

func (o *Options) memoryBytes() int64 {
	if o.MemoryBytes > 0 {
		return o.MemoryBytes
	}
	return DefaultMemoryBytes
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Result is what Apply did, and where silver stands.
type Result struct {
	// CaughtUp is true when silver holds every bronze version there was when Apply last
	// looked; false when the deadline stopped it first.
	CaughtUp bool `json:"caught_up"`
	// BronzeVersion is the bronze version silver has applied in full (-1: none).
	BronzeVersion int64 `json:"bronze_version"`
	// AppliedLSN is the LSN up to which every transaction is in silver (Position's);
	// Snapshot the snapshot it stands on.
	AppliedLSN string `json:"applied_lsn"`
	Snapshot   string `json:"snapshot_lsn"`
	// SilverVersion is silver's version after the last commit (-1: no table).
	SilverVersion int64 `json:"silver_version"`
	// Commits counts silver commits made (one per key range); Rebuilds the runs that
	// rebuilt silver from a snapshot.
	Commits  int `json:"commits"`
	Rebuilds int `json:"rebuilds"`
	Counts
}

// Apply brings silver up to bronze's latest version (docs/silver.md): it reads the bronze
// commits after the version silver has applied, ranks the latest image per key and merges
// it into silver, key range by key range, each range one silver commit that records the
// position reached. A newer whole snapshot in bronze (a bootstrap, a re-snapshot of a
// later generation) makes the run a rebuild: silver's rows are replaced by that snapshot's
// and the changes after it. A chunked snapshot's waves are applied as they arrive, with
// range deletes of the keys a chunk no longer holds, and its last wave makes it the
// snapshot silver stands on without a rebuild (docs/silver.md § Chunk waves). Apply stops
// when silver has caught up with the bronze version it last read, or at opts.Deadline.
//
// Killed anywhere and run again, Apply converges: a key range is one commit, which moves the
// position, and a range applied again from behind changes nothing (an image is applied only
// when newer than the row's _start_lsn, and ranking reaches the same latest images). A
// commit race with another writer of silver makes it re-read silver and go on.
//
// Errors: *KeyError, *BronzeChangedError, *PositionError, deltalog's errors (wrapped).
func Apply(ctx context.Context, t Tables, opts Options) (Result, error) {
	res := Result{BronzeVersion: -1, SilverVersion: -1}
	if opts.AppID == "" {
		return res, &KeyError{Reason: "no app_id"}
	}
	var run *runState
	conflicts := 0
	for {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		ssnap, err := t.Silver.Snapshot(ctx)
		if err != nil {
			return res, fmt.Errorf("read silver: %w", err)
		}
		pos, _, err := ReadPosition(ssnap)
		if err != nil {
			return res, err
		}
		if err := checkKeys(pos.Keys, opts.Keys); err != nil {
			return res, err
		}
		res.BronzeVersion, res.AppliedLSN, res.Snapshot, res.SilverVersion = pos.Version, pos.AppliedLSN, pos.Snapshot, ssnap.Version()
		if !opts.Deadline.IsZero() && !opts.now().Before(opts.Deadline) {
			return res, nil
		}
		if pos.Pass == nil {
			latest, err := t.Bronze.LogStore().Latest(ctx)
			if err != nil {
				return res, fmt.Errorf("read bronze: %w", err)
			}
			if latest < pos.Version {
				return res, &BronzeChangedError{Reason: fmt.Sprintf("bronze's latest version %d is behind the version %d silver applied", latest, pos.Version)}
			}
			if err := checkBronzeCommit(ctx, t.Bronze, pos); err != nil {
				return res, err
			}
			if latest == pos.Version {
				res.CaughtUp = true
				return res, nil
			}
			if run, err = planRun(ctx, t, ssnap, pos, latest, &opts); err != nil {
				return res, err
			}
			pos.Pass = run.pass
			pos.Keys = run.kc.names
			pos.BronzeID = run.bsnap.Metadata().ID
			if run.rebuild != nil {
				res.Rebuilds++
			}
		} else if run == nil || run.pass.Target != pos.Pass.Target {
			if run, err = resumeRun(ctx, t, pos, &opts); err != nil {
				return res, err
			}
		}
		counts, next, err := applyRange(ctx, t, ssnap, pos, run, &opts)
		var cme *deltalog.ConcurrentModificationError
		var cte *deltalog.ConcurrentTxnError
		var cue *deltalog.CommitUnknownError
		if errors.Is(err, errSkipped) || errors.As(err, &cme) || errors.As(err, &cte) || errors.As(err, &cue) {
			// Another writer committed first (or our commit's fate is unknown): read
			// silver again and go on from what it says.
			if conflicts++; conflicts > maxConflicts {
				return res, err
			}
			opts.logger().Warn("silver commit lost a race; reading silver again", "err", err)
			continue
		}
		if err != nil {
			return res, err
		}
		res.Commits++
		res.Counts.add(counts)
		res.SilverVersion = next
	}
}

// errSkipped: the commit was skipped because silver already records our step: another
// apply committed it.
var errSkipped = errors.New("silver: another apply committed this step")

// runState is a run's inputs, read once and kept across its key ranges.
type runState struct {
	pass    *Pass
	bsnap   *deltalog.Snapshot // bronze at pass.Target
	kc      keyColumnsInfo
	rebuild *string
	files   []deltalog.Add // the bronze files whose rows the run applies
	schema  *arrow.Schema  // silver's
	// waves are the chunk waves the run applies (nil: none); context the bronze files of
	// versions applied before whose changes their chunk rows are ranked with.
	waves   *waveRun
	context []deltalog.Add
	// commit is commitMark of bronze's commit at the run's target.
	commit string
}

// planRun decides the next run up to bronze version latest: incremental over the files
// the commits after pos.Version added, or a rebuild from the newest whole snapshot when
// one newer than silver's appeared (or silver is new, or those commits are gone from the
// log); and cuts it into key ranges that fit in memory.
func planRun(ctx context.Context, t Tables, ssnap *deltalog.Snapshot, pos Position, latest int64, opts *Options) (*runState, error) {
	bsnap, err := t.Bronze.SnapshotAt(ctx, latest)
	if err != nil {
		return nil, fmt.Errorf("read bronze: %w", err)
	}
	run, err := newRun(bsnap, pos, opts)
	if err != nil {
		return nil, err
	}
	run.pass = &Pass{Target: latest}
	if run.commit, err = bronzeCommitMark(ctx, t.Bronze, latest); err != nil {
		return nil, err
	}
	var rebuildFrom *string
	if pos.Version < 0 {
		s, err := newestWholeSnapshot(ctx, bsnap, bsnap.Files())
		if err != nil {
			return nil, err
		}
		rebuildFrom = &s
	} else {
		commits, err := t.Bronze.ReadCommits(ctx, pos.Version+1, latest)
		var vnf *deltalog.VersionNotFoundError
		switch {
		case errors.As(err, &vnf):
			// Log clean-up removed commits silver has not applied: start again from the
			// newest snapshot.
			opts.logger().Warn("bronze commits silver has not applied are gone from the log; rebuilding silver", "from_version", pos.Version+1)
			s, err := newestWholeSnapshot(ctx, bsnap, bsnap.Files())
			if err != nil {
				return nil, err
			}
			rebuildFrom = &s
		case err != nil:
			return nil, fmt.Errorf("read bronze commits %d..%d: %w", pos.Version+1, latest, err)
		default:
			var adds []deltalog.Add
			for _, c := range commits {
				for _, a := range c {
					if a.Add != nil && a.Add.DataChange {
						adds = append(adds, *a.Add)
					}
				}
			}
			s, err := newestWholeSnapshot(ctx, bsnap, adds)
			if err != nil {
				return nil, err
			}
			if s != "" && s > pos.Snapshot {
				rebuildFrom = &s
			} else {
				run.files = adds
				run.setWaves(waveTagsOf(commits), pos)
				if w := run.waves; w != nil && w.complete && len(w.spans) == 0 {
					// The chunked snapshot is whole, but silver could not delete the keys
					// its chunks no longer hold (their ranges are not in silver's key
					// order): when it holds rows older than S (an older snapshot, whole or
					// abandoned, or changes before S), some may be such keys: rebuild
					// from it.
					older, err := holdsOlder(ctx, ssnap, w.snapshot)
					if err != nil {
						return nil, err
					}
					if older {
						s := w.snapshot
						rebuildFrom = &s
						run.waves, run.context = nil, nil
					}
				}
			}
		}
	}
	if rebuildFrom != nil {
		run.rebuild = rebuildFrom
		run.setWaves(waveTagsIn(bsnap), Position{Snapshot: *rebuildFrom})
		if w := run.waves; w != nil && w.complete {
			// A whole chunked snapshot newer than the whole one: rebuild from it (its
			// chunk rows and the changes after it), as from any whole snapshot.
			s := w.snapshot
			run.rebuild, run.waves = &s, nil
		}
		run.pass.Rebuild = run.rebuild
		run.files = filesSince(bsnap, *run.rebuild)
	}
	if run.waves != nil {
		run.pass.Waves = &PassWaves{Snapshot: run.waves.snapshot, Wave: run.waves.wave, Complete: run.waves.complete}
	}
	bounds, err := planBounds(ctx, bsnap, run.files, run.kc, opts)
	if err != nil {
		return nil, err
	}
	run.pass.Bounds = bounds
	return run, nil
}

// holdsOlder reports whether silver at ssnap holds a row whose _start_lsn is older than
// s. A live file's statistics answer when their minimum is at or after s, or below it in a
// file without a deletion vector (a DV may have removed that row); the _start_lsn column
// of the other files (no statistics: a table of more than 32 columns) is read.
func holdsOlder(ctx context.Context, ssnap *deltalog.Snapshot, s string) (bool, error) {
	var read []deltalog.Add
	for _, a := range ssnap.Files() {
		st, ok, err := deltalog.ParseStats(a.Stats)
		if err == nil && ok {
			if min, ok := statString(st.MinValues, ColStartLSN); ok {
				if min >= s {
					continue
				}
				if a.DeletionVector == nil {
					return true, nil
				}
			}
		}
		read = append(read, a)
	}
	if len(read) == 0 {
		return false, nil
	}
	it, err := ssnap.Scan(ctx, deltalog.ScanOptions{Columns: []string{ColStartLSN}, Files: read})
	if err != nil {
		return false, fmt.Errorf("read silver's %s: %w", ColStartLSN, err)
	}
	// errOlder ends the read at the first older row.
	errOlder := errors.New("older row")
	err = parquetio.Drain(ctx, it, func(rec arrow.RecordBatch) error {
		col, ok := rec.Column(0).(*array.String)
		if !ok { // not silver's string column: take it as older
			return errOlder
		}
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) && col.Value(i) < s {
				return errOlder
			}
		}
		return nil
	})
	if errors.Is(err, errOlder) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read silver's %s: %w", ColStartLSN, err)
	}
	return false, nil
}

// resumeRun reads the inputs of the run silver's position says is in progress.
func resumeRun(ctx context.Context, t Tables, pos Position, opts *Options) (*runState, error) {
	bsnap, err := t.Bronze.SnapshotAt(ctx, pos.Pass.Target)
	if err != nil {
		return nil, fmt.Errorf("read bronze: %w", err)
	}
	run, err := newRun(bsnap, pos, opts)
	if err != nil {
		return nil, err
	}
	run.pass = pos.Pass
	run.rebuild = pos.Pass.Rebuild
	if run.commit, err = bronzeCommitMark(ctx, t.Bronze, pos.Pass.Target); err != nil {
		return nil, err
	}
	if run.rebuild != nil {
		run.files = filesSince(bsnap, *run.rebuild)
		run.setWaves(waveTagsIn(bsnap), Position{Snapshot: *run.rebuild})
		return run, run.checkWaves()
	}
	commits, err := t.Bronze.ReadCommits(ctx, pos.Version+1, pos.Pass.Target)
	if err != nil {
		return nil, fmt.Errorf("read bronze commits %d..%d: %w", pos.Version+1, pos.Pass.Target, err)
	}
	for _, c := range commits {
		for _, a := range c {
			if a.Add != nil && a.Add.DataChange {
				run.files = append(run.files, *a.Add)
			}
		}
	}
	run.setWaves(waveTagsOf(commits), pos)
	return run, run.checkWaves()
}

// setWaves picks the chunk waves the run applies among tags and the bronze files their
// chunk rows are ranked with.
func (run *runState) setWaves(tags []bronze.WaveTag, pos Position) {
	run.waves = wavesOf(tags, pos, run.kc)
	if run.waves != nil && run.rebuild == nil {
		run.context = contextFiles(run.bsnap, run.files, max(pos.Snapshot, run.waves.minStamp))
	}
}

// checkWaves holds a resumed run to the waves its position recorded: the snapshot whose
// chunk rows count must not change between its key ranges.
func (run *runState) checkWaves() error {
	want, got := run.pass.Waves, run.waves
	switch {
	case want == nil && got == nil:
		return nil
	case want == nil:
		run.waves = nil
		run.context = nil
		return nil
	case got == nil || got.snapshot != want.Snapshot:
		// The waves' commits are no longer readable as they were (a checkpoint now covers
		// them): their chunk rows still count, without range deletes.
		run.waves = &waveRun{snapshot: want.Snapshot, wave: want.Wave, complete: want.Complete}
		run.context = nil
	}
	return nil
}

// newRun checks bronze against silver's position and the keys, for a run reading bsnap.
func newRun(bsnap *deltalog.Snapshot, pos Position, opts *Options) (*runState, error) {
	if pos.BronzeID != "" && bsnap.Metadata().ID != pos.BronzeID {
		return nil, &BronzeChangedError{Reason: fmt.Sprintf("bronze's table id is %s, silver was built from %s", bsnap.Metadata().ID, pos.BronzeID)}
	}
	bsc, err := bsnap.ArrowSchema()
	if err != nil {
		return nil, fmt.Errorf("bronze schema: %w", err)
	}
	keys := opts.Keys
	if len(keys) == 0 {
		keys = pos.Keys
	}
	kc, err := newKeyColumns(bsc, keys)
	if err != nil {
		return nil, err
	}
	if err := checkKeys(pos.Keys, kc.names); err != nil {
		return nil, err
	}
	return &runState{bsnap: bsnap, kc: kc, schema: Schema(bsc)}, nil
}

// checkKeys refuses keys (names compared ignoring case, as SQL Server's catalog does) that
// differ from the keys silver recorded; either empty passes.
func checkKeys(recorded, keys []string) error {
	if len(recorded) > 0 && len(keys) > 0 && !slices.EqualFunc(keys, recorded, strings.EqualFold) {
		return &KeyError{Reason: fmt.Sprintf("silver is keyed on %v, not %v: delete the silver table to key it differently", recorded, keys)}
	}
	return nil
}

// applyRange applies the next key range of the run and commits it with the position
// that follows. It returns the counts and the silver version committed.
func applyRange(ctx context.Context, t Tables, ssnap *deltalog.Snapshot, pos Position, run *runState, opts *Options) (Counts, int64, error) {
	i := pos.Pass.Done
	lo, hi, err := rangeBounds(pos.Pass.Bounds, i)
	if err != nil {
		return Counts{}, 0, err
	}
	sel := selection{since: pos.Snapshot, lo: lo, hi: hi}
	if run.rebuild != nil {
		sel.since, sel.snapshot = *run.rebuild, run.rebuild
	}
	if run.waves != nil {
		sel.open = run.waves.snapshot
	}
	start := opts.now()
	set, err := collectImages(ctx, run.bsnap, run.files, run.kc, sel, run.schema)
	if err != nil {
		return Counts{}, 0, err
	}
	defer set.release()
	if len(run.context) > 0 {
		// A chunk row ranks with every change to its key after its stamp, also those of
		// versions applied before: a key deleted after the stamp stays deleted.
		if held := set.chunkKeys(); len(held) > 0 {
			csel := selection{since: max(sel.since, run.waves.minStamp), lo: lo, hi: hi, held: held}
			if err := set.collect(ctx, run.bsnap, run.context, run.kc, csel); err != nil {
				return Counts{}, 0, err
			}
		}
	}
	set.applyWaveDeletes(run.waves)
	p := &pass{ssnap: ssnap, schema: run.schema, kc: run.kc, set: set, lo: lo, hi: hi, rebuild: run.rebuild != nil, waves: run.waves, opts: opts}
	if err := p.run(ctx); err != nil {
		return Counts{}, 0, err
	}

	next := pos
	pass := *pos.Pass
	pass.Done++
	next.Pass = &pass
	next.AppliedLSN = max(pos.AppliedLSN, set.maxLSN)
	if run.rebuild != nil {
		next.AppliedLSN = max(next.AppliedLSN, *run.rebuild)
	}
	if pass.Done > len(pass.Bounds) {
		next.Version = pass.Target
		next.BronzeCommit = run.commit
		next.Pass = nil
		if run.rebuild != nil {
			next.Snapshot = *run.rebuild
		}
		if w := pass.Waves; w != nil {
			next.OpenSnapshot, next.Wave = w.Snapshot, &w.Wave
			if w.Complete {
				// Whole: every key reflects the source at S or later (the chunks were read
				// after S, the stream reads every change after it).
				next.Snapshot = max(next.Snapshot, w.Snapshot)
				next.AppliedLSN = max(next.AppliedLSN, w.Snapshot)
			}
		}
		if next.OpenSnapshot != "" && next.OpenSnapshot <= next.Snapshot {
			next.OpenSnapshot, next.Wave = "", nil
		}
	}
	next.Format = 1
	next.Step = pos.Step + 1

	tx := t.Silver.Begin(ssnap)
	if err := tx.SetSchema(run.schema); err != nil {
		return Counts{}, 0, fmt.Errorf("silver schema: %w", err)
	}
	if opts.CopyOnWrite {
		tx.EnableFeatures(deltalog.FeatureDomainMetadata)
	} else {
		tx.EnableFeatures(deltalog.FeatureDomainMetadata, deltalog.FeatureDeletionVectors)
		// Spark's switch for writing DVs on DELETE, UPDATE and MERGE: set, so that a
		// Spark job writing silver too marks rows as we do.
		tx.SetProperties(map[string]string{"delta.enableDeletionVectors": "true"})
	}
	tx.Remove(p.removes...)
	tx.Add(p.adds...)
	tx.ReadFiles(p.read...)
	kc := run.kc
	tx.ReadPredicate(func(a *deltalog.Add) bool { return kc.rangeOf(a).overlaps(kc, lo, hi) })
	enc := next.encode()
	tx.SetDomainMetadata(Domain, enc)
	tx.SetAppTxn(opts.AppID+TxnSuffix, next.Step)
	tx.SetUserMetadata(enc)
	op := "incremental"
	if run.rebuild != nil {
		op = "rebuild"
	}
	tx.SetOperation("MERGE", map[string]string{"predicate": `["mssqlcdc apply: latest image per key"]`, "mode": op})
	res, err := tx.Commit(ctx)
	if err != nil {
		return Counts{}, 0, fmt.Errorf("commit silver: %w", err)
	}
	if res.Skipped {
		return Counts{}, 0, errSkipped
	}
	opts.logger().Info("silver key range applied", "mode", op, "range", i+1, "ranges", len(pos.Pass.Bounds)+1,
		"bronze_version", pass.Target, "silver_version", res.Version, "images", len(set.byKey),
		"inserted", p.counts.Inserted, "updated", p.counts.Updated, "deleted", p.counts.Deleted,
		"files_removed", p.counts.FilesRemoved, "files_added", p.counts.FilesAdded, "seconds", opts.now().Sub(start).Seconds())
	return p.counts, res.Version, nil
}

// rangeBounds is key range i of bounds: [bounds[i-1], bounds[i]), open at the ends.
func rangeBounds(bounds []string, i int) (lo, hi []byte, err error) {
	if i < 0 || i > len(bounds) {
		return nil, nil, &PositionError{Reason: fmt.Sprintf("key range %d of %d", i, len(bounds)+1)}
	}
	if i > 0 {
		if lo, err = hex.DecodeString(bounds[i-1]); err != nil {
			return nil, nil, &PositionError{Reason: "key bound", Err: err}
		}
	}
	if i < len(bounds) {
		if hi, err = hex.DecodeString(bounds[i]); err != nil {
			return nil, nil, &PositionError{Reason: "key bound", Err: err}
		}
	}
	return lo, hi, nil
}
