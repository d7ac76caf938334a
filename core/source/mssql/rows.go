package mssql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// arrowRows streams a query's rows as Arrow record batches of at most batchRows rows and
// about batchBytes bytes (source.Rows). It holds one connection until Close.
type arrowRows struct {
	schema     *arrow.Schema
	rows       *sql.Rows
	conn       *sql.Conn
	reset      string // sent on conn before it goes back to the pool ("" for none)
	appenders  []appender
	batchRows  int
	batchBytes int
	mem        memory.Allocator
	// mapErr maps an error met while fetching.
	mapErr func(error) error
	// wait, when set, measures the session's network wait over the read (change reads).
	wait *netWait

	dest []any
	ptrs []any
	done bool
	// closed is set by Close: Next then returns source.ErrClosed, not io.EOF.
	closed bool
	once   sync.Once
	cerr   error
}

// newArrowRows wraps rows; appenders[i] fills schema field i from result column i.
func newArrowRows(schema *arrow.Schema, rows *sql.Rows, conn *sql.Conn, reset string, appenders []appender, o source.ReadOptions, mapErr func(error) error) *arrowRows {
	r := &arrowRows{
		schema: schema, rows: rows, conn: conn, reset: reset, appenders: appenders,
		batchRows: o.BatchRows, batchBytes: o.BatchBytes, mem: memory.DefaultAllocator, mapErr: mapErr,
	}
	if r.batchRows <= 0 {
		r.batchRows = source.DefaultBatchRows
	}
	if r.batchBytes <= 0 {
		r.batchBytes = source.DefaultBatchBytes
	}
	r.dest = make([]any, len(appenders))
	r.ptrs = make([]any, len(appenders))
	for i := range r.dest {
		r.ptrs[i] = &r.dest[i]
	}
	return r
}

// Schema is the schema of every batch.
func (r *arrowRows) Schema() *arrow.Schema { return r.schema }

// Next returns the next batch, or (nil, io.EOF) after the last. The caller releases it.
// After Close it is source.ErrClosed.
func (r *arrowRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.closed {
		return nil, source.ErrClosed
	}
	if r.done {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(r.mem, r.schema)
	defer b.Release()
	n, size := 0, 0
	for n < r.batchRows && size < r.batchBytes {
		if r.rows == nil || !r.rows.Next() {
			r.done = true
			if r.rows != nil {
				if err := r.rows.Err(); err != nil {
					r.wait.abandon()
					return nil, r.mapErr(err)
				}
			}
			// Drained: the session is free for the wait reading, before anyone closes.
			r.wait.finish(ctx, r.conn)
			break
		}
		if err := r.rows.Scan(r.ptrs...); err != nil {
			r.done = true
			r.wait.abandon()
			return nil, r.mapErr(err)
		}
		for i, v := range r.dest {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				size++
				continue
			}
			sz, err := r.appenders[i](fb, v)
			if err != nil {
				r.done = true
				r.wait.abandon()
				return nil, err
			}
			size += sz
		}
		n++
	}
	if n == 0 {
		return nil, io.EOF
	}
	return b.NewRecordBatch(), nil
}

// Close releases the result set and the connection; safe to call more than once.
func (r *arrowRows) Close() error {
	r.closed = true
	r.once.Do(func() {
		r.done = true
		var errs []error
		if r.rows != nil {
			errs = append(errs, r.rows.Close())
		}
		// An early Close still reads the wait, on the same session before it is released.
		r.wait.finish(context.Background(), r.conn)
		if r.conn != nil {
			if r.reset != "" {
				// A failed reset leaves settings on a pooled session: drop the session.
				if _, err := r.conn.ExecContext(context.Background(), r.reset); err != nil {
					_ = r.conn.Raw(func(any) error { return driver.ErrBadConn })
				}
			}
			errs = append(errs, r.conn.Close())
		}
		r.cerr = errors.Join(errs...)
	})
	return r.cerr
}

// emptyRows is a Rows with a schema and no batches (From > To, an empty key range).
func emptyRows(schema *arrow.Schema) source.Rows {
	return &arrowRows{schema: schema, done: true}
}
