package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
)

// WaveNotFoundError: bronze records wave Wave of snapshot Snapshot as committed (its txn),
// but neither its commit (log clean-up dropped it), nor its intent under the checkpoint
// prefix, nor rows in bronze say which chunks it read. Its plans table and facts rows
// cannot be rebuilt: take a new snapshot (a new target, or a new checkpoint and app_id).
type WaveNotFoundError struct {
	Snapshot lsn.LSN
	Wave     int64
}

func (e *WaveNotFoundError) Error() string {
	return fmt.Sprintf("chunked snapshot %s: bronze records wave %d as committed, but its commit, its intent and its rows are gone; "+
		"take a new snapshot (a new target, or a new checkpoint and app_id)", e.Snapshot, e.Wave)
}

// plan returns the snapshot's plan from the plans table; with make, when there is none
// yet, it plans (under the backfill's isolation), records the plan rows, then the
// snapshot_plan facts row. A plan recorded by an earlier call is kept whatever chunk_rows
// this call has (a warning says so), and its facts row is written if a crash left it out.
func (b *backfill) plan(ctx context.Context, make bool) ([]chunk, error) {
	d := b.d
	appID, s := d.Spec.AppID, b.s.LSN.String()
	rows, err := readPlanRows(ctx, d, appID, s, PlanEventPlan)
	if err != nil {
		return nil, err
	}
	var started time.Time
	var dur *int64
	if len(rows) == 0 {
		if !make {
			return nil, nil
		}
		// The plan reads the table as of S's history: a database restored since the open
		// no longer holds it (docs/decisions/0011-source-continuity-and-computed-columns.md).
		if err := CheckStamp(ctx, d.Source, b.s); err != nil {
			return nil, err
		}
		started = d.now()
		pl := planner{src: d.Source, t: b.t, keys: b.keys, unique: len(d.Spec.Options.SnapshotKeys) == 0, chunkRows: b.p.ChunkRows}
		chunks, err := pl.plan(ctx, b.ext)
		if err != nil {
			return nil, err
		}
		keys, _ := json.Marshal(b.ext.Keys)
		cr := b.p.ChunkRows
		for _, c := range chunks {
			i, last := int32(c.Index), c.Last
			rows = append(rows, PlanRow{AppID: appID, Snapshot: s, Generation: int32(b.g.N), Event: PlanEventPlan, Chunk: &i,
				Lo: boundText(c.Lo), Hi: boundText(c.Hi), Last: &last, Keys: string(keys), Kind: b.ext.Kind, ChunkRows: &cr,
				Rows: c.Rows, PlannedAt: &started})
		}
		res, err := appendPlanRows(ctx, d, facts.TxnSnapPlan(appID, s), 0, rows)
		if err != nil {
			return nil, err
		}
		if res.Replayed { // a concurrent call's plan won
			if rows, err = readPlanRows(ctx, d, appID, s, PlanEventPlan); err != nil {
				return nil, err
			}
		} else {
			dur = facts.Int64(d.now().Sub(started).Milliseconds())
		}
	} else if cr := rows[0].ChunkRows; cr != nil && *cr != b.p.ChunkRows {
		w := fmt.Sprintf("chunk_rows %d differs from the %d snapshot %s was planned with: the plan never changes while the snapshot is open; keeping it",
			b.p.ChunkRows, *cr, s)
		b.status.Warnings = append(b.status.Warnings, w)
		d.logger().Warn(w, "app_id", appID)
	}
	chunks, err := chunksOf(rows)
	if err != nil {
		return nil, err
	}
	if err := b.planFacts(ctx, rows, dur); err != nil {
		return nil, err
	}
	return chunks, nil
}

