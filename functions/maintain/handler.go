// Package maintain is the maintain Lambda's handler: on its schedule (one EventBridge
// Scheduler schedule per table, infra/terraform) it runs core/maintain on the spec's bronze
// table and its facts table — compaction, a checkpoint of the newest version, log
// clean-up, VACUUM with each table's retention, orphaned temporary files — the same code as
// `mssqlcdc maintain --all` (docs/operations.md § Maintenance). Its role is the only one
// allowed to delete Delta log files.
//
// The Lambda's main (functions/maintain/lambda) sets the garbage collector from the
// function's memory (internal/lambdagc) and calls lambda.Start(Lambda().Handle); `mssqlcdc
// invoke maintain` runs the same handler through aws-lambda-go.
package maintain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	coremaintain "github.com/mssqlcdc/mssqlcdc/core/maintain"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// DefaultMargin is the time before the invocation's deadline after which no compaction
// group starts, left for the checkpoint, log clean-up and VACUUM of every table.
const DefaultMargin = 3 * time.Minute

// Event is the handler's input; every field is optional and {} (what the schedule sends)
// runs every operation on bronze and facts. A value that does not decode or is out of range
// is a *lambdaerr.EventError.
type Event struct {
	// Tables limits the run to "bronze" and/or "facts".
	Tables []string `json:"tables,omitempty"`
	// DryRun reports what would be done and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// TargetFileSize is compaction's target in bytes (0: deltalog.DefaultCompactTargetSize).
	TargetFileSize int64 `json:"target_file_size,omitempty"`
}

// UnmarshalJSON decodes the event and checks it, naming a failure.
func (e *Event) UnmarshalJSON(data []byte) error {
	type plain Event
	bad := func(field, reason string) error {
		return &lambdaerr.EventError{Function: "maintain", Field: field, Reason: reason}
	}
	if err := json.Unmarshal(data, (*plain)(e)); err != nil {
		return lambdaerr.DecodeEventError("maintain", err)
	}
	for _, t := range e.Tables {
		if t != "bronze" && t != "facts" {
			return bad("tables", `want "bronze" and/or "facts", got "`+t+`"`)
		}
	}
	if e.TargetFileSize < 0 {
		return bad("target_file_size", fmt.Sprintf("%d: want bytes >= 1, or 0 or leave it out for %d (128 MiB)", e.TargetFileSize, deltalog.DefaultCompactTargetSize))
	}
	return nil
}

// Output is the handler's result: one report per table maintained, bronze first.
type Output struct {
	Tables []TableReport `json:"tables"`
}

// TableReport is core/maintain's report of one table, with which table of the spec it is.
type TableReport struct {
	Name string `json:"name"` // "bronze" or "facts"
	*coremaintain.Report
}

// Opener opens the spec's Delta tables for one invocation: bronze, and facts (nil when the
// spec names none).
type Opener func(ctx context.Context, spec *config.Spec) (bronze, facts *deltalog.Table, err error)

// Handler maintains the tables of one table spec.
type Handler struct {
	Spec *config.Spec
	// SpecErr is why the spec in the environment did not parse: every invocation fails
	// with it, named.
	SpecErr error
	Open    Opener
	Log     *slog.Logger
	// Margin is DefaultMargin when 0.
	Margin time.Duration
	// Now is the clock (tests fix it); time.Now when nil.
	Now func() time.Time
	// TempDir holds the Parquet files compaction writes before upload ("" os.TempDir()).
	TempDir string
}

// New is the handler for spec whose tables come from open.
func New(spec *config.Spec, open Opener, log *slog.Logger) *Handler {
	return &Handler{Spec: spec, Open: open, Log: log}
}

