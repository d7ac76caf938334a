package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// readRange is one range read on its own connection: a closed LSN range of one instance.
type readRange struct {
	span
	Label string
}

// ranges splits each span into read ranges of at least MinRowsPerRange change rows
// (reference §4.4 step 10): SplitChanges tiles the span into numPartitions tiles that
// never split a commit; adjacent tiles are joined until a range holds enough rows, and a
// short tail joins the range before. The last range of a span ends at the span's end.
// A span without rows is not read at all.
func (r *run) ranges(ctx context.Context, sp []span) ([]readRange, error) {
	var out []readRange
	n := r.spec.Options.NumPartitions
	for _, s := range sp {
		label := r.ciLabel(s.CI)
		if n <= 1 {
			out = append(out, readRange{span: s, Label: label})
			continue
		}
		tiles, err := r.src.SplitChanges(ctx, s.CI.Name, s.From, s.To, n)
		if err != nil {
			return nil, r.sourceErr("split changes", err)
		}
		if len(tiles) == 0 {
			continue
		}
		var parts []readRange
		from, rows := s.From, int64(0)
		for _, t := range tiles {
			rows += t.Rows
			if rows >= r.opts.MinRowsPerRange && t.Last.Less(s.To) {
				parts = append(parts, readRange{span: span{CI: s.CI, From: from, To: t.Last}, Label: label})
				from, rows = t.Next, 0
			}
		}
		if !s.To.Less(from) {
			if rows < r.opts.MinRowsPerRange && len(parts) > 0 {
				parts[len(parts)-1].To = s.To // a short tail joins the range before
			} else {
				parts = append(parts, readRange{span: span{CI: s.CI, From: from, To: s.To}, Label: label})
			}
		} else if len(parts) > 0 {
			parts[len(parts)-1].To = s.To
		}
		out = append(out, parts...)
	}
	return out, nil
}

// readOut is what the ranges' reads produced.
type readOut struct {
	stats   facts.BatchStats
	files   []deltalog.Add
	seconds float64
	net     netMetrics
}

// read reads the ranges on up to numPartitions connections at once. Each worker streams
// its records through bronze.ChangeRecord into its own Parquet writer (when write is
// true; otherwise it only counts), so memory is bounded by the writers' row groups and
// the source's record batches, whatever the batch's size.
func (r *run) read(ctx context.Context, batch int64, ranges []readRange, cols []source.Column, schema *arrow.Schema, write bool) (readOut, error) {
	var out readOut
	if len(ranges) == 0 {
		return out, nil
	}
	workers := min(r.spec.Options.NumPartitions, len(ranges))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan readRange)
	var mu sync.Mutex
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	var writers []*parquetio.Writer
	var wg sync.WaitGroup
	for range workers {
		var w *parquetio.Writer
		if write {
			w = parquetio.NewWriter(r.deps.Bronze.Store(), schema, r.opts.Writer)
			writers = append(writers, w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rr := range work {
				var st facts.BatchStats
				// One round trip on a connection of its own just before the read (§9.1
				// source_rtt_ms); a failed ping only loses the metric.
				rtt, perr := r.src.Ping(ctx)
				t0 := time.Now()
				wait, waitOK, err := r.readOne(ctx, batch, rr, cols, schema, w, &st)
				secs := time.Since(t0).Seconds()
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				out.stats.Merge(st)
				out.seconds += secs
				out.net.add(rtt, perr == nil, wait, waitOK)
				mu.Unlock()
			}
		}()
	}
	for _, rr := range ranges {
		select {
		case work <- rr:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		for _, w := range writers {
			_ = w.Abort(context.WithoutCancel(ctx))
		}
		return out, firstErr
	}
	for _, w := range writers {
		files, err := w.Close(ctx)
		if err != nil {
			return out, fmt.Errorf("write bronze files: %w", err)
		}
		for _, f := range files {
			out.files = append(out.files, facts.AddOf(f))
		}
	}
	return out, nil
}

// readOne reads one range into w (nil: count only) and returns the network wait its
// read reported (§9.1 network_wait_ms; ok false when the source reported none).
func (r *run) readOne(ctx context.Context, batch int64, rr readRange, cols []source.Column, schema *arrow.Schema, w *parquetio.Writer, st *facts.BatchStats) (wait time.Duration, ok bool, err error) {
	rows, err := r.src.ReadChanges(ctx, source.ChangeRead{CaptureInstance: rr.CI.Name, From: rr.From, To: rr.To,
		Columns: cols, ReadOptions: r.opts.Read})
	if err != nil {
		return 0, false, r.sourceErr("read changes", err)
	}
	defer rows.Close()
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			// The wait is read on the read's session before Close releases it; a Close
			// error after the last row loses nothing read (as the deferred Close).
			_ = rows.Close()
			wait, ok := networkWait(rows)
			return wait, ok, nil
		}
		if err != nil {
			return 0, false, r.sourceErr(fmt.Sprintf("read changes %s [%s, %s]", rr.CI.Name, rr.From, rr.To), err)
		}
		if err := st.Add(rec); err != nil {
			rec.Release()
			return 0, false, err
		}
		if w != nil {
			brec, err := bronze.ChangeRecord(schema, rec, rr.Label, batch)
			if err != nil {
				rec.Release()
				return 0, false, err
			}
			err = w.Write(ctx, brec)
			brec.Release()
			if err != nil {
				rec.Release()
				return 0, false, fmt.Errorf("write bronze file: %w", err)
			}
		}
		rec.Release()
	}
}