// chunksOf turns the plan rows (ordered by chunk) into chunks.
func chunksOf(rows []PlanRow) ([]chunk, error) {
	out := make([]chunk, 0, len(rows))
	for i, r := range rows {
		if r.Chunk == nil || int(*r.Chunk) != i {
			return nil, fmt.Errorf("plans table: plan of snapshot %s has chunk %d at position %d", r.Snapshot, deref32(r.Chunk), i)
		}
		lo, err := parseBound(r.Lo)
		if err != nil {
			return nil, err
		}
		hi, err := parseBound(r.Hi)
		if err != nil {
			return nil, err
		}
		out = append(out, chunk{Index: i, Lo: lo, Hi: hi, Last: r.Last != nil && *r.Last, Rows: r.Rows})
	}
	return out, nil
}

// planFacts writes the snapshot_plan facts row, once (txn(<app_id>#snapplan.<S>, 0)): the
// chunk count, the kind and key names, chunk_rows; no key values.
func (b *backfill) planFacts(ctx context.Context, rows []PlanRow, dur *int64) error {
	d := b.d
	appID, s := d.Spec.AppID, b.s.LSN.String()
	fsnap, err := d.Facts.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("read the facts table: %w", err)
	}
	if _, ok := ingest.Replayed(fsnap, facts.TxnSnapPlan(appID, s), 0); ok {
		return nil
	}
	var cr int64
	if rows[0].ChunkRows != nil {
		cr = *rows[0].ChunkRows
	}
	detail, _ := json.Marshal(struct {
		Snapshot  string   `json:"snapshot"`
		Kind      string   `json:"kind"`
		Keys      []string `json:"keys"`
		ChunkRows int64    `json:"chunk_rows"`
		Chunks    int      `json:"chunks"`
	}{s, rows[0].Kind, b.ext.Keys, cr, len(rows)})
	r := facts.SnapshotRow(b.g.App, d.Spec.Bronze, facts.EventSnapshotPlan, b.s)
	r.Detail = string(detail)
	r.StartedAt, r.DurationMs = rows[0].PlannedAt, dur
	r.WrittenAt = d.now()
	if _, err := facts.Append(ctx, d.Facts, facts.TxnSnapPlan(appID, s), 0, []facts.Row{r}, d.Options.Writer); err != nil {
		return fmt.Errorf("write snapshot_plan row: %w", err)
	}
	return nil
}

// recover returns the chunks read so far (the plans table's chunk rows of S), after
// completing the waves a crash left between their bronze commit and their rows: Delta
// records a wave's commit by its txn, and a wave the plans table lacks is rebuilt from that
// commit (committedWave); then every wave's snapshot_chunk facts rows the facts table lacks
// are written, in wave order.
func (b *backfill) recover(ctx context.Context, plan []chunk) ([]PlanRow, error) {
	d := b.d
	appID, s := d.Spec.AppID, b.s.LSN
	done, err := readPlanRows(ctx, d, appID, s.String(), PlanEventChunk)
	if err != nil {
		return nil, err
	}
	bsnap, err := d.Bronze.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read bronze: %w", err)
	}
	committed, ok := bsnap.TxnVersion(WaveTxnAppID(appID, s))
	if !ok {
		return done, nil
	}
	psnap, err := d.Plans.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the plans table: %w", err)
	}
	recorded := int64(-1)
	if v, ok := psnap.TxnVersion(facts.TxnSnapChunks(appID, s.String())); ok {
		recorded = v
	}
	if recorded < committed && len(plan) == 0 {
		return nil, &PlanNotFoundError{Snapshot: s}
	}
	for w := recorded + 1; w <= committed; w++ {
		rows, err := b.committedWave(ctx, bsnap, w, plan, done)
		if err != nil {
			return nil, err
		}
		if _, err := appendPlanRows(ctx, d, facts.TxnSnapChunks(appID, s.String()), w, rows); err != nil {
			return nil, err
		}
		done = append(done, rows...)
	}
	fsnap, err := d.Facts.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the facts table: %w", err)
	}
	inFacts := int64(-1)
	if v, ok := fsnap.TxnVersion(facts.TxnSnapChunks(appID, s.String())); ok {
		inFacts = v
	}
	for w := inFacts + 1; w <= committed; w++ {
		var rows []PlanRow
		for _, r := range done {
			if r.Wave != nil && *r.Wave == w {
				rows = append(rows, r)
			}
		}
		if len(rows) > 0 {
			if err := b.chunkFacts(ctx, w, rows); err != nil {
				return nil, err
			}
		}
	}
	return done, nil
}

