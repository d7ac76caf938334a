// Package reconcile is the reconcile Lambda's handler: on its own schedule (one EventBridge
// Scheduler schedule per table, infra/terraform, deployed only when the spec has a
// reconcile section) it compares the spec's silver table with the SQL Server table it
// mirrors, and checks a chunked snapshot's chunks against bronze, with core/reconcile's
// Job, the same code as `mssqlcdc reconcile` (docs/reconcile.md). It reads SQL Server,
// silver, bronze, the facts and plans tables, and writes only the report table: nothing is
// written to SQL Server.
//
// Each invocation appends one report (its rows in one commit) and returns the summary; it
// publishes the count of mismatching rows as the CloudWatch metric ReconcileMismatches
// (the module's alarm watches it). A difference is a finding, not an error: the
// invocation succeeds. A run killed at any point and invoked again with the same event
// gives one report: the scheduled time the schedule passes ("run") keys it.
//
// The Lambda's main (functions/reconcile/lambda) sets the garbage collector from the
// function's memory (internal/lambdagc) and calls lambda.Start(Lambda().Handle); `mssqlcdc
// invoke reconcile` runs the same handler through aws-lambda-go, and `mssqlcdc reconcile`
// the same comparison (core/reconcile.Job) from a shell.
package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	corereconcile "github.com/mssqlcdc/mssqlcdc/core/reconcile"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// Event is the handler's input; every field is optional. The schedule sends
// {"run": "<its scheduled time>"}. A value that does not decode or is out of range is a
// *lambdaerr.EventError.
type Event struct {
	// Run keys the report: an invocation whose run the report table's last report already
	// holds returns that report instead of writing another ("" : every invocation writes
	// one). At most 200 characters.
	Run string `json:"run,omitempty"`
	// Sample overrides reconcile.sample for this invocation (0..1).
	Sample *float64 `json:"sample,omitempty"`
	// Seed makes the sample repeatable (default: the clock's nanoseconds, another sample
	// each run).
	Seed *uint64 `json:"seed,omitempty"`
}

// UnmarshalJSON decodes the event and checks it, naming a failure.
func (e *Event) UnmarshalJSON(data []byte) error {
	type plain Event
	bad := func(field, reason string) error {
		return &lambdaerr.EventError{Function: "reconcile", Field: field, Reason: reason}
	}
	if err := json.Unmarshal(data, (*plain)(e)); err != nil {
		return lambdaerr.DecodeEventError("reconcile", err)
	}
	if e.Sample != nil && !(*e.Sample >= 0 && *e.Sample <= 1) {
		return bad("sample", "want a fraction between 0 and 1")
	}
	if len(e.Run) > 200 {
		return bad("run", "at most 200 characters")
	}
	return nil
}

// Output is the handler's result (docs/handlers.md § reconcile): the report's run number,
// whether silver matches (no row but MATCH and IN_FLIGHT), the rows per kind, the
// mismatching rows, the source's max LSN and silver's applied LSN, tier 2's buckets (and
// why it skipped, if it did), the chunked snapshot whose chunks were checked, and whether
// the report was an earlier invocation's of the same run.
type Output struct {
	Run             int64          `json:"run"`
	OK              bool           `json:"ok"`
	Counts          map[string]int `json:"counts"`
	Mismatches      int            `json:"mismatches"`
	MaxLSN          string         `json:"max_lsn"`
	AppliedLSN      string         `json:"applied_lsn"`
	Tier2Buckets    int            `json:"tier2_buckets"`
	Tiles           int            `json:"tiles,omitempty"`
	TilesSampled    int            `json:"tiles_sampled,omitempty"`
	ChunkedSnapshot string         `json:"chunked_snapshot,omitempty"`
	Replayed        bool           `json:"replayed,omitempty"`
}

// Tables are what one invocation reads and writes; Close (nil: nothing) releases the
// source.
type Tables struct {
	Source                               source.Source
	Silver, Bronze, Facts, Plans, Report *deltalog.Table
	Close                                func()
}

// Opener opens the spec's source and tables for one invocation.
type Opener func(ctx context.Context, spec *config.Spec) (Tables, error)

// Handler reconciles the silver table of one table spec.
type Handler struct {
	Spec *config.Spec
	// SpecErr is why the spec in the environment did not parse: every invocation fails
	// with it, named (a ConfigError).
	SpecErr error
	Open    Opener
	Log     *slog.Logger
	// Metrics receives the CloudWatch Embedded Metric Format line (nil: none).
	Metrics io.Writer
	// Now is the clock (tests fix it); time.Now when nil.
	Now func() time.Time
}

// New is the handler for spec whose source and tables come from open.
func New(spec *config.Spec, open Opener, log *slog.Logger) *Handler {
	return &Handler{Spec: spec, Open: open, Log: log}
}

