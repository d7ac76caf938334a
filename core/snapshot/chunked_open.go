package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// chunkedGen is the generation a chunked snapshot belongs to (docs/stream.md
// "Generations"): generation 0 is the bootstrap's, under the configured app_id; generation
// n >= 1 is a re-snapshot after data loss, whose facts rows carry <app_id>.g<n>. Every
// append is keyed under the configured app_id (txn(<app_id>#snapshots, n) for the open,
// txn(<app_id>#events, n) for the completion), and the plans table's rows carry the
// configured app_id and n in their generation column.
type chunkedGen struct {
	// N is the generation; Root the configured app_id; App the generation's (the facts
	// rows' app_id).
	N         int
	Root, App string
	// Recovery is the gap a re-snapshot records in its open row (nil for generation 0).
	Recovery *Recovery
	// Switch is set for a chunked switch snapshot (Options.Switch): a second open in
	// generation N, at the stamp the stream chose once, with its own open row
	// (PlanEventSwitchOpen) and txn keys.
	Switch *Switch
}

// genOf is generation n of the stream of d.Spec (d.Spec.AppID: the configured app_id).
func (d Deps) genOf(n int) chunkedGen {
	return chunkedGen{N: n, Root: d.Spec.AppID, App: checkpoint.GenerationAppID(d.Spec.AppID, n)}
}

// openGen is the generation OpenChunked opens: Options.Switch's (the live one),
// Options.Recovery's, else 0.
func (d Deps) openGen() chunkedGen {
	if sw := d.Options.Switch; sw != nil {
		g := d.genOf(sw.Generation)
		g.Switch = sw
		return g
	}
	if rc := d.Options.Recovery; rc != nil {
		g := d.genOf(rc.Generation)
		g.Recovery = rc
		return g
	}
	return d.genOf(0)
}

// kind is the snapshot's kind: switch for a switch snapshot, else bootstrap in generation
// 0, resnapshot after.
func (g chunkedGen) kind() string {
	if g.Switch != nil {
		return facts.KindSwitch
	}
	if g.N > 0 {
		return facts.KindResnapshot
	}
	return facts.KindBootstrap
}

// liveGen is the newest generation the plans table holds a chunked open of (the open with
// the largest S wins: a loss while one is open opens a newer one in the next generation,
// and the older is abandoned), 0 when it holds none.
func (d Deps) liveGen(ctx context.Context) (chunkedGen, error) {
	rows, err := readPlanRows(ctx, d, d.Spec.AppID, "", PlanEventOpen, PlanEventSwitchOpen)
	if err != nil {
		return chunkedGen{}, err
	}
	n := 0
	for _, r := range rows {
		n = max(n, int(r.Generation))
	}
	return d.genOf(n), nil
}

