package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// demoBackfill is the demo's chunked snapshot: backfill calls of one wave each, made between
// the stream's invocations (`mssqlcdc demo --bootstrap chunked`).
type demoBackfill struct {
	deps snapshot.Deps
	p    snapshot.BackfillParams
	done bool
}

func newDemoBackfill(ctx context.Context, spec *config.Spec, ds *demoSource) (*demoBackfill, error) {
	deps, err := connect.SnapshotDeps(ctx, spec, ds.db)
	if err != nil {
		return nil, err
	}
	p := snapshot.ParamsOf(spec)
	p.MaxWaves = 1
	return &demoBackfill{deps: deps, p: p}, nil
}

// step makes one backfill call; done, it records S as the demo's snapshot LSN (the changes
// after it are bronze's change rows).
func (b *demoBackfill) step(ctx context.Context, ds *demoSource, out io.Writer) error {
	st, err := backfillCall(ctx, b.deps, b.p, out)
	if err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	switch st.State {
	case snapshot.StateDone:
		s, err := lsn.Parse(st.Snapshot)
		if err != nil {
			return err
		}
		ds.snapshot, b.done = s, true
	case snapshot.StateRunning:
	default: // the stream's first invocation opened the snapshot; min_headroom_hours is 0
		return fmt.Errorf("backfill: %s: %s", st.State, st.Reason)
	}
	return nil
}

// chunkedCheck is what the demo checks of a chunked snapshot: the plan, the plans table's
// chunk rows, the snapshot_chunk facts rows and bronze's snapshot rows agree; no key was
// read twice; no stamp is below S; the bootstrap facts row closes the snapshot with the
// rows of every chunk.
type chunkedCheck struct {
	Snapshot              string
	Planned, Recorded     int
	FactsChunks           int
	FactsRows, BronzeRows int64
	KeysTwice             int
	StampsBelowS          int
	BootstrapRows         int64
	Bootstrap             bool
}

func (c chunkedCheck) ok() bool {
	return c.Planned > 0 && c.Recorded == c.Planned && c.FactsChunks == c.Planned && c.BronzeRows == c.FactsRows &&
		c.KeysTwice == 0 && c.StampsBelowS == 0 && c.Bootstrap && c.BootstrapRows == c.FactsRows
}

// verifyChunked reads the plans table, the facts table and bronze's snapshot rows of the
// chunked snapshot s of generation gen (its facts rows carry the generation's app_id, and
// its completion row is resnapshot after generation 0).
func verifyChunked(ctx context.Context, spec *config.Spec, s lsn.LSN, gen int) (*chunkedCheck, error) {
	c := &chunkedCheck{Snapshot: s.String()}
	cfg := connect.Location(spec)
	plans, err := connect.Table(ctx, spec.PlansTable(), cfg)
	if err != nil {
		return nil, err
	}
	for _, r := range []struct {
		event string
		n     *int
	}{{snapshot.PlanEventPlan, &c.Planned}, {snapshot.PlanEventChunk, &c.Recorded}} {
		rows, err := snapshot.PlanRows(ctx, plans, spec.AppID, r.event)
		if err != nil {
			return nil, fmt.Errorf("read the plans table: %w", err)
		}
		for _, pr := range rows {
			if pr.Snapshot == c.Snapshot {
				*r.n++
			}
		}
	}
	factsT, err := connect.Table(ctx, spec.FactsTable, cfg)
	if err != nil {
		return nil, err
	}
	fsnap, err := factsT.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	frows, err := facts.ReadRows(ctx, fsnap, checkpoint.GenerationAppID(spec.AppID, gen))
	if err != nil {
		return nil, err
	}
	completion := facts.EventBootstrap
	if gen > 0 {
		completion = facts.EventResnapshot
	}
	for _, r := range frows {
		switch {
		case r.Event == facts.EventSnapshotChunk && r.Rows != nil && strings.Contains(r.Detail, `"snapshot":"`+c.Snapshot+`"`):
			c.FactsChunks++
			c.FactsRows += *r.Rows
		case r.Event == completion && r.MaxLSN == c.Snapshot && r.Rows != nil:
			c.Bootstrap, c.BootstrapRows = true, *r.Rows
		}
	}
	bronzeT, err := connect.Table(ctx, spec.Bronze, cfg)
	if err != nil {
		return nil, err
	}
	bsnap, err := bronzeT.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	it, err := bsnap.Scan(ctx, deltalog.ScanOptions{Columns: []string{"id", bronze.ColStartLSN},
		Filter: deltalog.And(deltalog.Eq(bronze.ColOperation, int32(bronze.OpSnapshot)), deltalog.Eq(bronze.ColSnapshot, c.Snapshot))})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	seen := map[string]bool{}
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		if err != nil {
			return nil, err
		}
		ids, starts := rec.Column(0), rec.Column(1)
		for i := 0; i < int(rec.NumRows()); i++ {
			id := ids.ValueStr(i)
			if seen[id] {
				c.KeysTwice++
			}
			seen[id] = true
			if l, err := lsn.Parse(starts.ValueStr(i)); err != nil || l.Less(s) {
				c.StampsBelowS++
			}
		}
		c.BronzeRows += rec.NumRows()
		rec.Release()
	}
}
