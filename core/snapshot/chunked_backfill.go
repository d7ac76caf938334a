package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Backfill states (docs/handlers.md backfill-wave; docs/snapshots.md "Chunked snapshots").
const (
	// StateDone: every chunk is in bronze and the bootstrap facts row is written.
	StateDone = "done"
	// StateRunning: the call's budget (max_waves, max_seconds, the invocation's deadline)
	// ran out; call again.
	StateRunning = "running"
	// StateWaitingHeadroom: the stream's retention headroom is below min_headroom_hours;
	// wait and call again.
	StateWaitingHeadroom = "waiting_headroom"
	// StateWaitingMetrics: the stream has written no batch facts row with a headroom yet;
	// wait and call again.
	StateWaitingMetrics = "waiting_metrics"
	// StateNoSnapshot: no chunked snapshot is open for the stream: its first run opens it.
	StateNoSnapshot = "no_snapshot"
)

// BackfillParams are one backfill call's parameters, under the original library's names
// (docs/spec.md "Job parameters"): from the spec (ParamsOf), which a handler event or the
// CLI may override.
type BackfillParams struct {
	// ChunkRows sizes the chunks when the first call plans them; later calls keep the
	// plan (a different value logs a warning).
	ChunkRows int64 `json:"chunk_rows,omitempty"`
	// MaxWaves bounds the waves of this call; 0: no bound.
	MaxWaves int `json:"max_waves,omitempty"`
	// MaxSeconds bounds this call's time in seconds; 0: the invocation's deadline only.
	MaxSeconds float64 `json:"max_seconds,omitempty"`
	// TargetWaveSeconds is how long a wave aims to read, at the last wave's pace per
	// round of numPartitions chunks; 0 reads one round per wave.
	TargetWaveSeconds float64 `json:"target_wave_seconds,omitempty"`
	// MinHeadroomHours pauses before a wave while the stream's newest batch facts row
	// shows less retention headroom (its headroom minus its age); 0 never pauses.
	MinHeadroomHours float64 `json:"min_headroom_hours,omitempty"`
	// Isolation of the chunk reads and the plan's seeks: "readCommitted" or "snapshot";
	// "" is the spec's (isolation, else options.isolationLevel).
	Isolation string `json:"isolation,omitempty"`
}

// ParamsOf is the spec's backfill parameters, defaults applied (config.Spec.Defaults).
func ParamsOf(spec *config.Spec) BackfillParams {
	p := BackfillParams{ChunkRows: config.DefaultChunkRows, TargetWaveSeconds: config.DefaultTargetWaveSeconds,
		MinHeadroomHours: config.DefaultMinHeadroomHours, MaxSeconds: spec.MaxSeconds, Isolation: spec.EffectiveIsolation()}
	if spec.ChunkRows != nil {
		p.ChunkRows = *spec.ChunkRows
	}
	if spec.MaxWaves != nil {
		p.MaxWaves = *spec.MaxWaves
	}
	if spec.TargetWaveSeconds != nil {
		p.TargetWaveSeconds = *spec.TargetWaveSeconds
	}
	if spec.MinHeadroomHours != nil {
		p.MinHeadroomHours = *spec.MinHeadroomHours
	}
	return p
}

// check refuses parameters outside their ranges: the spec's rules for the same fields
// (config.Spec.Validate, config.SecondsProblem), which a flag or an event overrides.
func (p BackfillParams) check() error {
	var ps []config.Problem
	if p.ChunkRows < 1 {
		ps = append(ps, config.Problem{Field: "chunk_rows", Reason: fmt.Sprintf("%d: want an integer >= 1", p.ChunkRows)})
	}
	if p.MaxWaves < 0 {
		ps = append(ps, config.Problem{Field: "max_waves", Reason: fmt.Sprintf("%d: want >= 0 (0 = no bound)", p.MaxWaves)})
	}
	for _, f := range []struct {
		name, zero string
		seconds    float64
	}{{"max_seconds", "0 = bounded by the invocation's deadline only", p.MaxSeconds}, {"target_wave_seconds", "0 reads one round", p.TargetWaveSeconds},
		{"min_headroom_hours", "", p.MinHeadroomHours * 3600}} {
		if pr := config.SecondsProblem(f.name, f.seconds, f.zero); pr != nil {
			ps = append(ps, *pr)
		}
	}
	switch p.Isolation {
	case "", config.IsolationReadCommitted, config.IsolationSnapshot:
	default:
		ps = append(ps, config.Problem{Field: "isolation", Reason: fmt.Sprintf("%q: want %q or %q (never NOLOCK or READ UNCOMMITTED)",
			p.Isolation, config.IsolationReadCommitted, config.IsolationSnapshot)})
	}
	if len(ps) > 0 {
		return &config.ConfigError{Problems: ps}
	}
	return nil
}

