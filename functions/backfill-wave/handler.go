// Package backfillwave is the backfill-wave Lambda's handler: one backfill call of the
// table's chunked snapshot (core/snapshot.Backfill; docs/snapshots.md "Chunked
// snapshots"), which the backfill state machine (statemachine/backfill.asl.json) makes
// until it returns done. The first call plans the chunks; each call then reads waves of
// numPartitions chunks beside the running stream, one connection each, in this one
// invocation (docs/decisions/0012-backfill-wave-fan-out.md says why not a Map), and
// returns the BackfillStatus. The input overrides the spec's backfill parameters
// (docs/handlers.md backfill-wave).
//
// The Lambda's main (functions/backfill-wave/lambda) sets the garbage collector from the
// function's memory (internal/lambdagc) and calls lambda.Start(Lambda().Handle); `mssqlcdc
// invoke backfill-wave` runs the same handler through aws-lambda-go's own invoke path.
package backfillwave

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	coresnapshot "github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/functions/lambdaerr"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// Opener opens the backfill's connections of a spec for one invocation (the snapshot
// steps' Deps, with the plans table); close releases them.
type Opener func(ctx context.Context, spec *config.Spec) (deps coresnapshot.Deps, close func(), err error)

// Event is the handler's input: the backfill parameters under the original library's
// names, each optional (absent: the spec's, with its defaults). {} is a call with the
// spec's parameters. A field of the wrong type, an unknown field or a value out of range
// (by the spec's rules for the same field, config.Spec.Validate) is refused before
// anything is read: a *lambdaerr.EventError saying "backfill-wave event: ".
type Event struct {
	// ChunkRows sizes the chunks when the first call plans (rows, >= 1).
	ChunkRows *int64 `json:"chunk_rows,omitempty"`
	// MaxWaves bounds this call's waves; 0: no bound.
	MaxWaves *int `json:"max_waves,omitempty"`
	// MaxSeconds bounds this call's time (seconds); 0: the invocation's deadline (less a
	// 30 s margin) only.
	MaxSeconds *float64 `json:"max_seconds,omitempty"`
	// TargetWaveSeconds is how long a wave aims to read (seconds); 0: one round of
	// numPartitions chunks per wave.
	TargetWaveSeconds *float64 `json:"target_wave_seconds,omitempty"`
	// MinHeadroomHours pauses (waiting_headroom, waiting_metrics) while the stream's
	// retention headroom is below it (hours); 0 never pauses.
	MinHeadroomHours *float64 `json:"min_headroom_hours,omitempty"`
	// Isolation of the chunk reads and the plan: "readCommitted" or "snapshot".
	Isolation *string `json:"isolation,omitempty"`
}

// UnmarshalJSON decodes the event strictly: an unknown field (a misspelt parameter would
// silently take the spec's value) or a field of the wrong type is a *lambdaerr.EventError.
func (e *Event) UnmarshalJSON(data []byte) error {
	type plain Event
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return lambdaerr.DecodeEventError("backfill-wave", err)
	}
	*e = Event(p)
	return nil
}

// Over is a copy of spec with the event's parameters in place of the spec's, and the
// names of the fields the event set (the spec's names too: docs/spec.md "Job parameters").
func (e Event) Over(spec *config.Spec) (*config.Spec, []string) {
	s := *spec
	var set []string
	if e.ChunkRows != nil {
		s.ChunkRows, set = e.ChunkRows, append(set, "chunk_rows")
	}
	if e.MaxWaves != nil {
		s.MaxWaves, set = e.MaxWaves, append(set, "max_waves")
	}
	if e.MaxSeconds != nil {
		s.MaxSeconds, set = *e.MaxSeconds, append(set, "max_seconds")
	}
	if e.TargetWaveSeconds != nil {
		s.TargetWaveSeconds, set = e.TargetWaveSeconds, append(set, "target_wave_seconds")
	}
	if e.MinHeadroomHours != nil {
		s.MinHeadroomHours, set = e.MinHeadroomHours, append(set, "min_headroom_hours")
	}
	if e.Isolation != nil {
		s.Isolation, set = *e.Isolation, append(set, "isolation")
	}
	return &s, set
}

// overrideHint is what to do about an event value out of range (lambdaerr.OverrideError).
const overrideHint = "correct it in the event, or leave it out for the spec's value (the backfill machine sends its input's config.params)"

// Handler makes one backfill call for one table spec.
type Handler struct {
	Spec *config.Spec
	// SpecErr is why the spec in the environment did not parse: every invocation fails
	// with it, named.
	SpecErr error
	Open    Opener
	Log     *slog.Logger
}

// New is the handler for spec whose connections come from open; log receives the
// structured log lines (one per wave).
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

// Handle makes the backfill call and returns its BackfillStatus, or the error under its
// declared name (functions/lambdaerr). A spec whose snapshot mode is not "chunked" is a
// *config.ConfigError: the backfill machine runs only beside a chunked snapshot's stream;
// an event value out of range is a *lambdaerr.EventError (Event).
func (h *Handler) Handle(ctx context.Context, ev Event) (coresnapshot.BackfillStatus, error) {
	if h.SpecErr != nil {
		h.Log.Error("invalid table spec", "err", h.SpecErr.Error())
		return coresnapshot.BackfillStatus{}, lambdaerr.Named(h.SpecErr)
	}
	if h.Spec.Snapshot != config.SnapshotChunked {
		err := &config.ConfigError{Problems: []config.Problem{{Field: "snapshot", Reason: "the backfill reads a chunked snapshot: set snapshot \"chunked\" " +
			"(the stream's first run with bootstrap true opens it), or do not deploy the backfill machine for this table"}}}
		h.Log.Error("backfill on a spec without snapshot chunked", "app_id", h.Spec.AppID)
		return coresnapshot.BackfillStatus{}, err
	}
	// The event's values by the spec's rules (ranges, 366-day bounds), before anything is
	// opened: the spec validated without them, so a problem is the event's.
	spec, set := ev.Over(h.Spec)
	if err := spec.Validate(); err != nil {
		h.Log.Error("backfill event refused", "app_id", h.Spec.AppID, "err", err.Error())
		return coresnapshot.BackfillStatus{}, lambdaerr.OverrideError("backfill-wave", err, overrideHint, set...)
	}
	deps, closeDeps, err := h.Open(ctx, h.Spec)
	if err != nil {
		h.Log.Error("backfill open failed", "app_id", h.Spec.AppID, "err", err.Error())
		return coresnapshot.BackfillStatus{}, lambdaerr.Named(err)
	}
	defer closeDeps()
	deps.Options.OnWave = func(r coresnapshot.WaveReport) {
		h.Log.Info("wave committed", "app_id", h.Spec.AppID, "wave", r.Wave, "first_chunk", r.FirstChunk, "last_chunk", r.LastChunk,
			"chunks_done", r.ChunksDone, "chunks_total", r.ChunksTotal, "rows", r.Rows, "mb", r.MB, "seconds", r.Duration.Seconds(),
			"stamp", r.Stamp.String(), "replayed", r.Replayed)
	}
	st, err := coresnapshot.Backfill(ctx, deps, coresnapshot.ParamsOf(spec))
	if err != nil {
		h.Log.Error("backfill failed", "app_id", h.Spec.AppID, "err", err.Error())
		return coresnapshot.BackfillStatus{}, lambdaerr.Named(err)
	}
	h.Log.Info("backfill call done", "app_id", h.Spec.AppID, "state", st.State, "chunks_done", st.ChunksDone, "chunks_total", st.ChunksTotal,
		"waves", st.Waves, "rows", st.Rows)
	return st, nil
}
