package mssql

import (
	"strings"
	"testing"
	"time"

	mssqldrv "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// A prefix batch that fails part-way may already have set LOCK_TIMEOUT on the session
// (SET statements in a parameterless batch stick to the session: SET LOCK_TIMEOUT,
// learn.microsoft.com/sql/t-sql/statements/set-lock-timeout-transact-sql). No reset ran, so
// the connection must not go back to the pool, or a later change-table read on it would
// inherit the lock timeout (ADR 0004 item 3).
func TestFailedPrefixDiscardsConnection(t *testing.T) {
	for _, name := range []string{"ReadTable", "KeyMax"} {
		t.Run(name, func(t *testing.T) {
			failed := false
			d, s := newScripted(t, Options{MaxOpenConns: 1}, func(q string, _ []any) result {
				if strings.HasPrefix(q, "SET LOCK_TIMEOUT 250") && !failed {
					failed = true
					return result{err: mssqldrv.Error{Number: 3902, Message: "prefix failed after its first SET"}}
				}
				if strings.HasPrefix(q, "SELECT CONVERT") {
					return one("l", "0x0000002A000001F00003")
				}
				return result{}
			})
			lt := 250 * time.Millisecond
			tb := source.Table{Schema: "dbo", Name: "orders", LockTimeout: &lt}
			var err error
			if name == "ReadTable" {
				_, err = d.ReadTable(ctx, source.TableRead{Table: tb, Columns: []source.Column{colI}})
			} else {
				_, _, err = d.KeyMax(ctx, tb, []source.Column{colI})
			}
			if err == nil {
				t.Fatal("the failed prefix was not reported")
			}
			if _, err := d.MaxLSN(ctx); err != nil {
				t.Fatal(err)
			}
			log := s.log()
			first, last := log[0], log[len(log)-1]
			if !strings.HasPrefix(first.query, "SET LOCK_TIMEOUT 250") || !strings.HasPrefix(last.query, "SELECT CONVERT") {
				t.Fatalf("statements %v", log)
			}
			if first.conn == last.conn {
				t.Errorf("the connection whose prefix failed went back to the pool and ran %q", last.query)
			}
		})
	}
}

// SET LOCK_TIMEOUT takes an int number of milliseconds, 0 meaning "do not wait at all"
// (SET LOCK_TIMEOUT, learn.microsoft.com/sql/t-sql/statements/set-lock-timeout-transact-sql).
// A positive timeout under 1 ms must still wait (rounded up, not truncated to 0), and one
// beyond the int range would not compile, so it is refused before any I/O.
func TestLockTimeoutMilliseconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "SET LOCK_TIMEOUT 0;"},
		{300 * time.Microsecond, "SET LOCK_TIMEOUT 1;"},
		{1500*time.Millisecond + 100*time.Microsecond, "SET LOCK_TIMEOUT 1501;"},
		{2147483647 * time.Millisecond, "SET LOCK_TIMEOUT 2147483647;"},
	} {
		d := c.d
		q, err := sessionPrefix(source.Table{LockTimeout: &d})
		if err != nil || !strings.HasPrefix(q, c.want) {
			t.Errorf("%v: %q, %v; want prefix %q", c.d, q, err, c.want)
		}
	}
	d := 2147483648 * time.Millisecond
	if _, err := sessionPrefix(source.Table{LockTimeout: &d}); !isInvalid(err) {
		t.Errorf("lock timeout past int: %v, want *InvalidArgumentError", err)
	}
}