// recoverLookback is how many bronze versions committedWave looks back for a wave's
// commit (the stream commits in between).
const recoverLookback = 1000

// committedWave rebuilds the chunk rows of wave w, which bronze holds: from the commit's
// tag while the log keeps it; else from the wave's intent and its rows in bronze (per
// chunk: rows counted, the stamp the smallest _start_lsn, no read time or size); without an
// intent, from the rows alone: the chunks from the first one not read yet up to the last
// with rows in bronze (an empty trailing chunk of that attempt is read again by the next
// wave).
func (b *backfill) committedWave(ctx context.Context, bsnap *deltalog.Snapshot, w int64, plan []chunk, done []PlanRow) ([]PlanRow, error) {
	d := b.d
	app := WaveTxnAppID(d.Spec.AppID, b.s.LSN)
	for v := bsnap.Version(); v >= 0 && v > bsnap.Version()-recoverLookback; v-- {
		ci, ok := bsnap.CommitInfo(v)
		if !ok {
			break // before the snapshot's checkpoint: no commitInfo to read
		}
		var tag waveTag
		if ci.UserMetadata == "" || json.Unmarshal([]byte(ci.UserMetadata), &tag) != nil || tag.Backfill != app || tag.Wave != w {
			continue
		}
		return tagRows(b, tag), nil
	}
	intent, hasIntent, err := getIntent(ctx, d, b.s.LSN, w)
	if err != nil {
		return nil, err
	}
	var cands []chunk
	if hasIntent {
		for _, i := range intent.Chunks {
			if i >= 0 && i < len(plan) {
				c := plan[i]
				if c.Last && c.Hi == nil && intent.LastHi != nil {
					c.Hi = intent.LastHi
				}
				cands = append(cands, c)
			}
		}
	} else {
		cands = notDone(plan, done)
	}
	tag := waveTag{Backfill: app, Wave: w}
	var minStart string
	lastWithRows := -1
	counts := make([]int64, len(cands))
	for i, c := range cands {
		n, first, err := chunkRowsInBronze(ctx, bsnap, b.s.LSN, c.Index)
		if err != nil {
			return nil, err
		}
		counts[i] = n
		if n > 0 {
			lastWithRows = i
			if minStart == "" || first < minStart {
				minStart = first
			}
		}
	}
	if !hasIntent {
		if lastWithRows < 0 {
			return nil, &WaveNotFoundError{Snapshot: b.s.LSN, Wave: w}
		}
		cands, counts = cands[:lastWithRows+1], counts[:lastWithRows+1]
		tag.LSN = minStart
	} else {
		tag.LSN = intent.Stamp.String()
	}
	for i, c := range cands {
		tag.Chunks = append(tag.Chunks, waveTagChunk{Chunk: int32(c.Index), Lo: c.Lo, Hi: c.Hi, Last: c.Last, Rows: counts[i]})
	}
	return tagRows(b, tag), nil
}

