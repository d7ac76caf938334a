package mssql

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// sourceZone resolves the source time zone once (docs/reference/sqlserver-cdc.md §2.3): the
// sourceTimeZone option when it names a zone; else TZ1 decides by version whether
// CURRENT_TIMEZONE_ID() exists (2022+, Azure SQL Database, Managed Instance) and TZ2 asks it;
// else the server's current fixed offset, with a warning that it is exact only for zones
// without DST.
func (d *DB) sourceZone(ctx context.Context) (zone, error) {
	d.zoneMu.Lock()
	defer d.zoneMu.Unlock()
	if d.zone != nil {
		return *d.zone, nil
	}
	ec := d.ec("detect source time zone")
	var can int64
	if _, err := d.queryRow(ctx, ec, sqlCanNameZone, nil, &can); err != nil {
		return zone{}, err
	}
	var z zone
	if can == 1 {
		var id sql.NullString
		if _, err := d.queryRow(ctx, ec, sqlZoneID, nil, &id); err != nil {
			return zone{}, err
		}
		var err error
		if z, err = zoneFromServer(id.String); err != nil {
			return zone{}, err
		}
	} else {
		var off int64
		if _, err := d.queryRow(ctx, ec, sqlServerOffset, nil, &off); err != nil {
			return zone{}, err
		}
		z = zone{kind: zoneFixed}
		d.log.Warn("source time zone: the server cannot name its zone (before SQL Server 2022); converting commit times with its current offset, which is wrong across a daylight-saving change: set sourceTimeZone",
			"offset", fixedOffsetName(int(off)))
	}
	d.zone = &z
	return z, nil
}

// fixedOffsetName is "UTC±HH:MM" for an offset in minutes east of UTC.
func fixedOffsetName(min int) string {
	sign := '+'
	if min < 0 {
		sign, min = '-', -min
	}
	return fmt.Sprintf("UTC%c%02d:%02d", sign, min/60, min%60)
}

// commitTSFor prepares the UTC conversion of tran_end_time for a statement over commits
// in [from, to]: for a named zone TZ4's single range offset when it exists, else TZ5's
// drops, bound into p; for UTC and the fixed offset nothing to ask.
func (d *DB) commitTSFor(ctx context.Context, p *params, from, to lsn.LSN) (commitTS, error) {
	z, err := d.sourceZone(ctx)
	if err != nil {
		return commitTS{}, err
	}
	if z.kind != zoneNamed {
		return newCommitTS(p, z, nil, nil), nil
	}
	ec := d.ec("read time zone offsets")
	q, args := rangeOffsetSQL(z, from, to)
	var off sql.NullInt64
	if _, err := d.queryRow(ctx, ec, q, args, &off); err != nil {
		return commitTS{}, err
	}
	if off.Valid {
		o := int(off.Int64)
		return newCommitTS(p, z, &o, nil), nil
	}
	q, args = dropsSQL(z, from, to)
	recs, err := d.queryPositional(ctx, ec, q, args)
	if err != nil {
		return commitTS{}, err
	}
	drops := make([]drop, 0, len(recs))
	for _, r := range recs {
		l, err := lsn.Parse(asString(r[0]))
		if err != nil {
			return commitTS{}, fmt.Errorf("read time zone drops: %w", err)
		}
		drops = append(drops, drop{LSN: l, Time: asString(r[1])})
	}
	return newCommitTS(p, z, nil, drops), nil
}

// queryPositional is queryRecords by column position.
func (d *DB) queryPositional(ctx context.Context, ec errContext, q string, args []any) ([][]any, error) {
	if d.closed.Load() {
		return nil, source.ErrClosed
	}
	var out [][]any
	err := d.retry().do(ctx, func() error {
		out = nil
		rows, err := d.db.QueryContext(ctx, q, args...)
		if err != nil {
			return mapError(err, ec)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return mapError(err, ec)
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return mapError(err, ec)
			}
			out = append(out, vals)
		}
		return mapError(rows.Err(), ec)
	})
	return out, err
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// MaxLSN is M1. NULL (capture never wrote) is the zero LSN.
func (d *DB) MaxLSN(ctx context.Context) (lsn.LSN, error) {
	var s sql.NullString
	if _, err := d.queryRow(ctx, d.ec("read max lsn"), sqlMaxLSN, nil, &s); err != nil {
		return lsn.Zero, err
	}
	return parseLSNText(s)
}

// ServerNow is SYSUTCDATETIME(), UTC.
func (d *DB) ServerNow(ctx context.Context) (time.Time, error) {
	var t time.Time
	if _, err := d.queryRow(ctx, d.ec("read the server's clock"), sqlServerNow, nil, &t); err != nil {
		return time.Time{}, err
	}
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC), nil
}

