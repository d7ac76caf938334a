package mssql

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Retry defaults (the original library's, docs/reference/sqlserver-cdc.md §10): 3 retries
// after the first attempt, sleeping Base × 2^attempt × U(0.5, 1), that is 1–2 s, 2–4 s, 4–8 s,
// about 14 s at most.
const (
	DefaultRetries   = 3
	DefaultRetryBase = 2 * time.Second
)

// Retry is the transient-error policy. The zero value means the defaults; tests shrink
// Base. Only *source.TransientError is retried; the last error is returned as is.
type Retry struct {
	// Retries after the first attempt; 0 means DefaultRetries, negative means none.
	Retries int
	// Base is the first backoff before jitter; 0 means DefaultRetryBase.
	Base time.Duration
	// Jitter returns a value in [0.5, 1); nil uses math/rand/v2.
	Jitter func() float64
	// OnRetry, when set, is told of each retry before its wait (DB logs a warning).
	OnRetry func(attempt int, wait time.Duration, err error)
	// relogin, set by DB when a PasswordFunc is given, is asked once per call after an
	// error: true means the password was read again and the call is tried once more.
	relogin func(ctx context.Context, err error) bool
}

func (r Retry) retries() int {
	switch {
	case r.Retries == 0:
		return DefaultRetries
	case r.Retries < 0:
		return 0
	}
	return r.Retries
}

// backoff is the sleep before retry number attempt (0-based).
func (r Retry) backoff(attempt int) time.Duration {
	base := r.Base
	if base <= 0 {
		base = DefaultRetryBase
	}
	j := 0.5 + rand.Float64()/2
	if r.Jitter != nil {
		j = r.Jitter()
	}
	return time.Duration(float64(base) * float64(int64(1)<<attempt) * j)
}

// maxWait is the longest all the retries' waits add up to (jitter at its top).
func (r Retry) maxWait() time.Duration {
	base := r.Base
	if base <= 0 {
		base = DefaultRetryBase
	}
	var total time.Duration
	for i := range r.retries() {
		total += base << i
	}
	return total
}

// retryMessage is the warning before a retry: what failed, what it waits for and how long
// ("sql server: list capture instances: transient: ... connection refused; waiting 1.4s
// for SQL Server before retry 1 of 3 (at most 14s of waiting in all)").
func retryMessage(err error, attempt, retries int, wait, most time.Duration) string {
	return fmt.Sprintf("sql server: %v; waiting %s for SQL Server before retry %d of %d (at most %s of waiting in all)",
		err, wait.Round(100*time.Millisecond), attempt, retries, most.Round(time.Second))
}

// do runs fn until it succeeds, fails with an error that is not transient, or the retries
// are spent. A cancelled ctx stops the wait.
func (r Retry) do(ctx context.Context, fn func() error) error {
	n := r.retries()
	relogged := false
	for attempt := 0; ; attempt++ {
		err := fn()
		if err != nil && !relogged && r.relogin != nil && r.relogin(ctx, err) {
			relogged = true // a refused login, the password read again: one more try
			attempt--
			continue
		}
		if err == nil || !source.IsTransient(err) || attempt >= n {
			return err
		}
		wait := r.backoff(attempt)
		if r.OnRetry != nil {
			r.OnRetry(attempt+1, wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("retry after %w: %w", err, ctx.Err())
		case <-t.C:
		}
	}
}