// chunkRowsInBronze counts the snapshot rows of chunk i of snapshot s in bronze and their
// smallest _start_lsn (the wave's stamp). Files whose statistics exclude the chunk are
// skipped, so only the chunk's own files are read.
func chunkRowsInBronze(ctx context.Context, snap *deltalog.Snapshot, s lsn.LSN, i int) (int64, string, error) {
	if snap.Version() < 0 {
		return 0, "", nil
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: []string{bronze.ColStartLSN},
		Filter: deltalog.And(deltalog.Eq(bronze.ColChunk, int32(i)), deltalog.Eq(bronze.ColSnapshot, s.String()), deltalog.Eq(bronze.ColOperation, int32(0)))})
	if err != nil {
		return 0, "", fmt.Errorf("scan bronze for chunk %d: %w", i, err)
	}
	defer it.Close()
	var n int64
	first := ""
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, first, nil
		}
		if err != nil {
			return 0, "", fmt.Errorf("scan bronze for chunk %d: %w", i, err)
		}
		col, ok := rec.Column(0).(*array.String)
		for r := 0; ok && r < int(rec.NumRows()); r++ {
			if v := col.Value(r); first == "" || v < first {
				first = v
			}
		}
		n += rec.NumRows()
		rec.Release()
	}
}

// complete writes the snapshot's completion row once every chunk is in bronze: bootstrap
// in generation 0, resnapshot in generation n >= 1 (the open's kind), of the generation's
// app_id, keyed txn(<app_id>#events, n); min = max = S, the rows of every chunk, started at
// the open, the gap (lost_from_ts, lost_to_ts) copied from the open row, and a detail with
// the chunk count and the last wave's stamp. A switch snapshot's (kind switch) is a
// bootstrap row whose detail adds the switch and its S, keyed
// txn(<generation app_id>#switch.<S>, 0) as the full one's (docs/facts.md).
func (b *backfill) complete(ctx context.Context, done []PlanRow) error {
	d := b.d
	var rows int64
	last := ""
	for _, r := range done {
		if r.Rows != nil {
			rows += *r.Rows
		}
		last = max(last, r.Stamp)
	}
	event := facts.EventBootstrap
	if b.open.Detail.Kind == facts.KindResnapshot || (b.open.Detail.Kind == "" && b.g.N > 0) {
		event = facts.EventResnapshot
	}
	r := facts.SnapshotRow(b.g.App, d.Spec.Bronze, event, b.s)
	r.Rows = &rows
	r.LostFromTS, r.LostToTS = b.open.Row.LostFromTS, b.open.Row.LostToTS
	if prow, ok, err := d.openRowAt(ctx, b.g, b.s.LSN.String()); err == nil && ok && prow.PlannedAt != nil {
		r.StartedAt = prow.PlannedAt
		r.DurationMs = facts.Int64(d.now().Sub(*prow.PlannedAt).Milliseconds())
	} else if err != nil {
		return err
	}
	txn, ver := facts.TxnEvents(b.g.Root), int64(b.g.N)
	var sw lsn.LSN
	if b.open.Detail.Kind == facts.KindSwitch {
		// A switch snapshot completes as the full one does: a bootstrap row naming the
		// switch, keyed by it (docs/facts.md), beside the generation's own completion.
		var err error
		if sw, err = lsn.Parse(b.open.Detail.S); err != nil {
			return fmt.Errorf("switch snapshot %s: its open row's s %q: %w", b.s.LSN, b.open.Detail.S, err)
		}
		txn, ver = facts.TxnSwitch(b.g.App, sw), 0
	}
	var detail strings.Builder
	enc := json.NewEncoder(&detail)
	enc.SetEscapeHTML(false) // a switch's "->" as written
	_ = enc.Encode(struct {
		Switch   string `json:"switch,omitempty"`
		S        string `json:"s,omitempty"`
		Snapshot string `json:"snapshot"`
		Chunks   int    `json:"chunks"`
		Rows     int64  `json:"rows"`
		LastLSN  string `json:"last_lsn"`
	}{b.open.Detail.Switch, b.open.Detail.S, b.s.LSN.String(), len(done), rows, last})
	r.Detail = strings.TrimSpace(detail.String())
	r.WrittenAt = d.now()
	if _, err := facts.Append(ctx, d.Facts, txn, ver, []facts.Row{r}, d.Options.Writer); err != nil {
		return fmt.Errorf("write %s row: %w", event, err)
	}
	return nil
}
