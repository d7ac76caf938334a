package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
)

// progressEvery is the most often a snapshot's running totals are printed between the
// lines of finished ranges.
const progressEvery = 10 * time.Second

// snapshotProgress prints how a snapshot's reads go (snapshot.Options.Progress): a line
// for each range read and staged, and between those at most one line per every with the
// running totals, each with rows (of the planned estimate), MB read, MB/s and an ETA;
// summary gives the totals at the end. MB are Arrow bytes read, as the stream's read_mb.
// Safe for the concurrent reads.
type snapshotProgress struct {
	ctx   context.Context // records the ranges done for the interrupted line
	out   io.Writer
	label string // what is read: "snapshot", or "export"
	now   func() time.Time
	every time.Duration

	mu           sync.Mutex
	start, shown time.Time
	ranges, done int
	est          int64
	rows, bytes  map[int]int64 // per range, so far
	staged       map[int]bool  // the ranges done (read and staged)
}

func newSnapshotProgress(ctx context.Context, out io.Writer) *snapshotProgress {
	return &snapshotProgress{ctx: ctx, out: out, label: "snapshot", now: time.Now, every: progressEvery,
		rows: map[int]int64{}, bytes: map[int]int64{}, staged: map[int]bool{}}
}

// report takes one snapshot.ReadProgress.
func (p *snapshotProgress) report(r snapshot.ReadProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.start.IsZero() {
		p.start, p.shown = now, now
	}
	p.ranges, p.est = r.Ranges, max(p.est, r.EstimatedRows)
	p.rows[r.Range], p.bytes[r.Range] = r.Rows, r.Bytes
	switch {
	case r.Done:
		p.done++
		p.staged[r.Range] = true
		// The range's line counts the ranges done, as it says one more is: the rows of
		// ranges still being staged (read to the end at the same moment) wait for theirs.
		fmt.Fprintf(p.out, "range %d/%d read: %s rows, %s MB; %s so far %s\n", r.Range+1, r.Ranges, config.Grouped(r.Rows), mb(r.Bytes), p.label, p.totals(now, true))
		if p.label == "snapshot" {
			recordDone(p.ctx, "%d of %d ranges of the snapshot (read and staged; a rerun reads them again)", p.done, p.ranges)
		} else {
			recordDone(p.ctx, "%d of %d ranges of the %s", p.done, p.ranges, p.label)
		}
		p.shown = now
	case now.Sub(p.shown) >= p.every:
		fmt.Fprintf(p.out, "%s: %s; %d of %d ranges done\n", p.label, p.totals(now, false), p.done, p.ranges)
		p.shown = now
	}
}

// totals are the running totals: "50,000 of ~100,000 rows (50%), 12.2 MB, 4.1 MB/s, ETA
// 3s", of the ranges done when staged, else of every row read.
func (p *snapshotProgress) totals(now time.Time, staged bool) string {
	var rows, bytes int64
	for i, n := range p.rows {
		if staged && !p.staged[i] {
			continue
		}
		rows += n
		bytes += p.bytes[i]
	}
	secs := now.Sub(p.start).Seconds()
	count := config.Grouped(rows) + " rows"
	if p.est > 0 {
		count = fmt.Sprintf("%s of ~%s rows", config.Grouped(rows), config.Grouped(p.est))
		if rows <= p.est {
			count += fmt.Sprintf(" (%d%%)", rows*100/p.est)
		}
	}
	rate, eta := "", "ETA unknown"
	if secs > 0 {
		rate = fmt.Sprintf(", %s MB/s", mb(int64(float64(bytes)/secs)))
		if p.est > 0 && rows > 0 {
			left := p.est - rows
			if left < 0 {
				left = 0
			}
			eta = "ETA " + time.Duration(float64(left)/float64(rows)*secs*float64(time.Second)).Round(time.Second).String()
		}
	}
	return fmt.Sprintf("%s, %s MB%s, %s", count, mb(bytes), rate, eta)
}

// summary is the closing line's totals: "100,000 rows, 24.4 MB in 4 ranges, 6.0 s (4.1
// MB/s)"; "" when no range was read (the snapshot was found, or there was nothing).
func (p *snapshotProgress) summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == 0 {
		return ""
	}
	var rows, bytes int64
	for i, n := range p.rows {
		rows += n
		bytes += p.bytes[i]
	}
	d := p.now().Sub(p.start)
	rate := ""
	if d > 0 {
		rate = fmt.Sprintf(" (%s MB/s)", mb(int64(float64(bytes)/d.Seconds())))
	}
	return fmt.Sprintf("%s rows, %s MB in %d %s, %.1f s%s", config.Grouped(rows), mb(bytes), p.done, plural(p.done, "range"), d.Seconds(), rate)
}

// mb is bytes in megabytes (10^6) with one decimal.
func mb(bytes int64) string { return strconv.FormatFloat(float64(bytes)/1e6, 'f', 1, 64) }
