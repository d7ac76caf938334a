// Package snapshot is the snapshot Lambda's handler: the steps of a full snapshot (open,
// plan, read, commit, close) that the bootstrap state machine calls, for the table spec in
// its environment (MSSQLCDC_SPEC, the JSON document Terraform writes). The input names the
// step: {"step": "open"|"plan"|"read"|"commit"|"close", ...} (docs/handlers.md).
//
// The Lambda's main (functions/snapshot/lambda) only calls lambda.Start(Lambda().Handle);
// `mssqlcdc invoke snapshot` runs the same handler through aws-lambda-go's own invoke path
// (internal/runtimeapi) with the CLI's source, so the state-machine tests exercise exactly
// what Lambda runs.
package snapshot

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	coresnapshot "github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// Opener opens the snapshot steps' connections of a spec for one invocation; close
// releases them.
type Opener func(ctx context.Context, spec *config.Spec) (deps coresnapshot.Deps, close func(), err error)

// Event is the handler's input, core/snapshot's Event. A value that does not decode (a
// field of the wrong type, not an object) is a *snapshot.EventError.
type Event struct {
	coresnapshot.Event
}

// UnmarshalJSON decodes the event, and names a decoding failure (aws-lambda-go would report
// json's own error type, which no machine declares).
func (e *Event) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &e.Event); err != nil {
		return &coresnapshot.EventError{Step: e.Step, Reason: "not a snapshot event: " + err.Error()}
	}
	return nil
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
	out, err := coresnapshot.Handle(ctx, deps, ev.Event)
	if err != nil {
		h.Log.Error("snapshot step failed", "app_id", h.Spec.AppID, "step", ev.Step, "err", err.Error())
		return nil, lambdaerr.Named(err)
	}
	h.Log.Info("snapshot step done", "app_id", h.Spec.AppID, "step", ev.Step)
	return out, nil
}
