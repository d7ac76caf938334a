package mssql

import (
	"strings"
	"testing"
	"time"
)

func TestParseZoneOption(t *testing.T) {
	for _, c := range []struct {
		in     string
		kind   zoneKind
		name   string
		detect bool
	}{
		{"", 0, "", true},
		{"auto", 0, "", true},
		{"AUTO", 0, "", true},
		{"UTC", zoneUTC, "", false},
		{"utc", zoneUTC, "", false},
		{"E. South America Standard Time", zoneNamed, "E. South America Standard Time", false},
	} {
		z, ok, err := parseZoneOption(c.in)
		if err != nil || ok == c.detect || (ok && (z.kind != c.kind || z.name != c.name)) {
			t.Errorf("parseZoneOption(%q) = %+v, %v, %v", c.in, z, ok, err)
		}
	}
	if _, _, err := parseZoneOption("Central'; DROP"); !isInvalid(err) {
		t.Errorf("bad zone: %v", err)
	}
	if z, err := zoneFromServer("UTC"); err != nil || z.kind != zoneUTC {
		t.Errorf("UTC from server: %+v %v", z, err)
	}
	if z, err := zoneFromServer("Pacific Standard Time"); err != nil || z.kind != zoneNamed || z.String() != "Pacific Standard Time" {
		t.Errorf("named from server: %+v %v", z, err)
	}
}

func TestFixedOffsetName(t *testing.T) {
	for in, want := range map[int]string{0: "UTC+00:00", -180: "UTC-03:00", 330: "UTC+05:30", -570: "UTC-09:30"} {
		if got := fixedOffsetName(in); got != want {
			t.Errorf("fixedOffsetName(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestCommitTSExpr(t *testing.T) {
	named := zone{kind: zoneNamed, name: "Central Europe Standard Time"}
	t.Run("utc casts only", func(t *testing.T) {
		var p params
		if got := newCommitTS(&p, zone{kind: zoneUTC}, nil, nil).expr("t", "l"); got != "CAST(t AS datetime2(3))" || len(p.args) != 0 {
			t.Errorf("got %s %v", got, p.args)
		}
	})
	t.Run("fixed subtracts the current offset", func(t *testing.T) {
		var p params
		got := newCommitTS(&p, zone{kind: zoneFixed}, nil, nil).expr("t", "l")
		if got != "CAST(DATEADD(minute, -DATEPART(TZOFFSET, SYSDATETIMEOFFSET()), t) AS datetime2(3))" {
			t.Errorf("got %s", got)
		}
	})
	t.Run("range offset replaces AT TIME ZONE (TZ4)", func(t *testing.T) {
		var p params
		off := -180
		got := newCommitTS(&p, named, &off, nil).expr("t", "l")
		if got != "CAST(DATEADD(minute, -@p1, t) AS datetime2(3))" || p.args[0] != int32(-180) {
			t.Errorf("got %s %v", got, p.args)
		}
		if strings.Contains(got, "AT TIME ZONE") {
			t.Error("per-row AT TIME ZONE with a range offset")
		}
	})
	t.Run("plain named reading", func(t *testing.T) {
		var p params
		got := newCommitTS(&p, named, nil, nil).expr("t", "l")
		if got != "CAST((t AT TIME ZONE @p1) AT TIME ZONE 'UTC' AS datetime2(3))" || p.args[0] != named.name {
			t.Errorf("got %s %v", got, p.args)
		}
	})
	t.Run("fall-back aware with drops (TZ5)", func(t *testing.T) {
		var p params
		got := newCommitTS(&p, named, nil, []drop{{LSN: lsnA, Time: "2026-10-25 02:05:00.000"}, {LSN: lsnB, Time: "2026-10-25 02:06:00.000"}}).expr("t", "l")
		for _, want := range []string{
			"(VALUES (CONVERT(binary(10), @p2, 1), CONVERT(datetime, @p3, 121)), (CONVERT(binary(10), @p4, 1), CONVERT(datetime, @p5, 121))) AS [__$d]([l], [t])",
			"[__$d].[l] <= l AND [__$d].[t] > DATEADD(hour, -3, t)",
			"THEN CAST(DATEADD(minute, -DATEPART(TZOFFSET, DATEADD(hour, 3, t) AT TIME ZONE @p1), t) AS datetime2(3))",
			"ELSE CAST((t AT TIME ZONE @p1) AT TIME ZONE 'UTC' AS datetime2(3)) END",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("missing %q in\n%s", want, got)
			}
		}
		if len(p.args) != 5 || p.args[1] != lsnA.String() || p.args[2] != "2026-10-25 02:05:00.000" {
			t.Errorf("args %v", p.args)
		}
	})
}

func TestServerClockTruncatesAndBiasesEarlier(t *testing.T) {
	in := time.Date(2026, 3, 29, 1, 59, 59, 999_999_999, time.FixedZone("x", 3600))
	var p params
	got := serverClock(&p, zone{kind: zoneUTC}, in)
	if got != "CONVERT(datetime2(0), @p1, 126)" || p.args[0] != "2026-03-29T00:59:59" {
		t.Errorf("utc: %s %v", got, p.args)
	}
	p = params{}
	got = serverClock(&p, zone{kind: zoneNamed, name: "W. Europe Standard Time"}, in)
	if !strings.HasPrefix(got, "CASE WHEN ") || !strings.Contains(got, "DATEADD(hour, -1, CAST((DATEADD(hour, 1, CONVERT(datetime2(0), @p1, 126)) AT TIME ZONE 'UTC') AT TIME ZONE @p2 AS datetime2(0)))") {
		t.Errorf("named: %s", got)
	}
}
