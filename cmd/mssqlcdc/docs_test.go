package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// docs/handlers.md lists, as `errorType`, every name the handlers return through
// snapshot.Named and stream.Named: what Step Functions' Retry and Catch, and an operator
// reading an execution, see.
func TestHandlersDocListsEveryErrorName(t *testing.T) {
	data, err := os.ReadFile("../../docs/handlers.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	check := func(handler string, named func(error) error, errs []error) {
		for _, typed := range errs {
			if got := named(fmt.Errorf("wrapped: %w", typed)); got != typed {
				t.Errorf("%s.Named(%T) = %T: the list here is out of date", handler, typed, got)
				continue
			}
			name := reflect.TypeOf(typed).Elem().Name() // failureOf would call Error() on a zero value
			if !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("docs/handlers.md does not name %s's %s", handler, name)
			}
		}
	}
	common := []error{
		&source.TransientError{Op: "x", Err: errors.New("reset")}, &source.LockTimeoutError{},
		&source.CaptureInstanceNotFoundError{Name: "x"}, &source.AmbiguousCaptureInstanceError{Name: "x"},
		&source.CDCNotEnabledError{Database: "d"}, &source.PermissionError{}, &config.ConfigError{},
		&deltalog.ConcurrentModificationError{}, &deltalog.CommitAttemptsError{}, &deltalog.CommitUnknownError{},
	}
	check("snapshot", snapshot.Named, append([]error{
		&source.LoginError{}, &snapshot.ModeLockError{}, &snapshot.MissingRangeError{}, &snapshot.PlanNotFoundError{},
		&snapshot.KeyError{}, &snapshot.NoLSNError{}, &snapshot.StampAheadError{}, &snapshot.EventError{},
	}, common...))
	check("stream", stream.Named, append([]error{
		&stream.DataLossError{}, &stream.SchemaChangedError{}, &stream.SourceUnavailableError{},
		&stream.NoSnapshotError{}, &checkpoint.ConcurrentStreamError{},
	}, common...))
	for _, local := range []error{&snapshot.TargetNotEmptyError{}, &RequestError{}} {
		if name := reflect.TypeOf(local).Elem().Name(); !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/handlers.md does not name the local %s", name)
		}
	}
}
