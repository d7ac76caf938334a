package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// ChunkRecords are what a chunked snapshot recorded of its chunks (docs/snapshots.md "The
// plans table"): the app's plans table rows (open, plan and chunk) and its facts rows
// that describe snapshots (snapshot_chunk, bootstrap, resnapshot). They are read before
// bronze's snapshot is taken (ReadChunkRecords), because a wave commits bronze first,
// then its plans table rows, then its facts rows: whatever the records hold, bronze holds.
type ChunkRecords struct {
	Plans []snapshot.PlanRow
	Facts []facts.Row
}

// ReadChunkRecords reads appID's chunk records from the facts table, then the plans table
// (either nil or not created yet: none). Call it before reading bronze. Errors: deltalog's.
func ReadChunkRecords(ctx context.Context, factsTable, plansTable *deltalog.Table, appID string) (*ChunkRecords, error) {
	var r ChunkRecords
	if factsTable != nil {
		fsnap, err := factsTable.Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("reconcile: read the facts table: %w", err)
		}
		if r.Facts, err = facts.ReadEvents(ctx, fsnap, appID, facts.EventSnapshotChunk, facts.EventBootstrap, facts.EventResnapshot); err != nil {
			return nil, fmt.Errorf("reconcile: read the facts table: %w", err)
		}
	}
	if plansTable != nil {
		rows, err := snapshot.PlanRows(ctx, plansTable, appID, "")
		if err != nil {
			return nil, fmt.Errorf("reconcile: %w", err)
		}
		r.Plans = rows
	}
	return &r, nil
}

// newestOpen is the open row of the newest chunked snapshot the records hold (nil: none,
// or no records): the newest generation's, and in it the newest S, so a switch snapshot's
// open (snapshot_on_switch) wins over its generation's.
func (rec *ChunkRecords) newestOpen() *snapshot.PlanRow {
	if rec == nil {
		return nil
	}
	var open *snapshot.PlanRow
	for i, r := range rec.Plans {
		if r.Event != snapshot.PlanEventOpen && r.Event != snapshot.PlanEventSwitchOpen {
			continue
		}
		if open == nil || r.Generation > open.Generation || (r.Generation == open.Generation && r.Snapshot > open.Snapshot) {
			open = &rec.Plans[i]
		}
	}
	return open
}

// complete is true when the facts rows record snapshot s whole: its bootstrap (or
// resnapshot) row, min = max = s.
func (rec *ChunkRecords) complete(s string) bool {
	for _, r := range rec.Facts {
		if (r.Event == facts.EventBootstrap || r.Event == facts.EventResnapshot) && r.MinLSN == s && r.MaxLSN == s {
			return true
		}
	}
	return false
}

// chunkRows are snapshot s's plan rows and chunk rows by chunk index.
func (rec *ChunkRecords) chunkRows(s string) (plan, read map[int32][]snapshot.PlanRow) {
	plan, read = map[int32][]snapshot.PlanRow{}, map[int32][]snapshot.PlanRow{}
	for _, r := range rec.Plans {
		if r.Snapshot != s || r.Chunk == nil {
			continue
		}
		switch r.Event {
		case snapshot.PlanEventPlan:
			plan[*r.Chunk] = append(plan[*r.Chunk], r)
		case snapshot.PlanEventChunk:
			read[*r.Chunk] = append(read[*r.Chunk], r)
		}
	}
	return plan, read
}

// inBronze is what bronze holds of one chunk: its rows and the smallest and largest
// _start_lsn among them (the wave's stamp, when all is well).
type inBronze struct {
	rows               int64
	minStamp, maxStamp string
}

// chunkCheck gathers one chunk's problems and report rows.
type chunkCheck struct {
	s    string // the snapshot's S
	out  []Row
	bad  map[int32]bool
	sums map[int32]inBronze
}

func (c *chunkCheck) flag(kind Kind, i int32, lo, hi string, recorded *int64, detail string) {
	r := Row{Kind: kind, Scope: "chunk", Chunk: i, Lo: lo, Hi: hi, Detail: detail}
	if recorded != nil {
		r.SourceRows = *recorded
	}
	b := c.sums[i]
	r.TargetRows, r.TargetLSN = b.rows, b.minStamp
	c.out = append(c.out, r)
	c.bad[i] = true
}

