// Package stream is the stream Lambda's handler: it runs core/stream for the table spec in
// its environment (MSSQLCDC_SPEC, the JSON document Terraform writes) and returns
// {"caught_up", "batches", "rows", "offset"} (docs/handlers.md). EventBridge Scheduler
// invokes it every N minutes; reserved concurrency 1 keeps one invocation per table.
//
// The Lambda's main (functions/stream/lambda) sets the garbage collector from the
// function's memory (internal/lambdagc) and calls lambda.Start(Lambda().Handle); `mssqlcdc
// invoke stream` runs the same handler through aws-lambda-go's own invoke path
// (internal/runtimeapi) with the CLI's source, so the state-machine tests exercise exactly
// what Lambda runs.
package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	corestream "github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// Event is the handler's input: what EventBridge Scheduler or Step Functions sends. Every
// field is optional; an empty object ({}) runs one invocation with the spec's settings. A
// value that does not decode (a field of the wrong type, not an object) or is out of range
// is a *lambdaerr.EventError.
type Event struct {
	// MaxSeconds overrides the spec's max_seconds for this invocation.
	MaxSeconds *float64 `json:"max_seconds,omitempty"`
	// MaxBatches stops after this many batches (0: until caught up or out of time); a
	// negative count is refused. max_seconds is bounded as the spec's is.
	MaxBatches int `json:"max_batches,omitempty"`
}

// UnmarshalJSON decodes the event, and names a decoding failure (aws-lambda-go would report
// json's own error type, which no machine declares).
func (e *Event) UnmarshalJSON(data []byte) error {
	type plain Event
	if err := json.Unmarshal(data, (*plain)(e)); err != nil {
		return lambdaerr.DecodeEventError("stream", err)
	}
	if e.MaxBatches < 0 {
		return &lambdaerr.EventError{Function: "stream", Field: "max_batches", Reason: fmt.Sprintf("%d: want 0 (no bound) or more", e.MaxBatches)}
	}
	return nil
}

// Output is the handler's result (corestream.Result): {"caught_up", "batches", "rows",
// "offset": {"lsn", "commit_ts"}}. A Step Functions loop runs the stream again while
// caught_up is false.
type Output = corestream.Result

// Opener opens the stream's connections for one invocation; close releases them.
type Opener func(ctx context.Context, spec *config.Spec) (deps corestream.Deps, close func(), err error)

// Handler runs the stream for one table spec.
type Handler struct {
	Spec *config.Spec
	// SpecErr is why the spec in the environment did not parse: every invocation fails
	// with it, named (a ConfigError), rather than the process exiting, which Step Functions
	// would see as Runtime.ExitError.
	SpecErr error
	Open    Opener
	// Log receives the structured JSON log lines; Metrics the CloudWatch Embedded Metric
	// Format lines (stdout in Lambda).
	Log     *slog.Logger
	Metrics io.Writer
	// Declared names the values published as CloudWatch metrics in each EMF line; every
	// value stays a field of the line either way (Logs Insights reads it). Nil declares
	// all of them; Lambda sets it from MSSQLCDC_METRICS, which Terraform renders from the
	// module's custom_metrics (each declared metric is billed per table, docs/cost.md).
	Declared map[string]bool
	// Now is the clock (tests fix it); time.Now when nil.
	Now func() time.Time
}

// New is the handler for spec whose connections come from open, kept between invocations
// as a warm Lambda keeps them. Log receives the structured log lines, metrics the
// CloudWatch Embedded Metric Format lines (nil: none).
func New(spec *config.Spec, open Opener, log *slog.Logger, metrics io.Writer) *Handler {
	return &Handler{Spec: spec, Open: (&warm{open: open}).Open, Log: log, Metrics: metrics}
}