// Lambda is the handler as the Lambda runs it: the spec from MSSQLCDC_SPEC, SQL Server and
// the tables opened as the other functions open them (internal/connect), JSON logs and
// metric lines on stdout/stderr.
func Lambda() *Handler {
	spec, err := connect.SpecFromEnv(os.Getenv)
	h := New(spec, OpenTables, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	h.SpecErr = err
	h.Metrics = os.Stdout
	return h
}

// OpenTables opens SQL Server and the spec's silver, bronze, facts, plans and report
// tables with the spec's storage settings (OpenLake). A spec without a reconcile or silver
// section is a *config.ConfigError.
func OpenTables(ctx context.Context, spec *config.Spec) (Tables, error) {
	t, err := OpenLake(ctx, spec)
	if err != nil {
		return Tables{}, err
	}
	db, err := connect.SQLServer(ctx, spec, os.Getenv, nil)
	if err != nil {
		return Tables{}, err
	}
	t.Source, t.Close = db, func() { db.Close() }
	return t, nil
}

// OpenLake opens the spec's silver, bronze, facts, plans and report tables (no network
// I/O), leaving Source to the caller (`mssqlcdc invoke` hands in its own).
func OpenLake(ctx context.Context, spec *config.Spec) (Tables, error) {
	if err := sections(spec); err != nil {
		return Tables{}, err
	}
	cfg := connect.Location(spec)
	var t Tables
	for _, o := range []struct {
		url string
		to  **deltalog.Table
	}{{spec.Silver.Table, &t.Silver}, {spec.Bronze, &t.Bronze}, {spec.FactsTable, &t.Facts}, {spec.PlansTable(), &t.Plans}, {spec.Reconcile.ReportTable, &t.Report}} {
		if o.url == "" {
			continue
		}
		tbl, err := connect.Table(ctx, o.url, cfg)
		if err != nil {
			return Tables{}, err
		}
		*o.to = tbl
	}
	return t, nil
}

func sections(spec *config.Spec) error {
	if spec.Reconcile == nil || spec.Silver == nil {
		return &config.ConfigError{Problems: []config.Problem{{Field: "reconcile", Reason: "the spec has no reconcile section (or no silver table to compare): add reconcile.report_table and silver.table (docs/spec.md) or do not deploy the reconcile function"}}}
	}
	return nil
}

// Handle compares silver with the source once, appends the report and returns its
// summary, or the error under its declared name (functions/lambdaerr).
func (h *Handler) Handle(ctx context.Context, ev Event) (Output, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "err", h.SpecErr.Error())
		return Output{}, lambdaerr.Named(h.SpecErr)
	}
	if err := sections(h.Spec); err != nil {
		return Output{}, lambdaerr.Named(err)
	}
	t, err := h.Open(ctx, h.Spec)
	if err != nil {
		h.Log.Error("reconcile open failed", "app_id", h.Spec.AppID, "err", err.Error())
		return Output{}, lambdaerr.Named(err)
	}
	if t.Close != nil {
		defer t.Close()
	}
	rc := h.Spec.Reconcile
	job := corereconcile.Job{Spec: h.Spec, Source: t.Source, Silver: t.Silver, Bronze: t.Bronze, Facts: t.Facts, Plans: t.Plans,
		Report: t.Report, Keys: h.Spec.SilverKeys(), BucketRows: rc.BucketRows, Sample: rc.SampleOr(), RunKey: ev.Run, Now: h.Now, Logger: h.Log}
	if ev.Sample != nil {
		job.Sample = *ev.Sample
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	job.Seed = uint64(now().UnixNano())
	if ev.Seed != nil {
		job.Seed = *ev.Seed
	}
	res, err := job.Run(ctx)
	if err != nil {
		h.Log.Error("reconcile failed", "app_id", h.Spec.AppID, "err", err.Error())
		return Output{}, lambdaerr.Named(err)
	}
	out := Output{Run: res.Run, OK: res.OK(), Counts: map[string]int{}, MaxLSN: res.MaxLSN.String(), AppliedLSN: res.AppliedLSN.String(),
		Tier2Buckets: res.Tier2Buckets, Tiles: res.Tiles, TilesSampled: res.TilesSampled, ChunkedSnapshot: res.ChunkedSnapshot, Replayed: res.Replayed}
	for k, n := range res.Counts {
		out.Counts[string(k)] = n
		if k != corereconcile.Match && k != corereconcile.InFlight {
			out.Mismatches += n
		}
	}
	h.emitMetrics(out)
	h.Log.Info("reconcile done", "app_id", h.Spec.AppID, "run", out.Run, "ok", out.OK, "mismatches", out.Mismatches,
		"counts", fmt.Sprint(out.Counts), "max_lsn", out.MaxLSN, "applied_lsn", out.AppliedLSN, "replayed", out.Replayed)
	return out, nil
}

// MetricMismatches is the CloudWatch metric (namespace mssqlcdc, dimension app_id) of a
// run's mismatching report rows; the Terraform module alarms on it above 0.
const MetricMismatches = "ReconcileMismatches"

// emitMetrics writes one CloudWatch Embedded Metric Format line: the run's mismatching
// rows, with the app_id as dimension.
func (h *Handler) emitMetrics(out Output) {
	if h.Metrics == nil {
		return
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	doc := map[string]any{"app_id": h.Spec.AppID, "run": out.Run, MetricMismatches: out.Mismatches,
		"_aws": map[string]any{
			"Timestamp": now().UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace": "mssqlcdc", "Dimensions": [][]string{{"app_id"}},
				"Metrics": []any{map[string]string{"Name": MetricMismatches, "Unit": "Count"}},
			}},
		}}
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	fmt.Fprintln(h.Metrics, string(b))
}
