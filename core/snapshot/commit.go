package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// TxnAppID is the Delta txn appId of a full snapshot's commit (docs/design.md §4.2):
// version 0.
func TxnAppID(appID string, snapshot lsn.LSN) string { return appID + fullMarker + snapshot.String() }

// Markers of a whole snapshot's txn appId: <app_id><marker><L>. A seed's commit
// (core/seed) is a whole snapshot too, keyed txn(<app_id>#seed.<L>, 0) (docs/design.md
// §4.2), and its empty copy is found by its txn as an empty table's snapshot is.
const (
	fullMarker = "#full."
	SeedMarker = "#seed."
)

// emptySuffix marks the txn appId of the commit of a snapshot that read no rows: it adds no
// file, so only its txn (which checkpoints keep) says the snapshot exists. A snapshot with
// rows is found by its rows instead, so deleting them still makes the next run read the
// table again (docs/snapshots.md, "Pitfalls").
const emptySuffix = "#empty"

// EmptyTxnAppID is the txn appId of an empty table's snapshot commit at snapshot.
func EmptyTxnAppID(appID string, snapshot lsn.LSN) string {
	return TxnAppID(appID, snapshot) + emptySuffix
}

// emptySnapshotLSN returns the snapshot LSN of an EmptyTxnAppID (or a seed's of an empty
// copy), or false.
func emptySnapshotLSN(txnAppID string) (lsn.LSN, bool) {
	rest, ok := strings.CutSuffix(txnAppID, emptySuffix)
	if !ok {
		return lsn.Zero, false
	}
	for _, m := range []string{fullMarker, SeedMarker} {
		if i := strings.LastIndex(rest, m); i >= 0 {
			if l, err := lsn.Parse(rest[i+len(m):]); err == nil {
				return l, true
			}
		}
	}
	return lsn.Zero, false
}

// Commit appends every range's files of snapshot snap to bronze in one Delta commit keyed
// txn(<app_id>#full.<L>, 0) through ingest, so the snapshot appears at once and a rerun
// adds nothing; then (unless Standalone) the bootstrap facts row, keyed so it is written
// once. An empty table commits no file, only its txn (EmptyTxnAppID), so a later run finds
// the snapshot. A snapshot without staging state that bronze already holds (Open found it)
// only offers the bootstrap row, with rows unknown. A range without a manifest is a
// *MissingRangeError.
func Commit(ctx context.Context, d Deps, snap lsn.Offset) (CommitResult, error) {
	st, ok, err := loadOpen(ctx, d, snap.LSN)
	if err != nil {
		return CommitResult{}, err
	}
	var ps planState
	pok := false
	if ok {
		if ps, pok, err = loadPlan(ctx, d, snap.LSN); err != nil {
			return CommitResult{}, err
		}
	}
	if !pok {
		return commitFound(ctx, d, snap)
	}
	keys := make([]string, len(ps.Ranges))
	for i, r := range ps.Ranges {
		keys[i] = manifestKey(snap.LSN, r.Index)
	}
	files, err := ingest.Gather(ctx, d.Staging, keys)
	var ns *ingest.NotStagedError
	if errors.As(err, &ns) {
		return CommitResult{}, &MissingRangeError{Snapshot: snap.LSN, Range: ps.Ranges[ns.Index].Index}
	}
	if err != nil {
		return CommitResult{}, err
	}
	_, cols, _, err := d.columns(ctx, st.CaptureInstance)
	if err != nil {
		return CommitResult{}, err
	}
	// One read of bronze serves the schema, the stamp check and the append (which reads
	// again only after losing a commit race); within a Run, none (Deps.bronzeState).
	bsnap, err := d.bronzeState(ctx)
	if err != nil {
		return CommitResult{}, err
	}
	schema, err := schemaOn(bsnap, cols)
	if err != nil {
		return CommitResult{}, err
	}
	meta, _ := json.Marshal(snapshotMetadata{CommitTS: commitTS(snap), LSN: snap.LSN, Rows: files.Rows, Snapshot: st.CaptureInstance})
	txnApp := TxnAppID(d.Spec.AppID, snap.LSN)
	if len(files.Adds) == 0 {
		txnApp = EmptyTxnAppID(d.Spec.AppID, snap.LSN)
	}
	if err := checkStampUnlessCommittedOn(ctx, d, bsnap, st.Snapshot, source.RecordedBySnapshotStamp, txnApp, 0); err != nil {
		return CommitResult{}, err
	}
	res, err := ingest.Append(ctx, d.Bronze, bsnap, ingest.Commit{AppID: txnApp, Version: 0, Schema: schema, Files: files,
		UserMetadata: string(meta), Operation: "WRITE",
		OperationParameters: map[string]string{"mode": "Append", "snapshot": snap.LSN.String(),
			"rows": strconv.FormatInt(files.Rows, 10), "bytes": strconv.FormatInt(files.Bytes, 10)}})
	if err != nil {
		return CommitResult{}, fmt.Errorf("commit snapshot to bronze: %w", err)
	}
	rows := files.Rows
	if err := bootstrapRow(ctx, d, snap, &rows, &st.StartedAt); err != nil {
		return CommitResult{}, err
	}
	if err := handOff(ctx, d, snap, st.CaptureInstance); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Version: res.Version, Rows: &rows, Skipped: res.Replayed}, nil
}

