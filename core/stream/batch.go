package stream

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
)

// batch runs one planned batch to its commits/<n> (docs/design.md §6.1). fresh is true when
// the run wrote b's offsets itself (a new batch, not a re-run of a pending one): bronze
// then cannot hold it, and if it does the checkpoint is behind bronze
// (*CheckpointRewoundError), as checkNotRewound would have found had it read bronze after
// another process's commit (or had it run: a warm process's remembered state skips it).
func (r *run) batch(ctx context.Context, b checkpoint.Batch, insts []source.CaptureInstance, fresh bool) (BatchReport, error) {
	startedAt := r.opts.Now().UTC()
	rep := BatchReport{Batch: b.ID, Generation: r.gens.Live.Generation, Start: b.Start, End: b.End}
	log := r.log.With("batch", b.ID, "start_lsn", b.Start.LSN.String(), "end_lsn", b.End.LSN.String())

	sp := spans(insts, b.Start.LSN.Next(), b.End.LSN)
	var events []facts.Row

	// Source changes inside the range: DDL, a newer capture instance.
	ddl, first, err := r.ddlEvents(ctx, b, sp)
	if err != nil {
		return rep, err
	}
	events = append(events, ddl...)

	bronzeSnap, err := r.bronze(ctx)
	if err != nil {
		return rep, fmt.Errorf("read bronze table: %w", err)
	}
	// A rerun after a crash between the bronze commit and commits/<n>: bronze already
	// holds the batch, and its commit's userMetadata holds the batch's facts. Nothing is
	// read then (the range may even be purged by now).
	var stats facts.BatchStats
	committed, recovered := false, false
	if _, ok := ingest.Replayed(bronzeSnap, r.spec.AppID, b.ID); ok {
		if fresh {
			v, _ := bronzeSnap.TxnVersion(r.spec.AppID)
			return rep, &CheckpointRewoundError{AppID: r.spec.AppID, Next: b.ID, FactsBatch: v, Table: "bronze"}
		}
		committed, rep.Replayed = true, true
		stats, recovered = r.statsFromCommit(bronzeSnap, b.ID)
	}
	// schemaChangePolicy "fail": any DDL inside a batch not yet written stops it before
	// anything is read (docs/stream.md "Schema changes"). A batch bronze already holds was
	// read under the other policy; its replay only finishes the bookkeeping.
	if len(ddl) > 0 && r.spec.FailsOnDDL() && !committed {
		return rep, &SchemaChangedError{Kind: SchemaDDLPolicy, CaptureInstance: first.ci, At: first.LSN, Command: first.Command}
	}
	sw, switched, err := r.switchEvent(ctx, b, insts)
	if err != nil {
		return rep, err
	} else if sw != nil {
		events = append(events, *sw)
	}

	var cols []source.Column
	var schema *arrow.Schema
	var warnings []string
	if !recovered {
		if cols, schema, warnings, err = r.columns(ctx, bronzeSnap, sp, insts); err != nil {
			return rep, err
		}
		// Retention before the read (invariant 3).
		var skipped []facts.Row
		if sp, skipped, err = r.guardBefore(ctx, b, sp); err != nil {
			return rep, err
		}
		events = append(events, skipped...)
	}

	var readSecs float64
	var net netMetrics
	var files ingest.Files
	if !recovered {
		ranges, err := r.ranges(ctx, sp)
		if err != nil {
			return rep, err
		}
		out, err := r.read(ctx, b.ID, ranges, cols, schema, !committed)
		if err != nil {
			return rep, err
		}
		stats, files, readSecs, net = out.stats, out.files, out.seconds, out.net
		after, err := r.guardAfter(ctx, b, sp)
		if err != nil {
			return rep, err
		}
		events = append(events, after...)
	}

	bronzeVersion := int64(-1)
	if !committed && stats.Rows > 0 {
		res, err := r.commitBronze(ctx, bronzeSnap, schema, files, b.ID, stats.UserMetadata(r.spec.AppID, b.ID))
		if err != nil {
			return rep, err
		}
		bronzeVersion = res.Version
		rep.Replayed = res.Replayed
	}
	doneAt := r.opts.Now().UTC()

	// The facts row (docs/facts.md) and the batch's event rows, in one commit.
	row := facts.Row{AppID: r.spec.AppID, BatchID: facts.Int64(b.ID), Target: r.spec.Bronze,
		StartedAt: &startedAt, DurationMs: facts.Int64(doneAt.Sub(startedAt).Milliseconds()),
		EndLSN: b.End.LSN.String(), Detail: facts.WarningsDetail(warnings)}
	stats.Fill(&row)
	if b.End.HasTime() {
		row.EndCommitTS = facts.Time(b.End.CommitTS)
	}
	if !recovered {
		row.ReadSeconds = facts.Float64(round3(readSecs))
		row.ReadMB = facts.Float64(float64(stats.Bytes) / 1e6)
		net.fill(&row)
	}
	h, err := r.health(ctx, sp, insts)
	if err != nil {
		return rep, err
	}
	row.ApplyHealth(h)
	row.WrittenAt = r.opts.Now().UTC()
	rows := append([]facts.Row{row}, events...)
	for i := range rows[1:] {
		rows[1+i].WrittenAt = row.WrittenAt
	}
	commit := checkpoint.Commit{ID: b.ID, Rows: stats.Rows, BronzeVersion: bronzeVersion}
	next, err := r.factsRows(ctx, &commit, rows, len(events) > 0)
	if err != nil {
		return rep, err
	}
	if switched != nil && r.spec.SnapshotOnSwitch {
		// Before commits/<n>: a crash before it replays the batch, which records it again.
		if err := r.deps.Checkpoint.RecordSwitch(ctx, *switched); err != nil {
			return rep, fmt.Errorf("record the switch snapshot: %w", err)
		}
	}
	if err := r.deps.Checkpoint.WriteCommit(ctx, commit); err != nil {
		return rep, err
	}
	r.facts = next

	rep.Rows, rep.Bytes = stats.Rows, stats.Bytes
	rep.Duration = r.opts.Now().Sub(startedAt)
	rep.IngestionLagSeconds, rep.CaptureLagSeconds = row.IngestionLagSeconds, row.CaptureLagSeconds
	rep.RetentionHeadroomHours = row.RetentionHeadroomHours
	for _, e := range events {
		rep.Events = append(rep.Events, e.Event)
	}
	attrs := []any{"rows", stats.Rows, "inserts", stats.Inserts, "updates", stats.Updates, "deletes", stats.Deletes,
		"bronze_version", bronzeVersion, "replayed", rep.Replayed, "duration_ms", rep.Duration.Milliseconds()}
	if row.IngestionLagSeconds != nil {
		attrs = append(attrs, "ingestion_lag_seconds", *row.IngestionLagSeconds)
	}
	if row.RetentionHeadroomHours != nil {
		attrs = append(attrs, "retention_headroom_hours", *row.RetentionHeadroomHours)
	}
	if len(rep.Events) > 0 {
		attrs = append(attrs, "events", rep.Events)
	}
	log.Info("batch committed", attrs...)
	return rep, nil
}