// Lambda is the handler as the Lambda runs it: the spec from MSSQLCDC_SPEC, its tables
// opened as the stream opens them (internal/connect), JSON logs on stderr.
func Lambda() *Handler {
	spec, err := connect.SpecFromEnv(os.Getenv)
	h := New(spec, OpenTables, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	h.SpecErr = err
	return h
}

// OpenTables opens the spec's bronze and facts tables as the stream opens them
// (connect.Table with the spec's storage settings); facts is nil when the spec names none.
func OpenTables(ctx context.Context, spec *config.Spec) (bronze, facts *deltalog.Table, err error) {
	cfg := connect.Location(spec)
	if bronze, err = connect.Table(ctx, spec.Bronze, cfg); err != nil {
		return nil, nil, err
	}
	if spec.FactsTable != "" {
		if facts, err = connect.Table(ctx, spec.FactsTable, cfg); err != nil {
			return nil, nil, err
		}
	}
	return bronze, facts, nil
}

// Handle maintains bronze, then facts. Each table gets an equal share of the time left
// before the deadline less Margin to compact in (what is left waits for the next run);
// the checkpoint, log clean-up, VACUUM and temporary files follow. A table that fails does
// not stop the other: its error is returned, under its declared name (functions/lambdaerr),
// after both ran; every report is logged.
func (h *Handler) Handle(ctx context.Context, ev Event) (Output, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "err", h.SpecErr.Error())
		return Output{}, lambdaerr.Named(h.SpecErr)
	}
	bronze, facts, err := h.Open(ctx, h.Spec)
	if err != nil {
		h.Log.Error("maintain open failed", "app_id", h.Spec.AppID, "err", err.Error())
		return Output{}, lambdaerr.Named(err)
	}
	type target struct {
		name string
		tbl  *deltalog.Table
	}
	var targets []target
	for _, t := range []target{{"bronze", bronze}, {"facts", facts}} {
		if t.tbl != nil && (len(ev.Tables) == 0 || slices.Contains(ev.Tables, t.name)) {
			targets = append(targets, t)
		}
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	margin := h.Margin
	if margin <= 0 {
		margin = DefaultMargin
	}
	var out Output
	var errs []error
	for i, t := range targets {
		o := coremaintain.All()
		o.DryRun = ev.DryRun
		o.Compaction.TargetFileSize = ev.TargetFileSize
		o.Compaction.Writer.TempDir = h.TempDir
		if dl, ok := ctx.Deadline(); ok {
			// Table i may compact until its share of the time before the margin is used.
			left := dl.Add(-margin).Sub(now())
			o.CompactBefore = now().Add(left / time.Duration(len(targets)-i))
		}
		rep, err := coremaintain.Run(ctx, t.tbl, o)
		if errors.Is(err, coremaintain.ErrNoTable) {
			// Not created yet (the bootstrap has not run): nothing to maintain.
			h.Log.Info("maintain: no table yet", "app_id", h.Spec.AppID, "table", t.name)
			continue
		}
		if rep != nil {
			out.Tables = append(out.Tables, TableReport{Name: t.name, Report: rep})
			h.logReport(t.name, rep)
		}
		if err != nil {
			h.Log.Error("maintain failed", "app_id", h.Spec.AppID, "table", t.name, "err", err.Error())
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return out, lambdaerr.Named(errs[0])
	}
	return out, nil
}

// logReport writes one log line per table with the counts an operator watches.
func (h *Handler) logReport(name string, r *coremaintain.Report) {
	attrs := []any{"app_id", h.Spec.AppID, "table", name, "url", r.Table, "dry_run", r.DryRun}
	if c := r.Compact; c != nil {
		attrs = append(attrs, "compacted_files", c.FilesRemoved, "written_files", c.FilesAdded,
			"compact_commits", c.Commits, "small_files_left", c.FilesLeft, "live_files", c.LiveFiles)
	}
	if c := r.Checkpoint; c != nil {
		attrs = append(attrs, "checkpoint_written", c.Written, "version", c.Version)
	}
	for _, op := range []struct {
		key string
		r   *coremaintain.OpResult
	}{{"vacuum_deleted", r.Vacuum}, {"log_deleted", r.CleanupLog}, {"temp_deleted", r.TempFiles}} {
		if op.r != nil {
			attrs = append(attrs, op.key, op.r.DeletedFiles)
		}
	}
	h.Log.Info("maintain table done", attrs...)
}
