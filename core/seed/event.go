package seed

import (
	"context"
	"fmt"
	"regexp"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
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

// planID is the shape of a plan's id (planState.id).
var planID = regexp.MustCompile(`^[0-9a-f]{16}$`)

// EventError: the event does not name a step or lacks what its step needs.
type EventError struct {
	Step   string
	Reason string
}

func (e *EventError) Error() string {
	return fmt.Sprintf("seed event (step %q): %s", e.Step, e.Reason)
}

// Handle runs the step ev names and returns its output: PlanResult, ConvertResult,
// CommitResult or lsn.Offset. An unknown step, a missing field or a plan id that is not one
// (16 hex digits, as Plan makes them: it names a staging key) is an *EventError, found
// before anything is read or written. Other errors keep their types: functions/seed
// returns them under their declared names (functions/lambdaerr; docs/handlers.md § seed).
func Handle(ctx context.Context, d Deps, ev Event) (any, error) {
	needSeed := func() error {
		if ev.Seed == nil || ev.Seed.LSN.IsZero() {
			return &EventError{Step: ev.Step, Reason: "needs seed {lsn, commit_ts} (the plan step's output)"}
		}
		if ev.Plan != "" && !planID.MatchString(ev.Plan) {
			return &EventError{Step: ev.Step, Reason: "plan is not a plan id (16 hex digits, the plan step's output)"}
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
