package deltalog

import (
	"testing"
	"time"
)

// Options.RetryMaxDelay caps every wait; below the base delay the base is the cap.
func TestBackoffMaxDelay(t *testing.T) {
	for _, c := range []struct {
		base, maxDelay, ceiling time.Duration
	}{
		{10 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond},
		{10 * time.Millisecond, 5 * time.Second, 5 * time.Second},
		{10 * time.Millisecond, 0, DefaultRetryMaxDelay},
		{50 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond},
	} {
		tbl, _ := newMemTable(Options{RetryBaseDelay: c.base, RetryMaxDelay: c.maxDelay})
		longest := time.Duration(0)
		for attempt := 1; attempt < 40; attempt++ {
			for range 50 {
				d := tbl.backoff(attempt)
				if d < 0 || d > c.ceiling {
					t.Fatalf("base %v max %v attempt %d: %v outside [0, %v]", c.base, c.maxDelay, attempt, d, c.ceiling)
				}
				longest = max(longest, d)
			}
		}
		if longest <= c.ceiling/2 {
			t.Errorf("base %v max %v: longest wait %v, want near %v", c.base, c.maxDelay, longest, c.ceiling)
		}
	}
}