// commitBronze appends the batch's files with txn(app_id, batch) and the batch's facts as
// userMetadata (docs/design.md §4.2), on the bronze snapshot the batch read.
func (r *run) commitBronze(ctx context.Context, snap *deltalog.Snapshot, schema *arrow.Schema, files ingest.Files, batch int64, md string) (ingest.Result, error) {
	if sameSchema(snap, schema) {
		schema = nil // bronze's own: no schema change to make
	}
	res, err := ingest.Append(ctx, r.deps.Bronze, snap, ingest.Commit{AppID: r.spec.AppID, Version: batch,
		Schema: schema, Files: files, UserMetadata: md,
		// Values bare, as Spark's STREAMING UPDATE writes them.
		Operation: "STREAMING UPDATE", OperationParameters: map[string]string{
			"outputMode": "Append", "queryId": r.spec.AppID, "epochId": strconv.FormatInt(batch, 10)}})
	if err != nil {
		return res, fmt.Errorf("commit bronze batch %d: %w", batch, err)
	}
	return res, nil
}

// statsFromCommit finds the bronze commit of batch among the snapshot's recent commits
// and reads its facts back from the userMetadata. ok is false when log clean-up or a
// checkpoint dropped it (the caller then counts the rows again from the source).
func (r *run) statsFromCommit(snap *deltalog.Snapshot, batch int64) (facts.BatchStats, bool) {
	for v := snap.Version(); v >= 0 && v > snap.Version()-statsLookback; v-- {
		ci, ok := snap.CommitInfo(v)
		if !ok || ci.UserMetadata == "" {
			continue
		}
		st, app, id, err := facts.ParseUserMetadata(ci.UserMetadata)
		if err == nil && app == r.spec.AppID && id == batch {
			return st, true
		}
	}
	return facts.BatchStats{}, false
}

// statsLookback is how many bronze versions statsFromCommit looks back.
const statsLookback = 200

// health reads what the formulas of docs/reference/original-library.md §6.4 need, after the
// read: the retention watermark of the newest instance read, and max_lsn's commit time with
// the clock right after it.
func (r *run) health(ctx context.Context, sp []span, insts []source.CaptureInstance) (facts.Health, error) {
	var h facts.Health
	ci := insts[len(insts)-1]
	if len(sp) > 0 {
		ci = sp[len(sp)-1].CI
	}
	if min, err := r.src.MinLSN(ctx, ci.Name); err == nil {
		h.Watermark = r.watermarkTime(ctx, min)
	}
	max, err := r.src.MaxLSN(ctx)
	if err != nil {
		return h, r.sourceErr("max_lsn", err)
	}
	h.Clock = r.opts.Now().UTC()
	h.SourceMax = r.timeOf(ctx, max)
	return h, nil
}

// timeOf is the commit time of l, or of the last commit before it; nil when unknown.
func (r *run) timeOf(ctx context.Context, l lsn.LSN) *time.Time {
	if l.IsZero() {
		return nil
	}
	if t, ok, err := r.src.CommitTime(ctx, l); err == nil && ok {
		return facts.Time(t)
	}
	if c, ok, err := r.src.CommitAtOrBefore(ctx, l); err == nil && ok {
		return facts.Time(c.Time)
	}
	return nil
}

// watermarkTime is the commit time of a min_lsn: its own, else that of the first commit
// after it (a fresh instance's min_lsn is its enable's LSN, which may have no mapping row;
// the next commit is the oldest change still readable).
func (r *run) watermarkTime(ctx context.Context, min lsn.LSN) *time.Time {
	if t := r.timeOf(ctx, min); t != nil {
		return t
	}
	if l, ok, err := r.src.NthCommitAfter(ctx, min, 1); err == nil && ok {
		if t, ok, err := r.src.CommitTime(ctx, l); err == nil && ok {
			return facts.Time(t)
		}
	}
	return nil
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
