package maintain

import (
	"fmt"
	"strings"
	"time"
)

// Readable says a retention in the largest units that state it exactly: "7 days",
// "1 day 12 hours", "36 minutes", "1 hour 30 minutes"; below a minute, or with seconds,
// Go's form ("90.5s").
func Readable(d time.Duration) string {
	if d <= 0 || d%time.Minute != 0 {
		return d.String()
	}
	days, rest := d/(24*time.Hour), d%(24*time.Hour)
	hrs, mins := rest/time.Hour, (rest%time.Hour)/time.Minute
	var parts []string
	for _, p := range []struct {
		n    time.Duration
		unit string
	}{{days, "day"}, {hrs, "hour"}, {mins, "minute"}} {
		if p.n > 0 {
			unit := p.unit
			if p.n != 1 {
				unit += "s"
			}
			parts = append(parts, fmt.Sprintf("%d %s", p.n, unit))
		}
	}
	return strings.Join(parts, " ")
}
