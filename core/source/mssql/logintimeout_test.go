package mssql

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/sourcetest"
)

// loginDB opens a DB on addr as a spec would (source.dsn, a password in the DSN or from a
// PasswordFunc), without retries.
func loginDB(t *testing.T, addr string, query string, rotating bool, login time.Duration) *DB {
	t.Helper()
	o := Options{DSN: "sqlserver://reader:S3cret-pw@" + addr + "?database=shop" + query, Development: true,
		Encrypt: "disable", LoginTimeout: login, DSNField: "source.dsn", Retry: Retry{Retries: -1}}
	if rotating {
		o.DSN = "sqlserver://reader@" + addr + "?database=shop" + query
		o.PasswordFunc = func(context.Context) (string, error) { return "S3cret-pw", nil }
	}
	d, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// maxLSNWithin calls MaxLSN and fails the test when it has not returned within limit
// (the call is left running: before the fix nothing stopped it).
func maxLSNWithin(t *testing.T, ctx context.Context, d *DB, limit time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := d.MaxLSN(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(limit):
		t.Fatalf("MaxLSN still waiting after %s for a server that never answers the login", limit)
		return 0, nil
	}
}

// A server that accepts the TCP connection and never answers the prelogin is given up
// after the login timeout (Options.LoginTimeout, else the DSN's connection timeout), with a
// transient *source.UnreachableError that says what happened and what to check, without
// the DSN or its password. Before, go-mssqldb waited for the prelogin reply for ever.
func TestLoginNoAnswer(t *testing.T) {
	addr := sourcetest.SilentServer(t, sourcetest.NeverAnswers)
	for _, tc := range []struct {
		name     string
		query    string
		login    time.Duration
		rotating bool
		within   string
		least    time.Duration
	}{
		{name: "option", login: 300 * time.Millisecond, within: "within 0.3 s", least: 300 * time.Millisecond},
		{name: "option, rotating password", login: 300 * time.Millisecond, rotating: true, within: "within 0.3 s", least: 300 * time.Millisecond},
		{name: "the DSN's connection timeout", query: "&connection+timeout=1", within: "within 1 s", least: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := loginDB(t, addr, tc.query, tc.rotating, tc.login)
			took, err := maxLSNWithin(t, context.Background(), d, 10*time.Second)
			var u *source.UnreachableError
			if !errors.As(err, &u) || u.Cause != source.UnreachableNoAnswer || u.Server != addr || !source.IsTransient(err) {
				t.Fatalf("err = %v, want a transient UnreachableError (%s) for %s", err, source.UnreachableNoAnswer, addr)
			}
			msg := err.Error()
			want := "SQL Server at " + addr + " accepted the connection but did not answer the login " + tc.within +
				": check that source.dsn's host and port are SQL Server's"
			checkLoginMessage(t, msg, want)
			if took < tc.least || took > tc.least+3*time.Second {
				t.Errorf("returned after %s, want about %s", took, tc.least)
			}
		})
	}
}

// A DSN whose connection timeout is shorter than the login timeout: go-mssqldb's own read
// deadline fires first, and the call fails with the same transient UnreachableError as
// when the login timeout fires, naming the limit that did (the DSN's connection timeout)
// and the login timeout it came before. Before, the message was the driver's alone:
// "read max lsn: transient: ... i/o timeout".
func TestLoginNoAnswerDSNTimeoutFirst(t *testing.T) {
	addr := sourcetest.SilentServer(t, sourcetest.NeverAnswers)
	d := loginDB(t, addr, "&connection+timeout=1", false, 5*time.Second)
	took, err := maxLSNWithin(t, context.Background(), d, 10*time.Second)
	var u *source.UnreachableError
	if !errors.As(err, &u) || u.Cause != source.UnreachableNoAnswer || u.Server != addr || u.Waited != time.Second || !source.IsTransient(err) {
		t.Fatalf("err = %v, want a transient UnreachableError (%s, waited 1 s) for %s", err, source.UnreachableNoAnswer, addr)
	}
	msg := err.Error()
	want := "SQL Server at " + addr + " accepted the connection but did not answer the login within 1 s " +
		"(the DSN's connection timeout, which fired before the login timeout of 5 s): check that source.dsn's host and port are SQL Server's"
	checkLoginMessage(t, msg, want)
	if took < time.Second || took > 4*time.Second {
		t.Errorf("returned after %s, want about 1 s", took)
	}
}

