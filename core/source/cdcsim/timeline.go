package cdcsim

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// searchEntries is the index of the first entry with LSN > l.
func searchEntries(m []commitEntry, l lsn.LSN) int {
	i, found := slices.BinarySearchFunc(m, l, func(e commitEntry, t lsn.LSN) int { return e.lsn.Compare(t) })
	if found {
		i++
	}
	return i
}

func (db *DB) maxLSNLocked() lsn.LSN {
	if len(db.timeline) == 0 {
		return lsn.Zero
	}
	return db.timeline[len(db.timeline)-1].lsn
}

func (db *DB) mapping() []commitEntry { return db.timeline[db.purged:] }

// begin is the common start of a Source call: context, closed DB, CDC enabled, faults.
func (db *DB) begin(ctx context.Context, method string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := db.enter(method)
	if err != nil {
		return err
	}
	if err := f.callError(method, "", false); err != nil {
		return err
	}
	if db.cfg.CDCDisabled {
		return &source.CDCNotEnabledError{Database: db.cfg.Database}
	}
	return nil
}

// MaxLSN implements source.Source: the newest mapping entry capture wrote.
func (db *DB) MaxLSN(ctx context.Context) (lsn.LSN, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "MaxLSN"); err != nil {
		return lsn.Zero, err
	}
	return db.maxLSNLocked(), nil
}

// ServerNow implements source.Source: the simulated clock.
func (db *DB) ServerNow(ctx context.Context) (time.Time, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "ServerNow"); err != nil {
		return time.Time{}, err
	}
	return db.now, nil
}

// MinLSN implements source.Source.
func (db *DB) MinLSN(ctx context.Context, captureInstance string) (lsn.LSN, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "MinLSN"); err != nil {
		return lsn.Zero, err
	}
	ci, err := db.instanceLocked(captureInstance)
	var ia *source.InvalidArgumentError
	if errors.As(err, &ia) {
		return lsn.Zero, err
	}
	if err == nil && !ci.min.IsZero() {
		return ci.min, nil
	}
	return lsn.Zero, &source.CaptureInstanceNotFoundError{Name: captureInstance}
}

func msUTC(t time.Time) time.Time { return t.Round(time.Millisecond).UTC() }

// CommitTime implements source.Source: exact mapping rows only.
func (db *DB) CommitTime(ctx context.Context, l lsn.LSN) (time.Time, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "CommitTime"); err != nil {
		return time.Time{}, false, err
	}
	m := db.mapping()
	i := searchEntries(m, l)
	if i == 0 || m[i-1].lsn != l {
		return time.Time{}, false, nil
	}
	return msUTC(m[i-1].utc), true, nil
}

// CommitAtOrBefore implements source.Source.
func (db *DB) CommitAtOrBefore(ctx context.Context, l lsn.LSN) (source.Commit, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "CommitAtOrBefore"); err != nil {
		return source.Commit{}, false, err
	}
	m := db.mapping()
	i := searchEntries(m, l)
	if i == 0 {
		return source.Commit{}, false, nil
	}
	return source.Commit{LSN: m[i-1].lsn, Time: msUTC(m[i-1].utc)}, true, nil
}

// LSNAtOrBefore implements source.Source like sys.fn_cdc_map_time_to_lsn('largest less
// than or equal'): t is truncated to whole seconds and turned into the server's local clock
// biased earlier (the smaller of local(t) and local(t+1h)-1h, so a fall-back never moves it
// later); the answer is the largest LSN whose tran_end_time is at or before that.
func (db *DB) LSNAtOrBefore(ctx context.Context, t time.Time) (lsn.LSN, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "LSNAtOrBefore"); err != nil {
		return lsn.Zero, false, err
	}
	if t.IsZero() {
		return lsn.Zero, false, &source.InvalidArgumentError{Arg: "time", Reason: "zero time"}
	}
	t = t.UTC().Truncate(time.Second)
	bound := db.wall(t)
	if alt := db.wall(t.Add(time.Hour)).Add(-time.Hour); alt.Before(bound) {
		bound = alt
	}
	// MAX(start_lsn) WHERE tran_end_time <= bound, as the function computes it.
	var out lsn.LSN
	ok := false
	for _, e := range db.mapping() {
		if !e.local.After(bound) {
			out, ok = e.lsn, true
		}
	}
	return out, ok, nil
}

// wall is the server's wall clock for t, without rounding.
func (db *DB) wall(t time.Time) time.Time {
	l := t.In(db.loc)
	y, mo, d := l.Date()
	h, mi, s := l.Clock()
	return time.Date(y, mo, d, h, mi, s, l.Nanosecond(), time.UTC)
}

// NthCommitAfter implements source.Source: counted over every mapping row, idle entries
// and other tables' commits included.
func (db *DB) NthCommitAfter(ctx context.Context, after lsn.LSN, n int) (lsn.LSN, bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.begin(ctx, "NthCommitAfter"); err != nil {
		return lsn.Zero, false, err
	}
	if n < 1 {
		return lsn.Zero, false, &source.InvalidArgumentError{Arg: "n", Reason: "must be at least 1"}
	}
	m := db.mapping()
	i := searchEntries(m, after)
	if i >= len(m) {
		return lsn.Zero, false, nil
	}
	j := min(i+n-1, len(m)-1)
	return m[j].lsn, true, nil
}
