package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/facts"
	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
)

// WaveTxnAppID is the Delta txn appId of a chunked snapshot's waves in bronze
// (docs/design.md §4.2): txn(<app_id>#snap.<S>, wave).
func WaveTxnAppID(appID string, s lsn.LSN) string { return appID + bronze.WaveTxnMarker + s.String() }

// waveTag is a wave commit's userMetadata (docs/snapshots.md "Crash recovery"): what it
// holds, so a rerun that finds the wave already in bronze rebuilds its plans table and
// facts rows from it, and silver's apply knows the chunks' ranges and stamp.
type waveTag = bronze.WaveTag

type waveTagChunk = bronze.WaveChunk

// waveIntent is snapshots/<S>/waves/<wave>.json under the checkpoint prefix, written
// after the wave's stamp and before its read: the chunks it reads and the stamp. A rerun
// of a wave that did not reach bronze reads the same chunks, whatever numPartitions the
// rerun has; one that did, and whose commit log clean-up has dropped, is rebuilt from it
// and the wave's rows in bronze.
type waveIntent struct {
	Wave   int64   `json:"wave"`
	Chunks []int   `json:"chunks"`
	Stamp  lsn.LSN `json:"stamp"`
	// LastHi is the last chunk's end as sought for this wave, when the plan left it open.
	LastHi []any `json:"last_hi,omitempty"`
}

func waveIntentKey(s lsn.LSN, wave int64) string {
	return "snapshots/" + s.String() + "/waves/" + strconv.FormatInt(wave, 10) + ".json"
}

// chunkRead is what reading one chunk of a wave gave.
type chunkRead struct {
	c       chunk
	files   ingest.Files
	arrowB  int64
	seconds float64
}

// wave reads and commits the next wave and returns done with the wave's chunk rows added.
// Its errors begin "backfill wave <w> of chunked snapshot <S>: " (readWave's wrapped), so
// that a log line tells a wave's failure from a full snapshot's, whose stamp checks and
// range reads a wave shares (docs/handlers.md § backfill-wave errors).
func (b *backfill) wave(ctx context.Context, plan []chunk, done []PlanRow, pace time.Duration) ([]PlanRow, error) {
	s := b.s.LSN
	bsnap, err := b.d.Bronze.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("backfill of chunked snapshot %s: read bronze: %w", s, err)
	}
	w := int64(0)
	if v, ok := bsnap.TxnVersion(WaveTxnAppID(b.d.Spec.AppID, s)); ok {
		w = v + 1
	}
	rows, err := b.readWave(ctx, w, plan, done, pace)
	if err != nil {
		return nil, fmt.Errorf("backfill wave %d of chunked snapshot %s: %w", w, s, err)
	}
	return rows, nil
}