// BackfillStatus is what one backfill call did and where the snapshot stands (the
// original's BackfillStatus, docs/handlers.md).
type BackfillStatus struct {
	// State is done, running, waiting_headroom, waiting_metrics or no_snapshot.
	State string `json:"state"`
	// Reason says why the call stopped or paused, for people.
	Reason string `json:"reason"`
	// ChunksDone and ChunksTotal count the plan's chunks in bronze and in the plan
	// (ChunksTotal is 0 until the first call planned).
	ChunksDone  int `json:"chunks_done"`
	ChunksTotal int `json:"chunks_total"`
	// Snapshot is S ("" with no_snapshot).
	Snapshot string `json:"snapshot"`
	// Waves and Rows are what this call read (a wave Delta had already recorded counts in
	// neither).
	Waves int   `json:"waves"`
	Rows  int64 `json:"rows"`
	// Warnings are the call's warnings (a chunk_rows other than the plan's).
	Warnings []string `json:"warnings,omitempty"`
}

// WaveReport is one wave read and committed, for progress lines (Options.OnWave).
type WaveReport struct {
	Wave                    int64
	FirstChunk, LastChunk   int
	ChunksDone, ChunksTotal int
	Rows                    int64
	// MB is the Arrow size of the rows read (10^6 bytes), as the facts' read_mb.
	MB       float64
	Duration time.Duration
	Stamp    lsn.LSN
	// Replayed is true when bronze already held the wave (another attempt committed it):
	// its rows are not counted again.
	Replayed bool
}

// StampBelowSnapshotError: a wave's stamp L is below the snapshot's S although the check of
// S just before passed: max_lsn went back between two calls, as when the DSN is served by
// several replicas and one is behind the primary the stream read S from. A chunk stamped
// below S could miss commits the stream will never replay. (A source whose max_lsn stays
// below S is refused before the stamp, by CheckStamp's *source.LSNRewoundError.)
type StampBelowSnapshotError struct {
	Stamp, Snapshot lsn.LSN
}

func (e *StampBelowSnapshotError) Error() string {
	return fmt.Sprintf("wave stamp %s is below the snapshot's S %s: max_lsn went back since S was checked (a DSN served by several replicas, "+
		"one behind the primary the stream reads?); read the backfill from the server the stream reads, then retry", e.Stamp, e.Snapshot)
}

// KeysChangedError: the key columns the backfill would cut on (snapshotKeys, else the
// capture instance's unique index) are not the ones the snapshot was opened with: its plan
// no longer applies. Restore the spec's snapshotKeys, or take a new snapshot (a new target,
// or a new checkpoint and app_id).
type KeysChangedError struct {
	Snapshot  lsn.LSN
	Open, Now []string
}

func (e *KeysChangedError) Error() string {
	return fmt.Sprintf("chunked snapshot %s was opened on key columns [%s], the spec now cuts on [%s]: restore snapshotKeys, "+
		"or take a new snapshot (a new target, or a new checkpoint and app_id)", e.Snapshot, strings.Join(e.Open, ", "), strings.Join(e.Now, ", "))
}

// backfill is one call's state.
type backfill struct {
	d    Deps
	p    BackfillParams
	ci   source.CaptureInstance
	cols []source.Column
	keys []source.Column
	t    source.Table
	s    lsn.Offset
	// g is the generation of the snapshot (the newest the plans table holds an open of);
	// open its facts row.
	g      chunkedGen
	open   facts.OpenSnapshot
	ext    extent
	stop   time.Time // zero: unbounded
	began  time.Time
	status BackfillStatus
}

// Backfill runs one backfill call of the stream's chunked snapshot (docs/snapshots.md
// "Chunked snapshots"; docs/design.md §6.3): the mode lock; the open snapshot (none:
// no_snapshot); waves a crash left without their plans table and facts rows are completed
// from bronze; the plan, on the first call (plans table, then the snapshot_plan facts
// row); then waves until every chunk is in bronze (done: the bootstrap facts row), the
// budget runs out (running) or min_headroom_hours pauses it (waiting_*). Each wave stamps
// L, reads whole rounds of numPartitions chunks, one connection each, appends them to bronze
// in one commit keyed txn(<app_id>#snap.<S>, wave), then the chunks' plans table rows and
// snapshot_chunk facts rows.
//
// Errors callers branch on: *config.ConfigError (parameters, no facts table),
// *ModeLockError, *KeysChangedError, *StampBelowSnapshotError, *KeyError and the source's
// and deltalog's typed errors (Named).
func Backfill(ctx context.Context, d Deps, p BackfillParams) (BackfillStatus, error) {
	if err := p.check(); err != nil {
		return BackfillStatus{}, err
	}
	if d.Facts == nil || d.Plans == nil {
		return BackfillStatus{}, &config.ConfigError{Problems: []config.Problem{{Field: "facts_table",
			Reason: "a chunked snapshot keeps its state in the facts table and the plans table next to bronze: set facts_table"}}}
	}
	b := &backfill{d: d, p: p, began: d.now()}
	b.stop = b.deadline(ctx)
	return b.run(ctx)
}

