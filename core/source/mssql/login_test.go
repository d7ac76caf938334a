package mssql

import (
	"context"
	"database/sql/driver"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	mssqldrv "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// secretServer is a server whose login password changes (a Secrets Manager rotation) and
// a connector factory that logs in with the password of its DSN.
type secretServer struct {
	mu       sync.Mutex
	password string
	logins   atomic.Int64
	s        *script
}

func (srv *secretServer) build(dsn string) (driver.Connector, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, err
	}
	pw, _ := u.User.Password()
	return connectorFunc(func(context.Context) (driver.Conn, error) {
		srv.logins.Add(1)
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if pw != srv.password {
			return nil, mssqldrv.Error{Number: 18456, Message: "Login failed for user 'reader'."}
		}
		return &fakeConn{s: srv.s, id: srv.s.nextID.Add(1)}, nil
	}), nil
}

type connectorFunc func(context.Context) (driver.Conn, error)

func (f connectorFunc) Connect(ctx context.Context) (driver.Conn, error) { return f(ctx) }
func (f connectorFunc) Driver() driver.Driver                            { return fakeDriver{} }

// After the secret is rotated, a warm DB whose sessions were logged in with the old
// password gets LoginError on its next new session: it reads the password again once,
// drops its idle sessions and retries, and the call succeeds. A password that is still
// wrong after the re-read is the LoginError, without a loop.
func TestSecretRotationRelogin(t *testing.T) {
	srv := &secretServer{password: "old", s: &script{handler: func(q string, _ []any) result {
		if q == sqlMaxLSN {
			return one("max_lsn", lsnB.String())
		}
		return result{err: errors.New("unexpected " + q)}
	}}}
	var secret atomic.Value
	secret.Store("old")
	var reads atomic.Int64
	o := Options{DSN: "sqlserver://reader@db.example?database=shop", SourceTimeZone: "UTC", Retry: Retry{Retries: 1, Base: 1},
		PasswordFunc: func(context.Context) (string, error) { reads.Add(1); return secret.Load().(string), nil },
		newConnector: srv.build}
	d, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if m, err := d.MaxLSN(ctx); err != nil || m != lsnB {
		t.Fatalf("first call: %s %v", m, err)
	}
	if reads.Load() != 1 {
		t.Fatalf("%d password reads before the first login, want 1", reads.Load())
	}
	// Rotation: the server and the secret move to the new password; the pool's sessions
	// are dropped (as a failover or idle timeout would), so the next call logs in again.
	srv.mu.Lock()
	srv.password = "new"
	srv.mu.Unlock()
	secret.Store("new")
	d.db.SetMaxIdleConns(0)
	d.db.SetMaxIdleConns(2)
	if m, err := d.MaxLSN(ctx); err != nil || m != lsnB {
		t.Fatalf("after rotation: %s %v, want the call to succeed after one re-read", m, err)
	}
	if reads.Load() != 2 {
		t.Fatalf("%d password reads, want 2 (one re-read after the refused login)", reads.Load())
	}
	// The secret is wrong for good: one re-read, then LoginError.
	srv.mu.Lock()
	srv.password = "other"
	srv.mu.Unlock()
	d.db.SetMaxIdleConns(0)
	d.db.SetMaxIdleConns(2)
	_, err = d.MaxLSN(ctx)
	var le *source.LoginError
	if !errors.As(err, &le) || reads.Load() != 3 {
		t.Fatalf("%v after %d reads, want *LoginError after one re-read", err, reads.Load())
	}
}
