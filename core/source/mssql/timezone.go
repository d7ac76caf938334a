package mssql

import (
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// Commit-time conversion (TZ1–TZ7 of docs/reference/sqlserver-cdc.md §2.3–§2.6).
// cdc.lsn_time_mapping.tran_end_time is a zoneless datetime on the server's local clock;
// every commit time this package returns is UTC, with millisecond precision.

// SourceTimeZone values besides a Windows zone name.
const (
	// TimeZoneAuto detects: CURRENT_TIMEZONE_ID() on SQL Server 2022+ and Azure, else the
	// server's current fixed offset with a warning.
	TimeZoneAuto = "auto"
	// TimeZoneUTC says the server clock is UTC.
	TimeZoneUTC = "UTC"
)

// fallBackShift is the look-ahead of the fall-back rules, in hours (the original's
// _SHIFT_HOURS): no zone changes its offset twice within it.
const fallBackShift = 3

// zoneKind is how tran_end_time converts to UTC.
type zoneKind int

const (
	zoneUTC   zoneKind = iota // the server clock is UTC: cast only
	zoneNamed                 // a Windows zone: AT TIME ZONE, fall-back aware
	zoneFixed                 // pre-2022 fallback: the server's current offset, exact only without DST
)

// zone is the resolved source time zone.
type zone struct {
	kind zoneKind
	// name is the Windows zone name (zoneNamed).
	name string
}

// String names the zone as the facts and logs show it.
func (z zone) String() string {
	switch z.kind {
	case zoneUTC:
		return "UTC"
	case zoneNamed:
		return z.name
	default:
		return "server offset (DATEPART(TZOFFSET, SYSDATETIMEOFFSET()))"
	}
}

// parseZoneOption turns the sourceTimeZone option into a zone; auto (or "") returns
// ok false: detect on the server. A bad name is a *source.InvalidArgumentError.
func parseZoneOption(opt string) (z zone, ok bool, err error) {
	switch {
	case opt == "" || strings.EqualFold(opt, TimeZoneAuto):
		return zone{}, false, nil
	case strings.EqualFold(opt, TimeZoneUTC):
		return zone{kind: zoneUTC}, true, nil
	}
	if err := checkZoneName(opt); err != nil {
		return zone{}, false, err
	}
	return zone{kind: zoneNamed, name: opt}, true, nil
}

// zoneFromServer turns CURRENT_TIMEZONE_ID()'s answer into a zone.
func zoneFromServer(id string) (zone, error) {
	if strings.EqualFold(id, "UTC") || strings.EqualFold(id, "Coordinated Universal Time") {
		return zone{kind: zoneUTC}, nil
	}
	if err := checkZoneName(id); err != nil {
		return zone{}, err
	}
	return zone{kind: zoneNamed, name: id}, nil
}

// TZ1: can the server name its zone? Decided by version, not by trying the function:
// CURRENT_TIMEZONE_ID() fails to compile before 2022 even in a dead CASE branch.
const sqlCanNameZone = `SELECT CASE WHEN CAST(SERVERPROPERTY('ProductMajorVersion') AS int) >= 16 ` +
	`OR CAST(SERVERPROPERTY('EngineEdition') AS int) IN (5, 8) THEN 1 ELSE 0 END`

// TZ2: the zone name, only sent when sqlCanNameZone said 1.
const sqlZoneID = `SELECT CURRENT_TIMEZONE_ID()`

// TZ3: the server's current offset in minutes east of UTC, for the fallback warning.
const sqlServerOffset = `SELECT DATEPART(TZOFFSET, SYSDATETIMEOFFSET())`

// offsetAt is the zone's offset in minutes at local time t: DATEPART(TZOFFSET, t AT TIME
// ZONE z). On a fall-back's repeated hour it is the offset before the change.
func offsetAt(zoneParam, t string) string {
	return "DATEPART(TZOFFSET, " + t + " AT TIME ZONE " + zoneParam + ")"
}

// commitTS converts tran_end_time to UTC. Build one per query with newCommitTS.
type commitTS struct {
	z         zone
	zoneParam string // the bound zone name (zoneNamed)
	// offset, when set, is TZ4's single offset for the whole range (minutes east of UTC).
	offsetParam string
	// drops, when set, is the VALUES list of TZ5 (zoneNamed without a range offset).
	drops string
}

// newCommitTS prepares the conversion of one query. For a named zone, offset is TZ4's
// answer (nil: none) and drops TZ5's (empty: none); both are bound into p.
func newCommitTS(p *params, z zone, offset *int, drops []drop) commitTS {
	c := commitTS{z: z}
	if z.kind != zoneNamed {
		return c
	}
	if offset != nil {
		c.offsetParam = p.add(int32(*offset)) // DATEADD takes an int
		return c
	}
	c.zoneParam = p.add(z.name)
	if len(drops) > 0 {
		rows := make([]string, len(drops))
		for i, d := range drops {
			rows[i] = "(" + p.lsn(d.LSN) + ", CONVERT(datetime, " + p.add(d.Time) + ", 121))"
		}
		c.drops = "(VALUES " + strings.Join(rows, ", ") + ") AS [__$d]([l], [t])"
	}
	return c
}

// expr is the UTC datetime2(3) of the commit whose tran_end_time is t and whose LSN is l
// (l is only used by the fall-back-aware form).
func (c commitTS) expr(t, l string) string {
	switch {
	case c.z.kind == zoneUTC:
		return "CAST(" + t + " AS datetime2(3))"
	case c.z.kind == zoneFixed:
		return "CAST(DATEADD(minute, -DATEPART(TZOFFSET, SYSDATETIMEOFFSET()), " + t + ") AS datetime2(3))"
	case c.offsetParam != "":
		return "CAST(DATEADD(minute, -" + c.offsetParam + ", " + t + ") AS datetime2(3))"
	}
	plain := "CAST((" + t + " AT TIME ZONE " + c.zoneParam + ") AT TIME ZONE 'UTC' AS datetime2(3))"
	if c.drops == "" {
		return plain
	}
	later := fmt.Sprintf("DATEADD(hour, %d, %s)", fallBackShift, t)
	second := "CAST(DATEADD(minute, -" + offsetAt(c.zoneParam, later) + ", " + t + ") AS datetime2(3))"
	return "CASE WHEN " + repeated(c.zoneParam, t) +
		" AND EXISTS (SELECT 1 FROM " + c.drops + " WHERE [__$d].[l] <= " + l +
		fmt.Sprintf(" AND [__$d].[t] > DATEADD(hour, -%d, %s))", fallBackShift, t) +
		" THEN " + second + " ELSE " + plain + " END"
}

// repeated is "local time t falls in a fall-back's repeated hour": the offset 3 h later is
// smaller than the offset at t, and t moved by the difference reads the later offset.
func repeated(zoneParam, t string) string {
	now := offsetAt(zoneParam, t)
	later := offsetAt(zoneParam, fmt.Sprintf("DATEADD(hour, %d, %s)", fallBackShift, t))
	return "(" + later + " < " + now + " AND " +
		offsetAt(zoneParam, "DATEADD(minute, "+now+" - "+later+", "+t+")") + " = " + later + ")"
}

// drop is a commit whose tran_end_time went back more than a minute against the previous
// commit in LSN order, inside a repeated hour: the clock fell back before it.
type drop struct {
	LSN lsn.LSN
	// Time is tran_end_time as CONVERT(varchar(23), t, 121) text, bound back unchanged.
	Time string
}

// rangeOffsetSQL is TZ4: one offset for the whole range [from, to], or NULL. When the
// range spans under 7 days and the offset 3 h before its first commit equals the offset
// 3 h after its last, no change happened in between (no zone changes twice in a week).
func rangeOffsetSQL(z zone, from, to lsn.LSN) (string, []any) {
	var p params
	zp := p.add(z.name)
	lo, hi := p.lsn(from), p.lsn(to)
	before := offsetAt(zp, fmt.Sprintf("DATEADD(hour, -%d, r.[t0])", fallBackShift))
	after := offsetAt(zp, fmt.Sprintf("DATEADD(hour, %d, r.[t1])", fallBackShift))
	q := "SELECT CASE WHEN DATEDIFF(day, r.[t0], r.[t1]) < 7 AND " + before + " = " + after + " THEN " + after + " END " +
		"FROM (SELECT MIN(m.tran_end_time) AS [t0], MAX(m.tran_end_time) AS [t1] FROM cdc.lsn_time_mapping m " +
		"WHERE m.start_lsn BETWEEN " + lo + " AND " + hi + ") AS r"
	return q, p.args
}

// dropsSQL is TZ5: the drops that can affect commits in [from, to], starting from the
// newest commit 3 h or more before the range's first commit (a seek on the time index).
// Rows: drop LSN as varchar(22) style 1, tran_end_time as varchar(23) style 121.
func dropsSQL(z zone, from, to lsn.LSN) (string, []any) {
	var p params
	zp := p.add(z.name)
	lo, hi := p.lsn(from), p.lsn(to)
	t := "x.tran_end_time"
	q := "SELECT " + lsnOut("x.start_lsn") + ", CONVERT(varchar(23), " + t + ", 121) " +
		"FROM (SELECT MIN(m.tran_end_time) AS [t0] FROM cdc.lsn_time_mapping m WHERE m.start_lsn BETWEEN " + lo + " AND " + hi + ") AS r " +
		"CROSS APPLY (SELECT ISNULL((SELECT TOP (1) b.start_lsn FROM cdc.lsn_time_mapping b " +
		fmt.Sprintf("WHERE b.tran_end_time <= DATEADD(hour, -%d, r.[t0]) ORDER BY b.tran_end_time DESC), %s) AS [lo]) AS l ", fallBackShift, zeroLSNLiteral) +
		"CROSS APPLY (SELECT m.start_lsn, m.tran_end_time, LAG(m.tran_end_time) OVER (ORDER BY m.start_lsn) AS [prev] " +
		"FROM cdc.lsn_time_mapping m WHERE m.start_lsn >= l.[lo] AND m.start_lsn <= " + hi + ") AS x " +
		"WHERE r.[t0] IS NOT NULL AND " + t + " < DATEADD(minute, -1, x.[prev]) AND " + repeated(zp, t) +
		" ORDER BY x.start_lsn"
	return q, p.args
}

// serverClock is TZ7's UTC → server-clock conversion of a whole-second UTC time bound as
// text: biased earlier, because an earlier LSN replays and a later one would skip.
func serverClock(p *params, z zone, utc time.Time) string {
	u := "CONVERT(datetime2(0), " + p.add(utc.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05")) + ", 126)"
	switch z.kind {
	case zoneUTC:
		return u
	case zoneFixed:
		return "DATEADD(minute, DATEPART(TZOFFSET, SYSDATETIMEOFFSET()), " + u + ")"
	}
	zp := p.add(z.name)
	local := func(x string) string {
		return "CAST((" + x + " AT TIME ZONE 'UTC') AT TIME ZONE " + zp + " AS datetime2(0))"
	}
	a := local(u)
	b := "DATEADD(hour, -1, " + local("DATEADD(hour, 1, "+u+")") + ")"
	return "CASE WHEN " + a + " <= " + b + " THEN " + a + " ELSE " + b + " END"
}
