// Package lambdaerr declares, once, the error names the Lambda handlers return and the
// Step Functions machines (statemachine/*.asl.json) branch on, and turns any error into one
// of them (Named).
//
// The name is the Lambda errorType: aws-lambda-go reports the Go type name of the error
// value a handler returns (pointer removed), and Step Functions matches it in a Retry's or
// a Catch's ErrorEquals. A fmt.Errorf wrap would report "wrapError", so a handler returns
// Named(err): the declared error inside err, itself. docs/handlers.md explains each name to
// operators; this package's tests check that document, the machines' ErrorEquals and their
// Retry lists against Declared.
package lambdaerr

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/silver"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Function is a set of the Lambda functions (functions/<name>) that return a name.
type Function uint8

// The functions, as bits of a Function set.
const (
	Snapshot     Function = 1 << iota // functions/snapshot
	Stream                            // functions/stream
	Maintain                          // functions/maintain (scheduled; no machine calls it)
	Apply                             // functions/apply (scheduled; no machine calls it)
	Seed                              // functions/seed
	BackfillWave                      // functions/backfill-wave
	Reconcile                         // functions/reconcile (scheduled; no machine calls it)
	Both         = Snapshot | Stream
	All          = Both | Maintain | Apply | Seed | BackfillWave | Reconcile
)

// Has reports whether f includes g.
func (f Function) Has(g Function) bool { return f&g == g }

// Name is one declared error name.
type Name struct {
	// Name is the errorType Step Functions sees: the Go type's name.
	Name string
	// Retry is true for transient failures: every Task calling a function that returns the
	// name retries it with backoff. Every other name fails the execution (Catch States.ALL)
	// and needs a change to the spec, the source or the event.
	Retry bool
	// Functions are the handlers that return it.
	Functions Function

	// typs are the Go types carrying the name: one, or one per package when two steps
	// report the same condition under the same name (the seed's and the stream's
	// DataLossError).
	typs []reflect.Type
}

// decl declares the type of e's dynamic value (a pointer to an error struct), and of
// also's, which must have the same name.
func decl(e error, retry bool, fns Function, also ...error) Name {
	t := reflect.TypeOf(e)
	n := Name{Name: t.Elem().Name(), Retry: retry, Functions: fns, typs: []reflect.Type{t}}
	for _, a := range also {
		at := reflect.TypeOf(a)
		if at.Elem().Name() != n.Name {
			panic("lambdaerr: " + at.String() + " declared under the name " + n.Name)
		}
		n.typs = append(n.typs, at)
	}
	return n
}

// declared is every name a handler returns, retried ones first. docs/handlers.md says when
// each is returned and what to do.
var declared = []Name{
	decl(&source.TransientError{}, true, Both|Seed|BackfillWave|Reconcile),
	decl(&source.LockTimeoutError{}, true, Both|BackfillWave|Reconcile),
	decl(&stream.SourceUnavailableError{}, true, Stream),
	decl(&deltalog.ConcurrentModificationError{}, true, All),
	decl(&deltalog.CommitAttemptsError{}, true, All),
	decl(&deltalog.CommitUnknownError{}, true, All),

	decl(&config.ConfigError{}, false, All),
	decl(&deltalog.UncoordinatedCommitError{}, false, All),
	decl(&config.PasswordUnsetError{}, false, Both|Seed|BackfillWave|Reconcile),
	decl(&config.PasswordSecretError{}, false, Both|Seed|BackfillWave|Reconcile),
	decl(&source.CaptureInstanceNotFoundError{}, false, Both|Seed|BackfillWave|Reconcile),
	decl(&source.AmbiguousCaptureInstanceError{}, false, Both|Seed|BackfillWave|Reconcile),
	decl(&source.CDCNotEnabledError{}, false, Both|Seed|BackfillWave|Reconcile),
	decl(&source.PermissionError{}, false, Both|Seed|BackfillWave|Reconcile),
	decl(&source.LoginError{}, false, Both|Seed|BackfillWave|Reconcile),
	decl(&source.LSNRewoundError{}, false, Both|Seed|BackfillWave|Reconcile),
	decl(&source.CommandIDMissingError{}, false, Stream),
	decl(&bronze.ColumnsError{}, false, Both|Seed|BackfillWave),
	decl(&snapshot.EventError{}, false, All, &seed.EventError{}, &EventError{}),
	decl(&snapshot.ModeLockError{}, false, Snapshot|Seed|Stream|BackfillWave),
	decl(&snapshot.PlanNotFoundError{}, false, Snapshot|Seed|BackfillWave, &seed.PlanNotFoundError{}),
	decl(&snapshot.MissingRangeError{}, false, Snapshot),
	decl(&snapshot.PlanTooLargeError{}, false, Snapshot),
	decl(&snapshot.KeyError{}, false, Snapshot|Stream|BackfillWave),
	decl(&snapshot.NoLSNError{}, false, Snapshot|Stream|BackfillWave),
	decl(&snapshot.StampAheadError{}, false, Snapshot),
	decl(&snapshot.KeysChangedError{}, false, BackfillWave),
	decl(&snapshot.StampBelowSnapshotError{}, false, BackfillWave),
	decl(&snapshot.WaveNotFoundError{}, false, BackfillWave),
	decl(&stream.DataLossError{}, false, Both|Seed, &seed.DataLossError{}),
	decl(&stream.StaleRecoveryError{}, false, Snapshot),
	decl(&stream.SchemaChangedError{}, false, Stream),
	decl(&stream.NoSnapshotError{}, false, Stream),
	decl(&checkpoint.ConcurrentStreamError{}, false, Stream),
	decl(&silver.BronzeChangedError{}, false, Apply),
	decl(&silver.PositionError{}, false, Apply),
	decl(&seed.SnapshotExistsError{}, false, Seed),
	decl(&seed.ReseedError{}, false, Seed),
	decl(&seed.CastError{}, false, Seed),
	decl(&seed.CopyTypeError{}, false, Seed),
	decl(&seed.MissingGroupError{}, false, Seed),
	decl(&UnexpectedError{}, false, All),
}

