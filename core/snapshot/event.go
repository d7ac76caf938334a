package snapshot

import (
	"context"
	"fmt"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
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
// ReadResult, CommitResult or lsn.Offset. An unknown step or a missing field is an
// *EventError, found before anything is read or written (an LSN that does not parse fails
// the event's decoding). The Lambda handler (functions/snapshot) names the errors for Step
// Functions (functions/lambdaerr).
func Handle(ctx context.Context, d Deps, ev Event) (any, error) {
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
			return nil, &EventError{Step: ev.Step, Reason: `needs range {"index": i}, an index of the plan step's ranges`}
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
