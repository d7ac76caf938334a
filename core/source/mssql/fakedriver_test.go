package mssql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
)

// A scripted database/sql driver for the tests of the I/O paths (session prefix, batching,
// retries, error mapping) without SQL Server. Each statement goes to the handler with the
// connection it ran on; the handler returns a result set or an error.

type result struct {
	cols []string
	rows [][]driver.Value
	// gen, when set, produces n rows on the fly instead of rows (benchmarks).
	gen func(i int, dest []driver.Value)
	n   int
	err error
	// failAt, when above zero, fails the fetch of row failAt (1-based) with failErr.
	failAt  int
	failErr error
}

type call struct {
	conn  int64
	query string
	args  []any
}

type script struct {
	mu      sync.Mutex
	calls   []call
	handler func(q string, args []any) result
	nextID  atomic.Int64
}

func (s *script) log() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

var (
	scriptsMu sync.Mutex
	scripts   = map[string]*script{}
	scriptSeq atomic.Int64
)

type fakeDriver struct{}

func init() { sql.Register("mssqlcdc-fake", fakeDriver{}) }

func (fakeDriver) Open(name string) (driver.Conn, error) {
	scriptsMu.Lock()
	s := scripts[name]
	scriptsMu.Unlock()
	return &fakeConn{s: s, id: s.nextID.Add(1)}, nil
}

type fakeConn struct {
	s  *script
	id int64
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) {
	return nil, fmt.Errorf("prepare not supported")
}
func (c *fakeConn) Close() error              { return nil }
func (c *fakeConn) Begin() (driver.Tx, error) { return nil, fmt.Errorf("no transactions") }

func (c *fakeConn) run(q string, nv []driver.NamedValue) result {
	args := make([]any, len(nv))
	for i, v := range nv {
		args[i] = v.Value
	}
	c.s.mu.Lock()
	c.s.calls = append(c.s.calls, call{conn: c.id, query: q, args: args})
	c.s.mu.Unlock()
	return c.s.handler(q, args)
}

func (c *fakeConn) QueryContext(_ context.Context, q string, nv []driver.NamedValue) (driver.Rows, error) {
	r := c.run(q, nv)
	if r.err != nil {
		return nil, r.err
	}
	return &fakeRows{r: r}, nil
}

func (c *fakeConn) ExecContext(_ context.Context, q string, nv []driver.NamedValue) (driver.Result, error) {
	r := c.run(q, nv)
	if r.err != nil {
		return nil, r.err
	}
	return driver.RowsAffected(0), nil
}

// CheckNamedValue accepts every Go value the package binds.
func (c *fakeConn) CheckNamedValue(*driver.NamedValue) error { return nil }

type fakeRows struct {
	r result
	i int
}

func (r *fakeRows) Columns() []string { return r.r.cols }
func (r *fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.r.failAt > 0 && r.i+1 == r.r.failAt {
		return r.r.failErr
	}
	if r.r.gen != nil {
		if r.i >= r.r.n {
			return io.EOF
		}
		r.r.gen(r.i, dest)
		r.i++
		return nil
	}
	if r.i >= len(r.r.rows) {
		return io.EOF
	}
	copy(dest, r.r.rows[r.i])
	r.i++
	return nil
}

// newScripted returns a DB on the scripted driver.
func newScripted(t testing.TB, o Options, handler func(q string, args []any) result) (*DB, *script) {
	t.Helper()
	s := &script{handler: handler}
	name := fmt.Sprintf("script-%d", scriptSeq.Add(1))
	scriptsMu.Lock()
	scripts[name] = s
	scriptsMu.Unlock()
	db, err := sql.Open("mssqlcdc-fake", name)
	if err != nil {
		t.Fatal(err)
	}
	if o.Retry.Base == 0 {
		o.Retry.Base = 1
	}
	d := newDB(db, o)
	t.Cleanup(func() { d.Close() })
	return d, s
}

// one is a one-column, one-row result.
func one(col string, v driver.Value) result {
	return result{cols: []string{col}, rows: [][]driver.Value{{v}}}
}