// commitFound handles a snapshot Open found in bronze: nothing to commit; the bootstrap
// row is offered (a crash between a snapshot's commit and its row only delays the row).
func commitFound(ctx context.Context, d Deps, snap lsn.Offset) (CommitResult, error) {
	o, ok, err := Find(ctx, d.Source, d.Bronze, d.Facts, d.Spec.Bronze, d.Spec.Source.CaptureInstance)
	if err != nil {
		return CommitResult{}, err
	}
	if !ok || o.LSN != snap.LSN {
		return CommitResult{}, &PlanNotFoundError{Snapshot: snap.LSN}
	}
	if err := bootstrapRow(ctx, d, snap, nil, nil); err != nil {
		return CommitResult{}, err
	}
	if err := handOff(ctx, d, snap, ""); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Version: -1, Skipped: true}, nil
}

// handOff hands the stream its start once a bootstrap's snapshot and bootstrap row are
// committed: offsets/start.json in the checkpoint (checkpoint.Start), from which a fresh
// checkpoint's batch 0 starts without looking for the snapshot in the facts table
// (docs/stream.md "Where a fresh checkpoint starts"). Only a bootstrap writes it (the
// snapshots that write the bootstrap row); a rerun writes it again.
func handOff(ctx context.Context, d Deps, snap lsn.Offset, captureInstance string) error {
	if d.Staging == nil || !writesBootstrapRow(d) {
		return nil
	}
	err := checkpoint.New(d.Staging, d.Spec.AppID).WriteStart(ctx, checkpoint.Start{Snapshot: snap, CaptureInstance: captureInstance, WrittenAt: d.now()})
	if err != nil {
		return fmt.Errorf("hand the stream its start: %w", err)
	}
	return nil
}

// writesBootstrapRow reports whether the snapshot of d writes the bootstrap facts row: a
// bootstrap's, not a standalone snapshot, a re-snapshot after data loss or a switch's.
func writesBootstrapRow(d Deps) bool {
	return d.Facts != nil && !d.Options.Standalone && d.Options.Recovery == nil && d.Options.Switch == nil
}

// bootstrapRow writes the bootstrap facts row of snapshot snap, keyed
// txn(<app_id>#events, 0) so that it is written once whatever the reruns: rows (nil when
// unknown), started_at and duration_ms from the open's start when known.
func bootstrapRow(ctx context.Context, d Deps, snap lsn.Offset, rows *int64, started *time.Time) error {
	if !writesBootstrapRow(d) {
		return nil
	}
	fsnap, err := d.factsState(ctx)
	if err != nil {
		return err
	}
	return writeBootstrapRowOn(ctx, fsnap, d.Spec, snap, rows, started, d.now(), d.Options.Writer)
}

// WriteBootstrapRow writes the bootstrap facts row of the snapshot (or seed) at snap for
// spec's app_id and bronze, keyed txn(<app_id>#events, 0) so that it is written once
// whatever the reruns (docs/facts.md): rows (nil when unknown), started_at and duration_ms
// up to now when started is known (not nil, not zero), written_at now.
func WriteBootstrapRow(ctx context.Context, factsT *deltalog.Table, spec *config.Spec, snap lsn.Offset, rows *int64, started *time.Time, now time.Time, opts parquetio.WriterOptions) error {
	fsnap, err := factsT.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("write bootstrap row: read the facts table: %w", err)
	}
	return writeBootstrapRowOn(ctx, fsnap, spec, snap, rows, started, now, opts)
}

// writeBootstrapRowOn is WriteBootstrapRow on the facts table's state fsnap (its commit
// checked against any commit made since, as facts.AppendOn's are).
func writeBootstrapRowOn(ctx context.Context, fsnap *deltalog.Snapshot, spec *config.Spec, snap lsn.Offset, rows *int64, started *time.Time, now time.Time, opts parquetio.WriterOptions) error {
	r := facts.SnapshotRow(spec.AppID, spec.Bronze, facts.EventBootstrap, snap)
	r.Rows = rows
	if started != nil && !started.IsZero() {
		s := started.UTC()
		r.StartedAt, r.DurationMs = &s, facts.Int64(now.Sub(s).Milliseconds())
	}
	r.WrittenAt = now
	if _, err := facts.AppendOn(ctx, fsnap, facts.TxnEvents(spec.AppID), 0, []facts.Row{r}, opts); err != nil {
		return fmt.Errorf("write bootstrap row: %w", err)
	}
	return nil
}

// snapshotMetadata is the commitInfo userMetadata of a snapshot's commit: the capture
// instance, the stamp and the rows.
type snapshotMetadata struct {
	CommitTS string  `json:"commit_ts"`
	LSN      lsn.LSN `json:"lsn"`
	Rows     int64   `json:"rows"`
	Snapshot string  `json:"snapshot"`
}

// commitTS is the offset's commit_ts as its JSON writes it ("" when unknown).
func commitTS(o lsn.Offset) string {
	if !o.HasTime() {
		return ""
	}
	return lsn.FormatTime(o.CommitTS)
}

// checkStampUnlessCommitted is CheckStamp before a snapshot's commit (a full snapshot's,
// txn version 0; a chunked snapshot's wave, its wave number), skipped when bronze already
// holds the commit (its txn at version or later): a rerun writes nothing new to bronze, and
// the stream checks its own start against the source. what names the stamp in the error
// (CheckStampAs).
func checkStampUnlessCommitted(ctx context.Context, d Deps, stamp lsn.Offset, what, txnApp string, version int64) error {
	snap, err := d.Bronze.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("read bronze: %w", err)
	}
	return checkStampUnlessCommittedOn(ctx, d, snap, stamp, what, txnApp, version)
}

// checkStampUnlessCommittedOn is checkStampUnlessCommitted on bronze as snap holds it.
func checkStampUnlessCommittedOn(ctx context.Context, d Deps, snap *deltalog.Snapshot, stamp lsn.Offset, what, txnApp string, version int64) error {
	if v, done := snap.TxnVersion(txnApp); done && v >= version {
		return nil
	}
	return CheckStampAs(ctx, d.Source, stamp, what)
}