// backfillMargin is kept free before the invocation's deadline: no wave starts that would
// end later than deadline − margin at the last wave's pace.
const backfillMargin = 30 * time.Second

// deadline is when no wave may end: the ctx deadline minus the margin, or began +
// max_seconds, whichever is first; zero when neither bounds the call.
func (b *backfill) deadline(ctx context.Context) time.Time {
	var stop time.Time
	if dl, ok := ctx.Deadline(); ok {
		stop = dl.Add(-backfillMargin)
	}
	if s := b.p.MaxSeconds; s > 0 {
		m := b.began.Add(time.Duration(s * float64(time.Second)))
		if stop.IsZero() || m.Before(stop) {
			stop = m
		}
	}
	return stop
}

func (b *backfill) run(ctx context.Context) (BackfillStatus, error) {
	d := b.d
	var err error
	if b.ci, _, err = instances(ctx, d.Source, d.Spec.Source.CaptureInstance); err != nil {
		return BackfillStatus{}, err
	}
	if b.g, err = d.liveGen(ctx); err != nil {
		return BackfillStatus{}, err
	}
	rows, err := facts.SnapshotEvents(ctx, d.Facts, b.g.App)
	if err != nil {
		return BackfillStatus{}, fmt.Errorf("read open snapshots: %w", err)
	}
	open, err := d.chunkedLock(ctx, b.ci, rows, b.g)
	if err != nil {
		return BackfillStatus{}, err
	}
	if open == nil {
		return b.noOpen(ctx, rows)
	}
	b.s, b.open = recordedS(*open), *open
	b.status.Snapshot = open.S.String()
	if name := open.Detail.CaptureInstance; open.Detail.Kind == facts.KindSwitch && name != "" {
		// A switch snapshot reads the newer instance's columns, whatever the spec names.
		if b.ci, _, err = instances(ctx, d.Source, name); err != nil {
			return BackfillStatus{}, err
		}
	}
	if err := b.load(ctx); err != nil {
		return BackfillStatus{}, err
	}
	plan, err := b.plan(ctx, false)
	if err != nil {
		return BackfillStatus{}, err
	}
	done, err := b.recover(ctx, plan)
	if err != nil {
		return BackfillStatus{}, err
	}
	for {
		b.status.ChunksTotal, b.status.ChunksDone = len(plan), len(done)
		if len(plan) > 0 && len(done) == len(plan) {
			if err := b.complete(ctx, done); err != nil {
				return BackfillStatus{}, err
			}
			b.status.State, b.status.Reason = StateDone, fmt.Sprintf("all %d chunks of snapshot %s are in bronze", len(plan), open.S)
			return b.status, nil
		}
		if b.p.MaxWaves > 0 && b.status.Waves >= b.p.MaxWaves {
			return b.running(fmt.Sprintf("max_waves (%d) reached", b.p.MaxWaves)), nil
		}
		pace := wavePace(done)
		if b.status.Waves > 0 && !b.stop.IsZero() && d.now().Add(pace).After(b.stop) {
			return b.running("the call's time budget (max_seconds or the invocation's deadline) would not hold another round"), nil
		}
		if state, reason, err := b.throttle(ctx); err != nil {
			return BackfillStatus{}, err
		} else if state != "" {
			b.status.State, b.status.Reason = state, reason
			return b.status, nil
		}
		if len(plan) == 0 {
			// Named as the backfill's plan, as a wave's errors name the wave: its stamp
			// check of S would otherwise read as a full snapshot's ("snapshot stamp").
			if plan, err = b.plan(ctx, true); err != nil {
				return BackfillStatus{}, fmt.Errorf("backfill plan of chunked snapshot %s: %w", open.S, err)
			}
			continue
		}
		if done, err = b.wave(ctx, plan, done, pace); err != nil {
			return BackfillStatus{}, err
		}
	}
}

// recordedS is the open snapshot's S with the commit time its snapshot_open facts row
// recorded (none when S was a capture instance's start LSN − 1): the stamp CheckStamp
// compares with the source, so a database restored since the open is refused
// (docs/decisions/0011-source-continuity-and-computed-columns.md).
func recordedS(open facts.OpenSnapshot) lsn.Offset {
	var t time.Time
	if ts := open.Row.Position(); ts != nil {
		t = *ts
	}
	return lsn.At(open.S, t)
}

func (b *backfill) running(reason string) BackfillStatus {
	b.status.State, b.status.Reason = StateRunning, reason
	return b.status
}