// A call whose context is cancelled while the login waits for the server returns at once
// with the context's error (not transient: nothing to retry), with the default login
// timeout and with none at all (connection timeout=0 in the DSN). Before, the login ignored
// the context: the CLI did not stop on SIGTERM.
func TestLoginCancelled(t *testing.T) {
	addr := sourcetest.SilentServer(t, sourcetest.NeverAnswers)
	for _, tc := range []struct {
		name     string
		query    string
		rotating bool
	}{
		{name: "default login timeout"},
		{name: "default login timeout, rotating password", rotating: true},
		{name: "no login timeout", query: "&connection+timeout=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := loginDB(t, addr, tc.query, tc.rotating, 0)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			took, err := maxLSNWithin(t, ctx, d, 10*time.Second)
			if !errors.Is(err, context.Canceled) || source.IsTransient(err) {
				t.Fatalf("err = %v, want context.Canceled, not transient", err)
			}
			if took > 2*time.Second {
				t.Errorf("returned %s after the call began, want within about 0.3 s of the cancellation", took)
			}
			if strings.Contains(err.Error(), "S3cret-pw") {
				t.Errorf("message %q holds the password", err)
			}
		})
	}
}

// A server that answers the prelogin with something that is not TDS (an HTTP or SSH server
// on the port) fails the call at once with a transient UnreachableError that says so; one
// that begins a TDS reply and stalls is given up at the login timeout. Neither message
// holds the DSN or its password. Before, the first two were 'read max lsn: invalid packet
// size, it is longer than buffer size' (not transient, naming nothing), the third a hang.
func TestLoginGarbageAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(net.Conn)
		cause string
		least time.Duration
	}{
		{"answers and closes", func(c net.Conn) {
			buf := make([]byte, 512)
			_, _ = c.Read(buf)
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			c.Close()
		}, source.UnreachableNotSQLServer, 0},
		{"answers and stays open", func(c net.Conn) {
			buf := make([]byte, 512)
			_, _ = c.Read(buf)
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n")
			_, _ = io.Copy(io.Discard, c)
		}, source.UnreachableNotSQLServer, 0},
		{"begins a TDS reply and stalls", func(c net.Conn) {
			buf := make([]byte, 512)
			_, _ = c.Read(buf)
			_, _ = c.Write([]byte{0x04, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01, 0x00, 0x00}) // a 64-byte packet, 1 byte of it
			_, _ = io.Copy(io.Discard, c)
		}, source.UnreachableNoAnswer, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := sourcetest.SilentServer(t, tc.serve)
			d := loginDB(t, addr, "", false, 500*time.Millisecond)
			took, err := maxLSNWithin(t, context.Background(), d, 10*time.Second)
			var u *source.UnreachableError
			if !errors.As(err, &u) || u.Cause != tc.cause || !source.IsTransient(err) {
				t.Fatalf("err = %v, want a transient UnreachableError (%s)", err, tc.cause)
			}
			msg := err.Error()
			want := "SQL Server at " + addr + " accepted the connection but answered the login with something that is not SQL Server's protocol (TDS): check that source.dsn's host and port are SQL Server's"
			if tc.cause == source.UnreachableNoAnswer {
				want = "SQL Server at " + addr + " accepted the connection but did not answer the login within 0.5 s"
			}
			checkLoginMessage(t, msg, want)
			if took < tc.least || took > tc.least+2*time.Second {
				t.Errorf("returned after %s, want about %s", took, tc.least)
			}
		})
	}
}

// The login timeout: Options.LoginTimeout, else the DSN's connection timeout (0 there is
// no bound but the context), else DefaultLoginTimeout.
func TestLoginTimeoutSetting(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want time.Duration
	}{
		{Options{Host: "h", Database: "d"}, DefaultLoginTimeout},
		{Options{DSN: "sqlserver://h?database=d"}, DefaultLoginTimeout},
		{Options{DSN: "sqlserver://h?database=d&Connection+Timeout=7"}, 7 * time.Second},
		{Options{DSN: "sqlserver://h?database=d&connection+timeout=0"}, 0},
		{Options{DSN: "sqlserver://h?database=d&dial+timeout=90"}, DefaultLoginTimeout},
		{Options{DSN: "sqlserver://h?database=d&connection+timeout=7", LoginTimeout: 2 * time.Second}, 2 * time.Second},
	} {
		if got := tc.o.loginTimeout(); got != tc.want {
			t.Errorf("%+v: login timeout %s, want %s", tc.o, got, tc.want)
		}
	}
	if err := (Options{Host: "h", Database: "d", LoginTimeout: -time.Second}).Validate(); err == nil {
		t.Error("a negative LoginTimeout passed Validate")
	}
	if err := (Options{DSN: "sqlserver://h?database=d&connection+timeout=soon"}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "connection timeout") {
		t.Errorf("an unreadable connection timeout: %v, want it refused", err)
	}
}

