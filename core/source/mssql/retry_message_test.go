package mssql

import (
	"errors"
	"testing"
	"time"
)

// A retry's warning says what failed, what it waits for, how long this wait is and how
// long all of them can be, in readable units.
func TestRetryMessageSaysWhatAndHowLong(t *testing.T) {
	var r Retry
	got := retryMessage(errors.New("list capture instances: transient: connection refused"), 1, r.retries(), 1388270879*time.Nanosecond, r.maxWait())
	want := "sql server: list capture instances: transient: connection refused; waiting 1.4s for SQL Server before retry 1 of 3 (at most 14s of waiting in all)"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
