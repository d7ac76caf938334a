package stream

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// A micro-batch's facts row holds what docs/facts.md and docs/reference/original-library.md
// §6.4 say, on a timeline the test controls: counts by operation (an update once, as its
// operation 4), the LSN and commit-time ranges of the rows, end_lsn and its commit time,
// the retention watermark (commit time of min_lsn), source_max_commit_ts, and the derived
// headroom, ingestion lag and capture lag by their exact formulas.
func TestBatchFactsRowFollowsTheReference(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 31})
	ctx := context.Background()
	first := e.exec(insert(1, 1)) // each exec advances the clock by 1 s
	e.exec(insert(2, 2))
	e.exec(func(tx *cdcsim.Txn) error { return tx.Update("orders", []any{1}, cdcsim.Row{"amount": 5}) })
	last := e.exec(func(tx *cdcsim.Txn) error { return tx.Delete("orders", []any{2}) })
	e.db.Advance(90 * time.Second) // the stream runs 90 s after the last commit
	res := e.mustDrain(Options{})
	if res.Rows != 5 {
		t.Fatalf("%+v: want 5 change rows (2 inserts, update 3+4, delete)", res)
	}
	var batches int
	for _, r := range e.factsRows() {
		if r.Event != "" || r.Rows == nil || *r.Rows == 0 {
			continue
		}
		batches++
		firstTS, _, _ := e.db.CommitTime(ctx, first)
		lastTS, _, _ := e.db.CommitTime(ctx, last)
		if *r.Rows != 5 || r.Inserts != 2 || r.Updates != 1 || r.Deletes != 1 {
			t.Errorf("rows %d inserts %d updates %d deletes %d, want 5 2 1 1", *r.Rows, r.Inserts, r.Updates, r.Deletes)
		}
		if r.MinLSN != first.String() || r.MaxLSN != last.String() || r.EndLSN != last.String() {
			t.Errorf("lsns min %s max %s end %s, want %s %s %s", r.MinLSN, r.MaxLSN, r.EndLSN, first, last, last)
		}
		if r.MinCommitTS == nil || !r.MinCommitTS.Equal(firstTS) || r.MaxCommitTS == nil || !r.MaxCommitTS.Equal(lastTS) ||
			r.EndCommitTS == nil || !r.EndCommitTS.Equal(lastTS) {
			t.Errorf("commit times %v %v %v, want %v %v %v", r.MinCommitTS, r.MaxCommitTS, r.EndCommitTS, firstTS, lastTS, lastTS)
		}
		if r.RetentionWatermarkTS == nil || r.SourceMaxCommitTS == nil || r.RetentionHeadroomHours == nil ||
			r.IngestionLagSeconds == nil || r.CaptureLagSeconds == nil {
			t.Fatalf("derived columns missing: %+v", r)
		}
		if !r.RetentionWatermarkTS.Equal(firstTS) {
			t.Errorf("retention_watermark_ts %v, want the commit time of min_lsn %v", r.RetentionWatermarkTS, firstTS)
		}
		wantHeadroom := math.Round(lastTS.Sub(*r.RetentionWatermarkTS).Hours()*100) / 100
		if *r.RetentionHeadroomHours != wantHeadroom {
			t.Errorf("retention_headroom_hours %v, want round((end_commit_ts − watermark)/1h, 2) = %v", *r.RetentionHeadroomHours, wantHeadroom)
		}
		if !r.SourceMaxCommitTS.Equal(lastTS) || *r.IngestionLagSeconds != 0 {
			t.Errorf("source_max_commit_ts %v ingestion_lag %v, want %v and 0", r.SourceMaxCommitTS, *r.IngestionLagSeconds, lastTS)
		}
		if want := math.Round(e.db.Now().Sub(lastTS).Seconds()*1000) / 1000; *r.CaptureLagSeconds != want {
			t.Errorf("capture_lag_seconds %v, want clock − source_max_commit_ts = %v", *r.CaptureLagSeconds, want)
		}
		if r.StartedAt == nil || r.DurationMs == nil || r.ReadSeconds == nil || r.ReadMB == nil || *r.ReadMB <= 0 || r.Detail != "" {
			t.Errorf("started_at %v duration_ms %v read_seconds %v read_mb %v detail %q", r.StartedAt, r.DurationMs, r.ReadSeconds, r.ReadMB, r.Detail)
		}
	}
	if batches != 1 {
		t.Fatalf("%d facts rows with rows, want 1", batches)
	}
}
