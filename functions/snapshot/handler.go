// Package snapshot is the snapshot Lambda's handler: the steps of a full snapshot (open,
// plan, read, commit, close) that the bootstrap state machine calls, for the table spec in
// its environment (MSSQLCDC_SPEC, the JSON document Terraform writes). The input names the
// step: {"step": "open"|"plan"|"read"|"commit"|"close", ...} (docs/handlers.md).
//
// The Lambda's main (functions/snapshot/lambda) sets the garbage collector from the
// function's memory (internal/lambdagc) and calls lambda.Start(Lambda().Handle); `mssqlcdc
// invoke snapshot` runs the same handler through aws-lambda-go's own invoke path
// (internal/runtimeapi) with the CLI's source, so the state-machine tests exercise exactly
// what Lambda runs.
package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	coresnapshot "github.com/mssqlcdc/mssqlcdc/core/snapshot"
	corestream "github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// Opener opens the snapshot steps' connections of a spec for one invocation; close
// releases them.
type Opener func(ctx context.Context, spec *config.Spec) (deps coresnapshot.Deps, close func(), err error)

// Event is the handler's input, core/snapshot's Event. A value that does not decode (a
// field of the wrong type, not an object) is a *snapshot.EventError.
//
// The recover machine (statemachine/recover.asl.json) calls two more steps, which take
// the full re-snapshot after data loss around plan and read (core/stream Recover*):
//
//	{"step": "recover_open", "request": {"execution", "takeover"}}
//	{"step": "recover_commit", "recover": <recover_open's output>}
type Event struct {
	coresnapshot.Event
	Request *corestream.RecoverRequest    `json:"request,omitempty"`
	Recover *corestream.RecoverOpenResult `json:"recover,omitempty"`
}

// Recover steps of the snapshot function (Event).
const (
	StepRecoverOpen   = "recover_open"
	StepRecoverCommit = "recover_commit"
)

// UnmarshalJSON decodes the event, and names a decoding failure (aws-lambda-go would report
// json's own error type, which no machine declares).
func (e *Event) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &e.Event); err != nil {
		return &coresnapshot.EventError{Step: e.Step, Reason: "not a snapshot event: " + lambdaerr.EventDecodeReason(err)}
	}
	var rc struct {
		Request *corestream.RecoverRequest    `json:"request"`
		Recover *corestream.RecoverOpenResult `json:"recover"`
	}
	if err := json.Unmarshal(data, &rc); err != nil {
		return &coresnapshot.EventError{Step: e.Step, Reason: "not a snapshot event: " + lambdaerr.EventDecodeReason(err)}
	}
	e.Request, e.Recover = rc.Request, rc.Recover
	return nil
}

// handle runs the step ev names: a recover step here, the others in core/snapshot.
func (h *Handler) handle(ctx context.Context, deps coresnapshot.Deps, ev Event) (any, error) {
	switch ev.Step {
	case StepRecoverOpen:
		var req corestream.RecoverRequest
		if ev.Request != nil {
			req = *ev.Request
		}
		return corestream.RecoverOpen(ctx, deps, req)
	case StepRecoverCommit:
		if ev.Recover == nil {
			return nil, &coresnapshot.EventError{Step: ev.Step, Reason: "needs recover (the recover_open step's output)"}
		}
		res, err := corestream.RecoverCommit(ctx, deps, *ev.Recover)
		if err == nil && ev.Recover.Switch != nil {
			// A switch snapshot (snapshot_on_switch) loses nothing: no resnapshot metric.
			h.Log.Info("switch snapshot committed", "app_id", h.Spec.AppID, "switch_lsn", ev.Recover.Switch.String(),
				"snapshot_lsn", res.Snapshot.LSN.String())
			return res, err
		}
		if err == nil && res.Generation == ev.Recover.Generation && ev.Recover.Status != corestream.RecoverNone && ev.Recover.Status != corestream.RecoverBusy {
			h.Log.Warn("resnapshot: a new generation opened after data loss", "app_id", h.Spec.AppID, "event", "resnapshot",
				"generation", res.Generation, "snapshot_lsn", res.Snapshot.LSN.String())
			h.emitResnapshot(ctx, res.Generation)
		}
		return res, err
	case coresnapshot.StepOpen, coresnapshot.StepPlan, coresnapshot.StepRead, coresnapshot.StepCommit, coresnapshot.StepClose:
		return coresnapshot.Handle(ctx, deps, ev.Event)
	}
	return nil, &coresnapshot.EventError{Step: ev.Step, Reason: "step must be open, plan, read, commit, close, recover_open or recover_commit"}
}

