package mssql

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
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

// The warning is one line that says the error once: it was in the message and again in
// err=, twice ~400 characters of the driver's words.
func TestRetryWarningSaysTheErrorOnce(t *testing.T) {
	var buf bytes.Buffer
	d := &DB{log: slog.New(slog.NewTextHandler(&buf, nil))}
	const cause = "list capture instances: transient: connection refused"
	d.retry().OnRetry(1, time.Second, errors.New(cause))
	if out := buf.String(); strings.Count(out, cause) != 1 || strings.Count(out, "\n") != 1 {
		t.Errorf("warning %q: want one line with the error once", out)
	}
}
