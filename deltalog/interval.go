package deltalog

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// intervalUnits are the units of Delta's interval table properties
// (delta.logRetentionDuration = "interval 30 days"), singular or plural.
var intervalUnits = map[string]time.Duration{
	"nanosecond":  time.Nanosecond,
	"microsecond": time.Microsecond,
	"millisecond": time.Millisecond,
	"second":      time.Second,
	"minute":      time.Minute,
	"hour":        time.Hour,
	"day":         24 * time.Hour,
	"week":        7 * 24 * time.Hour,
}

// ParseInterval parses a Delta interval property such as "interval 1 week" or "7 days"
// (the "interval" prefix is optional, units are nanosecond..week, singular or plural,
// case-insensitive). Months and years are refused: they have no fixed length, and so is an
// interval longer than a time.Duration holds (about 292 years), which would otherwise wrap
// to a negative or short retention.
func ParseInterval(s string) (time.Duration, error) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) > 0 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) != 2 {
		return 0, fmt.Errorf("invalid interval %q", s)
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid interval %q", s)
	}
	unit, ok := intervalUnits[strings.TrimSuffix(f[1], "s")]
	if !ok {
		return 0, fmt.Errorf("invalid interval %q: unit must be one of %s", s, strings.Join(slices.Sorted(maps.Keys(intervalUnits)), ", "))
	}
	if n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("invalid interval %q: longer than %d %ss", s, math.MaxInt64/int64(unit), strings.TrimSuffix(f[1], "s"))
	}
	return time.Duration(n) * unit, nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