// emitResnapshot writes the CloudWatch Embedded Metric Format line the resnapshot alarm
// counts (namespace mssqlcdc, metric Resnapshots, dimension app_id): one per generation
// committed by this invocation (a rerun after the commit point writes another; the alarm
// fires either way).
func (h *Handler) emitResnapshot(_ context.Context, generation int) {
	if h.Metrics == nil {
		return
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	doc := map[string]any{"app_id": h.Spec.AppID, "generation": generation, "Resnapshots": 1,
		"_aws": map[string]any{"Timestamp": now().UnixMilli(), "CloudWatchMetrics": []any{map[string]any{
			"Namespace": "mssqlcdc", "Dimensions": [][]string{{"app_id"}},
			"Metrics": []any{map[string]string{"Name": "Resnapshots", "Unit": "Count"}}}}}}
	if b, err := json.Marshal(doc); err == nil {
		fmt.Fprintln(h.Metrics, string(b))
	}
}

// Handler runs one step of a full snapshot for one table spec.
type Handler struct {
	Spec *config.Spec
	// SpecErr is why the spec in the environment did not parse: every invocation fails
	// with it, named (a ConfigError), rather than the process exiting, which Step Functions
	// would see as Runtime.ExitError.
	SpecErr error
	Open    Opener
	Log     *slog.Logger
	// Metrics receives the CloudWatch Embedded Metric Format lines (stdout in Lambda; nil:
	// none); Now is the clock (time.Now when nil).
	Metrics io.Writer
	Now     func() time.Time
}

// New is the handler for spec whose connections come from open; Log receives the structured log
// lines.
func New(spec *config.Spec, open Opener, log *slog.Logger) *Handler {
	return &Handler{Spec: spec, Open: open, Log: log}
}

// Lambda is the handler as the Lambda runs it: the spec from MSSQLCDC_SPEC, SQL Server and
// the tables it names (internal/connect), JSON logs on stderr.
func Lambda() *Handler {
	spec, err := connect.SpecFromEnv(os.Getenv)
	open := func(ctx context.Context, s *config.Spec) (coresnapshot.Deps, func(), error) {
		return connect.Snapshot(ctx, s, os.Getenv)
	}
	h := New(spec, open, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	h.SpecErr = err
	h.Metrics = os.Stdout
	return h
}

// Handle opens the connections, runs the step the event names (core/snapshot.Handle) and
// returns its output, or the error under its declared name (functions/lambdaerr), the
// errorType Step Functions matches.
func (h *Handler) Handle(ctx context.Context, ev Event) (any, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "step", ev.Step, "err", h.SpecErr.Error())
		return nil, lambdaerr.Named(h.SpecErr)
	}
	deps, closeDeps, err := h.Open(ctx, h.Spec)
	if err != nil {
		h.Log.Error("snapshot open failed", "app_id", h.Spec.AppID, "step", ev.Step, "err", err.Error())
		return nil, lambdaerr.Named(err)
	}
	defer closeDeps()
	out, err := h.handle(ctx, deps, ev)
	if err != nil {
		h.Log.Error("snapshot step failed", "app_id", h.Spec.AppID, "step", ev.Step, "err", err.Error())
		return nil, lambdaerr.Named(err)
	}
	h.Log.Info("snapshot step done", "app_id", h.Spec.AppID, "step", ev.Step)
	return out, nil
}
