package checkpoint

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// TimeLayout is the offset's commit_ts: UTC, ISO-8601 with exactly three fractional
// digits, no zone (DESIGN.md §4.1).
const TimeLayout = "2006-01-02T15:04:05.000"

// Offset is the last processed commit and its UTC commit time (DESIGN.md §4.1, reference
// original-stream-and-tables.md §3.1). CommitTS is the zero time when LSN is no commit's
// (an initial offset decrement(min_lsn), the zero LSN); it then travels as "".
type Offset struct {
	LSN      lsn.LSN
	CommitTS time.Time
}

// HasTime reports whether the commit time is known.
func (o Offset) HasTime() bool { return !o.CommitTS.IsZero() }

type offsetJSON struct {
	LSN      lsn.LSN `json:"lsn"`
	CommitTS string  `json:"commit_ts"`
}

// MarshalJSON writes {"lsn": "0x...", "commit_ts": "2026-10-01T12:00:00.123"}.
func (o Offset) MarshalJSON() ([]byte, error) {
	j := offsetJSON{LSN: o.LSN}
	if o.HasTime() {
		j.CommitTS = o.CommitTS.UTC().Format(TimeLayout)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the offset; commit_ts may lack fractional digits or be "".
func (o *Offset) UnmarshalJSON(b []byte) error {
	var j offsetJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	o.LSN = j.LSN
	o.CommitTS = time.Time{}
	if s := strings.TrimSuffix(j.CommitTS, "Z"); s != "" {
		t, err := time.Parse("2006-01-02T15:04:05.999999999", s)
		if err != nil {
			return fmt.Errorf("offset commit_ts %q: %w", j.CommitTS, err)
		}
		o.CommitTS = t.UTC()
	}
	return nil
}

func (o Offset) String() string {
	if !o.HasTime() {
		return o.LSN.String()
	}
	return o.LSN.String() + "@" + o.CommitTS.UTC().Format(TimeLayout)
}