// checkChunks checks the newest chunked snapshot the records hold (a switch snapshot's open included) against bronze
// (docs/reconcile.md § Chunk checks), one report row per chunk (MATCH, IN_FLIGHT for a
// chunk an open snapshot has not read yet) plus one per problem found:
//
//   - CHUNK_TILING: the plan's chunks do not tile the key space (a missing or duplicate
//     plan, chunk or snapshot_chunk facts row; the first chunk not open below; a chunk not
//     starting where the previous one ended, or whose bounds are out of order; a chunk read
//     with other bounds than planned; `last` on another chunk than the last; the last of a
//     complete snapshot not flagged last; bronze rows of a chunk the plan lacks);
//   - CHUNK_ROWS: bronze's rows of a chunk differ from the count its chunk row or its
//     snapshot_chunk facts row recorded, or, once the snapshot is complete, bronze holds
//     rows of a chunk nothing recorded;
//   - CHUNK_STAMP: a stamp below S, bronze rows of the chunk carrying another _start_lsn
//     than its chunk row's stamp, a facts row with another stamp, or chunks of one wave
//     with different stamps.
//
// Nothing is read from SQL Server. A bronze without a chunked snapshot gives no rows.
func checkChunks(ctx context.Context, bsnap *deltalog.Snapshot, rec *ChunkRecords) ([]Row, string, error) {
	open := rec.newestOpen()
	if open == nil {
		return nil, "", nil
	}
	s := open.Snapshot
	sLSN, err := lsn.Parse(s)
	if err != nil {
		return nil, "", fmt.Errorf("reconcile: the plans table's snapshot %q: %w", s, err)
	}
	plan, read := rec.chunkRows(s)
	inFacts := map[int32][]facts.Row{}
	complete := rec.complete(s)
	for _, r := range rec.Facts {
		switch r.Event {
		case facts.EventSnapshotChunk:
			var d struct {
				Snapshot string `json:"snapshot"`
				Chunk    *int32 `json:"chunk"`
			}
			if json.Unmarshal([]byte(r.Detail), &d) == nil && d.Snapshot == s && d.Chunk != nil {
				inFacts[*d.Chunk] = append(inFacts[*d.Chunk], r)
			}
		}
	}
	c := &chunkCheck{s: s, bad: map[int32]bool{}}
	if c.sums, err = bronzeChunks(ctx, bsnap, s); err != nil {
		return nil, "", err
	}

	// The plan: chunks 0..n-1, each once, tiling the key space in order.
	n := int32(0)
	for i := range plan {
		n = max(n, i+1)
	}
	lastRead := int32(-1)
	for i := range read {
		lastRead = max(lastRead, i)
	}
	for i := range n {
		ps := plan[i]
		switch {
		case len(ps) == 0:
			c.flag(ChunkTiling, i, "", "", nil, "the plan has no chunk "+itoa(i))
			continue
		case len(ps) > 1:
			c.flag(ChunkTiling, i, ps[0].Lo, ps[0].Hi, nil, fmt.Sprintf("the plan holds chunk %d %d times", i, len(ps)))
		}
		p := ps[0]
		if i == 0 && p.Lo != "" {
			c.flag(ChunkTiling, i, p.Lo, p.Hi, nil, "the first chunk is not open below")
		}
		if prev := plan[i-1]; i > 0 && len(prev) > 0 && p.Lo != prev[0].Hi {
			c.flag(ChunkTiling, i, p.Lo, p.Hi, nil, fmt.Sprintf("the chunk starts at %s, not where chunk %d ends (%s)", orOpen(p.Lo), i-1, orOpen(prev[0].Hi)))
		}
		if why := outOfOrder(p.Lo, p.Hi); why != "" {
			c.flag(ChunkTiling, i, p.Lo, p.Hi, nil, why)
		}
		if last := p.Last != nil && *p.Last; last != (i == n-1) {
			c.flag(ChunkTiling, i, p.Lo, p.Hi, nil, fmt.Sprintf("flagged last %v, but the plan has %d chunks", last, n))
		}
	}

	// The chunks read: each planned chunk once, with its planned bounds, none skipped
	// (waves read the plan in order), all of them once the snapshot is complete.
	stampOfWave := map[int64]string{}
	for i := int32(0); i <= max(lastRead, n-1); i++ {
		rs, ps := read[i], plan[i]
		if len(rs) == 0 {
			switch {
			case i < n && (complete || i < lastRead):
				c.flag(ChunkTiling, i, planBound(ps, true), planBound(ps, false), nil, "no chunk row: the chunk was never read")
			case i < n:
				c.out = append(c.out, Row{Kind: InFlight, Scope: "chunk", Chunk: i, Lo: planBound(ps, true), Hi: planBound(ps, false),
					TargetRows: c.sums[i].rows, Detail: "not read yet"})
			}
			continue
		}
		r := rs[0]
		if len(rs) > 1 {
			c.flag(ChunkTiling, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("chunk %d was recorded read %d times", i, len(rs)))
		}
		if len(ps) == 0 {
			c.flag(ChunkTiling, i, r.Lo, r.Hi, r.Rows, "a chunk row for a chunk the plan does not hold")
		} else {
			p := ps[0]
			if r.Lo != p.Lo || (r.Hi != p.Hi && !(p.Last != nil && *p.Last && p.Hi == "")) {
				c.flag(ChunkTiling, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("read as [%s, %s), planned as [%s, %s)", orOpen(r.Lo), orOpen(r.Hi), orOpen(p.Lo), orOpen(p.Hi)))
			}
		}
		if complete && i == n-1 && !(r.Last != nil && *r.Last) {
			c.flag(ChunkTiling, i, r.Lo, r.Hi, r.Rows, "the last chunk of a complete snapshot is not flagged last")
		}
		b := c.sums[i]
		if r.Rows == nil || *r.Rows != b.rows {
			c.flag(ChunkRows, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("the chunk row records %s rows, bronze holds %d", orNull(r.Rows), b.rows))
		}
		fs := inFacts[i]
		switch {
		case len(fs) > 1:
			c.flag(ChunkTiling, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("%d snapshot_chunk facts rows for the chunk", len(fs)))
		case len(fs) == 0 && complete:
			c.flag(ChunkTiling, i, r.Lo, r.Hi, r.Rows, "no snapshot_chunk facts row for the chunk of a complete snapshot")
		}
		for _, f := range fs {
			if f.Rows == nil || *f.Rows != b.rows {
				c.flag(ChunkRows, i, r.Lo, r.Hi, f.Rows, fmt.Sprintf("the snapshot_chunk facts row records %s rows, bronze holds %d", orNull(f.Rows), b.rows))
			}
			if f.MinLSN != r.Stamp {
				c.flag(ChunkStamp, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("the snapshot_chunk facts row's stamp %s is not the chunk row's %s", f.MinLSN, r.Stamp))
			}
		}
		stamp, err := lsn.Parse(r.Stamp)
		switch {
		case err != nil:
			c.flag(ChunkStamp, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("the chunk row's stamp %q is not an LSN", r.Stamp))
		case stamp.Less(sLSN):
			c.flag(ChunkStamp, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("the stamp %s is below the snapshot's S %s", r.Stamp, s))
		}
		if b.rows > 0 && (b.minStamp != r.Stamp || b.maxStamp != r.Stamp) {
			c.flag(ChunkStamp, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("bronze's rows of the chunk carry _start_lsn %s..%s, not the wave's stamp %s", b.minStamp, b.maxStamp, r.Stamp))
		}
		if r.Wave != nil {
			if w, ok := stampOfWave[*r.Wave]; ok && w != r.Stamp {
				c.flag(ChunkStamp, i, r.Lo, r.Hi, r.Rows, fmt.Sprintf("wave %d's chunks carry the stamps %s and %s", *r.Wave, w, r.Stamp))
			} else if !ok {
				stampOfWave[*r.Wave] = r.Stamp
			}
		}
		if !c.bad[i] {
			c.out = append(c.out, Row{Kind: Match, Scope: "chunk", Chunk: i, Lo: r.Lo, Hi: r.Hi, SourceRows: b.rows, TargetRows: b.rows, TargetLSN: r.Stamp})
		}
	}

	// Bronze rows of S that no chunk row accounts for.
	idx := make([]int32, 0, len(c.sums))
	for i := range c.sums {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		switch {
		case i < 0 || i >= n:
			c.flag(ChunkTiling, i, "", "", nil, fmt.Sprintf("bronze holds %d rows of snapshot %s in a chunk the plan does not hold", c.sums[i].rows, s))
		case len(read[i]) == 0 && complete:
			c.flag(ChunkRows, i, planBound(plan[i], true), planBound(plan[i], false), nil,
				fmt.Sprintf("bronze holds %d rows of the chunk, which no chunk row records", c.sums[i].rows))
		}
	}
	slices.SortStableFunc(c.out, func(a, b Row) int { return int(a.Chunk) - int(b.Chunk) })
	return c.out, s, nil
}

