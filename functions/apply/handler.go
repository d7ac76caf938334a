// Package apply is the apply Lambda's handler: on its own schedule (one EventBridge
// Scheduler schedule per table, infra/terraform, deployed only when the spec names a
// silver table) it brings the spec's silver table up to bronze with core/silver.Apply, the
// same code as `mssqlcdc apply` (docs/silver.md). It reads bronze and writes silver only:
// no SQL Server, no checkpoint, no facts.
//
// Each invocation works within a time budget: it starts no key range after the earlier of
// the deadline less Margin and silver.max_seconds, and returns caught_up false when it
// stopped early. Silver's position (its own commits) says where the next invocation goes
// on, so a run that is killed, times out or stops early loses nothing. Memory is bounded
// by silver.memory_mb: a run whose bronze rows would need more is applied in key ranges.
//
// The Lambda's main (functions/apply/lambda) sets the garbage collector from the
// function's memory (internal/lambdagc) and calls lambda.Start(Lambda().Handle); `mssqlcdc
// invoke apply` runs the same handler through aws-lambda-go.
package apply

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// DefaultMargin is the time before the invocation's deadline after which no key range
// starts: room for the range in progress to finish and commit. A range holds at most
// silver.memory_mb of bronze rows (256 MiB by default) and the silver files they touch.
const DefaultMargin = 2 * time.Minute

// Event is the handler's input; every field is optional and {} (what the schedule sends)
// applies with the spec's settings. A value that does not decode or is out of range is a
// *lambdaerr.EventError.
type Event struct {
	// MaxSeconds overrides silver.max_seconds for this invocation (0: the deadline only).
	MaxSeconds *float64 `json:"max_seconds,omitempty"`
}

// UnmarshalJSON decodes the event and checks it, naming a failure.
func (e *Event) UnmarshalJSON(data []byte) error {
	type plain Event
	bad := func(field, reason string) error {
		return &lambdaerr.EventError{Function: "apply", Field: field, Reason: reason}
	}
	if err := json.Unmarshal(data, (*plain)(e)); err != nil {
		return lambdaerr.DecodeEventError("apply", err)
	}
	if e.MaxSeconds != nil && (*e.MaxSeconds < 0 || *e.MaxSeconds > config.MaxDurationSeconds) {
		return bad("max_seconds", "want 0 (the deadline only) or more seconds, at most 366 days")
	}
	return nil
}

// Output is the handler's result, core/silver's Result: {"caught_up", "bronze_version",
// "applied_lsn", "snapshot_lsn", "silver_version", "commits", "rebuilds", "inserted",
// "updated", "deleted", "files_removed", "files_added", "bytes_rewritten",
// "bytes_written", "deletion_vectors"} (docs/handlers.md § apply).
type Output = silver.Result

// Opener opens the spec's bronze (read) and silver (written) tables for one invocation.
type Opener func(ctx context.Context, spec *config.Spec) (silver.Tables, error)

// Handler keeps the silver table of one table spec.
type Handler struct {
	Spec *config.Spec
	// SpecErr is why the spec in the environment did not parse: every invocation fails
	// with it, named (a ConfigError).
	SpecErr error
	Open    Opener
	Log     *slog.Logger
	// Margin is DefaultMargin when 0.
	Margin time.Duration
	// Now is the clock (tests fix it); time.Now when nil.
	Now func() time.Time
	// TempDir holds the Parquet files being written before upload ("" os.TempDir()).
	TempDir string
	// MemoryBytes, when > 0, replaces silver.memory_mb as the bound on one key range's
	// bronze rows (tests cut small tables into several ranges with it).
	MemoryBytes int64
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

// OpenTables opens the spec's bronze and silver tables with the spec's storage settings
// (connect.Table). A spec without a silver section is a *config.ConfigError on "silver".
func OpenTables(ctx context.Context, spec *config.Spec) (silver.Tables, error) {
	if spec.Silver == nil {
		return silver.Tables{}, noSilver()
	}
	cfg := connect.Location(spec)
	b, err := connect.Table(ctx, spec.Bronze, cfg)
	if err != nil {
		return silver.Tables{}, err
	}
	s, err := connect.Table(ctx, spec.Silver.Table, cfg)
	if err != nil {
		return silver.Tables{}, err
	}
	return silver.Tables{Bronze: b, Silver: s}, nil
}

func noSilver() error {
	return &config.ConfigError{Problems: []config.Problem{{Field: "silver", Reason: "the spec names no silver table: add silver.table (docs/spec.md) or do not deploy the apply function"}}}
}

// Handle applies bronze to silver until silver has caught up or the budget is spent, and
// returns where silver stands, or the error under its declared name (functions/lambdaerr).
// Before the bootstrap created bronze there is nothing to apply: caught_up with
// bronze_version -1.
func (h *Handler) Handle(ctx context.Context, ev Event) (Output, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "err", h.SpecErr.Error())
		return Output{}, lambdaerr.Named(h.SpecErr)
	}
	if h.Spec.Silver == nil {
		return Output{}, lambdaerr.Named(noSilver())
	}
	tables, err := h.Open(ctx, h.Spec)
	if err != nil {
		h.Log.Error("apply open failed", "app_id", h.Spec.AppID, "err", err.Error())
		return Output{}, lambdaerr.Named(err)
	}
	sv := h.Spec.Silver
	opts := silver.Options{AppID: h.Spec.AppID, Keys: h.Spec.SilverKeys(), MemoryBytes: sv.MemoryMB << 20,
		CopyOnWrite: sv.CopyOnWrite, TempDir: h.TempDir, Now: h.Now, Logger: h.Log}
	if h.MemoryBytes > 0 {
		opts.MemoryBytes = h.MemoryBytes
	}
	opts.Deadline = h.deadline(ctx, ev)
	res, err := silver.Apply(ctx, tables, opts)
	if err != nil {
		h.Log.Error("apply failed", "app_id", h.Spec.AppID, "silver_version", res.SilverVersion,
			"bronze_version", res.BronzeVersion, "commits", res.Commits, "err", err.Error())
		return res, lambdaerr.Named(err)
	}
	h.Log.Info("apply invocation done", "app_id", h.Spec.AppID, "caught_up", res.CaughtUp, "commits", res.Commits,
		"rebuilds", res.Rebuilds, "bronze_version", res.BronzeVersion, "silver_version", res.SilverVersion,
		"applied_lsn", res.AppliedLSN, "inserted", res.Inserted, "updated", res.Updated, "deleted", res.Deleted,
		"bytes_rewritten", res.BytesRewritten, "deletion_vectors", res.DeletionVectors)
	return res, nil
}

// deadline is when the invocation starts no more key ranges: the earlier of the
// invocation's deadline less the margin and now plus max_seconds (the event's, else the
// spec's); zero when neither bounds it.
func (h *Handler) deadline(ctx context.Context, ev Event) time.Time {
	now := time.Now()
	if h.Now != nil {
		now = h.Now()
	}
	margin := h.Margin
	if margin <= 0 {
		margin = DefaultMargin
	}
	var at time.Time
	if dl, ok := ctx.Deadline(); ok {
		// The context's deadline is wall-clock time; h.Now may be a test's clock, so the
		// time left is measured on the wall clock and added to now.
		at = now.Add(time.Until(dl) - margin)
	}
	maxSeconds := h.Spec.Silver.MaxSeconds
	if ev.MaxSeconds != nil {
		maxSeconds = *ev.MaxSeconds
	}
	if maxSeconds > 0 {
		if b := now.Add(time.Duration(maxSeconds * float64(time.Second))); at.IsZero() || b.Before(at) {
			at = b
		}
	}
	return at
}