// OpenChunked opens the chunked snapshot of the stream at S, or returns the one already
// open (docs/snapshots.md "Chunked snapshots"; docs/design.md §6.3). The stream calls it on
// a fresh checkpoint with bootstrap=true and snapshot "chunked" (generation 0), and, with
// Options.Recovery, when a loss opens generation n (a chunked re-snapshot, docs/stream.md
// "Data loss"); it starts at S at once:
//
//  1. The mode lock: a full snapshot of the generation still open (a run may still be
//     reading it: CDC cleanup has not passed its LSN) refuses it (*ModeLockError). Opens of
//     earlier generations do not count: the new generation supersedes them.
//  2. An open chunked snapshot of the generation (its snapshot_open facts row with no
//     completion row at or after S) is returned; nothing is read or written.
//  3. Else S is stamped (as a full snapshot's L: max_lsn, or a capture instance's start
//     LSN − 1) with its commit time, then the key's extent is read — MIN and MAX of one
//     integer key, the MAX of any other, and the row estimate (sys.sp_spaceused) — and
//     recorded in the plans table (its open row, txn(<app_id>#snapshots, generation)),
//     then the snapshot_open facts row (mode chunked, kind bootstrap or resnapshot with the
//     gap, app_id the generation's, keyed the same). Nothing else is read from the table.
//
// A crash between the plans table's open row and the facts row is resumed from the open
// row: the same S and commit time, no second stamp. The facts row holds no key values: its
// detail has the key column names and the plan kind. Needs the facts table and the plans
// table.
//
// With Options.Switch (snapshot_on_switch, docs/stream.md "Schema changes") it opens the
// live generation's switch snapshot instead: S is the spec's snapshotLsn (the stamp the
// stream chose once, checked not above max_lsn), the capture instance the newer one; the
// mode lock as above on the generation's app_id; an open chunked snapshot of the
// generation at another S is superseded, not returned (the newest open is the one the
// backfill reads); the plans table's row is a PlanEventSwitchOpen row and the facts row
// has kind switch, with the switch, S and the newer instance in its detail; both are keyed
// txn(<generation app_id>#open.<S>, 0).
func OpenChunked(ctx context.Context, d Deps) (lsn.Offset, error) {
	if d.Facts == nil || d.Plans == nil {
		return lsn.Offset{}, &config.ConfigError{Problems: []config.Problem{{Field: "facts_table",
			Reason: "a chunked snapshot keeps its state in the facts table and the plans table next to bronze: set facts_table"}}}
	}
	g := d.openGen()
	name := d.Spec.Source.CaptureInstance
	if g.Switch != nil {
		name = g.Switch.CaptureInstance
	}
	ci, _, err := instances(ctx, d.Source, name)
	if err != nil {
		return lsn.Offset{}, err
	}
	rows, err := facts.SnapshotEvents(ctx, d.Facts, g.App)
	if err != nil {
		return lsn.Offset{}, fmt.Errorf("read open snapshots: %w", err)
	}
	open, err := d.chunkedLock(ctx, ci, rows, g)
	if err != nil {
		return lsn.Offset{}, err
	}
	if open != nil && (g.Switch == nil || open.S == d.givenStamp()) {
		return recordedS(*open), nil
	}
	var prow PlanRow
	var found bool
	if g.Switch != nil {
		if d.givenStamp().IsZero() {
			return lsn.Offset{}, fmt.Errorf("open the chunked switch snapshot: no stamp given (snapshotLsn)")
		}
		prow, found, err = d.openRowAt(ctx, g, d.givenStamp().String())
	} else {
		prow, found, err = d.openRow(ctx, g)
	}
	if err != nil {
		return lsn.Offset{}, err
	}
	if !found {
		if prow, err = d.recordOpen(ctx, ci, g); err != nil {
			return lsn.Offset{}, err
		}
	}
	off, err := openOffset(ctx, d.Source, prow)
	if err != nil {
		return lsn.Offset{}, err
	}
	s := off.LSN
	var keys []string
	_ = json.Unmarshal([]byte(prow.Keys), &keys)
	plan, _ := json.Marshal(struct {
		Kind string `json:"kind"`
		Rows *int64 `json:"rows"`
	}{prow.Kind, prow.Rows})
	r := facts.SnapshotRow(g.App, d.Spec.Bronze, facts.EventSnapshotOpen, off)
	det := facts.OpenDetail{Mode: facts.ModeChunked, Kind: g.kind(), Generation: g.N, Keys: keys, Plan: plan}
	if rc := g.Recovery; rc != nil {
		det.LostFromTS, det.LostToTS = facts.TimeText(rc.LostFromTS), facts.TimeText(rc.LostToTS)
		r.LostFromTS, r.LostToTS = rc.LostFromTS, rc.LostToTS
	}
	if sw := g.Switch; sw != nil {
		det.Switch, det.S, det.CaptureInstance = sw.From+" -> "+sw.CaptureInstance, sw.S.String(), ci.Name
	}
	r.Detail = det.String()
	r.WrittenAt = d.now()
	txn, ver := g.openTxn(s)
	if _, err := facts.Append(ctx, d.Facts, txn, ver, []facts.Row{r}, d.Options.Writer); err != nil {
		return lsn.Offset{}, fmt.Errorf("write snapshot_open row: %w", err)
	}
	if g.Switch != nil {
		return off, nil // keyed by S: the row stored is this one
	}
	// The stored open wins: an earlier attempt's row when this one was replayed.
	if rows, err = facts.SnapshotEvents(ctx, d.Facts, g.App); err != nil {
		return lsn.Offset{}, fmt.Errorf("read open snapshots: %w", err)
	}
	if o, ok := newestChunked(rows, g.App); ok && o.S != s {
		return recordedS(o), nil
	}
	return off, nil
}

