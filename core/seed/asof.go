package seed

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// AsOf is where the copy ends: every commit at or before it is in the copy (later ones
// may be too). Either a UTC time or an LSN (docs/seed.md § as_of).
type AsOf struct {
	// Time is the time the copy started being read, UTC (zero when LSN is set).
	Time time.Time
	// LSN is an LSN recorded on SQL Server before the copy started (zero when Time is set).
	LSN lsn.LSN
}

// ParseAsOf reads as_of: an LSN in its text form (0x and 20 hex digits, e.g. as
// SELECT CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1) prints it), or a time in RFC 3339
// (an offset is converted to UTC; a time without one is UTC), also with a space for the T,
// or a date alone (midnight UTC). Anything else is a ConfigError on as_of.
func ParseAsOf(s string) (AsOf, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return AsOf{}, configErr("as_of", "missing: give the time the copy started being read (RFC 3339, UTC) or an LSN recorded before it (0x...)")
	}
	if strings.HasPrefix(strings.ToLower(s), "0x") {
		l, err := lsn.Parse(s)
		if err != nil || l.IsZero() {
			return AsOf{}, configErr("as_of", fmt.Sprintf("%q is not an LSN (0x and 20 hex digits)", s))
		}
		return AsOf{LSN: l}, nil
	}
	t, ok := parseTextTime(s)
	if !ok {
		return AsOf{}, configErr("as_of", fmt.Sprintf("%q is neither an RFC 3339 time (2026-09-30T02:00:00Z) nor an LSN (0x...)", s))
	}
	return AsOf{Time: t}, nil
}

// String is as_of as given back: the LSN, or the time in RFC 3339 UTC.
func (a AsOf) String() string {
	if !a.LSN.IsZero() {
		return a.LSN.String()
	}
	return asOfText(a.Time)
}

// lsnOf maps as_of to the seed's LSN L: an LSN is taken as is; a time is the last commit at
// or before it in cdc.lsn_time_mapping, on SQL Server's clock (sourceTimeZone), to the
// second, an hour earlier inside the hour before a daylight-saving fall-back
// (Source.LSNAtOrBefore, TZ7 of docs/reference/sqlserver-cdc.md §2.6): every
// approximation errs earlier, which only replays commits. ok is false when no commit is
// that old any more.
func (d Deps) lsnOf(ctx context.Context, a AsOf) (lsn.LSN, bool, error) {
	if !a.LSN.IsZero() {
		return a.LSN, true, nil
	}
	l, ok, err := d.Source.LSNAtOrBefore(ctx, a.Time)
	if err != nil {
		return lsn.Zero, false, fmt.Errorf("map as_of %s to an LSN: %w", a, err)
	}
	return l, ok, nil
}

// checkNotFuture refuses a time as_of later than SQL Server's clock now (the clock the
// mapping is on): no copy can have started being read then, and the mapping would take
// the newest commit, stamping the copy later than it was read, so the commits between
// were never read (a mistyped year). An LSN as_of is checked against max_lsn instead
// (docs/decisions/0023-future-as-of-on-the-server-clock.md).
func (d Deps) checkNotFuture(ctx context.Context, a AsOf) error {
	if !a.LSN.IsZero() {
		return nil
	}
	now, err := d.Source.ServerNow(ctx)
	if err != nil {
		return fmt.Errorf("read SQL Server's clock for as_of: %w", err)
	}
	if !a.Time.After(now) {
		return nil
	}
	return configErr("as_of", fmt.Sprintf("%s is later than SQL Server's clock now (%s): give the time the copy started being read, on SQL Server's clock (SELECT SYSUTCDATETIME() as the export starts), or an LSN recorded before it",
		a, asOfText(now)))
}
