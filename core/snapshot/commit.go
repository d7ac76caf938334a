package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// TxnAppID is the Delta txn appId of a full snapshot's commit (DESIGN.md §4.2): version 0.
func TxnAppID(appID string, snapshot lsn.LSN) string { return appID + "#full." + snapshot.String() }

// emptySuffix marks the txn appId of the commit of a snapshot that read no rows: it adds no
// file, so only its txn (which checkpoints keep) says the snapshot exists. A snapshot with
// rows is found by its rows instead, so deleting them still makes the next run read the
// table again (seed text, Pitfalls).
const emptySuffix = "#empty"

// EmptyTxnAppID is the txn appId of an empty table's snapshot commit at snapshot.
func EmptyTxnAppID(appID string, snapshot lsn.LSN) string {
	return TxnAppID(appID, snapshot) + emptySuffix
}

// emptySnapshotLSN returns the snapshot LSN of an EmptyTxnAppID, or false.
func emptySnapshotLSN(txnAppID string) (lsn.LSN, bool) {
	rest, ok := strings.CutSuffix(txnAppID, emptySuffix)
	if !ok {
		return lsn.Zero, false
	}
	i := strings.LastIndex(rest, "#full.")
	if i < 0 {
		return lsn.Zero, false
	}
	l, err := lsn.Parse(rest[i+len("#full."):])
	if err != nil {
		return lsn.Zero, false
	}
	return l, true
}

// Commit appends every range's files of snapshot snap to bronze in one Delta commit keyed
// txn(<app_id>#full.<L>, 0), so the snapshot appears at once and a rerun adds nothing; then
// (unless Standalone) the bootstrap facts row, keyed so it is written once. An empty table
// commits no file, only its txn (EmptyTxnAppID), so a later run finds the snapshot. A snapshot without staging state that bronze already holds
// (Open found it) only offers the bootstrap row, with rows unknown.
func (j *Job) Commit(ctx context.Context, snap lsn.Offset) (CommitResult, error) {
	st, ok, err := j.loadOpen(ctx, snap.LSN)
	if err != nil {
		return CommitResult{}, err
	}
	var ps planState
	pok := false
	if ok {
		if pok, err = getJSON(ctx, j.Staging, planKey(snap.LSN), &ps); err != nil {
			return CommitResult{}, err
		}
	}
	if !pok {
		return j.commitFound(ctx, snap)
	}
	var files []DataFile
	var rows, bytes int64
	for _, r := range ps.Ranges {
		var m manifest
		ok, err := getJSON(ctx, j.Staging, manifestKey(snap.LSN, r.Index), &m)
		if err != nil {
			return CommitResult{}, err
		}
		if !ok {
			return CommitResult{}, &MissingRangeError{Snapshot: snap.LSN.String(), Range: r.Index}
		}
		files = append(files, m.Files...)
		rows += m.Rows
		bytes += m.Bytes
	}
	res := CommitResult{Version: -1, Rows: &rows}
	{
		_, cols, _, err := j.columns(ctx, st.CaptureInstance)
		if err != nil {
			return CommitResult{}, err
		}
		schema, err := j.targetSchema(ctx, cols)
		if err != nil {
			return CommitResult{}, err
		}
		meta, _ := json.Marshal(snapshotMetadata{CommitTS: commitTS(snap), LSN: snap.LSN, Rows: rows, Snapshot: st.CaptureInstance})
		txnApp := TxnAppID(j.AppID, snap.LSN)
		if len(files) == 0 {
			txnApp = EmptyTxnAppID(j.AppID, snap.LSN)
		}
		a := Append{
			AppID: txnApp, Version: 0, Schema: schema, Files: files,
			UserMetadata: string(meta), Operation: "WRITE",
			OperationParameters: map[string]string{"mode": "Append", "snapshot": snap.LSN.String(), "rows": strconv.FormatInt(rows, 10), "bytes": strconv.FormatInt(bytes, 10)},
		}
		v, skipped, err := j.Bronze.AppendOnce(ctx, a)
		if err != nil {
			return CommitResult{}, fmt.Errorf("commit snapshot to bronze: %w", err)
		}
		res.Version, res.Skipped = v, skipped
	}
	if err := j.bootstrapRow(ctx, snap, &rows, &st.StartedAt); err != nil {
		return CommitResult{}, err
	}
	return res, nil
}

// commitFound handles a snapshot Open found in bronze: nothing to commit; the bootstrap
// row is offered (a crash between a snapshot's commit and its row only delays the row).
func (j *Job) commitFound(ctx context.Context, snap lsn.Offset) (CommitResult, error) {
	o, ok, err := j.Find(ctx)
	if err != nil {
		return CommitResult{}, err
	}
	if !ok || o.LSN != snap.LSN {
		return CommitResult{}, &PlanNotFoundError{Snapshot: snap.LSN.String()}
	}
	if err := j.bootstrapRow(ctx, snap, nil, nil); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Version: -1, Skipped: true}, nil
}

func (j *Job) bootstrapRow(ctx context.Context, snap lsn.Offset, rows *int64, started *time.Time) error {
	if j.Facts == nil || j.Standalone {
		return nil
	}
	ev := FactsEvent{AppID: j.AppID, Target: j.Target, LSN: snap.LSN.String(), CommitTS: snap.CommitTime(), Rows: rows}
	if started != nil && !started.IsZero() {
		s := *started
		d := j.now().Sub(s).Milliseconds()
		ev.StartedAt, ev.DurationMs = &s, &d
	}
	if err := j.Facts.Bootstrapped(ctx, ev); err != nil {
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