// chunkedLock is the mode lock of a chunked snapshot of generation g (docs/snapshots.md
// "One mode per run"): a full snapshot of the generation that is still open refuses it, unless CDC cleanup
// has passed its LSN (the changes right after it are purged, so it can never complete and
// no run can still be reading it). It returns the generation's open chunked snapshot, if
// any. rows are the facts rows of g.App.
func (d Deps) chunkedLock(ctx context.Context, ci source.CaptureInstance, rows []facts.Row, g chunkedGen) (*facts.OpenSnapshot, error) {
	opens := facts.OpenSnapshots(rows, g.App, lsn.Zero)
	var chunked *facts.OpenSnapshot
	for i, o := range opens {
		if o.Mode == facts.ModeChunked {
			chunked = &opens[i]
			continue
		}
		lost, err := d.purged(ctx, ci, o.S)
		if err != nil {
			return nil, err
		}
		if !lost {
			return nil, &ModeLockError{AppID: g.App, Snapshot: o.S, Mode: o.Mode, Generation: o.Detail.Generation, Refused: facts.ModeChunked}
		}
	}
	return chunked, nil
}

// purged reports whether CDC cleanup has passed s: the first change after it is below the
// capture instance's low watermark.
func (d Deps) purged(ctx context.Context, ci source.CaptureInstance, s lsn.LSN) (bool, error) {
	min, err := d.Source.MinLSN(ctx, ci.Name)
	var nf *source.CaptureInstanceNotFoundError
	if errors.As(err, &nf) {
		return false, nil // capture has not processed the instance yet: nothing purged
	}
	if err != nil {
		return false, fmt.Errorf("read min_lsn: %w", err)
	}
	return s.Next().Less(min), nil
}

// newestChunked is the open chunked snapshot of appID with the largest S among rows.
func newestChunked(rows []facts.Row, appID string) (facts.OpenSnapshot, bool) {
	var best facts.OpenSnapshot
	found := false
	for _, o := range facts.OpenSnapshots(rows, appID, lsn.Zero) {
		if o.Mode == facts.ModeChunked && (!found || best.S.Less(o.S)) {
			best, found = o, true
		}
	}
	return best, found
}

// openTxn is the txn key of the open rows of g's snapshot at s, in the plans table and
// the facts table: txn(<app_id>#snapshots, n) for a generation's own open, once per
// generation; txn(<generation app_id>#open.<S>, 0) for a switch snapshot's.
func (g chunkedGen) openTxn(s lsn.LSN) (string, int64) {
	if g.Switch != nil {
		return facts.TxnOpen(g.App, s), 0
	}
	return facts.TxnSnapshots(g.Root), int64(g.N)
}

// openRowAt is the plans table's open row (the generation's own, or a switch snapshot's)
// of generation g at S s.
func (d Deps) openRowAt(ctx context.Context, g chunkedGen, s string) (PlanRow, bool, error) {
	rows, err := readPlanRows(ctx, d, g.Root, s, PlanEventOpen, PlanEventSwitchOpen)
	if err != nil {
		return PlanRow{}, false, err
	}
	for _, r := range rows {
		if int(r.Generation) == g.N {
			return r, true, nil
		}
	}
	return PlanRow{}, false, nil
}

// openRow is the plans table's open row of generation g (its own open, not a switch
// snapshot's).
func (d Deps) openRow(ctx context.Context, g chunkedGen) (PlanRow, bool, error) {
	rows, err := readPlanRows(ctx, d, g.Root, "", PlanEventOpen)
	if err != nil {
		return PlanRow{}, false, err
	}
	for _, r := range rows {
		if int(r.Generation) == g.N {
			return r, true, nil
		}
	}
	return PlanRow{}, false, nil
}

// openOffset is the open row's S with the commit time the row recorded; an open row
// written before the plans table had snapshot_commit_ts reads it from the source.
func openOffset(ctx context.Context, src source.Source, prow PlanRow) (lsn.Offset, error) {
	s, err := lsn.Parse(prow.Snapshot)
	if err != nil {
		return lsn.Offset{}, fmt.Errorf("plans table: open row's snapshot %q: %w", prow.Snapshot, err)
	}
	if prow.SnapshotTS != nil {
		return lsn.At(s, *prow.SnapshotTS), nil
	}
	return stampOffset(ctx, src, s)
}