// MinLSN is M2. NULL or zero is a *source.CaptureInstanceNotFoundError.
func (d *DB) MinLSN(ctx context.Context, ci string) (lsn.LSN, error) {
	if err := checkCaptureInstance(ci); err != nil {
		return lsn.Zero, err
	}
	ec := d.ec("read min lsn")
	ec.CaptureInstance = ci
	q, args := minLSNSQL(ci)
	var s sql.NullString
	if _, err := d.queryRow(ctx, ec, q, args, &s); err != nil {
		return lsn.Zero, err
	}
	l, err := parseLSNText(s)
	if err != nil {
		return lsn.Zero, err
	}
	if l.IsZero() {
		return lsn.Zero, &source.CaptureInstanceNotFoundError{Name: ci}
	}
	return l, nil
}

// CommitTime is TZ6 with an exact match: ok false when l is no commit's.
func (d *DB) CommitTime(ctx context.Context, l lsn.LSN) (time.Time, bool, error) {
	c, ok, err := d.commitAt(ctx, l, false)
	return c.Time, ok, err
}

// CommitAtOrBefore is TZ6's "last commit at or before l". For a named zone the commit's
// LSN is found first, so its time converts with the fall-back rules of its own range.
func (d *DB) CommitAtOrBefore(ctx context.Context, l lsn.LSN) (source.Commit, bool, error) {
	z, err := d.sourceZone(ctx)
	if err != nil {
		return source.Commit{}, false, err
	}
	if z.kind != zoneNamed {
		return d.commitAt(ctx, l, true)
	}
	var p params
	q := "SELECT TOP (1) " + lsnOut("m.start_lsn") + " FROM cdc.lsn_time_mapping m WHERE m.start_lsn <= " + p.lsn(l) + " ORDER BY m.start_lsn DESC"
	var s sql.NullString
	found, err := d.queryRow(ctx, d.ec("find commit"), q, p.args, &s)
	if err != nil || !found || !s.Valid {
		return source.Commit{}, false, err
	}
	c, err := lsn.Parse(s.String)
	if err != nil {
		return source.Commit{}, false, fmt.Errorf("find commit: %w", err)
	}
	return d.commitAt(ctx, c, false)
}

func (d *DB) commitAt(ctx context.Context, l lsn.LSN, atOrBefore bool) (source.Commit, bool, error) {
	var p params
	ts, err := d.commitTSFor(ctx, &p, l, l)
	if err != nil {
		return source.Commit{}, false, err
	}
	q := commitTimeSQL(&p, ts, l, atOrBefore)
	var s sql.NullString
	var t sql.NullTime
	found, err := d.queryRow(ctx, d.ec("read commit time"), q, p.args, &s, &t)
	if err != nil || !found || !s.Valid || !t.Valid {
		return source.Commit{}, false, err
	}
	c, err := lsn.Parse(s.String)
	if err != nil {
		return source.Commit{}, false, fmt.Errorf("read commit time: %w", err)
	}
	return source.Commit{LSN: c, Time: wallUTC(t.Time)}, true, nil
}

// LSNAtOrBefore is TZ7. ok is false when the function returns NULL or the zero LSN.
func (d *DB) LSNAtOrBefore(ctx context.Context, t time.Time) (lsn.LSN, bool, error) {
	if t.IsZero() {
		return lsn.Zero, false, &source.InvalidArgumentError{Arg: "time", Reason: "zero time"}
	}
	z, err := d.sourceZone(ctx)
	if err != nil {
		return lsn.Zero, false, err
	}
	q, args := timeToLSNSQL(z, t)
	var s sql.NullString
	if _, err := d.queryRow(ctx, d.ec("map time to lsn"), q, args, &s); err != nil {
		return lsn.Zero, false, err
	}
	l, err := parseLSNText(s)
	if err != nil || l.IsZero() {
		return lsn.Zero, false, err
	}
	return l, true, nil
}

// NthCommitAfter is M5.
func (d *DB) NthCommitAfter(ctx context.Context, after lsn.LSN, n int) (lsn.LSN, bool, error) {
	if n < 1 {
		return lsn.Zero, false, &source.InvalidArgumentError{Arg: "n", Reason: "must be at least 1"}
	}
	q, args := nthCommitSQL(after, n)
	var s sql.NullString
	if _, err := d.queryRow(ctx, d.ec("count commits"), q, args, &s); err != nil {
		return lsn.Zero, false, err
	}
	l, err := parseLSNText(s)
	if err != nil || l.IsZero() {
		return lsn.Zero, false, err
	}
	return l, true, nil
}
