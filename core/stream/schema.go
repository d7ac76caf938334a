package stream

import (
	"context"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// ddlSeen is a DDL event and the capture instance that recorded it.
type ddlSeen struct {
	source.DDLEvent
	ci string
}

// ddlEvents lists the DDL of the spans' instances inside the batch as schema_change rows
// (docs/stream.md "Schema changes"; docs/reference/original-library.md §8.1), and the first
// DDL event (for schemaChangePolicy "fail"). Under "classify" a type change bronze cannot
// take is caught by columns, which compares types before anything is read.
func (r *run) ddlEvents(ctx context.Context, b checkpoint.Batch, sp []span) ([]facts.Row, ddlSeen, error) {
	var out []facts.Row
	var first ddlSeen
	seen := map[string]bool{}
	for _, s := range sp {
		evs, err := r.src.DDLHistory(ctx, s.CI.Name, s.From.Prev(), s.To)
		if err != nil {
			return nil, first, r.sourceErr("ddl history", err)
		}
		for _, e := range evs {
			k := e.LSN.String() + "\x00" + e.Command
			if seen[k] {
				continue
			}
			seen[k] = true
			if len(out) == 0 {
				first = ddlSeen{DDLEvent: e, ci: r.ciLabel(s.CI)}
			}
			var t = facts.Time(e.Time)
			if e.Time.IsZero() {
				t = nil
			}
			r.log.Warn("DDL inside the batch", "batch", b.ID, "capture_instance", s.CI.Name, "ddl_lsn", e.LSN.String(), "command", e.Command)
			out = append(out, facts.SchemaChangeRow(r.spec.AppID, b.ID, r.spec.Bronze, e.LSN, t, e.Command))
		}
	}
	return out, first, nil
}

// switchEvent is the capture_instance_switched row of the first batch that reads a newer
// instance after reading the older one (docs/reference/original-library.md §6.2, §3.2 step
// 9): the batch's range starts below the newer instance's S and reaches it. A stream that
// started at or after S writes none. The switch is returned too, for snapshot_on_switch.
func (r *run) switchEvent(ctx context.Context, b checkpoint.Batch, insts []source.CaptureInstance) (*facts.Row, *checkpoint.Switch, error) {
	if len(insts) < 2 {
		return nil, nil, nil
	}
	older, newer := insts[0], insts[1]
	s := newer.StartLSN
	if !b.Start.LSN.Next().Less(s) || b.End.LSN.Less(s) {
		return nil, nil, nil
	}
	newCols, err := r.src.CapturedColumns(ctx, newer.Name)
	if err != nil {
		return nil, nil, r.sourceErr("captured columns", err)
	}
	captured := map[string]bool{}
	for _, c := range newCols {
		captured[strings.ToLower(c.Name)] = true
	}
	var missing []string
	if oldCols, err := r.src.CapturedColumns(ctx, older.Name); err == nil {
		for _, c := range oldCols {
			if !captured[strings.ToLower(c.Name)] {
				missing = append(missing, c.Name)
			}
		}
	}
	r.log.Warn("switching to a newer capture instance", "batch", b.ID, "old", older.Name, "new", newer.Name,
		"start_lsn", s.String(), "not_captured", joinNames(missing))
	row := facts.CaptureInstanceSwitchedRow(r.spec.AppID, b.ID, r.spec.Bronze, r.ciLabel(older), newer.Name, s, r.timeOf(ctx, s), missing)
	return &row, &checkpoint.Switch{S: s, From: r.ciLabel(older), To: newer.Name, Batch: b.ID}, nil
}
