package snapshot

import (
	"context"
	"errors"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/config"
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
	Snapshot *Offset     `json:"snapshot,omitempty"`
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
// ReadResult, CommitResult or Offset. Errors are returned by Named, so the Lambda runtime
// reports the type name Step Functions matches.
func (j *Job) Handle(ctx context.Context, ev Event) (any, error) {
	out, err := j.handle(ctx, ev)
	if err != nil {
		return nil, Named(err)
	}
	return out, nil
}

func (j *Job) handle(ctx context.Context, ev Event) (any, error) {
	needSnap := func() error {
		if ev.Snapshot == nil || ev.Snapshot.LSN == "" {
			return &EventError{Step: ev.Step, Reason: "needs snapshot {lsn, commit_ts}"}
		}
		return nil
	}
	switch ev.Step {
	case StepOpen:
		return j.Open(ctx)
	case StepPlan:
		if err := needSnap(); err != nil {
			return nil, err
		}
		return j.Plan(ctx, *ev.Snapshot)
	case StepRead:
		if err := needSnap(); err != nil {
			return nil, err
		}
		if ev.Range == nil {
			return nil, &EventError{Step: ev.Step, Reason: "needs range {index, lo, hi}"}
		}
		return j.Read(ctx, *ev.Snapshot, *ev.Range)
	case StepCommit:
		if err := needSnap(); err != nil {
			return nil, err
		}
		return j.Commit(ctx, *ev.Snapshot)
	case StepClose:
		if ev.Open == nil {
			return nil, &EventError{Step: ev.Step, Reason: "needs open (the open step's output)"}
		}
		return j.Close(ctx, *ev.Open)
	}
	return nil, &EventError{Step: ev.Step, Reason: "step must be open, plan, read, commit or close"}
}

// Named returns the typed error inside err that Step Functions matches by name (the
// outermost value's type name is the Lambda errorType; a wrap would hide it). Retried by
// the bootstrap machine: TransientError, LockTimeoutError, ConcurrentModificationError,
// CommitAttemptsError, CommitUnknownError. Caught and failed: ConfigError, ModeLockError,
// MissingRangeError, PlanNotFoundError, KeyError, NoLSNError, StampAheadError, EventError, the source's
// CaptureInstanceNotFoundError, AmbiguousCaptureInstanceError, CDCNotEnabledError,
// PermissionError, LoginError, UnsupportedTypeError, and anything else as is.
func Named(err error) error {
	var (
		tr  *source.TransientError
		lt  *source.LockTimeoutError
		cnf *source.CaptureInstanceNotFoundError
		amb *source.AmbiguousCaptureInstanceError
		cdc *source.CDCNotEnabledError
		pe  *source.PermissionError
		le  *source.LoginError
		ce  *config.ConfigError
		ml  *ModeLockError
		mr  *MissingRangeError
		pn  *PlanNotFoundError
		ke  *KeyError
		nl  *NoLSNError
		sa  *StampAheadError
		ee  *EventError
		cm  *deltalog.ConcurrentModificationError
		ca  *deltalog.CommitAttemptsError
		cu  *deltalog.CommitUnknownError
	)
	for _, target := range []any{&tr, &lt, &cnf, &amb, &cdc, &pe, &le, &ce, &ml, &mr, &pn, &ke, &nl, &sa, &ee, &cm, &ca, &cu} {
		if errors.As(err, target) {
			return derefError(target)
		}
	}
	return err
}

func derefError(target any) error {
	switch p := target.(type) {
	case **source.TransientError:
		return *p
	case **source.LockTimeoutError:
		return *p
	case **source.CaptureInstanceNotFoundError:
		return *p
	case **source.AmbiguousCaptureInstanceError:
		return *p
	case **source.CDCNotEnabledError:
		return *p
	case **source.PermissionError:
		return *p
	case **source.LoginError:
		return *p
	case **config.ConfigError:
		return *p
	case **ModeLockError:
		return *p
	case **MissingRangeError:
		return *p
	case **PlanNotFoundError:
		return *p
	case **KeyError:
		return *p
	case **NoLSNError:
		return *p
	case **StampAheadError:
		return *p
	case **EventError:
		return *p
	case **deltalog.ConcurrentModificationError:
		return *p
	case **deltalog.CommitAttemptsError:
		return *p
	case **deltalog.CommitUnknownError:
		return *p
	}
	return nil
}
