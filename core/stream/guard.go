package stream

import (
	"context"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
)

// guardBefore is the planning retention check (docs/reference/original-library.md §7.1,
// §3.2 step 7): a span starting below its instance's min_lsn lost changes. With
// failOnDataLoss (the default) that is a *DataLossError; otherwise the span starts at
// min_lsn, a data_skipped row (certain) records the gap, and spans left empty are dropped.
func (r *run) guardBefore(ctx context.Context, b checkpoint.Batch, sp []span) ([]span, []facts.Row, error) {
	var out []span
	var events []facts.Row
	for _, s := range sp {
		min, err := r.src.MinLSN(ctx, s.CI.Name)
		if err != nil {
			return nil, nil, r.sourceErr("min_lsn", err)
		}
		if s.From.Less(min) {
			if r.spec.FailsOnDataLoss() {
				return nil, nil, &DataLossError{CaptureInstance: s.CI.Name, From: s.From, MinLSN: min}
			}
			r.log.Warn("skipping purged changes (failOnDataLoss=false)", "batch", b.ID,
				"capture_instance", s.CI.Name, "from", s.From.String(), "to", min.String())
			events = append(events, facts.DataSkippedRow(r.spec.AppID, b.ID, r.spec.Bronze, s.From, min,
				startTime(b), r.watermarkTime(ctx, min), true, ""))
			s.From = min
		}
		if s.To.Less(s.From) {
			continue
		}
		out = append(out, s)
	}
	return out, events, nil
}

// guardAfter is the check after the read (docs/reference/sqlserver-cdc.md §5.2;
// docs/reference/original-library.md §4): cleanup that moved min_lsn past a span's start
// while it was read may have removed rows the read then missed (a purged range reads as
// empty, without error).
func (r *run) guardAfter(ctx context.Context, b checkpoint.Batch, sp []span) ([]facts.Row, error) {
	var events []facts.Row
	for _, s := range sp {
		min, err := r.src.MinLSN(ctx, s.CI.Name)
		if err != nil {
			return nil, r.sourceErr("min_lsn", err)
		}
		if !s.From.Less(min) {
			continue
		}
		if r.spec.FailsOnDataLoss() {
			return nil, &DataLossError{CaptureInstance: s.CI.Name, From: s.From, MinLSN: min, DuringRead: true}
		}
		r.log.Warn("cleanup ran during the read; changes may be missing (failOnDataLoss=false)", "batch", b.ID,
			"capture_instance", s.CI.Name, "from", s.From.String(), "min_lsn", min.String())
		events = append(events, facts.DataSkippedRow(r.spec.AppID, b.ID, r.spec.Bronze, s.From, min,
			startTime(b), r.watermarkTime(ctx, min), false, "CDC cleanup moved min_lsn past the range's start during the read"))
	}
	return events, nil
}

func startTime(b checkpoint.Batch) *time.Time {
	if !b.Start.HasTime() {
		return nil
	}
	return facts.Time(b.Start.CommitTS)
}
