package mssql

// How a login is bounded in time and stopped by its context.
//
// go-mssqldb (v1.11.2, tds.go connect) bounds only the TCP dial ("dial timeout"): it then
// waits for the server's prelogin reply and the rest of the login with no deadline and
// without watching the context, so a server that accepts the connection and stays silent
// holds the call for ever, through SIGTERM and up to a Lambda's own timeout. Its
// "connection timeout" is no login timeout either: timeoutConn sets it as a fresh deadline
// on every read and write of the session for the session's whole life, so as a default
// it would also end a long, healthy snapshot read whose first rows take longer
// (docs/reference/sqlserver-cdc.md §8.2). What the driver does offer is Connector.Dialer,
// used for every TCP connection of a login (each address of a listener, a routing
// redirect, the failover partner), with a context derived from Connect's.
//
// So the pool's connector (loginConnector) hands each Connect a loginGuard in the context,
// and the Dialer (loginDialer) registers each TCP connection it opens with it. A guarded
// connection (loginConn) gets a deadline Options.LoginTimeout after the server accepted
// it, which the driver's own SetDeadline calls cannot extend, and which moves into the
// past when the context ends, so a blocked read returns at once. When Connect returns,
// the guard ends: the deadlines are cleared and the session runs without one, as before.
// Connect then turns what happened into a loginFailure, which mapError reports as a
// *source.UnreachableError (docs/operations.md "UnreachableError"), also when the DSN's
// connection timeout, shorter than the login timeout, ended a read of the login first
// (the driver's deadline, which the guard only ever shortens): the message then names
// that limit.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mssqldrv "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// loginConnector is the pool's driver.Connector: it bounds each login by timeout (0: by
// the context only) and stops it when ctx ends.
type loginConnector struct {
	driver.Connector
	timeout time.Duration
	// dsnTimeout is the DSN's connection timeout (0: none), which go-mssqldb sets as the
	// deadline of each read of the login: when shorter than timeout it fires first.
	dsnTimeout time.Duration
}

// Connect logs a new session in under a loginGuard. A cancelled context is its error
// (wrapped); a login the server did not finish in time, or answered with something other
// than TDS, is a *loginFailure; anything else is the driver's error as it was.
func (c *loginConnector) Connect(ctx context.Context) (driver.Conn, error) {
	g := &loginGuard{timeout: c.timeout}
	stop := context.AfterFunc(ctx, g.cancel)
	defer stop()
	conn, err := c.Connector.Connect(context.WithValue(ctx, loginGuardKey{}, g))
	cancelled, expired, notTDS, early := g.end()
	switch {
	case cancelled:
		if err == nil {
			conn.Close() // logged in as the context ended: its deadline is in the past
		}
		return nil, fmt.Errorf("log in to SQL Server: %w", context.Cause(ctx))
	case err == nil:
		return conn, nil
	case expired != nil:
		return nil, &loginFailure{Cause: source.UnreachableNoAnswer, Waited: c.timeout, Addr: expired.RemoteAddr().String(), Err: err}
	case notTDS != nil:
		return nil, &loginFailure{Cause: source.UnreachableNotSQLServer, Addr: notTDS.RemoteAddr().String(), First: notTDS.first, Err: err}
	case early != nil && c.dsnTimeout > 0:
		// The driver's own read deadline, the DSN's connection timeout, came first.
		limit := "the DSN's connection timeout"
		if c.timeout > c.dsnTimeout {
			limit += ", which fired before the login timeout of " + strconv.FormatFloat(c.timeout.Seconds(), 'f', -1, 64) + " s"
		}
		return nil, &loginFailure{Cause: source.UnreachableNoAnswer, Waited: c.dsnTimeout, Limit: limit, Addr: early.RemoteAddr().String(), Err: err}
	}
	return nil, err
}

// loginFailure: a connection the server accepted whose login did not finish: no answer
// within Waited (source.UnreachableNoAnswer), or a first reply byte that begins neither a
// TDS reply nor a TLS record (source.UnreachableNotSQLServer). mapError reports it as a
// transient *source.UnreachableError.
type loginFailure struct {
	Cause  string
	Waited time.Duration
	// Limit names the bound that ended the wait when it was not the login timeout
	// (source.UnreachableError.Limit).
	Limit string
	// Addr is the address connected to (an IP address and port).
	Addr string
	// First is the first byte the server sent, for UnreachableNotSQLServer.
	First byte
	// Err is the driver's error.
	Err error
}

func (e *loginFailure) Error() string {
	if e.Cause == source.UnreachableNotSQLServer {
		return fmt.Sprintf("%s replied %#02x first, which begins no TDS packet: %v", e.Addr, e.First, e.Err)
	}
	return fmt.Sprintf("no reply from %s: %v", e.Addr, e.Err)
}

func (e *loginFailure) Unwrap() error { return e.Err }