// readWave reads and commits wave w (wave's body; its errors unwrapped).
func (b *backfill) readWave(ctx context.Context, w int64, plan []chunk, done []PlanRow, pace time.Duration) ([]PlanRow, error) {
	d := b.d
	appID, s := d.Spec.AppID, b.s.LSN
	todo := notDone(plan, done)
	k := max(d.Spec.Options.NumPartitions, 1)
	n := min(len(todo), b.rounds(pace)*k)
	var intent waveIntent
	prior, ok, err := getIntent(ctx, d, s, w)
	if err != nil {
		return nil, err
	}
	picked := todo[:n]
	if ok && len(prior.Chunks) > 0 && allIn(prior.Chunks, todo) {
		picked = nil
		for _, i := range prior.Chunks {
			picked = append(picked, plan[i])
		}
	}
	// S's history must still be the database's: after a restore to before S (new commits
	// may since have passed it) the chunks would miss commits the stream, started at S,
	// never reads (docs/decisions/0011-source-continuity-and-computed-columns.md).
	if err := CheckStamp(ctx, d.Source, b.s); err != nil {
		return nil, err
	}
	stamp, err := StampLSN(ctx, d.Source, b.ci)
	if err != nil {
		return nil, err
	}
	if stamp.Less(s) { // max_lsn went back since the check: a DSN served by several replicas
		return nil, &StampBelowSnapshotError{Stamp: stamp, Snapshot: s}
	}
	intent = waveIntent{Wave: w, Stamp: stamp}
	for i, c := range picked {
		intent.Chunks = append(intent.Chunks, c.Index)
		if c.Last && c.Hi == nil && b.ext.Kind == PlanKindKeyset {
			// The first key after MAX, sought again: rows inserted above MAX since the
			// plan stay the stream's instead of growing the last chunk.
			mx, err := decodeKey(b.ext.Max, b.keys)
			if err != nil {
				return nil, err
			}
			pl := planner{src: d.Source, t: b.t, keys: b.keys, unique: len(d.Spec.Options.SnapshotKeys) == 0}
			if picked[i].Hi, err = pl.lastEnd(ctx, mx); err != nil {
				return nil, err
			}
			intent.LastHi = picked[i].Hi
		}
	}
	if err := putJSON(ctx, d.Staging, waveIntentKey(s, w), intent); err != nil {
		return nil, err
	}
	stampOff, err := stampOffset(ctx, d.Source, stamp)
	if err != nil {
		return nil, err
	}
	began := d.now()
	reads, err := b.readChunks(ctx, picked, stampOff, k)
	if err != nil {
		return nil, err
	}
	seconds := d.now().Sub(began).Seconds()
	rounds := int32((len(picked) + k - 1) / k)
	high, err := d.Source.MaxLSN(ctx)
	if err != nil {
		return nil, fmt.Errorf("read max_lsn: %w", err)
	}
	tag := waveTag{Backfill: WaveTxnAppID(appID, s), Wave: w, LSN: stamp.String(), HighLSN: high.String(), Seconds: seconds, Rounds: rounds, ReadAt: began,
		Keys: keyNames(b.keys)}
	var files ingest.Files
	var rowsRead int64
	var mb float64
	for _, r := range reads {
		files.Add(r.files)
		rowsRead += r.files.Rows
		m := float64(r.arrowB) / 1e6
		mb += m
		sec := r.seconds
		tag.Chunks = append(tag.Chunks, waveTagChunk{Chunk: int32(r.c.Index), Lo: r.c.Lo, Hi: r.c.Hi, Last: r.c.Last, Rows: r.files.Rows, ReadSeconds: &sec, ReadMB: &m})
	}
	// A restore during the read leaves rows older than L claims: refused unless the wave
	// is already in bronze (a rerun writes nothing new).
	if err := checkStampUnlessCommitted(ctx, d, stampOff, source.RecordedByWaveStamp, tag.Backfill, w); err != nil {
		return nil, err
	}
	replayed, err := b.commitWave(ctx, tag, files)
	if err != nil {
		return nil, err
	}
	var rows []PlanRow
	if replayed {
		// Another attempt committed wave w first: ours are orphan files; record what it read.
		bsnap, err := d.Bronze.Snapshot(ctx)
		if err != nil {
			return nil, fmt.Errorf("read bronze: %w", err)
		}
		if rows, err = b.committedWave(ctx, bsnap, w, plan, done); err != nil {
			return nil, err
		}
		rowsRead, mb = 0, 0
	} else {
		rows = tagRows(b, tag)
	}
	if err := b.record(ctx, w, rows); err != nil {
		return nil, err
	}
	done = append(done, rows...)
	if !replayed {
		b.status.Waves++
		b.status.Rows += rowsRead
	}
	if d.Options.OnWave != nil {
		first, last := int(*rows[0].Chunk), int(*rows[len(rows)-1].Chunk)
		d.Options.OnWave(WaveReport{Wave: w, FirstChunk: first, LastChunk: last, ChunksDone: len(done), ChunksTotal: len(plan),
			Rows: rowsRead, MB: mb, Duration: d.now().Sub(began), Stamp: stamp, Replayed: replayed})
	}
	return done, nil
}

// rounds is how many rounds of numPartitions chunks the next wave reads: as many as
// target_wave_seconds holds at the last wave's pace, at least one, and no more than the
// time left before the call's deadline holds; one without a pace or with
// target_wave_seconds 0.
func (b *backfill) rounds(pace time.Duration) int {
	if pace <= 0 || b.p.TargetWaveSeconds <= 0 {
		return 1
	}
	r := int(b.p.TargetWaveSeconds / pace.Seconds())
	if !b.stop.IsZero() {
		r = min(r, int(b.stop.Sub(b.d.now())/pace))
	}
	return max(r, 1)
}