// recordOpen stamps S, reads its commit time and the key's extent after it and appends the
// plans table's open row; when another attempt's open row won, that one is returned.
func (d Deps) recordOpen(ctx context.Context, ci source.CaptureInstance, g chunkedGen) (PlanRow, error) {
	var s lsn.LSN
	var err error
	if g.Switch != nil {
		s = d.givenStamp()
		err = checkGivenStamp(ctx, d.Source, ci, s)
	} else {
		s, err = StampLSN(ctx, d.Source, ci)
	}
	if err != nil {
		return PlanRow{}, err
	}
	off, err := stampOffset(ctx, d.Source, s)
	if err != nil {
		return PlanRow{}, err
	}
	ext, err := d.readExtent(ctx, ci)
	if err != nil {
		return PlanRow{}, err
	}
	keys, _ := json.Marshal(ext.Keys)
	if ext.Keys == nil {
		keys = []byte("[]")
	}
	now := d.now()
	event := PlanEventOpen
	if g.Switch != nil {
		event = PlanEventSwitchOpen
	}
	row := PlanRow{AppID: g.Root, Snapshot: s.String(), Generation: int32(g.N), Event: event,
		Lo: boundText(ext.Min), Hi: boundText(ext.Max), Keys: string(keys), Kind: ext.Kind, Rows: &ext.Rows, PlannedAt: &now, SnapshotTS: off.CommitTime()}
	txn, ver := g.openTxn(s)
	res, err := appendPlanRows(ctx, d, txn, ver, []PlanRow{row})
	if err != nil {
		return PlanRow{}, err
	}
	if res.Replayed {
		stored, ok, err := d.openRow(ctx, g)
		if g.Switch != nil {
			stored, ok, err = d.openRowAt(ctx, g, s.String())
		}
		if err != nil {
			return PlanRow{}, err
		}
		if ok {
			return stored, nil
		}
	}
	return row, nil
}

// readExtent reads what the plan will need of the key, after S: the key columns
// (snapshotKeys, else the unique index), the kind of plan, MIN and MAX of one integer key
// (two seeks), the MAX of any other key (one seek), and the row estimate. No key, or an
// empty table, is one chunk, the whole table. snapshotKeys naming a column the capture
// instance does not capture is a *KeyError.
func (d Deps) readExtent(ctx context.Context, ci source.CaptureInstance) (extent, error) {
	cols, err := d.Source.CapturedColumns(ctx, ci.Name)
	if err != nil {
		return extent{}, fmt.Errorf("read captured columns: %w", err)
	}
	cols, _ = bronze.StoredColumns(cols) // a computed column is no key: bronze does not store it
	keys, ok := KeyColumns(ci, cols, d.Spec.Options.SnapshotKeys)
	if !ok && len(d.Spec.Options.SnapshotKeys) > 0 {
		return extent{}, &KeyError{Column: strings.Join(d.Spec.Options.SnapshotKeys, ","),
			Reason: "snapshotKeys must name present, non-computed columns the capture instance captures"}
	}
	whole := extent{Kind: PlanKindWhole}
	if !ok {
		return whole, nil
	}
	for _, k := range keys {
		whole.Keys = append(whole.Keys, k.Name)
	}
	t := d.table(ci)
	size, err := d.Source.SizeEstimate(ctx, t)
	if err != nil {
		return extent{}, fmt.Errorf("read the size estimate: %w", err)
	}
	whole.Rows = size.Rows
	ext := whole
	if len(keys) == 1 && integerTypes[keys[0].DataType] {
		mn, mx, ok, err := d.Source.KeyExtent(ctx, t, keys[0], nil, nil)
		if err != nil {
			return extent{}, fmt.Errorf("read key extent: %w", err)
		}
		if !ok {
			return whole, nil
		}
		if ext.Min, err = encodeKey(source.Key{mn}); err != nil {
			return whole, nil
		}
		if ext.Max, err = encodeKey(source.Key{mx}); err != nil {
			return whole, nil
		}
		ext.Kind = PlanKindInt
		return ext, nil
	}
	mx, ok, err := d.Source.KeyMax(ctx, t, keys)
	if err != nil {
		return extent{}, fmt.Errorf("read key max: %w", err)
	}
	if !ok {
		return whole, nil
	}
	if ext.Max, err = encodeKey(mx); err != nil {
		return whole, nil // a key type bounds cannot carry: one chunk
	}
	ext.Kind = PlanKindKeyset
	return ext, nil
}

// extentOf reads an open row back into the extent the plan starts from.
func extentOf(r PlanRow) (extent, error) {
	ext := extent{Kind: r.Kind}
	if r.Keys != "" {
		if err := json.Unmarshal([]byte(r.Keys), &ext.Keys); err != nil {
			return extent{}, fmt.Errorf("plans table: keys %q: %w", r.Keys, err)
		}
	}
	var err error
	if ext.Min, err = parseBound(r.Lo); err != nil {
		return extent{}, err
	}
	if ext.Max, err = parseBound(r.Hi); err != nil {
		return extent{}, err
	}
	if r.Rows != nil {
		ext.Rows = *r.Rows
	}
	return ext, nil
}