// bronzeChunks counts bronze's snapshot rows (operation 0) of snapshot s per chunk, with
// their smallest and largest _start_lsn; rows without a chunk are under -1.
func bronzeChunks(ctx context.Context, bsnap *deltalog.Snapshot, s string) (map[int32]inBronze, error) {
	out := map[int32]inBronze{}
	if bsnap == nil || bsnap.Version() < 0 {
		return out, nil
	}
	filter := deltalog.And(deltalog.Eq(bronze.ColSnapshot, s), deltalog.Eq(bronze.ColOperation, int32(bronze.OpSnapshot)))
	err := scanWhere(ctx, "bronze's chunks", bsnap, []string{bronze.ColChunk, bronze.ColStartLSN}, filter,
		func(rec arrow.RecordBatch) error {
			chunks, _ := rec.Column(0).(*array.Int32)
			lsns, _ := rec.Column(1).(*array.String)
			if chunks == nil || lsns == nil {
				return fmt.Errorf("reconcile: bronze's %s or %s column has an unexpected type", bronze.ColChunk, bronze.ColStartLSN)
			}
			for i := 0; i < chunks.Len(); i++ {
				k := int32(-1)
				if chunks.IsValid(i) {
					k = chunks.Value(i)
				}
				b := out[k]
				b.rows++
				if lsns.IsValid(i) {
					v := lsns.Value(i)
					if b.minStamp == "" || v < b.minStamp {
						b.minStamp = v
					}
					b.maxStamp = max(b.maxStamp, v)
				}
				out[k] = b
			}
			return nil
		})
	return out, err
}

