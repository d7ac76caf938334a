package stream

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// typeName is the errorType aws-lambda-go reports: the type's name, pointer dereferenced.
func typeName(err error) string {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// Named unwraps every error the state machines match by name, however deeply wrapped.
func TestNamedUnwrapsEveryMatchedName(t *testing.T) {
	cases := map[string]error{
		"DataLossError":                 &DataLossError{CaptureInstance: "dbo_t"},
		"SchemaChangedError":            &SchemaChangedError{Column: "c"},
		"SourceUnavailableError":        &SourceUnavailableError{Op: "max_lsn", Err: &source.TransientError{Op: "x", Err: errors.New("reset")}},
		"ConfigError":                   &config.ConfigError{Problems: []config.Problem{{Field: "app_id", Reason: "required"}}},
		"ConcurrentStreamError":         &checkpoint.ConcurrentStreamError{Key: "offsets/1.json"},
		"NoSnapshotError":               &NoSnapshotError{AppID: "a"},
		"CaptureInstanceNotFoundError":  &source.CaptureInstanceNotFoundError{Name: "dbo_x"},
		"CDCNotEnabledError":            &source.CDCNotEnabledError{Database: "db"},
		"PermissionError":               &source.PermissionError{},
		"LoginError":                    &source.LoginError{Message: "Login failed for user 'cdc_reader'."},
		"TransientError":                &source.TransientError{Op: "x", Err: errors.New("reset")},
		"LockTimeoutError":              &source.LockTimeoutError{},
		"ConcurrentModificationError":   &deltalog.ConcurrentModificationError{},
		"CommitAttemptsError":           &deltalog.CommitAttemptsError{},
		"CommitUnknownError":            &deltalog.CommitUnknownError{},
		"AmbiguousCaptureInstanceError": &source.AmbiguousCaptureInstanceError{Name: "x"},
	}
	for want, typed := range cases {
		got := Named(fmt.Errorf("batch 3: %w", fmt.Errorf("read: %w", typed)))
		if name := typeName(got); name != want {
			t.Errorf("%T wrapped twice: errorType %q, want %q", typed, name, want)
		}
	}
	for _, e := range []error{&CheckpointRewoundError{AppID: "a", Next: 1, FactsBatch: 4}, &checkpoint.AppIDMismatchError{}} {
		got := Named(fmt.Errorf("open: %w", e))
		var ce *config.ConfigError
		if !errors.As(got, &ce) || typeName(got) != "ConfigError" || !ce.Has("checkpoint") {
			t.Errorf("%T: %T %v, want a ConfigError on checkpoint", e, got, got)
		}
	}
	plain := errors.New("boom")
	if Named(plain) != plain || Named(nil) != nil {
		t.Error("an unnamed error (or nil) must come back as is")
	}
}

// A refused login is not transient (reference: SQLSTATE 28000 is never retried): the stream
// reports it as LoginError, as the snapshot handler does, not as a retried
// SourceUnavailableError.
func TestLoginRefusalIsNotRetried(t *testing.T) {
	r := &run{}
	err := Named(r.sourceErr("max_lsn", &source.LoginError{Message: "Login failed"}))
	if typeName(err) != "LoginError" {
		t.Fatalf("login refusal named %q (%v), want LoginError", typeName(err), err)
	}
	if typeName(Named(r.sourceErr("max_lsn", &source.TransientError{Op: "x", Err: errors.New("reset")}))) != "SourceUnavailableError" {
		t.Fatal("a transient failure must still be SourceUnavailableError")
	}
}

// The zero value of SourceUnavailableError must not panic when printed.
func TestSourceUnavailableZeroValue(t *testing.T) {
	if msg := (&SourceUnavailableError{}).Error(); msg == "" {
		t.Fatal("empty message")
	}
}
