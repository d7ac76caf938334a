package main

import (
	"context"
	"log/slog"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
)

// Opener opens the snapshot steps' connections of a spec for one invocation; close
// releases them.
type Opener func(ctx context.Context, spec *config.Spec) (deps snapshot.Deps, close func(), err error)

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

// Handle decodes nothing itself (aws-lambda-go does): it opens the connections, runs the
// step the event names (snapshot.Handle) and returns its output or the named error
// (snapshot.Named) Step Functions matches.
func (h *Handler) Handle(ctx context.Context, ev snapshot.Event) (any, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "step", ev.Step, "err", h.SpecErr.Error())
		return nil, snapshot.Named(h.SpecErr)
	}
	deps, closeDeps, err := h.Open(ctx, h.Spec)
	if err != nil {
		return nil, snapshot.Named(err)
	}
	defer closeDeps()
	out, err := snapshot.Handle(ctx, deps, ev)
	if err != nil {
		h.Log.Error("snapshot step failed", "app_id", h.Spec.AppID, "step", ev.Step, "err", err.Error())
		return nil, err
	}
	h.Log.Info("snapshot step done", "app_id", h.Spec.AppID, "step", ev.Step)
	return out, nil
}
