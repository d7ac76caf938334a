package benchmetrics

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Collect reads rows to io.EOF and returns its records (the caller owns them); it does not
// close rows.
func Collect(ctx context.Context, rows source.Rows) ([]arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	for {
		rec, err := rows.Next(ctx)
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			for _, r := range recs {
				r.Release()
			}
			return nil, err
		}
		recs = append(recs, rec)
	}
}

// Replay is a source.Rows that returns recs in order, then io.EOF. It retains each record
// it returns (the caller releases it), so recs can be replayed again; Close does nothing.
func Replay(schema *arrow.Schema, recs []arrow.RecordBatch) source.Rows {
	return &replayRows{schema: schema, recs: recs}
}

type replayRows struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

func (r *replayRows) Schema() *arrow.Schema { return r.schema }
func (r *replayRows) Close() error          { return nil }

func (r *replayRows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if len(r.recs) == 0 {
		return nil, io.EOF
	}
	rec := r.recs[0]
	r.recs = r.recs[1:]
	rec.Retain() // the cache keeps its reference; the reader releases this one
	return rec, nil
}

// ReplayCache holds the records of reads by key, so a benchmark can measure a job
// without its source's cost: the first read of a key reads from the source and keeps the
// records, every read of it replays them. The zero value is ready; safe for concurrent
// use.
type ReplayCache struct {
	mu sync.Mutex
	m  map[string]replayed
}

type replayed struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

// Rows returns a Replay of the records read under key; on the first call for key it opens
// them with read, collects and closes them. read's error is returned as is.
func (c *ReplayCache) Rows(ctx context.Context, key string, read func() (source.Rows, error)) (source.Rows, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	got, ok := c.m[key]
	if !ok {
		rows, err := read()
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		recs, err := Collect(ctx, rows)
		if err != nil {
			return nil, err
		}
		got = replayed{schema: rows.Schema(), recs: recs}
		if c.m == nil {
			c.m = map[string]replayed{}
		}
		c.m[key] = got
	}
	return Replay(got.schema, got.recs), nil
}
