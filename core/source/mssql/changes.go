package mssql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// ReadChanges is C1: cdc.[<ci>_CT] over [r.From, r.To] left-joined to cdc.lsn_time_mapping, in
// (__$start_lsn, __$command_id, __$seqval, __$operation) order, streamed as record batches
// of bronze.ChangeSchema(r.Columns). No isolation prefix and no lock timeout. A column the
// instance does not capture is read as NULL; one dropped from the source table (Present
// false) is read from the change table, which keeps the values captured before the DROP. A read the login may
// not make is a *source.PermissionError naming the GRANT (after the P6 probe). The Rows
// implement source.NetworkWaiter: the session's ASYNC_NETWORK_IO growth over the read.
//
// Before reading, the session that reads checks that its own sys.fn_cdc_get_max_lsn() is
// at least r.To; a session behind it is a *source.ReplicaBehindError inside a
// *source.TransientError, retried on a new session.
func (d *DB) ReadChanges(ctx context.Context, r source.ChangeRead) (source.Rows, error) {
	if d.closed.Load() {
		return nil, source.ErrClosed
	}
	if err := checkCaptureInstance(r.CaptureInstance); err != nil {
		return nil, err
	}
	if err := r.ReadOptions.Check(); err != nil {
		return nil, err
	}
	schema, err := bronze.ChangeSchema(r.Columns)
	if err != nil {
		return nil, err
	}
	if r.To.Less(r.From) {
		return emptyRows(schema), nil
	}
	captured, err := d.CapturedColumns(ctx, r.CaptureInstance)
	if err != nil {
		return nil, err
	}
	has := make(map[string]bool, len(captured))
	for _, c := range captured {
		has[strings.ToLower(c.Name)] = true
	}
	cols := make([]changeColumn, len(r.Columns))
	for i, c := range r.Columns {
		// Present is not consulted: a column dropped from the source table stays in the
		// change table with the values captured before the DROP
		// (docs/reference/sqlserver-cdc.md §6.2).
		cols[i] = changeColumn{Name: c.Name, Present: has[strings.ToLower(c.Name)], DataType: c.DataType}
	}
	var p params
	ts, err := d.commitTSFor(ctx, &p, r.From, r.To)
	if err != nil {
		return nil, err
	}
	q, err := readChangesSQL(&p, ts, r.CaptureInstance, cols, r.From, r.To, r.WithoutCommandID)
	if err != nil {
		return nil, err
	}
	apps, err := appendersFor(schema, r.Columns, 5)
	if err != nil {
		return nil, err
	}
	ec := d.ec("read change table")
	ec.CaptureInstance = r.CaptureInstance
	mapErr := func(err error) error { return d.changeTableError(ctx, err, ec) }
	// The read holds its connection so that the session's network wait can be read on
	// the same session before and after it (docs/reference/sqlserver-cdc.md §11); a failed
	// reading only loses the metric.
	var out *arrowRows
	err = d.retry().do(ctx, func() error {
		conn, err := d.db.Conn(ctx)
		if err != nil {
			return mapErr(err)
		}
		// The range was planned against a max_lsn read on another session; this session
		// may be on a secondary behind it (read-only routing), where the read would come
		// back short and look complete (docs/reference/sqlserver-cdc.md §13).
		if err := sessionReaches(ctx, conn, r.To, mapErr, func(m lsn.LSN) *source.ReplicaBehindError {
			return &source.ReplicaBehindError{CaptureInstance: r.CaptureInstance, To: r.To, MaxLSN: m}
		}, ec.Op); err != nil {
			conn.Close()
			return err
		}
		before, werr := sessionWait(ctx, conn)
		rows, err := conn.QueryContext(ctx, q, p.args...)
		if err != nil {
			conn.Close()
			return mapErr(err)
		}
		out = newArrowRows(schema, rows, conn, "", apps, d.readOptions(r.ReadOptions), mapErr)
		out.wait = &netWait{before: before, beforeOK: werr == nil}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// appendersFor builds one appender per schema field: the first meta fields are the change
// metadata columns, then one per column.
func appendersFor(schema *arrow.Schema, cols []source.Column, meta int) ([]appender, error) {
	apps := make([]appender, schema.NumFields())
	for i, f := range schema.Fields() {
		sqlType, prec := "", 0
		if i >= meta {
			c := cols[i-meta]
			sqlType, prec = c.DataType, c.DatetimePrecision
		}
		a, err := newAppender(f.Name, f.Type, sqlType, prec)
		if err != nil {
			return nil, err
		}
		apps[i] = a
	}
	return apps, nil
}

// changeTableError maps a change-table read error; a denial naming the change table runs
// the P6 probe: no grant is a *source.PermissionError, an instance that is gone a
// *source.CaptureInstanceNotFoundError, anything else the mapped original error.
func (d *DB) changeTableError(ctx context.Context, err error, ec errContext) error {
	if se, ok := serverError(err); ok && se.Number == errInvalidColumn && strings.Contains(strings.ToLower(se.Message), "__$command_id") {
		return &source.CommandIDMissingError{CaptureInstance: ec.CaptureInstance}
	}
	if !isChangeTableDenied(err, ec.CaptureInstance) {
		return mapError(err, ec)
	}
	q, args := permissionProbeSQL(ec.CaptureInstance)
	var perm sql.NullInt64
	var user sql.NullString
	if _, perr := d.queryRow(ctx, d.ec("probe change table permission"), q, args, &perm, &user); perr != nil {
		return mapError(err, ec)
	}
	switch {
	case !perm.Valid:
		return &source.CaptureInstanceNotFoundError{Name: ec.CaptureInstance}
	case perm.Int64 == 0:
		obj := changeTable(ec.CaptureInstance)
		u := user.String
		if u == "" {
			u = ec.User
		}
		return &source.PermissionError{Object: obj, Grant: grantText(obj, u)}
	}
	return mapError(err, ec)
}

// SplitChanges is C2. Tiles whose last commit is the same (one commit spanning tiles) are
// returned once, with their rows added together.
func (d *DB) SplitChanges(ctx context.Context, ci string, from, to lsn.LSN, n int) ([]source.Tile, error) {
	if n < 1 {
		return nil, &source.InvalidArgumentError{Arg: "n", Reason: "must be at least 1"}
	}
	q, args, err := splitChangesSQL(ci, from, to, n)
	if err != nil {
		return nil, err
	}
	if to.Less(from) {
		return nil, nil
	}
	ec := d.ec("split change range")
	ec.CaptureInstance = ci
	recs, err := d.queryPositional(ctx, ec, q, args)
	if err != nil {
		return nil, d.changeTableError(ctx, err, ec)
	}
	var out []source.Tile
	for _, r := range recs {
		last, err := lsn.Parse(asString(r[0]))
		if err != nil {
			return nil, fmt.Errorf("split change range: %w", err)
		}
		rows, _ := r[1].(int64)
		if k := len(out); k > 0 && out[k-1].Last == last {
			out[k-1].Rows += rows
			continue
		}
		out = append(out, source.Tile{Last: last, Next: last.Next(), Rows: rows})
	}
	return out, nil
}

// sessionReaches checks on conn that the session's own sys.fn_cdc_get_max_lsn() is at least
// want: a session routed to a secondary whose redo is behind would read a short change
// range, or a table state older than a snapshot's stamp, and both would look complete
// (docs/reference/sqlserver-cdc.md §13). Behind is behind(max) inside a
// *source.TransientError, so the read is retried on a new session.
func sessionReaches(ctx context.Context, conn *sql.Conn, want lsn.LSN, mapErr func(error) error, behind func(lsn.LSN) *source.ReplicaBehindError, op string) error {
	var ms sql.NullString
	if err := conn.QueryRowContext(ctx, sqlMaxLSN).Scan(&ms); err != nil {
		return mapErr(err)
	}
	m, err := parseLSNText(ms)
	if err != nil {
		return err
	}
	if m.Less(want) {
		return &source.TransientError{Op: op, Err: behind(m)}
	}
	return nil
}