// Declared returns every declared handler error name, in the order above.
func Declared() []Name { return slices.Clone(declared) }

// ServiceNames are the error names Step Functions and the Lambda service report themselves
// (a timeout, a throttled or failed Invoke call, a crashed execution environment), which a
// machine may match besides the handlers' own.
var ServiceNames = []string{
	"States.ALL", "States.Timeout", "States.TaskFailed", "States.Permissions", "States.HeartbeatTimeout",
	"States.Runtime", "States.DataLimitExceeded",
	"Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException", "Lambda.AWSLambdaException",
	"Lambda.SdkClientException", "Lambda.TooManyRequestsException", "Lambda.Unknown",
	"Sandbox.Timedout",
	// StartExecution's (a machine restarting itself as a new execution).
	"StepFunctions.ExecutionLimitExceededException", "StepFunctions.SdkClientException",
}

// Lookup returns the declared name n, if it is one (handler names only).
func Lookup(n string) (Name, bool) {
	for _, d := range declared {
		if d.Name == n {
			return d, true
		}
	}
	return Name{}, false
}

// UnexpectedError is an error no declared type describes (a storage failure, a corrupt
// file, a bug): Err's text is the message, and the execution fails with this name. It
// exists so that every error a handler returns has a declared name.
type UnexpectedError struct {
	Err error
}

