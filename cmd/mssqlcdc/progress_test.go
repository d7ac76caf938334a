package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
)

// The progress lines: one per range read, running totals at most once per interval
// between them, each with rows of the estimate, MB, MB/s and an ETA; and the summary.
func TestSnapshotProgressLines(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := newSnapshotProgress(context.Background(), &out)
	p.now = func() time.Time { return clock }
	tick := func(d time.Duration) { clock = clock.Add(d) }

	p.report(snapshot.ReadProgress{Range: 0, Ranges: 2, Rows: 0, Bytes: 0, EstimatedRows: 200_000})
	tick(5 * time.Second)
	p.report(snapshot.ReadProgress{Range: 0, Ranges: 2, Rows: 25_000, Bytes: 5_000_000, EstimatedRows: 200_000}) // under 10 s: quiet
	tick(5 * time.Second)
	p.report(snapshot.ReadProgress{Range: 1, Ranges: 2, Rows: 25_000, Bytes: 5_000_000, EstimatedRows: 200_000}) // 10 s: totals
	tick(10 * time.Second)
	p.report(snapshot.ReadProgress{Range: 0, Ranges: 2, Rows: 100_000, Bytes: 20_000_000, Done: true, EstimatedRows: 200_000})
	want := "snapshot: 50,000 of ~200,000 rows (25%), 10.0 MB, 1.0 MB/s, ETA 30s; 0 of 2 ranges done\n" +
		"range 1/2 read: 100,000 rows, 20.0 MB; snapshot so far 100,000 of ~200,000 rows (50%), 20.0 MB, 1.0 MB/s, ETA 20s\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	tick(20 * time.Second)
	p.report(snapshot.ReadProgress{Range: 1, Ranges: 2, Rows: 100_000, Bytes: 20_000_000, Done: true, EstimatedRows: 200_000})
	if got := p.summary(); got != "200,000 rows, 40.0 MB in 2 ranges, 40.0 s (1.0 MB/s)" {
		t.Errorf("summary %q", got)
	}
}

// A range's line counts the ranges read and staged: when two ranges have read all their
// rows and one is staged first, its line said "so far 5,000 of ~5,000 rows (100%)",
// counting the other's rows too.
func TestRangeLineCountsFinishedRanges(t *testing.T) {
	var out bytes.Buffer
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := newSnapshotProgress(context.Background(), &out)
	p.now = func() time.Time { return clock }
	for i := range 2 {
		p.report(snapshot.ReadProgress{Range: i, Ranges: 2, Rows: 2_500, Bytes: 1_000_000, EstimatedRows: 5_000})
	}
	clock = clock.Add(time.Second)
	p.report(snapshot.ReadProgress{Range: 1, Ranges: 2, Rows: 2_500, Bytes: 1_000_000, Done: true, EstimatedRows: 5_000})
	p.report(snapshot.ReadProgress{Range: 0, Ranges: 2, Rows: 2_500, Bytes: 1_000_000, Done: true, EstimatedRows: 5_000})
	want := "range 2/2 read: 2,500 rows, 1.0 MB; snapshot so far 2,500 of ~5,000 rows (50%), 1.0 MB, 1.0 MB/s, ETA 1s\n" +
		"range 1/2 read: 2,500 rows, 1.0 MB; snapshot so far 5,000 of ~5,000 rows (100%), 2.0 MB, 2.0 MB/s, ETA 0s\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// bootstrap and snapshot print a line per range and a summary with the rows read.
func TestSnapshotCommandsShowProgress(t *testing.T) {
	rangeLine := regexp.MustCompile(`(?m)^range [123]/3 read: [\d,]+ rows, [\d.]+ MB; snapshot so far [\d,]+ of ~10,000 rows \(\d+%\), [\d.]+ MB, [\d.]+ MB/s, ETA \w+$`)
	for _, cmd := range []string{"snapshot", "bootstrap"} {
		_, errOut, code := runCLI(t, cmd, "--spec", writeSimSpec(t), "--sim")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", cmd, code, errOut)
		}
		if n := len(rangeLine.FindAllString(errOut, -1)); n != 3 {
			t.Errorf("%s: %d range lines, want 3:\n%s", cmd, n, errOut)
		}
		if !strings.Contains(errOut, "snapshot read: 10,000 rows, ") {
			t.Errorf("%s: no summary with the rows read:\n%s", cmd, errOut)
		}
	}
}
