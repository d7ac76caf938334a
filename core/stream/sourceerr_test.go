package stream

import (
	"errors"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// A refused login is not transient (SQLSTATE 28000 is never retried): the stream reports
// it as the source's LoginError, as the snapshot does, not inside a SourceUnavailableError
// (which Step Functions retries; functions/lambdaerr names the outermost declared error).
func TestLoginRefusalIsNotRetried(t *testing.T) {
	r := &run{}
	err := r.sourceErr("max_lsn", &source.LoginError{Message: "Login failed"})
	var su *SourceUnavailableError
	var le *source.LoginError
	if errors.As(err, &su) || !errors.As(err, &le) {
		t.Fatalf("login refusal: %T %v, want a LoginError outside any SourceUnavailableError", err, err)
	}
	if !errors.As(r.sourceErr("max_lsn", &source.TransientError{Op: "x", Err: errors.New("reset")}), &su) {
		t.Fatal("a transient failure must still be SourceUnavailableError")
	}
}

// The zero value of SourceUnavailableError must not panic when printed.
func TestSourceUnavailableZeroValue(t *testing.T) {
	if msg := (&SourceUnavailableError{}).Error(); msg == "" {
		t.Fatal("empty message")
	}
}