func (e *UnexpectedError) Error() string {
	if e.Err == nil {
		return "unexpected error"
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *UnexpectedError) Unwrap() error { return e.Err }

// Named returns the error a handler returns for err, always of a declared type: the
// outermost error in err's tree (Unwrap, depth first) that is of a declared type (returned
// itself, not a wrap) or converts to one (a rewound checkpoint or a checkpoint of another
// app_id is a ConfigError on "checkpoint": a new checkpoint needs a new app_id, a spec
// change; silver keys refused are a ConfigError on "silver.keys"; a bare unsupported column
// type or column-name collision is a ColumnsError); else
// an *UnexpectedError around err. Named(nil) is nil.
func Named(err error) error {
	if err == nil {
		return nil
	}
	if n := find(err, nameOf); n != nil {
		return n
	}
	return &UnexpectedError{Err: err}
}

// nameOf returns e itself when its type is declared, or what it converts to, or nil.
func nameOf(e error) error {
	t := reflect.TypeOf(e)
	for _, d := range declared {
		if slices.Contains(d.typs, t) {
			return e
		}
	}
	return convert(e)
}

// convert maps the errors that reach Step Functions under another declared name.
func convert(e error) error {
	switch x := e.(type) {
	case *stream.CheckpointRewoundError:
		return &config.ConfigError{Problems: []config.Problem{{Field: "checkpoint", Reason: x.Error()}}}
	case *checkpoint.AppIDMismatchError:
		return &config.ConfigError{Problems: []config.Problem{{Field: "checkpoint", Reason: x.Error()}}}
	case *silver.KeyError:
		// Named KeyError like snapshot's, and fixed the same way as any spec problem.
		return &config.ConfigError{Problems: []config.Problem{{Field: "silver.keys", Reason: x.Error()}}}
	case *bronze.UnsupportedTypeError, *bronze.ColumnCollisionError:
		return &bronze.ColumnsError{Problems: []error{e}}
	}
	return nil
}

// find walks err's tree depth first, outermost first, and returns the first non-nil f(e).
func find(err error, f func(error) error) error {
	if err == nil {
		return nil
	}
	if n := f(err); n != nil {
		return n
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return find(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if n := find(e, f); n != nil {
				return n
			}
		}
	}
	return nil
}

// EventError: a handler's event was refused before anything was read or written: it does
// not decode (not a JSON object, a field of the wrong type, an unknown field where the
// handler refuses them) or a value in it is out of range. The handlers whose events have
// no step return it (stream, maintain, apply, reconcile, backfill-wave); the snapshot's
// and the seed's carry their step (snapshot.EventError, seed.EventError) under the same
// name. It is not a ConfigError: the spec is fine, the event is not (docs/handlers.md).
type EventError struct {
	// Function is the handler whose event it is ("stream", "backfill-wave").
	Function string
	// Field is the event's field at fault ("max_seconds"), "" when the event as a whole
	// is (not an object, not JSON) or the reason names the field itself
	// (EventDecodeReason's "max_seconds: got a string, want a number").
	Field string
	// Reason says what is wrong, in the event's terms.
	Reason string
}

func (e *EventError) Error() string {
	if e.Field == "" {
		return e.Function + " event: " + e.Reason
	}
	return e.Function + " event: " + e.Field + ": " + e.Reason
}

// DecodeEventError is the *EventError of function for an event json.Unmarshal refused
// with err: its reason is EventDecodeReason(err).
func DecodeEventError(function string, err error) *EventError {
	return &EventError{Function: function, Reason: EventDecodeReason(err)}
}

// EventDecodeReason says why json.Unmarshal refused a handler's event, in the event's
// terms: "max_seconds: got a string, want a number", "got an array, want a JSON object",
// "not JSON: ..."; json's own message names Go types (the handler's local struct and
// float64), which mean nothing to whoever wrote the event. Handlers put it in their
// EventError (DecodeEventError; docs/handlers.md).
func EventDecodeReason(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		got := "a " + te.Value
		switch te.Value {
		case "array", "object":
			got = "an " + te.Value
		case "bool":
			got = "true or false"
		}
		want := config.JSONTypeWant(te.Type)
		if te.Field == "" {
			return "got " + got + ", want " + want
		}
		return te.Field + ": got " + got + ", want " + want
	case errors.As(err, &se):
		return "not JSON: " + strings.TrimPrefix(se.Error(), "json: ")
	case err == nil:
		return ""
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// OverrideError is err, the *config.ConfigError of a spec the event's overrides were
// merged into (Spec.Validate), as the *EventError of function on those overrides: the
// spec validated before the merge, so a problem on one of fields (the event's fields that
// were set, under the spec's names) is the event's. Its Field is the one field at fault,
// its Reason the spec's rule for it; with several, every problem joined as
// "field: reason; field: reason" under Field "". hint, when set, follows the reasons
// after "; " (what to do). Any other err is returned as Named(err): a problem the event
// did not cause stays the spec's.
func OverrideError(function string, err error, hint string, fields ...string) error {
	var ce *config.ConfigError
	if !errors.As(err, &ce) {
		return Named(err)
	}
	var ps []config.Problem
	for _, p := range ce.Problems {
		if slices.Contains(fields, p.Field) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return Named(err)
	}
	ev := &EventError{Function: function}
	if len(ps) == 1 {
		ev.Field, ev.Reason = ps[0].Field, ps[0].Reason
	} else {
		reasons := make([]string, len(ps))
		for i, p := range ps {
			reasons[i] = p.Field + ": " + p.Reason
		}
		ev.Reason = strings.Join(reasons, "; ")
	}
	if hint != "" {
		ev.Reason += "; " + hint
	}
	return ev
}
