// Package seed is the seed Lambda's handler: the steps of seeding bronze from an existing
// copy of the table (plan, convert, commit, close) that the seed state machine
// (statemachine/seed.asl.json) calls, for the table spec in its environment (MSSQLCDC_SPEC).
// The input names the step: {"step": "plan"|"convert"|"commit"|"close", ...}
// (docs/handlers.md § seed, docs/seed.md).
//
// The Lambda's main (functions/seed/lambda) sets the garbage collector from the function's
// memory (internal/lambdagc) and calls lambda.Start(Lambda().Handle); `mssqlcdc invoke
// seed` runs the same handler through aws-lambda-go's own invoke path.
package seed

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"reflect"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	coreseed "github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// Opener opens the seed steps' connections of a spec for one invocation of step (the
// convert step needs no SQL Server connection: its Deps.Source may be nil); close releases
// them.
type Opener func(ctx context.Context, spec *config.Spec, step string) (deps coreseed.Deps, close func(), err error)

// Event is the handler's input, core/seed's Event. A value that does not decode (a field
// of the wrong type, not an object) is a *seed.EventError.
type Event struct {
	coreseed.Event
}

// UnmarshalJSON decodes the event, and names a decoding failure (aws-lambda-go would
// report json's own error type, which no machine declares).
func (e *Event) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &e.Event); err != nil {
		return &coreseed.EventError{Step: e.Step, Reason: "not a seed event: " + lambdaerr.EventDecodeReason(err)}
	}
	return nil
}

// Handler runs one step of a seed for one table spec.
type Handler struct {
	Spec *config.Spec
	// SpecErr is why the spec in the environment did not parse: every invocation fails
	// with it, named (a ConfigError).
	SpecErr error
	Open    Opener
	Log     *slog.Logger
}

// New is the handler for spec whose connections come from open; log receives the
// structured log lines.
func New(spec *config.Spec, open Opener, log *slog.Logger) *Handler {
	return &Handler{Spec: spec, Open: open, Log: log}
}

// Lambda is the handler as the Lambda runs it: the spec from MSSQLCDC_SPEC, SQL Server
// (not for convert) and the tables it names (internal/connect), JSON logs on stderr.
func Lambda() *Handler {
	spec, err := connect.SpecFromEnv(os.Getenv)
	open := func(ctx context.Context, s *config.Spec, step string) (coreseed.Deps, func(), error) {
		return connect.Seed(ctx, s, os.Getenv, step != coreseed.StepConvert)
	}
	h := New(spec, open, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
	h.SpecErr = err
	return h
}

// Handle opens the connections, runs the step the event names (core/seed.Handle) and
// returns its output, or the error under its declared name (functions/lambdaerr), the
// errorType Step Functions matches. The log lines name the step and the seed's LSN, never
// a value of the copy.
func (h *Handler) Handle(ctx context.Context, ev Event) (any, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "step", ev.Step, "err", h.SpecErr.Error())
		return nil, lambdaerr.Named(h.SpecErr)
	}
	deps, closeDeps, err := h.Open(ctx, h.Spec, ev.Step)
	if err != nil {
		h.Log.Error("seed open failed", "app_id", h.Spec.AppID, "step", ev.Step, "err", err.Error())
		return nil, lambdaerr.Named(err)
	}
	defer closeDeps()
	out, err := coreseed.Handle(ctx, deps, ev.Event)
	if err != nil {
		named := lambdaerr.Named(err)
		// A CastError's message holds the refused value (docs/seed.md § Errors): the log
		// line names its type only, the execution's output carries the message.
		msg := err.Error()
		if _, isCast := named.(*coreseed.CastError); isCast {
			msg = "a value of the copy cannot be cast (the execution's error says which)"
		}
		h.Log.Error("seed step failed", "app_id", h.Spec.AppID, "step", ev.Step, "error_type", reflect.TypeOf(named).Elem().Name(), "err", msg)
		return nil, named
	}
	h.Log.Info("seed step done", "app_id", h.Spec.AppID, "step", ev.Step)
	return out, nil
}
