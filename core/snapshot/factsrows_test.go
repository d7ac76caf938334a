package snapshot_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// The snapshot's facts rows hold what docs/reference/original-library.md §6.1, §6.2,
// §6.3 and §6.5 say, column by column: snapshot_open (mode full) and bootstrap rows of
// app_id with batch_id NULL, min_lsn = max_lsn = end_lsn = L and the commit-time columns
// L's commit time, rows 0 on the open row and the snapshot's rows on the bootstrap row,
// started_at and duration_ms only on the bootstrap row of the run that took it, the open
// row's detail keys and no detail on a full bootstrap row.
func TestSnapshotFactsRowsFollowTheReference(t *testing.T) {
	e := newEnv(t, keyCases[0], 10)
	e.db.Advance(time.Second)
	if _, err := e.db.Exec(func(tx *cdcsim.Txn) error { _, err := tx.Insert("t", keyCases[0].row(11)); return err }); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	off, err := snapshot.Run(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	ts := off.CommitTime()
	if ts == nil {
		t.Fatalf("offset %+v: want the commit time of L", off)
	}
	rows := e.factsRows()
	if len(rows) != 2 {
		t.Fatalf("facts rows %+v, want snapshot_open and bootstrap", rows)
	}
	for _, r := range rows {
		if r.AppID != e.spec.AppID || r.BatchID != nil || r.Target != e.spec.Bronze || r.WrittenAt.IsZero() {
			t.Errorf("%s: app_id %q batch_id %v target %q written_at %v", r.Event, r.AppID, r.BatchID, r.Target, r.WrittenAt)
		}
		if l := off.LSN.String(); r.MinLSN != l || r.MaxLSN != l || r.EndLSN != l {
			t.Errorf("%s: lsns %s %s %s, want %s", r.Event, r.MinLSN, r.MaxLSN, r.EndLSN, off.LSN)
		}
		for name, v := range map[string]*time.Time{"min_commit_ts": r.MinCommitTS, "max_commit_ts": r.MaxCommitTS, "end_commit_ts": r.EndCommitTS} {
			if v == nil || !v.Equal(*ts) {
				t.Errorf("%s: %s %v, want %v", r.Event, name, v, ts)
			}
		}
		if r.Deletes != 0 || r.Inserts != 0 || r.Updates != 0 || r.LostFromTS != nil || r.LostToTS != nil {
			t.Errorf("%s: counts or loss columns set: %+v", r.Event, r)
		}
		switch r.Event {
		case facts.EventSnapshotOpen:
			if r.Rows == nil || *r.Rows != 0 || r.StartedAt != nil || r.DurationMs != nil {
				t.Errorf("snapshot_open: rows %v started_at %v duration_ms %v, want 0, NULL, NULL", r.Rows, r.StartedAt, r.DurationMs)
			}
			var d map[string]any
			if err := json.Unmarshal([]byte(r.Detail), &d); err != nil {
				t.Fatalf("snapshot_open detail %q: %v", r.Detail, err)
			}
			if len(d) != 5 || d["mode"] != "full" || d["kind"] != "bootstrap" || d["generation"] != 0.0 || d["lost_from_ts"] != nil || d["lost_to_ts"] != nil {
				t.Errorf("snapshot_open detail %s", r.Detail)
			}
			if _, ok := d["lost_from_ts"]; !ok {
				t.Errorf("snapshot_open detail %s lacks lost_from_ts", r.Detail)
			}
		case facts.EventBootstrap:
			if r.Rows == nil || *r.Rows != 11 || r.StartedAt == nil || r.DurationMs == nil || *r.DurationMs < 0 || r.Detail != "" {
				t.Errorf("bootstrap: rows %v started_at %v duration_ms %v detail %q", r.Rows, r.StartedAt, r.DurationMs, r.Detail)
			}
		default:
			t.Errorf("unexpected event %q", r.Event)
		}
	}
}
