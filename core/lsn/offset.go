package lsn

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// TimeLayout is how a commit time travels in an offset's commit_ts and in the commitInfo
// userMetadata of our appends: UTC, ISO-8601 with exactly three fractional digits and no
// zone, e.g. "2026-10-01T12:00:00.123" (docs/stream.md, "Checkpoint layout").
const TimeLayout = "2006-01-02T15:04:05.000"

// Offset is a stream position: the last processed commit's LSN and its UTC commit time to
// the millisecond (docs/design.md §4.1; docs/stream.md, "Checkpoint layout"). It is the one type
// for every offset: the checkpoint's batch bounds, a snapshot's stamp, the handlers'
// input and output. CommitTS is the zero time when the LSN is no commit's (an initial
// offset just below min_lsn, a stamp start_lsn − 1, the zero LSN).
//
// Its JSON is {"lsn": "0x0000002A000001F00003", "commit_ts": "2026-09-28T14:03:12.117"},
// commit_ts "" when unknown.
type Offset struct {
	LSN      LSN
	CommitTS time.Time
}

// At is the offset of l committed at t (the zero time: unknown): t in UTC, truncated to
// the millisecond, so an offset compares equal (==) to itself after a JSON round trip.
func At(l LSN, t time.Time) Offset {
	o := Offset{LSN: l}
	if !t.IsZero() {
		o.CommitTS = t.UTC().Truncate(time.Millisecond)
	}
	return o
}

// HasTime reports whether the commit time is known.
func (o Offset) HasTime() bool { return !o.CommitTS.IsZero() }

// CommitTime is the commit time, nil when unknown (for the nullable time columns of facts
// rows and bronze stamps).
func (o Offset) CommitTime() *time.Time {
	if !o.HasTime() {
		return nil
	}
	t := o.CommitTS
	return &t
}

type offsetJSON struct {
	LSN      LSN    `json:"lsn"`
	CommitTS string `json:"commit_ts"`
}

// MarshalJSON writes {"lsn": "0x...", "commit_ts": "2026-10-01T12:00:00.123"}.
func (o Offset) MarshalJSON() ([]byte, error) {
	j := offsetJSON{LSN: o.LSN}
	if o.HasTime() {
		j.CommitTS = FormatTime(o.CommitTS)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads an offset. The LSN must parse (*ParseError otherwise); commit_ts may
// have any number of fractional digits, a trailing Z, or be "" (unknown). The time is
// kept to the millisecond, as At keeps it.
func (o *Offset) UnmarshalJSON(b []byte) error {
	var j offsetJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	t, err := ParseTime(j.CommitTS)
	if err != nil {
		return fmt.Errorf("offset commit_ts: %w", err)
	}
	*o = At(j.LSN, t)
	return nil
}

// String is "0x...@2026-10-01T12:00:00.123", or the LSN alone without a commit time.
func (o Offset) String() string {
	if !o.HasTime() {
		return o.LSN.String()
	}
	return o.LSN.String() + "@" + FormatTime(o.CommitTS)
}

// FormatTime writes t in TimeLayout (in UTC).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime reads a time written in TimeLayout, also with fewer or more fractional digits
// or a trailing Z; "" is the zero time.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSuffix(s, "Z")
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse("2006-01-02T15:04:05.999999999", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not YYYY-MM-DDTHH:MM:SS.mmm (UTC): %w", s, err)
	}
	return t.UTC(), nil
}