// outOfOrder says why [lo, hi) holds no key ("" when it may): equal bounds, or, compared
// value by value where both are numbers, lo above hi. Text values are ordered by the
// server's collation, which only the server knows: they are only checked for equality.
func outOfOrder(lo, hi string) string {
	if lo == "" || hi == "" {
		return ""
	}
	if lo == hi {
		return "the chunk's bounds are equal: it holds no key"
	}
	var a, b []any
	if decodeNumbers(lo, &a) != nil || decodeNumbers(hi, &b) != nil {
		return ""
	}
	for k := 0; k < len(a) && k < len(b); k++ {
		x, okx := a[k].(json.Number)
		y, oky := b[k].(json.Number)
		if !okx || !oky {
			if a[k] == b[k] {
				continue
			}
			return ""
		}
		xf, okx := new(big.Float).SetString(string(x))
		yf, oky := new(big.Float).SetString(string(y))
		if !okx || !oky {
			return ""
		}
		switch xf.Cmp(yf) {
		case -1:
			return ""
		case 1:
			return fmt.Sprintf("the chunk's bounds are out of order: [%s, %s)", lo, hi)
		}
	}
	return ""
}

func decodeNumbers(s string, v *[]any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	return dec.Decode(v)
}

func planBound(ps []snapshot.PlanRow, lo bool) string {
	if len(ps) == 0 {
		return ""
	}
	if lo {
		return ps[0].Lo
	}
	return ps[0].Hi
}

func orOpen(b string) string {
	if b == "" {
		return "open"
	}
	return b
}

func orNull(p *int64) string {
	if p == nil {
		return "NULL"
	}
	return strconv.FormatInt(*p, 10)
}

func itoa(i int32) string { return strconv.FormatInt(int64(i), 10) }
