package snapshot

import (
	"context"
	"errors"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Steps of the snapshot function, the values of Event.Step.
const (
	StepOpen   = "open"
	StepPlan   = "plan"
	StepRead   = "read"
	StepCommit = "commit"
	StepClose  = "close"
)

// Event is the snapshot function's input (docs/handlers.md): the step and what the
// bootstrap machine passes it.
//
//	{"step": "open"}
//	{"step": "plan",   "snapshot": {"lsn", "commit_ts"}}
//	{"step": "read",   "snapshot": {...}, "range": {"index", "lo", "hi"}}
//	{"step": "commit", "snapshot": {...}}
//	{"step": "close",  "open": <open's output>}
type Event struct {
	Step     string      `json:"step"`
	Snapshot *lsn.Offset `json:"snapshot,omitempty"`
	Range    *Range      `json:"range,omitempty"`
	Open     *OpenResult `json:"open,omitempty"`
}

// EventError: the event does not name a step or lacks what its step needs.
type EventError struct {
	Step   string
	Reason string
}

func (e *EventError) Error() string {
	return fmt.Sprintf("snapshot event (step %q): %s", e.Step, e.Reason)
}

// Handle runs the step ev names and returns its output: OpenResult, PlanResult,
// ReadResult, CommitResult or lsn.Offset. Errors are returned by Named, so the Lambda
// runtime reports the type name Step Functions matches.
func Handle(ctx context.Context, d Deps, ev Event) (any, error) {
	out, err := handle(ctx, d, ev)
	if err != nil {
		return nil, Named(err)
	}
	return out, nil
}

func handle(ctx context.Context, d Deps, ev Event) (any, error) {
	needSnap := func() error {
		if ev.Snapshot == nil || ev.Snapshot.LSN.IsZero() {
			return &EventError{Step: ev.Step, Reason: "needs snapshot {lsn, commit_ts}"}
		}
		return nil
	}
	switch ev.Step {
	case StepOpen:
		return Open(ctx, d)
	case StepPlan:
		if err := needSnap(); err != nil {
			return nil, err
		}
		return Plan(ctx, d, *ev.Snapshot)
	case StepRead:
		if err := needSnap(); err != nil {
			return nil, err
		}
		if ev.Range == nil {
			return nil, &EventError{Step: ev.Step, Reason: "needs range {index, lo, hi}"}
		}
		return Read(ctx, d, *ev.Snapshot, *ev.Range)
	case StepCommit:
		if err := needSnap(); err != nil {
			return nil, err
		}
		return Commit(ctx, d, *ev.Snapshot)
	case StepClose:
		if ev.Open == nil {
			return nil, &EventError{Step: ev.Step, Reason: "needs open (the open step's output)"}
		}
		return Close(*ev.Open), nil
	}
	return nil, &EventError{Step: ev.Step, Reason: "step must be open, plan, read, commit or close"}
}

// Named returns the typed error inside err that Step Functions matches by name (the
// outermost value's type name is the Lambda errorType; a wrap would hide it). Retried by
// the bootstrap machine: TransientError, LockTimeoutError, ConcurrentModificationError,
// CommitAttemptsError, CommitUnknownError. Caught and failed: ConfigError, ModeLockError,
// MissingRangeError, PlanNotFoundError, KeyError, NoLSNError, StampAheadError, EventError,
// the source's CaptureInstanceNotFoundError, AmbiguousCaptureInstanceError,
// CDCNotEnabledError, PermissionError and LoginError; anything else as is.
func Named(err error) error {
	if err == nil {
		return nil
	}
	for _, f := range []func(error) (error, bool){
		as[*source.TransientError], as[*source.LockTimeoutError], as[*source.CaptureInstanceNotFoundError],
		as[*source.AmbiguousCaptureInstanceError], as[*source.CDCNotEnabledError], as[*source.PermissionError],
		as[*source.LoginError], as[*config.ConfigError], as[*ModeLockError], as[*MissingRangeError],
		as[*PlanNotFoundError], as[*KeyError], as[*NoLSNError], as[*StampAheadError], as[*EventError],
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