// First bytes of what SQL Server sends first: a TDS reply packet (the prelogin response),
// or, with encrypt=strict, a TLS record (a handshake or an alert).
const (
	tdsReplyPacket = 0x04
	tlsAlert       = 0x15
	tlsHandshake   = 0x16
)

type loginGuardKey struct{}

// loginGuard watches the TCP connections of one Connect.
type loginGuard struct {
	timeout time.Duration

	mu        sync.Mutex
	conns     []*loginConn
	ended     bool
	cancelled bool
}

// aLongTimeAgo is a deadline in the past: a blocked read or write returns at once.
var aLongTimeAgo = time.Unix(1, 0)

// watch guards c until the guard ends.
func (g *loginGuard) watch(c net.Conn) net.Conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return c // a parallel dial that lost; the driver closes it
	}
	lc := &loginConn{Conn: c, guarding: true}
	switch {
	case g.cancelled:
		lc.setLimit(aLongTimeAgo)
	case g.timeout > 0:
		lc.setLimit(time.Now().Add(g.timeout))
	}
	g.conns = append(g.conns, lc)
	return lc
}

// cancel stops the login now: every guarded connection's deadline moves into the past.
func (g *loginGuard) cancel() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return
	}
	g.cancelled = true
	for _, c := range g.conns {
		c.setLimit(aLongTimeAgo)
	}
}

// end releases the connections and reports whether the context ended the login, a
// connection whose login deadline passed, one whose server's first byte was not SQL
// Server's, and one whose read timed out before its login deadline (the driver's own
// deadline, the DSN's connection timeout).
func (g *loginGuard) end() (cancelled bool, expired, notTDS, early *loginConn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ended = true
	now := time.Now()
	for _, c := range g.conns {
		if c.expired(now) {
			expired = c
		} else if c.timedOut.Load() {
			early = c
		}
		if c.got.Load() && c.first != tdsReplyPacket && c.first != tlsHandshake && c.first != tlsAlert {
			notTDS = c
		}
		c.release()
	}
	return g.cancelled, expired, notTDS, early
}

// loginConn is a TCP connection while its login runs: no deadline the driver sets may
// pass limit.
type loginConn struct {
	net.Conn

	mu       sync.Mutex
	guarding bool
	limit    time.Time // zero: none

	got   atomic.Bool // first holds the first byte read
	first byte

	timedOut atomic.Bool // a read's deadline passed
}

func (c *loginConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.got.Load() {
		c.first = b[0]
		c.got.Store(true)
	}
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		c.timedOut.Store(true)
	}
	return n, err
}

// clamp is t, or limit when t is later (or none) during the login.
func (c *loginConn) clamp(t time.Time) time.Time {
	if c.guarding && !c.limit.IsZero() && (t.IsZero() || t.After(c.limit)) {
		return c.limit
	}
	return t
}

func (c *loginConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetDeadline(c.clamp(t))
}

func (c *loginConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetReadDeadline(c.clamp(t))
}

func (c *loginConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

func (c *loginConn) setLimit(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = t
	_ = c.Conn.SetDeadline(t)
}

// expired reports whether the login deadline (not a cancellation's) passed by now.
func (c *loginConn) expired(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.limit.IsZero() && !c.limit.Equal(aLongTimeAgo) && !now.Before(c.limit)
}

// release ends the guarding: the session has no deadline but the driver's own.
func (c *loginConn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.guarding = false
	c.limit = time.Time{}
	_ = c.Conn.SetDeadline(time.Time{})
}

// loginDialer is go-mssqldb's Connector.Dialer: net.Dialer as the driver's own (keep-alive
// from the DSN), and each TCP connection guarded by the Connect it serves.
type loginDialer struct {
	nd *net.Dialer
}

func (d loginDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.nd.DialContext(ctx, network, addr)
	if err != nil || !strings.HasPrefix(network, "tcp") {
		return c, err
	}
	if g, ok := ctx.Value(loginGuardKey{}).(*loginGuard); ok {
		return g.watch(c), nil
	}
	return c, nil
}

// withLoginDialer wraps a connector builder (nil: go-mssqldb's NewConnector) so that the
// go-mssqldb connectors it builds dial with loginDialer.
func withLoginDialer(build func(dsn string) (driver.Connector, error)) func(dsn string) (driver.Connector, error) {
	if build == nil {
		build = func(dsn string) (driver.Connector, error) { return mssqldrv.NewConnector(dsn) }
	}
	return func(dsn string) (driver.Connector, error) {
		c, err := build(dsn)
		if err != nil {
			return nil, err
		}
		if mc, ok := c.(*mssqldrv.Connector); ok && mc.Dialer == nil {
			keepAlive := 30 * time.Second // the driver's default (mssql.go createDialer)
			if p, err := msdsn.Parse(dsn); err == nil && p.KeepAlive != 0 {
				keepAlive = p.KeepAlive
			}
			mc.Dialer = loginDialer{nd: &net.Dialer{KeepAlive: keepAlive}}
		}
		return c, nil
	}
}
