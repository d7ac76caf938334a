package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// generation is the snapshot generation chunked snapshots are opened in. Re-snapshots after
// data loss (generation n > 0, app_id <app_id>.g<n>) are not built yet; every chunked
// snapshot is the bootstrap's, generation 0.
const generation = 0

// OpenChunked opens the chunked snapshot of the stream at S, or returns the one already
// open (docs/snapshots.md "Chunked snapshots"; docs/design.md §6.3). The stream calls it on
// a fresh checkpoint with bootstrap=true and snapshot "chunked", and starts at S at once:
//
//  1. The mode lock: a full snapshot of the stream still open (a run may still be reading
//     it: CDC cleanup has not passed its LSN) refuses it (*ModeLockError).
//  2. An open chunked snapshot of the stream (its snapshot_open facts row with no
//     bootstrap row at or after S) is returned; nothing is read or written.
//  3. Else S is stamped (as a full snapshot's L: max_lsn, or a capture instance's start
//     LSN − 1), then the key's extent is read — MIN and MAX of one integer key, the MAX of
//     any other, and the row estimate (sys.sp_spaceused) — and recorded in the plans table
//     (its open row, txn(<app_id>#snapshots, generation)), then the snapshot_open facts
//     row (mode chunked, keyed the same). Nothing else is read from the table.
//
// A crash between the plans table's open row and the facts row is resumed from the open
// row: the same S, no second stamp. The facts row holds no key values: its detail has the
// key column names and the plan kind. Needs the facts table and the plans table.
func OpenChunked(ctx context.Context, d Deps) (lsn.Offset, error) {
	if d.Facts == nil || d.Plans == nil {
		return lsn.Offset{}, &config.ConfigError{Problems: []config.Problem{{Field: "facts_table",
			Reason: "a chunked snapshot keeps its state in the facts table and the plans table next to bronze: set facts_table"}}}
	}
	appID := d.Spec.AppID
	ci, _, err := instances(ctx, d.Source, d.Spec.Source.CaptureInstance)
	if err != nil {
		return lsn.Offset{}, err
	}
	rows, err := facts.SnapshotEvents(ctx, d.Facts, appID)
	if err != nil {
		return lsn.Offset{}, fmt.Errorf("read open snapshots: %w", err)
	}
	open, err := d.chunkedLock(ctx, ci, rows)
	if err != nil {
		return lsn.Offset{}, err
	}
	if open != nil {
		return stampOffset(ctx, d.Source, open.S)
	}
	prow, found, err := d.openRow(ctx)
	if err != nil {
		return lsn.Offset{}, err
	}
	if !found {
		if prow, err = d.recordOpen(ctx, ci); err != nil {
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
	r := facts.SnapshotRow(appID, d.Spec.Bronze, facts.EventSnapshotOpen, off)
	r.Detail = facts.OpenDetail{Mode: facts.ModeChunked, Kind: facts.KindBootstrap, Generation: generation, Keys: keys, Plan: plan}.String()
	r.WrittenAt = d.now()
	if _, err := facts.Append(ctx, d.Facts, facts.TxnSnapshots(appID), generation, []facts.Row{r}, d.Options.Writer); err != nil {
		return lsn.Offset{}, fmt.Errorf("write snapshot_open row: %w", err)
	}
	// The stored open wins: an earlier attempt's row when this one was replayed.
	if rows, err = facts.SnapshotEvents(ctx, d.Facts, appID); err != nil {
		return lsn.Offset{}, fmt.Errorf("read open snapshots: %w", err)
	}
	if o, ok := newestChunked(rows, appID); ok && o.S != s {
		return stampOffset(ctx, d.Source, o.S)
	}
	return off, nil
}

// chunkedLock is the mode lock of a chunked snapshot (docs/snapshots.md "One mode per
// run"): a full snapshot of the stream that is still open refuses it, unless CDC cleanup
// has passed its LSN (the changes right after it are purged, so it can never complete and
// no run can still be reading it). It returns the stream's open chunked snapshot, if any.
func (d Deps) chunkedLock(ctx context.Context, ci source.CaptureInstance, rows []facts.Row) (*facts.OpenSnapshot, error) {
	opens := facts.OpenSnapshots(rows, d.Spec.AppID, lsn.Zero)
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
			return nil, &ModeLockError{AppID: d.Spec.AppID, Snapshot: o.S, Mode: o.Mode, Generation: o.Detail.Generation, Refused: facts.ModeChunked}
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

// openRow is the plans table's open row of this stream's generation.
func (d Deps) openRow(ctx context.Context) (PlanRow, bool, error) {
	rows, err := readPlanRows(ctx, d, d.Spec.AppID, "", PlanEventOpen)
	if err != nil {
		return PlanRow{}, false, err
	}
	for _, r := range rows {
		if r.Generation == generation {
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
func (d Deps) recordOpen(ctx context.Context, ci source.CaptureInstance) (PlanRow, error) {
	s, err := StampLSN(ctx, d.Source, ci)
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
	row := PlanRow{AppID: d.Spec.AppID, Snapshot: s.String(), Generation: generation, Event: PlanEventOpen,
		Lo: boundText(ext.Min), Hi: boundText(ext.Max), Keys: string(keys), Kind: ext.Kind, Rows: &ext.Rows, PlannedAt: &now, SnapshotTS: off.CommitTime()}
	res, err := appendPlanRows(ctx, d, facts.TxnSnapshots(d.Spec.AppID), generation, []PlanRow{row})
	if err != nil {
		return PlanRow{}, err
	}
	if res.Replayed {
		stored, ok, err := d.openRow(ctx)
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
