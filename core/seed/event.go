package seed

import (
	"context"
	"errors"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Steps of the seed function, the values of Event.Step.
const (
	StepPlan    = "plan"
	StepConvert = "convert"
	StepCommit  = "commit"
	StepClose   = "close"
)

// Event is the seed function's input (docs/handlers.md): the step and what the seed
// machine passes it.
//
//	{"step": "plan",    "request": {"copy", "as_of", "allow_missing_columns", "reseed", ...}}
//	{"step": "convert", "seed": {"lsn", "commit_ts"}, "plan": id, "group": {"index"}}
//	{"step": "commit",  "seed": {...}, "plan": id}   (plan "" for a found seed)
//	{"step": "close",   "seed": {...}}
type Event struct {
	Step    string      `json:"step"`
	Request *Request    `json:"request,omitempty"`
	Seed    *lsn.Offset `json:"seed,omitempty"`
	Plan    string      `json:"plan,omitempty"`
	Group   *Group      `json:"group,omitempty"`
}

// EventError: the event does not name a step or lacks what its step needs.
type EventError struct {
	Step   string
	Reason string
}

func (e *EventError) Error() string {
	return fmt.Sprintf("seed event (step %q): %s", e.Step, e.Reason)
}

// Handle runs the step ev names and returns its output: PlanResult, ConvertResult,
// CommitResult or lsn.Offset. Errors are returned by Named, so the Lambda runtime reports
// the type name Step Functions matches.
func Handle(ctx context.Context, d Deps, ev Event) (any, error) {
	out, err := handle(ctx, d, ev)
	if err != nil {
		return nil, Named(err)
	}
	return out, nil
}

func handle(ctx context.Context, d Deps, ev Event) (any, error) {
	needSeed := func() error {
		if ev.Seed == nil || ev.Seed.LSN.IsZero() {
			return &EventError{Step: ev.Step, Reason: "needs seed {lsn, commit_ts} (the plan step's output)"}
		}
		return nil
	}
	switch ev.Step {
	case StepPlan:
		if ev.Request == nil {
			return nil, &EventError{Step: ev.Step, Reason: "needs request {copy, as_of, ...}"}
		}
		return Plan(ctx, d, *ev.Request)
	case StepConvert:
		if err := needSeed(); err != nil {
			return nil, err
		}
		if ev.Plan == "" || ev.Group == nil {
			return nil, &EventError{Step: ev.Step, Reason: "needs plan (an id) and group {index}"}
		}
		return Convert(ctx, d, *ev.Seed, ev.Plan, *ev.Group)
	case StepCommit:
		if err := needSeed(); err != nil {
			return nil, err
		}
		return Commit(ctx, d, *ev.Seed, ev.Plan)
	case StepClose:
		if err := needSeed(); err != nil {
			return nil, err
		}
		return Close(*ev.Seed), nil
	}
	return nil, &EventError{Step: ev.Step, Reason: "step must be plan, convert, commit or close"}
}

// Named returns the typed error inside err that Step Functions matches by name (the
// outermost value's type name is the Lambda errorType; a wrap would hide it). Retried by
// the seed machine: TransientError, ConcurrentModificationError, CommitAttemptsError,
// CommitUnknownError. Caught and failed: ConfigError, DataLossError, SnapshotExistsError,
// ReseedError, CastError, CopyTypeError, ModeLockError, PlanNotFoundError,
// MissingGroupError, EventError, the source's CaptureInstanceNotFoundError,
// AmbiguousCaptureInstanceError, CDCNotEnabledError, PermissionError and LoginError;
// anything else as is.
func Named(err error) error {
	if err == nil {
		return nil
	}
	for _, f := range []func(error) (error, bool){
		as[*source.TransientError], as[*source.CaptureInstanceNotFoundError], as[*source.AmbiguousCaptureInstanceError],
		as[*source.CDCNotEnabledError], as[*source.PermissionError], as[*source.LoginError], as[*config.ConfigError],
		as[*DataLossError], as[*SnapshotExistsError], as[*ReseedError], as[*CastError], as[*CopyTypeError],
		as[*snapshot.ModeLockError], as[*PlanNotFoundError], as[*MissingGroupError], as[*EventError],
		as[*deltalog.ConcurrentModificationError], as[*deltalog.CommitAttemptsError], as[*deltalog.CommitUnknownError],
	} {
		if n, ok := f(err); ok {
			return n
		}
	}
	return err
}

// as is errors.As returning the match as an error value.
func as[T error](err error) (error, bool) {
	var t T
	if errors.As(err, &t) {
		return t, true
	}
	return nil, false
}
