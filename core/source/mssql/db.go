package mssql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

var _ source.Source = (*DB)(nil)

// DB is source.Source over one SQL Server database with CDC enabled. It is safe for
// concurrent use; each call takes a connection from the pool, and a source-table read
// holds its own until its Rows are closed.
type DB struct {
	db       *sql.DB
	opts     Options
	database string
	user     string
	server   string // host:port for messages (Options.server)
	log      *slog.Logger
	closed   atomic.Bool

	zoneMu sync.Mutex
	zone   *zone // resolved source time zone, nil until first needed

	// rot, with Options.PasswordFunc, logs sessions in with the password last read.
	rot *rotatingConnector
}

// Open validates o and prepares a connection pool. It does no I/O: the first call
// connects (a refused login is then a *source.LoginError; a login the server does not
// finish within Options.LoginTimeout a transient *source.UnreachableError; a cancelled
// context stops a login at once, loginguard.go). Bad options are the joined
// *source.InvalidArgumentError of Options.Validate.
func Open(o Options) (*DB, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Auth == AuthEntraServicePrincipal {
		if o.newConnector == nil {
			o.newConnector = entraConnectorBuilder(o, nil)
		}
		if o.PasswordFunc == nil {
			// The secret as given, in the field or the DSN.
			pw := o.Password
			if u, err := url.Parse(o.DSN); err == nil && o.DSN != "" {
				pw, _ = u.User.Password()
			}
			o.PasswordFunc = func(context.Context) (string, error) { return pw, nil }
		}
	}
	build := withLoginDialer(o.newConnector)
	dsnTimeout, _ := o.dsnConnTimeout()
	if o.PasswordFunc != nil {
		rot := newRotatingConnector(o.dsn(), o.PasswordFunc, build)
		d := newDB(sql.OpenDB(&loginConnector{Connector: rot, timeout: o.loginTimeout(), dsnTimeout: dsnTimeout}), o)
		d.rot = rot
		return d, nil
	}
	c, err := build(o.dsn())
	if err != nil {
		return nil, fmt.Errorf("open sql server: %w", err)
	}
	return newDB(sql.OpenDB(&loginConnector{Connector: c, timeout: o.loginTimeout(), dsnTimeout: dsnTimeout}), o), nil
}

// newDB wraps an open pool (tests hand in one on a scripted driver).
func newDB(db *sql.DB, o Options) *DB {
	if o.MaxOpenConns > 0 {
		db.SetMaxOpenConns(o.MaxOpenConns)
	}
	d := &DB{db: db, opts: o, log: o.Logger}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.database, d.user = o.databaseAndUser()
	d.server = o.server()
	if z, ok, _ := parseZoneOption(o.SourceTimeZone); ok {
		d.zone = &z
	}
	return d
}

// Close closes the pool. Calls after Close return source.ErrClosed.
func (d *DB) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	return d.db.Close()
}

// retry is the options' policy with a warning per retry (docs/reference/sqlserver-cdc.md §10:
// each retry is logged).
func (d *DB) retry() Retry {
	r := d.opts.Retry
	if d.rot != nil {
		seen := d.rot.generation()
		r.relogin = func(ctx context.Context, err error) bool { return d.relogin(ctx, err, seen) }
	}
	if r.OnRetry == nil {
		n, most := r.retries(), r.maxWait()
		r.OnRetry = func(attempt int, wait time.Duration, err error) {
			// The error is in the message once; an err attribute would say it again.
			d.log.Warn(retryMessage(err, attempt, n, wait, most), "attempt", attempt, "retries", n, "wait_seconds", wait.Seconds())
		}
	}
	return r
}

func (d *DB) ec(op string) errContext {
	return errContext{Op: op, Database: d.database, User: d.user, Server: d.server, DSNField: d.opts.DSNField}
}

func (d *DB) readOptions(o source.ReadOptions) source.ReadOptions {
	if o.BatchRows == 0 {
		o.BatchRows = d.opts.BatchRows
	}
	if o.BatchBytes == 0 {
		o.BatchBytes = d.opts.BatchBytes
	}
	return o
}

// queryRow runs a one-row statement with retries. found is false on no row.
func (d *DB) queryRow(ctx context.Context, ec errContext, q string, args []any, dest ...any) (found bool, err error) {
	if d.closed.Load() {
		return false, source.ErrClosed
	}
	err = d.retry().do(ctx, func() error {
		err := d.db.QueryRowContext(ctx, q, args...).Scan(dest...)
		if errors.Is(err, sql.ErrNoRows) {
			found = false
			return nil
		}
		found = err == nil
		return mapError(err, ec)
	})
	return found, err
}

// record is one result row by lowercase column name.
type record map[string]any

// queryRecords runs a small metadata statement (a procedure's result set) with retries and
// returns its rows by column name.
func (d *DB) queryRecords(ctx context.Context, ec errContext, q string, args []any) ([]record, error) {
	if d.closed.Load() {
		return nil, source.ErrClosed
	}
	var out []record
	err := d.retry().do(ctx, func() error {
		out = nil
		rows, err := d.db.QueryContext(ctx, q, args...)
		if err != nil {
			return mapError(err, ec)
		}
		defer rows.Close()
		recs, err := scanRecords(rows)
		if err != nil {
			return mapError(err, ec)
		}
		out = recs
		return nil
	})
	return out, err
}

func scanRecords(rows *sql.Rows) ([]record, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []record
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r := make(record, len(cols))
		for i, c := range cols {
			r[strings.ToLower(c)] = vals[i]
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// sourceSession runs fn on a connection of its own after the lock-timeout and isolation
// prefix of t, and resets the session afterwards, with retries of the whole read.
func (d *DB) sourceSession(ctx context.Context, t source.Table, ec errContext, fn func(*sql.Conn) error) error {
	if d.closed.Load() {
		return source.ErrClosed
	}
	prefix, err := sessionPrefix(t)
	if err != nil {
		return err
	}
	return d.retry().do(ctx, func() error {
		conn, err := d.db.Conn(ctx)
		if err != nil {
			return mapError(err, ec)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, prefix); err != nil {
			discardConn(conn)
			return mapError(err, ec)
		}
		ferr := fn(conn)
		if _, err := conn.ExecContext(ctx, sessionReset); err != nil {
			discardConn(conn)
		}
		return mapError(ferr, ec)
	})
}

// discardConn closes conn instead of returning it to the pool: its session settings are
// unknown (a prefix batch that failed part-way may have applied its first SET, which
// sticks to the session; a reset that failed left them in place).
func discardConn(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}

// parseLSNText reads a varchar(22) LSN; NULL is the zero LSN.
func parseLSNText(s sql.NullString) (lsn.LSN, error) {
	if !s.Valid {
		return lsn.Zero, nil
	}
	l, err := lsn.Parse(s.String)
	if err != nil {
		return lsn.Zero, fmt.Errorf("read lsn: %w", err)
	}
	return l, nil
}