// The guard's deadline holds only during the login: a deadline the driver sets then cannot
// pass it (nor can clearing one), and once the guard ends the connection has none, so a
// session may wait on a slow query for longer than the login timeout.
func TestLoginGuardReleases(t *testing.T) {
	server := make(chan net.Conn, 1)
	addr := sourcetest.SilentServer(t, func(c net.Conn) { server <- c })
	g := &loginGuard{timeout: 200 * time.Millisecond}
	ctx := context.WithValue(context.Background(), loginGuardKey{}, g)
	c, err := (loginDialer{nd: &net.Dialer{}}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := <-server
	if err := c.SetDeadline(time.Time{}); err != nil { // the driver clearing its own
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); err == nil || time.Since(start) > time.Second {
		t.Fatalf("read during the login: %v after %s, want the login deadline at 0.2 s", err, time.Since(start))
	}
	if cancelled, expired, _, _ := g.end(); cancelled || expired == nil {
		t.Errorf("end: cancelled %v, expired %v; want the deadline reported as passed", cancelled, expired)
	}
	time.AfterFunc(400*time.Millisecond, func() { _, _ = srv.Write([]byte{tdsReplyPacket}) })
	b := make([]byte, 1)
	if n, err := c.Read(b); err != nil || n != 1 || b[0] != tdsReplyPacket {
		t.Errorf("read after the login, 0.4 s later: %d, %v; want the byte (no deadline left)", n, err)
	}
}

// tdsServer is the least of SQL Server that go-mssqldb logs in to (no TLS: the client's
// encrypt=disable): a prelogin reply, a LOGINACK for the login, then a DONE for each
// batch, each answered after slow.
func tdsServer(slow time.Duration) func(net.Conn) {
	packet := func(payload []byte) []byte {
		h := []byte{0x04, 0x01, 0, 0, 0, 0, 1, 0} // a reply, the last packet of its message
		binary.BigEndian.PutUint16(h[2:], uint16(8+len(payload)))
		return append(h, payload...)
	}
	done := []byte{0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	// Each client message, read to its last packet.
	read := func(c net.Conn) error {
		for {
			h := make([]byte, 8)
			if _, err := io.ReadFull(c, h); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, make([]byte, int(binary.BigEndian.Uint16(h[2:]))-8)); err != nil {
				return err
			}
			if h[1]&1 != 0 {
				return nil
			}
		}
	}
	return func(c net.Conn) {
		if read(c) != nil {
			return
		}
		// VERSION (6 bytes at 11), ENCRYPTION (1 byte at 17: not supported), terminator.
		prelogin := []byte{0x00, 0, 11, 0, 6, 0x01, 0, 17, 0, 1, 0xFF, 16, 0, 0, 0, 0, 0, 0x02}
		if _, err := c.Write(packet(prelogin)); err != nil || read(c) != nil {
			return
		}
		// LOGINACK: interface 1, TDS 7.4, no program name, version 16.0.
		loginAck := []byte{0xAD, 10, 0, 1, 0x74, 0, 0, 4, 0, 16, 0, 0, 0}
		if _, err := c.Write(packet(append(loginAck, done...))); err != nil {
			return
		}
		for read(c) == nil {
			time.Sleep(slow)
			if _, err := c.Write(packet(done)); err != nil {
				return
			}
		}
	}
}

// A session that logged in keeps no login deadline: a batch the server answers after
// twice the login timeout succeeds (the guard's deadline would have failed it).
func TestLoginGuardLeavesSessionsAlone(t *testing.T) {
	addr := sourcetest.SilentServer(t, tdsServer(600*time.Millisecond))
	for _, rotating := range []bool{false, true} {
		d := loginDB(t, addr, "", rotating, 300*time.Millisecond)
		ctx := context.Background()
		conn, err := d.db.Conn(ctx)
		if err != nil {
			t.Fatalf("rotating %v: login: %v", rotating, err)
		}
		start := time.Now()
		if _, err := conn.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Errorf("rotating %v: a batch answered after %s: %v, want it to succeed", rotating, time.Since(start), err)
		}
		conn.Close()
	}
}

// checkLoginMessage fails t unless msg contains want and holds neither the tests' password
// nor a DSN.
func checkLoginMessage(t *testing.T, msg, want string) {
	t.Helper()
	if !strings.Contains(msg, want) {
		t.Errorf("message %q\nwant it to contain %q", msg, want)
	}
	if strings.Contains(msg, "S3cret-pw") || strings.Contains(msg, "sqlserver://") {
		t.Errorf("message %q holds the DSN or its password", msg)
	}
}
