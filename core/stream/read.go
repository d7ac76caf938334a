package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
)

// readRange is one range read on its own connection: a closed LSN range of one instance.
type readRange struct {
	span
	Label string
}

// ranges splits each span into read ranges of at least MinRowsPerRange change rows
// (docs/reference/original-library.md §3.3): SplitChanges tiles the span into numPartitions
// tiles that never split a commit; adjacent tiles are joined until a range holds enough
// rows, and a short tail joins the range before. The last range of a span ends at the
// span's end. A span without rows is not read at all.
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
	files   ingest.Files
	seconds float64
	net     netMetrics
}

// rangeOut is what one range's read produced.
type rangeOut struct {
	stats         facts.BatchStats
	files         ingest.Files
	seconds       float64
	rtt, wait     time.Duration
	rttOK, waitOK bool
}

// read reads the ranges on up to numPartitions connections at once (ingest.Parallel). Each
// range streams its records through bronze.ChangeRecord into a Writer of its own (when
// write is true; otherwise it only counts), so memory is bounded by numPartitions row
// groups and the source's record batches, whatever the batch's size. A failed read leaves
// the files of the ranges already written as orphans for VACUUM (nothing commits them).
func (r *run) read(ctx context.Context, batch int64, ranges []readRange, cols []source.Column, schema *arrow.Schema, write bool) (readOut, error) {
	outs := make([]rangeOut, len(ranges))
	err := ingest.Parallel(ctx, len(ranges), r.spec.Options.NumPartitions, func(ctx context.Context, i int) error {
		var w *ingest.Writer
		if write {
			w = ingest.NewWriter(r.deps.Bronze.Store(), schema, r.opts.Writer)
		}
		o := &outs[i]
		// One round trip on a connection of its own just before the read (source_rtt_ms,
		// docs/facts.md); a failed ping only loses the metric.
		rtt, perr := r.src.Ping(ctx)
		o.rtt, o.rttOK = rtt, perr == nil
		t0 := time.Now()
		err := r.readOne(ctx, batch, ranges[i], cols, schema, w, o)
		o.seconds = time.Since(t0).Seconds()
		if err == nil && w != nil {
			o.files, err = w.Close(ctx)
		}
		if err != nil && w != nil {
			w.Abort(ctx)
		}
		return err
	})
	var out readOut
	if err != nil {
		return out, err
	}
	for _, o := range outs {
		out.stats.Merge(o.stats)
		out.files.Add(o.files)
		out.seconds += o.seconds
		out.net.add(o.rtt, o.rttOK, o.wait, o.waitOK)
	}
	return out, nil
}

// readOne reads one range into w (nil: count only), counting its rows into o.stats, and
// records the network wait its read reported (network_wait_ms; waitOK false when the
// source reported none).
func (r *run) readOne(ctx context.Context, batch int64, rr readRange, cols []source.Column, schema *arrow.Schema, w *ingest.Writer, o *rangeOut) error {
	rows, err := r.src.ReadChanges(ctx, source.ChangeRead{CaptureInstance: rr.CI.Name, From: rr.From, To: rr.To,
		Columns: cols, WithoutCommandID: !r.spec.Options.CommandID(), ReadOptions: r.opts.Read})
	if err != nil {
		return r.sourceErr("read changes", err)
	}
	defer rows.Close()
	next := func(ctx context.Context) (arrow.RecordBatch, error) {
		rec, err := rows.Next(ctx)
		if err != nil && !errors.Is(err, io.EOF) {
			err = r.sourceErr(fmt.Sprintf("read changes %s [%s, %s]", rr.CI.Name, rr.From, rr.To), err)
		}
		return rec, err
	}
	err = ingest.Copy(ctx, next, w, func(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		if err := o.stats.Add(rec); err != nil || w == nil {
			return nil, err
		}
		return bronze.ChangeRecord(schema, rec, rr.Label, batch)
	})
	if err != nil {
		return err
	}
	// The wait is read on the read's session before Close releases it; a Close error after
	// the last row loses nothing read (as the deferred Close).
	_ = rows.Close()
	o.wait, o.waitOK = networkWait(rows)
	return nil
}
