package mssql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	mssqldrv "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

func sqlErr(n int32, msg string) error {
	return fmt.Errorf("query: %w", mssqldrv.Error{Number: n, Message: msg})
}

func TestMapError(t *testing.T) {
	c := errContext{Op: "read", CaptureInstance: "dbo_orders", Table: "[dbo].[orders]", Database: "shop", User: "reader"}
	t.Run("lock timeout", func(t *testing.T) {
		var e *source.LockTimeoutError
		if err := mapError(sqlErr(1222, "Lock request time out period exceeded."), c); !errors.As(err, &e) || e.Table != "[dbo].[orders]" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("login", func(t *testing.T) {
		var e *source.LoginError
		if err := mapError(sqlErr(18456, "Login failed for user 'x'."), c); !errors.As(err, &e) || e.Message != "Login failed for user 'x'." {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cdc not enabled", func(t *testing.T) {
		var e *source.CDCNotEnabledError
		err := mapError(sqlErr(22901, "The database 'shop' is not enabled for Change Data Capture."), errContext{Op: "list", Database: "shop"})
		if !errors.As(err, &e) || e.Database != "shop" {
			t.Fatalf("got %v", err)
		}
		if err := mapError(sqlErr(22981, "Object does not exist or access is denied."), errContext{Op: "list", Database: "shop"}); !errors.As(err, &e) {
			t.Fatalf("22981 without instance: got %v", err)
		}
	})
	t.Run("instance not found", func(t *testing.T) {
		var e *source.CaptureInstanceNotFoundError
		if err := mapError(sqlErr(22981, "Object does not exist or access is denied."), c); !errors.As(err, &e) || e.Name != "dbo_orders" {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("permission on change table", func(t *testing.T) {
		var e *source.PermissionError
		err := mapError(sqlErr(229, "The SELECT permission was denied on the object 'dbo_orders_CT', database 'shop', schema 'cdc'."), c)
		if !errors.As(err, &e) {
			t.Fatalf("got %v", err)
		}
		if e.Object != "cdc.[dbo_orders_CT]" || e.Grant != "GRANT SELECT ON cdc.[dbo_orders_CT] TO [reader]" {
			t.Fatalf("got %+v", e)
		}
	})
	t.Run("permission on column", func(t *testing.T) {
		var e *source.PermissionError
		err := mapError(sqlErr(230, "The SELECT permission was denied on the column 'x' of the object 'orders'."), c)
		if !errors.As(err, &e) || e.Grant != "GRANT SELECT ON [dbo].[orders] TO [reader]" {
			t.Fatalf("got %v", err)
		}
	})
	// Deadlock, Azure throttling, transport, and the availability group failover errors (976,
	// 978, 983, 3948, 4060, 4221): retried, so a step hit by a failover waits it out.
	for _, n := range []int32{1205, 40613, 10054, 976, 978, 983, 3948, 4060, 4221} {
		t.Run(fmt.Sprintf("transient %d", n), func(t *testing.T) {
			err := mapError(sqlErr(n, "x"), c)
			if !source.IsTransient(err) {
				t.Fatalf("got %v", err)
			}
			var se mssqldrv.Error
			if !errors.As(err, &se) || se.Number != n {
				t.Fatalf("transient error does not wrap the driver error: %v", err)
			}
		})
	}
	for name, e := range map[string]error{
		"bad conn":  driver.ErrBadConn,
		"eof":       fmt.Errorf("read: %w", io.ErrUnexpectedEOF),
		"retryable": mssqldrv.RetryableError{},
	} {
		t.Run(name, func(t *testing.T) {
			if err := mapError(e, c); !source.IsTransient(err) {
				t.Fatalf("got %v", err)
			}
		})
	}
	t.Run("other server error is wrapped", func(t *testing.T) {
		err := mapError(sqlErr(8115, "Arithmetic overflow"), c)
		if source.IsTransient(err) || isTyped(err) || !strings.HasPrefix(err.Error(), "read: ") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cancel is not transient", func(t *testing.T) {
		err := mapError(context.Canceled, c)
		if source.IsTransient(err) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("typed passes through", func(t *testing.T) {
		in := &source.InvalidArgumentError{Arg: "x", Reason: "y"}
		if err := mapError(in, c); err != in {
			t.Fatalf("got %v", err)
		}
	})
	if mapError(nil, c) != nil {
		t.Fatal("nil")
	}
}

func TestIsChangeTableDenied(t *testing.T) {
	if !isChangeTableDenied(sqlErr(208, "Invalid object name 'cdc.dbo_orders_CT'."), "dbo_orders") {
		t.Error("208 on the change table")
	}
	if isChangeTableDenied(sqlErr(208, "Invalid object name 'dbo.other'."), "dbo_orders") {
		t.Error("208 on another object")
	}
	if isChangeTableDenied(errors.New("x"), "dbo_orders") {
		t.Error("plain error")
	}
}

func TestRetry(t *testing.T) {
	transient := &source.TransientError{Op: "x", Err: io.EOF}
	r := Retry{Base: time.Microsecond, Jitter: func() float64 { return 0.5 }}
	t.Run("three retries then the error", func(t *testing.T) {
		calls := 0
		err := r.do(context.Background(), func() error { calls++; return transient })
		if calls != 4 || err != transient {
			t.Fatalf("calls %d, err %v", calls, err)
		}
	})
	t.Run("heals", func(t *testing.T) {
		calls := 0
		err := r.do(context.Background(), func() error {
			calls++
			if calls < 3 {
				return transient
			}
			return nil
		})
		if calls != 3 || err != nil {
			t.Fatalf("calls %d, err %v", calls, err)
		}
	})
	t.Run("not transient is not retried", func(t *testing.T) {
		calls := 0
		lt := &source.LockTimeoutError{}
		if err := r.do(context.Background(), func() error { calls++; return lt }); calls != 1 || err != lt {
			t.Fatalf("calls %d, err %v", calls, err)
		}
	})
	t.Run("cancel stops the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		slow := Retry{Base: time.Hour}
		err := slow.do(ctx, func() error { return transient })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("backoff doubles with jitter", func(t *testing.T) {
		r := Retry{Base: 2 * time.Second, Jitter: func() float64 { return 0.5 }}
		for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
			if got := r.backoff(i); got != want {
				t.Errorf("backoff(%d) = %v, want %v", i, got, want)
			}
		}
		d := Retry{}
		for i := 0; i < 100; i++ {
			if b := d.backoff(0); b < time.Second || b >= 2*time.Second {
				t.Fatalf("default backoff(0) = %v, want [1s, 2s)", b)
			}
		}
		if (Retry{Retries: -1}).retries() != 0 || (Retry{}).retries() != 3 {
			t.Error("retries")
		}
	})
}

// A batch that raised several errors maps on the first known one.
func TestMapErrorChain(t *testing.T) {
	e := mssqldrv.Error{Number: 8180, Message: "Statement(s) could not be prepared.", All: []mssqldrv.Error{
		{Number: 229, Message: "The SELECT permission was denied on the object 'dbo_orders_CT', database 'shop', schema 'cdc'."},
		{Number: 8180, Message: "Statement(s) could not be prepared."},
	}}
	var pe *source.PermissionError
	if err := mapError(e, errContext{Op: "read", CaptureInstance: "dbo_orders"}); !errors.As(err, &pe) || pe.Object != "cdc.[dbo_orders_CT]" {
		t.Fatalf("got %v", err)
	}
	if !isChangeTableDenied(e, "dbo_orders") {
		t.Error("chain not searched for the change-table denial")
	}
}

func TestRetryNotifies(t *testing.T) {
	var seen []int
	r := Retry{Base: time.Nanosecond, OnRetry: func(a int, _ time.Duration, _ error) { seen = append(seen, a) }}
	_ = r.do(context.Background(), func() error { return &source.TransientError{Op: "x", Err: io.EOF} })
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Errorf("retries seen %v", seen)
	}
}

// timeoutErr is a net.Error that timed out, as a dial past its deadline reports.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// A server that cannot be reached is a transient *source.UnreachableError naming the
// address and the DSN's field: a dial that timed out too (it was a bare context deadline
// error, not retried); a failed lookup of a name other than the server's (an Entra token
// authority's) is not the server's address.
func TestUnreachableCauses(t *testing.T) {
	c := errContext{Op: "read max lsn", Server: "db.example.com:1433", DSNField: "source.dsn"}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}
	for _, tc := range []struct {
		err   error
		cause string
	}{
		{fmt.Errorf("unable to open tcp connection with host 'db.example.com:1433': %w", dial), source.UnreachableTimedOut},
		{&net.DNSError{Name: "db.example.com", Err: "no such host", IsNotFound: true}, source.UnreachableNoHost},
		{&net.DNSError{Name: "DB.example.com.", Err: "server misbehaving"}, source.UnreachableDNS},
	} {
		err := mapError(tc.err, c)
		var u *source.UnreachableError
		if !source.IsTransient(err) || !errors.As(err, &u) || u.Cause != tc.cause || u.Server != "db.example.com:1433" ||
			!strings.Contains(err.Error(), "in source.dsn") {
			t.Errorf("%v: %v, want a transient UnreachableError (%s)", tc.err, err, tc.cause)
		}
	}
	other := &net.DNSError{Name: "login.microsoftonline.com", Err: "no such host", IsNotFound: true}
	var u *source.UnreachableError
	if err := mapError(other, c); errors.As(err, &u) {
		t.Errorf("a lookup of another host: %v, want no UnreachableError", err)
	}
	if err := mapError(fmt.Errorf("dial: %w", context.Canceled), c); errors.As(err, &u) || source.IsTransient(err) {
		t.Errorf("a cancelled call: %v, want it as it was", err)
	}
}
