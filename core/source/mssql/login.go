package mssql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"sync"

	mssqldrv "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// PasswordFunc returns the login password now (e.g. read from Secrets Manager). The DB
// calls it before its first login and once more after a login is refused, so that a warm
// process follows a rotated secret (docs/reference/sqlserver-cdc.md §13.6).
type PasswordFunc func(ctx context.Context) (string, error)

// rotatingConnector is the pool's driver.Connector when Options.PasswordFunc is set: it
// logs new sessions in with the password last read, and Rotate re-reads it.
type rotatingConnector struct {
	dsn      string // without a password
	password PasswordFunc
	build    func(dsn string) (driver.Connector, error)

	mu  sync.Mutex
	cur driver.Connector // nil until the first Connect
	gen int              // how many times the password was read
}

func newRotatingConnector(dsn string, pw PasswordFunc, build func(string) (driver.Connector, error)) *rotatingConnector {
	if build == nil {
		build = func(dsn string) (driver.Connector, error) { return mssqldrv.NewConnector(dsn) }
	}
	return &rotatingConnector{dsn: dsn, password: pw, build: build}
}

// Connect logs a new session in, reading the password first if it was never read.
func (c *rotatingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.mu.Lock()
	cur := c.cur
	c.mu.Unlock()
	if cur == nil {
		var err error
		if cur, err = c.rotate(ctx, 0); err != nil {
			return nil, err
		}
	}
	return cur.Connect(ctx)
}

// Driver is go-mssqldb's driver.
func (c *rotatingConnector) Driver() driver.Driver { return &mssqldrv.Driver{} }

// rotate reads the password and builds the connector new sessions use, unless another
// caller already read it again since generation seen (then that connector is used).
func (c *rotatingConnector) rotate(ctx context.Context, seen int) (driver.Connector, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != seen {
		return c.cur, nil
	}
	pw, err := c.password(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the source password: %w", err)
	}
	u, err := url.Parse(c.dsn)
	if err != nil {
		return nil, err
	}
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, pw)
	next, err := c.build(u.String())
	if err != nil {
		return nil, fmt.Errorf("source connection: %w", err)
	}
	c.cur = next
	c.gen++
	return next, nil
}

// generation is how many times the password was read so far.
func (c *rotatingConnector) generation() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// relogin handles a refused login once per call: with a PasswordFunc it re-reads the
// password, makes new sessions use it and drops the pool's idle sessions; it reports
// whether the call should be tried again.
func (d *DB) relogin(ctx context.Context, err error, seen int) bool {
	var le *source.LoginError
	if d.rot == nil || !errors.As(err, &le) {
		return false
	}
	if _, rerr := d.rot.rotate(ctx, seen); rerr != nil {
		d.log.Warn("sql server: login refused and the password could not be read again", "err", rerr)
		return false
	}
	d.db.SetMaxIdleConns(0) // closes idle sessions logged in before the rotation
	d.db.SetMaxIdleConns(2)
	d.log.Warn("sql server: login refused; read the password again and retrying once (secret rotated?)")
	return true
}
