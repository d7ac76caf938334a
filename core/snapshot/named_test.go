package snapshot

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Named unwraps every name the bootstrap machine's Retry and Catch match (docs/handlers.md),
// however deeply wrapped; the Lambda errorType is the type's name without the pointer.
func TestNamedUnwrapsEveryMatchedName(t *testing.T) {
	for _, typed := range []error{
		&source.TransientError{Op: "x", Err: errors.New("reset")}, &source.LockTimeoutError{},
		&source.CaptureInstanceNotFoundError{Name: "x"}, &source.AmbiguousCaptureInstanceError{Name: "x"},
		&source.CDCNotEnabledError{Database: "d"}, &source.PermissionError{}, &source.LoginError{},
		&config.ConfigError{}, &ModeLockError{}, &MissingRangeError{}, &PlanNotFoundError{}, &KeyError{},
		&NoLSNError{}, &StampAheadError{}, &EventError{},
		&deltalog.ConcurrentModificationError{}, &deltalog.CommitAttemptsError{}, &deltalog.CommitUnknownError{},
	} {
		got := Named(fmt.Errorf("step: %w", fmt.Errorf("call: %w", typed)))
		if got != typed {
			t.Errorf("%s wrapped twice: got %T", reflect.TypeOf(typed).Elem().Name(), got)
		}
	}
	plain := errors.New("boom")
	if Named(plain) != plain || Named(nil) != nil {
		t.Error("an unnamed error (or nil) must come back as is")
	}
}
