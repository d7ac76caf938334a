package mssql

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// ReadTable is S5 on a connection of its own, after the session prefix of r.Table (and,
// with r.AtLeast, the session's max_lsn check: see source.TableRead); the
// connection is reset and released when the Rows are closed.
func (d *DB) ReadTable(ctx context.Context, r source.TableRead) (source.Rows, error) {
	if d.closed.Load() {
		return nil, source.ErrClosed
	}
	if err := r.ReadOptions.Check(); err != nil {
		return nil, err
	}
	schema, err := bronze.TableSchema(r.Columns)
	if err != nil {
		return nil, err
	}
	q, args, err := readTableSQL(r.Table, r.Columns, r.Keys, r.Range)
	if err != nil {
		return nil, err
	}
	prefix, err := sessionPrefix(r.Table)
	if err != nil {
		return nil, err
	}
	apps, err := appendersFor(schema, r.Columns, 0)
	if err != nil {
		return nil, err
	}
	tn, _ := tableName(r.Table)
	ec := d.ec("read source table")
	ec.Table = tn
	var out source.Rows
	err = d.retry().do(ctx, func() error {
		conn, err := d.db.Conn(ctx)
		if err != nil {
			return mapError(err, ec)
		}
		if _, err := conn.ExecContext(ctx, prefix); err != nil {
			discardConn(conn)
			conn.Close()
			return mapError(err, ec)
		}
		if !r.AtLeast.IsZero() {
			// The table state must include the snapshot's stamp; checked on this session,
			// which may be on a secondary behind the one the stamp was read on.
			if err := sessionReaches(ctx, conn, r.AtLeast, func(err error) error { return mapError(err, ec) }, func(m lsn.LSN) *source.ReplicaBehindError {
				return &source.ReplicaBehindError{Table: r.Schema + "." + r.Name, To: r.AtLeast, MaxLSN: m}
			}, ec.Op); err != nil {
				if _, rerr := conn.ExecContext(ctx, sessionReset); rerr != nil {
					discardConn(conn)
				}
				conn.Close()
				return err
			}
		}
		rows, err := conn.QueryContext(ctx, q, args...)
		if err != nil {
			if _, rerr := conn.ExecContext(ctx, sessionReset); rerr != nil {
				discardConn(conn)
			}
			conn.Close()
			return mapError(err, ec)
		}
		out = newArrowRows(schema, rows, conn, sessionReset, apps, d.readOptions(r.ReadOptions), func(err error) error { return mapError(err, ec) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanKey reads one row of key columns into a source.Key.
func scanKey(rows *sql.Rows, keys []source.Column) (source.Key, error) {
	vals := make([]any, len(keys))
	ptrs := make([]any, len(keys))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	k := make(source.Key, len(keys))
	for i, c := range keys {
		v, err := keyValue(c, vals[i])
		if err != nil {
			return nil, err
		}
		k[i] = v
	}
	return k, nil
}

// queryKeys runs a key statement in a source session and returns its rows as keys.
func (d *DB) queryKeys(ctx context.Context, t source.Table, op string, keys []source.Column, q string, args []any) ([]source.Key, error) {
	tn, _ := tableName(t)
	ec := d.ec(op)
	ec.Table = tn
	var out []source.Key
	err := d.sourceSession(ctx, t, ec, func(conn *sql.Conn) error {
		out = nil
		rows, err := conn.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			k, err := scanKey(rows, keys)
			if err != nil {
				return err
			}
			out = append(out, k)
		}
		return rows.Err()
	})
	return out, err
}

// KeyExtent is S1.
func (d *DB) KeyExtent(ctx context.Context, t source.Table, key source.Column, lo, hi *int64) (min, max any, ok bool, err error) {
	q, args, err := keyExtentSQL(t, key, lo, hi)
	if err != nil {
		return nil, nil, false, err
	}
	keys, err := d.queryKeys(ctx, t, "read key extent", []source.Column{key, key}, q, args)
	if err != nil || len(keys) == 0 || keys[0][0] == nil {
		return nil, nil, false, err
	}
	return keys[0][0], keys[0][1], true, nil
}

// KeyMax is S2.
func (d *DB) KeyMax(ctx context.Context, t source.Table, keys []source.Column) (source.Key, bool, error) {
	q, err := keyMaxSQL(t, keys)
	if err != nil {
		return nil, false, err
	}
	rows, err := d.queryKeys(ctx, t, "read key max", keys, q, nil)
	if err != nil || len(rows) == 0 {
		return nil, false, err
	}
	return rows[0], true, nil
}

// KeyBound is S6.
func (d *DB) KeyBound(ctx context.Context, t source.Table, keys []source.Column, r source.KeyRange, n int64) (source.Key, bool, error) {
	q, args, err := keyBoundSQL(t, keys, r, n)
	if err != nil || q == "" {
		return nil, false, err
	}
	rows, err := d.queryKeys(ctx, t, "seek key bound", keys, q, args)
	if err != nil || len(rows) == 0 {
		return nil, false, err
	}
	return rows[0], true, nil
}

// KeyAfter is the first key strictly after after (keyAfterSQL).
func (d *DB) KeyAfter(ctx context.Context, t source.Table, keys []source.Column, after source.Key) (source.Key, bool, error) {
	q, args, err := keyAfterSQL(t, keys, after)
	if err != nil {
		return nil, false, err
	}
	rows, err := d.queryKeys(ctx, t, "seek key after", keys, q, args)
	if err != nil || len(rows) == 0 {
		return nil, false, err
	}
	return rows[0], true, nil
}

// KeyTiles is S3.
func (d *DB) KeyTiles(ctx context.Context, t source.Table, keys []source.Column, n int) ([]source.Key, error) {
	q, args, err := keyTilesSQL(t, keys, n)
	if err != nil {
		return nil, err
	}
	return d.queryKeys(ctx, t, "read key tiles", keys, q, args)
}

// KeyBuckets is S4.
func (d *DB) KeyBuckets(ctx context.Context, t source.Table, key source.Column, width int64, lo, hi *int64) ([]source.Bucket, error) {
	q, args, err := keyBucketsSQL(t, key, width, lo, hi)
	if err != nil {
		return nil, err
	}
	tn, _ := tableName(t)
	ec := d.ec("count key buckets")
	ec.Table = tn
	var out []source.Bucket
	err = d.sourceSession(ctx, t, ec, func(conn *sql.Conn) error {
		out = nil
		rows, err := conn.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b source.Bucket
			var sum string
			if err := rows.Scan(&b.Index, &b.Rows, &sum); err != nil {
				return fmt.Errorf("scan bucket: %w", err)
			}
			n, ok := new(big.Int).SetString(sum, 10)
			if !ok {
				return fmt.Errorf("scan bucket: key sum %q is not an integer", sum)
			}
			b.KeySum = n.String()
			out = append(out, b)
		}
		return rows.Err()
	})
	return out, err
}