// wavePace is the last wave's time per round, 0 when none was timed.
func wavePace(done []PlanRow) time.Duration {
	var best *PlanRow
	for i, r := range done {
		if r.Wave != nil && r.WaveSecs != nil && r.WaveRounds != nil && *r.WaveRounds > 0 && (best == nil || *best.Wave < *r.Wave) {
			best = &done[i]
		}
	}
	if best == nil {
		return 0
	}
	return time.Duration(*best.WaveSecs / float64(*best.WaveRounds) * float64(time.Second))
}

// readChunks reads the chunks of a wave, k at once, each on a connection of its own into
// data files of its own in bronze's folder (bounded memory whatever chunk_rows: records
// stream into row groups), stamped _operation 0, _start_lsn L, _snapshot S, _chunk.
func (b *backfill) readChunks(ctx context.Context, chunks []chunk, stamp lsn.Offset, k int) ([]chunkRead, error) {
	d := b.d
	schema, err := targetSchema(ctx, d, b.cols)
	if err != nil {
		return nil, err
	}
	out := make([]chunkRead, len(chunks))
	var mu sync.Mutex
	err = ingest.Parallel(ctx, len(chunks), k, func(ctx context.Context, i int) error {
		c := chunks[i]
		// The chunk must show the table as of L or later (rangeReadOn's stamp check).
		read, err := rangeReadOn(b.t, d.Options, b.cols, b.keys, Range{Index: c.Index, Lo: c.Lo, Hi: c.Hi}, stamp)
		if err != nil {
			return err
		}
		n := int32(c.Index)
		st := bronze.SnapshotStamp{CaptureInstance: b.ci.Name, LSN: stamp.LSN, CommitTS: stamp.CommitTime(), Snapshot: b.s.LSN, Chunk: &n}
		t0 := time.Now()
		files, ab, err := readRange(ctx, d, read, schema, st, d.Bronze.Store(), nil)
		if err != nil {
			return fmt.Errorf("read chunk %d: %w", c.Index, err)
		}
		mu.Lock()
		out[i] = chunkRead{c: c, files: files, arrowB: ab, seconds: time.Since(t0).Seconds()}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// commitWaveAttempts bounds how often a wave's commit is retried after the stream changed
// bronze's schema (a column added) between the wave's read and its commit.
const commitWaveAttempts = 3

// commitWave appends the wave's files to bronze in one commit keyed
// txn(<app_id>#snap.<S>, wave) with its tag as userMetadata. replayed is true when bronze
// already held the wave (an earlier attempt's commit). A metadata change by the stream
// (schema evolution) is retried with the merged schema.
func (b *backfill) commitWave(ctx context.Context, tag waveTag, files ingest.Files) (replayed bool, err error) {
	d := b.d
	meta, _ := json.Marshal(tag)
	for attempt := 1; ; attempt++ {
		schema, err := targetSchema(ctx, d, b.cols)
		if err != nil {
			return false, err
		}
		res, err := ingest.Append(ctx, d.Bronze, nil, ingest.Commit{AppID: tag.Backfill, Version: tag.Wave, Schema: schema, Files: files,
			UserMetadata: string(meta), Operation: "WRITE",
			OperationParameters: map[string]string{"mode": "Append", "snapshot": b.s.LSN.String(), "wave": strconv.FormatInt(tag.Wave, 10),
				"rows": strconv.FormatInt(files.Rows, 10), "bytes": strconv.FormatInt(files.Bytes, 10)}})
		var cm *deltalog.ConcurrentModificationError
		if errors.As(err, &cm) && attempt < commitWaveAttempts {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("commit to bronze: %w", err)
		}
		return res.Replayed, nil
	}
}

// tagRows are the plans table's chunk rows of a wave tag.
func tagRows(b *backfill, tag waveTag) []PlanRow {
	var out []PlanRow
	w, secs, rounds, at := tag.Wave, tag.Seconds, tag.Rounds, tag.ReadAt
	for _, c := range tag.Chunks {
		rows, last, n := c.Rows, c.Last, c.Chunk
		r := PlanRow{AppID: b.d.Spec.AppID, Snapshot: b.s.LSN.String(), Generation: int32(b.g.N), Event: PlanEventChunk,
			Chunk: &n, Lo: boundText(c.Lo), Hi: boundText(c.Hi), Last: &last, Kind: b.ext.Kind, Rows: &rows, Wave: &w,
			Stamp: tag.LSN, HighLSN: tag.HighLSN, ReadSecs: c.ReadSeconds, ReadMB: c.ReadMB}
		if secs > 0 || rounds > 0 {
			r.WaveSecs, r.WaveRounds = &secs, &rounds
		}
		if !at.IsZero() {
			r.ReadAt = &at
		}
		out = append(out, r)
	}
	return out
}

// record writes a wave's chunk rows to the plans table, then its snapshot_chunk facts
// rows, each keyed by the wave so a rerun writes neither twice.
func (b *backfill) record(ctx context.Context, w int64, rows []PlanRow) error {
	d := b.d
	appID, s := d.Spec.AppID, b.s.LSN.String()
	if _, err := appendPlanRows(ctx, d, facts.TxnSnapChunks(appID, s), w, rows); err != nil {
		return err
	}
	return b.chunkFacts(ctx, w, rows)
}

// chunkFacts writes one snapshot_chunk facts row per chunk of wave w: its rows, min_lsn the
// stamp L, max_lsn the max_lsn after the read, read time and size; no key values.
func (b *backfill) chunkFacts(ctx context.Context, w int64, rows []PlanRow) error {
	d := b.d
	appID, s := d.Spec.AppID, b.s.LSN.String()
	fsnap, err := d.Facts.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("read the facts table: %w", err)
	}
	if _, ok := ingest.Replayed(fsnap, facts.TxnSnapChunks(appID, s), w); ok {
		return nil
	}
	out := make([]facts.Row, 0, len(rows))
	times := map[string]*time.Time{}
	timeOf := func(text string) (lsn.LSN, *time.Time, error) {
		l, err := lsn.Parse(text)
		if err != nil {
			return lsn.Zero, nil, nil
		}
		if t, ok := times[text]; ok {
			return l, t, nil
		}
		t, ok, err := d.Source.CommitTime(ctx, l)
		if err != nil {
			return l, nil, fmt.Errorf("read commit time of %s: %w", l, err)
		}
		if ok {
			times[text] = facts.Time(t)
		} else {
			times[text] = nil
		}
		return l, times[text], nil
	}
	for _, r := range rows {
		l, lt, err := timeOf(r.Stamp)
		if err != nil {
			return err
		}
		row := facts.SnapshotRow(b.g.App, d.Spec.Bronze, facts.EventSnapshotChunk, lsn.Offset{LSN: l})
		row.MinCommitTS, row.MaxCommitTS, row.EndCommitTS = lt, lt, lt
		if r.HighLSN != "" {
			_, ht, err := timeOf(r.HighLSN)
			if err != nil {
				return err
			}
			row.MaxLSN, row.MaxCommitTS = r.HighLSN, ht
		}
		row.Rows = r.Rows
		row.ReadSeconds, row.ReadMB = r.ReadSecs, r.ReadMB
		row.StartedAt = r.ReadAt
		detail, _ := json.Marshal(struct {
			Snapshot string `json:"snapshot"`
			Wave     int64  `json:"wave"`
			Chunk    int32  `json:"chunk"`
			Last     bool   `json:"last"`
		}{s, w, deref32(r.Chunk), r.Last != nil && *r.Last})
		row.Detail = string(detail)
		row.WrittenAt = d.now()
		out = append(out, row)
	}
	if _, err := facts.Append(ctx, d.Facts, facts.TxnSnapChunks(appID, s), w, out, d.Options.Writer); err != nil {
		return fmt.Errorf("write snapshot_chunk rows: %w", err)
	}
	return nil
}

// notDone are the plan's chunks no chunk row records, in order.
func notDone(plan []chunk, done []PlanRow) []chunk {
	seen := map[int32]bool{}
	for _, r := range done {
		if r.Chunk != nil {
			seen[*r.Chunk] = true
		}
	}
	var out []chunk
	for _, c := range plan {
		if !seen[int32(c.Index)] {
			out = append(out, c)
		}
	}
	return out
}

// allIn reports whether every chunk index is among todo.
func allIn(idx []int, todo []chunk) bool {
	for _, i := range idx {
		if !slices.ContainsFunc(todo, func(c chunk) bool { return c.Index == i }) {
			return false
		}
	}
	return true
}

func getIntent(ctx context.Context, d Deps, s lsn.LSN, w int64) (waveIntent, bool, error) {
	var in waveIntent
	ok, err := getJSON(ctx, d.Staging, waveIntentKey(s, w), &in)
	return in, ok, err
}