// Lambda is the handler as the Lambda runs it: the spec from MSSQLCDC_SPEC, SQL Server and
// the tables it names (internal/connect), JSON logs on stderr and metrics on stdout (which
// CloudWatch reads).
func Lambda() *Handler {
	spec, err := connect.SpecFromEnv(os.Getenv)
	open := func(ctx context.Context, s *config.Spec) (corestream.Deps, func(), error) {
		return connect.Stream(ctx, s, os.Getenv)
	}
	h := New(spec, open, slog.New(slog.NewJSONHandler(os.Stderr, nil)), os.Stdout)
	h.SpecErr = err
	if names, ok := os.LookupEnv("MSSQLCDC_METRICS"); ok {
		h.Declared = DeclaredMetrics(names)
	}
	return h
}

// DeclaredMetrics parses MSSQLCDC_METRICS, a comma-separated list of metric names
// ("IngestionLagSeconds,RetentionHeadroomHours"); the empty string declares none.
func DeclaredMetrics(list string) map[string]bool {
	declared := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			declared[name] = true
		}
	}
	return declared
}

// Handle runs core/stream for one invocation (aws-lambda-go decodes the event and encodes
// the output) and returns every error under its declared name (functions/lambdaerr), the
// errorType Step Functions matches.
func (h *Handler) Handle(ctx context.Context, ev Event) (Output, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "err", h.SpecErr.Error())
		return Output{}, lambdaerr.Named(h.SpecErr)
	}
	spec := *h.Spec
	if ev.MaxSeconds != nil {
		// The spec's own bound (config's validateSeconds), reported on the event: the spec
		// validated before the override.
		spec.MaxSeconds = *ev.MaxSeconds
		if err := spec.Validate(); err != nil {
			return Output{}, lambdaerr.OverrideError("stream", err, "", "max_seconds")
		}
	}
	deps, closeDeps, err := h.Open(ctx, &spec)
	if err != nil {
		h.Log.Error("stream open failed", "app_id", spec.AppID, "err", err.Error())
		return Output{}, lambdaerr.Named(err)
	}
	defer closeDeps()
	opts := corestream.Options{MaxBatches: ev.MaxBatches, Logger: h.Log, Now: h.Now,
		OnBatch: func(r corestream.BatchReport) { h.emitMetrics(spec.AppID, r) }}
	res, err := corestream.Run(ctx, &spec, deps, opts)
	if err != nil {
		h.Log.Error("stream failed", "app_id", spec.AppID, "batches", res.Batches, "offset", res.Offset.String(), "err", err.Error())
		return res, lambdaerr.Named(err)
	}
	h.Log.Info("stream invocation done", "app_id", spec.AppID, "caught_up", res.CaughtUp, "batches", res.Batches,
		"rows", res.Rows, "offset_lsn", res.Offset.LSN.String())
	return res, nil
}

// emitMetrics writes one CloudWatch Embedded Metric Format line per batch: rows, bytes,
// lags and retention headroom, with the app_id as dimension.
func (h *Handler) emitMetrics(appID string, r corestream.BatchReport) {
	if h.Metrics == nil {
		return
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	type metric struct {
		Name string `json:"Name"`
		Unit string `json:"Unit"`
	}
	doc := map[string]any{"app_id": appID, "batch": r.Batch}
	metrics := []metric{}
	declare := func(name, unit string, v any) {
		doc[name] = v
		if h.Declared == nil || h.Declared[name] {
			metrics = append(metrics, metric{name, unit})
		}
	}
	declare("Rows", "Count", r.Rows)
	declare("Bytes", "Bytes", r.Bytes)
	declare("DurationMs", "Milliseconds", r.Duration.Milliseconds())
	add := func(name, unit string, v *float64) {
		if v != nil {
			declare(name, unit, *v)
		}
	}
	add("IngestionLagSeconds", "Seconds", r.IngestionLagSeconds)
	add("CaptureLagSeconds", "Seconds", r.CaptureLagSeconds)
	add("RetentionHeadroomHours", "None", r.RetentionHeadroomHours)
	doc["_aws"] = map[string]any{
		"Timestamp": now().UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace": "mssqlcdc", "Dimensions": [][]string{{"app_id"}}, "Metrics": metrics,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return
	}
	fmt.Fprintln(h.Metrics, string(b))
}
