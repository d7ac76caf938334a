// Package runtimeapitest runs a function's handler in tests the way Lambda runs it: through
// aws-lambda-go's own invoke loop on a local Runtime API (internal/runtimeapi).
package runtimeapitest

import (
	"context"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi"
)

// Func is one handler registered as a function on a Runtime API of its own.
type Func struct {
	// Server is the Runtime API; a test may set its Timeout (the invocations' deadline).
	Server *runtimeapi.Server
	tb     testing.TB
	name   string
}

// Start registers handler (any signature lambda.Start takes) as function name on a new
// local Runtime API. A failure to start fails tb.
func Start(tb testing.TB, name string, handler any) *Func {
	tb.Helper()
	s, err := runtimeapi.New()
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Register(name, handler); err != nil {
		tb.Fatal(err)
	}
	return &Func{Server: s, tb: tb, name: name}
}

// Invoke runs the function on payload (a JSON document) and returns what its loop posted:
// the handler's output, or its error in Result.Error. A failure of the call itself (the
// payload is not JSON, the deadline passed with no result) fails the test.
func (f *Func) Invoke(payload string) runtimeapi.Result {
	f.tb.Helper()
	r, err := f.Server.Invoke(context.Background(), f.name, []byte(payload))
	if err != nil {
		f.tb.Fatal(err)
	}
	return r
}