// noOpen is the status when no chunked snapshot is open: done when the newest chunked
// snapshot of the stream is complete, else no_snapshot.
func (b *backfill) noOpen(ctx context.Context, rows []facts.Row) (BackfillStatus, error) {
	appID := b.g.App
	var newest lsn.LSN
	found := false
	for _, r := range rows {
		if r.AppID != appID || r.Event != facts.EventSnapshotOpen {
			continue
		}
		var det facts.OpenDetail
		_ = json.Unmarshal([]byte(r.Detail), &det)
		s, err := lsn.Parse(r.MaxLSN)
		if err != nil || det.Mode == facts.ModeFull {
			continue
		}
		if !found || newest.Less(s) {
			newest, found = s, true
		}
	}
	if found {
		if closed, ok := facts.LatestSnapshotLSN(rows, appID); ok && !closed.Less(newest) {
			plan, err := readPlanRows(ctx, b.d, b.g.Root, newest.String(), PlanEventPlan)
			if err != nil {
				return BackfillStatus{}, err
			}
			return BackfillStatus{State: StateDone, Snapshot: newest.String(), ChunksDone: len(plan), ChunksTotal: len(plan),
				Reason: fmt.Sprintf("chunked snapshot %s is complete", newest)}, nil
		}
	}
	return BackfillStatus{State: StateNoSnapshot, Reason: fmt.Sprintf("no chunked snapshot is open for app_id %s: the stream opens it on its first run "+
		"with bootstrap true and snapshot \"chunked\" (check that it ran, and the spec's app_id, snapshot mode and facts_table)", appID)}, nil
}

// load reads the open's extent and the key columns, and checks that the spec still cuts on
// the open's keys.
func (b *backfill) load(ctx context.Context) error {
	d := b.d
	prow, ok, err := d.openRowAt(ctx, b.g, b.s.LSN.String())
	if err != nil {
		return err
	}
	if !ok {
		return &PlanNotFoundError{Snapshot: b.s.LSN}
	}
	if b.ext, err = extentOf(prow); err != nil {
		return err
	}
	if b.cols, err = d.Source.CapturedColumns(ctx, b.ci.Name); err != nil {
		return fmt.Errorf("read captured columns: %w", err)
	}
	b.cols, _ = bronze.StoredColumns(b.cols) // computed columns are not stored, as in the stream
	keys, _ := KeyColumns(b.ci, b.cols, d.Spec.Options.SnapshotKeys)
	var now []string
	for _, k := range keys {
		now = append(now, k.Name)
	}
	if !slices.EqualFunc(now, b.ext.Keys, strings.EqualFold) {
		return &KeysChangedError{Snapshot: b.s.LSN, Open: b.ext.Keys, Now: now}
	}
	b.keys = keys
	b.t = d.table(b.ci)
	if b.p.Isolation != "" {
		b.t.Isolation = source.ReadCommitted
		if b.p.Isolation == config.IsolationSnapshot {
			b.t.Isolation = source.Snapshot
		}
	}
	return nil
}

// throttle is the min_headroom_hours pause: the stream's newest batch facts row must show
// a retention headroom, less its age, of at least the minimum.
func (b *backfill) throttle(ctx context.Context) (state, reason string, err error) {
	min := b.p.MinHeadroomHours
	if min <= 0 {
		return "", "", nil
	}
	snap, err := b.d.Facts.Snapshot(ctx)
	if err != nil {
		return "", "", fmt.Errorf("read the facts table: %w", err)
	}
	// The stream of the snapshot's generation writes its batch rows under that
	// generation's app_id.
	rows, err := facts.ReadRows(ctx, snap, b.g.App)
	if err != nil {
		return "", "", err
	}
	last, ok := facts.LastBatch(rows, b.g.App)
	if !ok || last.RetentionHeadroomHours == nil {
		return StateWaitingMetrics, fmt.Sprintf("the stream of app_id %s has written no batch facts row with a retention headroom yet; "+
			"min_headroom_hours (%g) waits for one", b.g.App, min), nil
	}
	age := b.d.now().Sub(last.WrittenAt).Hours()
	left := *last.RetentionHeadroomHours - max(age, 0)
	if left < min {
		return StateWaitingHeadroom, fmt.Sprintf("the stream's retention headroom is %.2f h (%.2f h at batch %d, written %.2f h ago), below min_headroom_hours %g: "+
			"the chunks would share the link with a stream that is falling behind the retention; on a capture instance younger than "+
			"min_headroom_hours the headroom is its age, so lower min_headroom_hours for a table whose CDC was just enabled",
			left, *last.RetentionHeadroomHours, derefInt(last.BatchID), age, min), nil
	}
	return "", "", nil
}

func derefInt(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
