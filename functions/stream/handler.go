package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
)

// Event is the handler's input: what EventBridge Scheduler or Step Functions sends. Every
// field is optional; an empty object ({}) runs one invocation with the spec's settings.
type Event struct {
	// MaxSeconds overrides the spec's max_seconds for this invocation.
	MaxSeconds *float64 `json:"max_seconds,omitempty"`
	// MaxBatches stops after this many batches (0: until caught up or out of time).
	MaxBatches int `json:"max_batches,omitempty"`
}

// Output is the handler's result (stream.Result): {"caught_up", "batches", "rows",
// "offset": {"lsn", "commit_ts"}}. A Step Functions loop runs the stream again while
// caught_up is false.
type Output = stream.Result

// Opener opens the stream's connections for one invocation; close releases them.
type Opener func(ctx context.Context, spec *config.Spec) (deps stream.Deps, close func(), err error)

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
	// Now is the clock (tests fix it); time.Now when nil.
	Now func() time.Time
}

// Handle decodes nothing itself (aws-lambda-go does), runs core/stream and maps errors to
// the named types Step Functions matches (stream.Named).
func (h *Handler) Handle(ctx context.Context, ev Event) (Output, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "err", h.SpecErr.Error())
		return Output{}, stream.Named(h.SpecErr)
	}
	spec := *h.Spec
	if ev.MaxSeconds != nil {
		spec.MaxSeconds = *ev.MaxSeconds
		if err := spec.Validate(); err != nil {
			return Output{}, stream.Named(err)
		}
	}
	deps, closeDeps, err := h.Open(ctx, &spec)
	if err != nil {
		return Output{}, stream.Named(err)
	}
	defer closeDeps()
	opts := stream.Options{MaxBatches: ev.MaxBatches, Logger: h.Log, Now: h.Now,
		OnBatch: func(r stream.BatchReport) { h.emitMetrics(spec.AppID, r) }}
	res, err := stream.Run(ctx, &spec, deps, opts)
	if err != nil {
		h.Log.Error("stream failed", "app_id", spec.AppID, "batches", res.Batches, "offset", res.Offset.String(), "err", err.Error())
		return res, stream.Named(err)
	}
	h.Log.Info("stream invocation done", "app_id", spec.AppID, "caught_up", res.CaughtUp, "batches", res.Batches,
		"rows", res.Rows, "offset_lsn", res.Offset.LSN.String())
	return res, nil
}

// emitMetrics writes one CloudWatch Embedded Metric Format line per batch: rows, bytes,
// lags and retention headroom, with the app_id as dimension.
func (h *Handler) emitMetrics(appID string, r stream.BatchReport) {
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
	doc := map[string]any{"app_id": appID, "batch": r.Batch, "Rows": r.Rows, "Bytes": r.Bytes,
		"DurationMs": r.Duration.Milliseconds()}
	metrics := []metric{{"Rows", "Count"}, {"Bytes", "Bytes"}, {"DurationMs", "Milliseconds"}}
	add := func(name, unit string, v *float64) {
		if v != nil {
			doc[name] = *v
			metrics = append(metrics, metric{name, unit})
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
