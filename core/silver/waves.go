package silver

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// waveRun is what the chunk waves of an open chunked snapshot among a run's bronze
// commits ask of the run (docs/silver.md § Chunk waves): their chunk rows are images at
// their stamp, ranked with every change to their keys, and a key in a chunk's range the
// chunk does not hold is deleted as of the stamp when its image is older than S (no
// change row after S will say it is gone).
type waveRun struct {
	// snapshot is S, the chunked snapshot the waves belong to; wave the newest of them.
	snapshot string
	wave     int64
	// complete: the plan's last chunk is among them, so the snapshot is whole.
	complete bool
	// minStamp is the oldest stamp among the waves.
	minStamp string
	// spans are the chunks' key ranges in silver's key order, for the keys whose order
	// silver shares with SQL Server (chunkBound); empty otherwise. For range deletes the
	// plan's first chunk is open below and its last open above, whatever bounds they
	// read: a key below the first or above the last that silver holds with an image older
	// than S is gone as surely as one inside a chunk's range (docs/silver.md § Chunk waves).
	spans []chunkSpan
}

// chunkSpan is one chunk's key range [lo, hi) (nil open) in silver's key encoding, and
// the stamp L its rows carry.
type chunkSpan struct {
	lo, hi []byte
	stamp  string
}

func (c chunkSpan) holds(k []byte) bool {
	return (c.lo == nil || bytes.Compare(k, c.lo) >= 0) && (c.hi == nil || bytes.Compare(k, c.hi) < 0)
}

// spanOf is the chunk span whose range holds k, nil when none does.
func (w *waveRun) spanOf(k []byte) *chunkSpan {
	if w == nil {
		return nil
	}
	for i := range w.spans {
		if w.spans[i].holds(k) {
			return &w.spans[i]
		}
	}
	return nil
}

// wavesOf picks, among wave tags (in commit order), the waves silver applies: those of the
// newest chunked snapshot S newer than the whole snapshot silver stands on (pos.Snapshot)
// and not older than the one it has open (an older one was abandoned: it never
// completes). nil when there is none.
func wavesOf(tags []bronze.WaveTag, pos Position, kc keyColumnsInfo) *waveRun {
	s := ""
	for _, t := range tags {
		if sn := t.Snapshot(); sn > pos.Snapshot && sn >= pos.OpenSnapshot {
			s = max(s, sn)
		}
	}
	if s == "" {
		return nil
	}
	w := &waveRun{snapshot: s, wave: -1}
	ranged := true
	var spans []chunkSpan
	for _, t := range tags {
		if t.Snapshot() != s {
			continue
		}
		w.wave = max(w.wave, t.Wave)
		if w.minStamp == "" || t.LSN < w.minStamp {
			w.minStamp = t.LSN
		}
		if !sameKeys(t.Keys, kc.names) {
			ranged = false
		}
		for _, c := range t.Chunks {
			clo, chi := c.Lo, c.Hi
			if c.Chunk == 0 {
				clo = nil
			}
			if c.Last {
				w.complete = true
				chi = nil
			}
			lo, ok1 := kc.chunkBound(clo, false)
			hi, ok2 := kc.chunkBound(chi, true)
			if !ok1 || !ok2 {
				ranged = false
				continue
			}
			spans = append(spans, chunkSpan{lo: lo, hi: hi, stamp: t.LSN})
		}
	}
	if ranged {
		w.spans = spans
	}
	return w
}

func sameKeys(a, b []string) bool {
	return len(a) > 0 && slices.EqualFunc(a, b, strings.EqualFold)
}

// waveTagsOf are the wave tags among bronze commits (as ReadCommits returns them).
func waveTagsOf(commits [][]deltalog.Action) []bronze.WaveTag {
	var out []bronze.WaveTag
	for _, c := range commits {
		for _, a := range c {
			if a.CommitInfo != nil {
				if t, ok := bronze.ParseWaveTag(a.CommitInfo.UserMetadata); ok {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// waveTagsIn are the wave tags of the commits bsnap replayed from JSON (those after its
// checkpoint), and, for a chunked snapshot whose waves all lie before the checkpoint, a
// tag naming S alone (from bronze's txn <app_id>#snap.<S>), without chunks: a rebuild
// still counts its chunk rows, without range deletes.
func waveTagsIn(bsnap *deltalog.Snapshot) []bronze.WaveTag {
	var out []bronze.WaveTag
	seen := map[string]bool{}
	for v := bsnap.CheckpointVersion() + 1; v <= bsnap.Version(); v++ {
		if ci, ok := bsnap.CommitInfo(v); ok {
			if t, ok := bronze.ParseWaveTag(ci.UserMetadata); ok {
				out = append(out, t)
				seen[t.Snapshot()] = true
			}
		}
	}
	for _, tx := range bsnap.Txns() {
		t := bronze.WaveTag{Backfill: tx.AppID, Wave: tx.Version}
		if s := t.Snapshot(); s != "" && !seen[s] {
			t.LSN = s // no stamp is known: S, below every wave's
			out = append(out, t)
		}
	}
	return out
}

// chunkBound encodes a chunk bound (one JSON value per key column, docs/snapshots.md) as a
// key of silver's order; ok is false when silver's order of these keys may differ from
// SQL Server's. Only integers, dates and timestamps are translated: their order is the
// same on both sides, while strings (collations) and uniqueidentifier (its byte order)
// are not. Timestamps are kept to microseconds in bronze (docs/types.md), so a bound with
// finer digits is rounded inward on the last key column (a lower bound up, an upper one
// down: a key in that microsecond is never deleted by mistake) and refused on another.
// upper is true for a chunk's upper bound. A nil bound is open (nil, true).
func (kc keyColumnsInfo) chunkBound(vals []any, upper bool) ([]byte, bool) {
	if vals == nil {
		return nil, true
	}
	if len(vals) != len(kc.names) {
		return nil, false
	}
	var out []byte
	for i, v := range vals {
		if v == nil {
			out = append(out, 0x00)
			continue
		}
		last := i == len(vals)-1
		switch t := kc.types[i].(type) {
		case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
			*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type:
			n, ok := v.(json.Number)
			if !ok {
				return nil, false
			}
			x, err := n.Int64()
			if err != nil {
				return nil, false
			}
			out = putInt(append(out, 0x01), x)
		case *arrow.Date32Type:
			ts, ok := boundTime(v)
			if !ok || ts.Truncate(24*time.Hour) != ts {
				return nil, false
			}
			out = putInt(append(out, 0x01), int64(arrow.Date32FromTime(ts)))
		case *arrow.TimestampType:
			ts, ok := boundTime(v)
			if !ok {
				return nil, false
			}
			unit := t.Unit.Multiplier().Nanoseconds()
			ns := ts.UnixNano()
			if ts.Year() < 1678 || ts.Year() > 2261 { // outside int64 nanoseconds
				return nil, false
			}
			x := ns / unit
			if ns%unit != 0 {
				if !last {
					return nil, false
				}
				if ns < 0 { // division truncated toward zero: x is the ceiling
					x--
				}
				if !upper {
					x++
				}
			}
			if x == math.MaxInt64 {
				return nil, false
			}
			out = putInt(append(out, 0x01), x)
		default:
			return nil, false
		}
	}
	return out, true
}

// boundTime reads an RFC 3339 bound (docs/snapshots.md: dates and times are UTC text).
func boundTime(v any) (time.Time, bool) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// applyWaveDeletes turns the image of a key in a chunk's range older than S into a delete
// at the chunk's stamp: the chunk, read at or after its stamp, does not hold the key, so
// the key was gone by the read, and no change row may ever say so (docs/silver.md § Chunk
// waves). An image at or after S stands: the key's chunk row, or a change the stream read,
// which reads every change after S and so delivers the key's delete itself; deleting it
// here would put silver ahead of bronze's current table until it does.
func (s *imageSet) applyWaveDeletes(w *waveRun) {
	if w == nil || len(w.spans) == 0 {
		return
	}
	for k, im := range s.byKey {
		sp := w.spanOf([]byte(k))
		if sp == nil || !w.supersedes(im.order.LSN) {
			continue
		}
		s.byKey[k] = waveDelete(sp.stamp)
	}
}

// supersedes reports whether a chunk that does not hold a key removes the key's image at
// lsn: only an image older than S, which no change row after S may follow (a key deleted
// in a gap before a later generation's snapshot, docs/silver.md § Chunk waves).
func (w *waveRun) supersedes(lsn string) bool {
	return lsn < w.snapshot
}

// waveDelete is the image a chunk's range delete gives a key: a delete at its stamp, which
// ranks below every change of that LSN.
func waveDelete(stamp string) image {
	return image{order: bronze.Order{LSN: stamp, CommandID: -1, Op: bronze.OpDelete}, batch: -1, row: -1}
}

// contextFiles are the bronze files at bsnap, other than the run's own, that may hold
// changes at or after since: the changes a chunk row is ranked with (its key may have
// changed after the stamp in a version silver already applied).
func contextFiles(bsnap *deltalog.Snapshot, own []deltalog.Add, since string) []deltalog.Add {
	mine := make(map[string]bool, len(own))
	for _, a := range own {
		mine[a.Path] = true
	}
	var out []deltalog.Add
	for _, a := range filesSince(bsnap, since) {
		if mine[a.Path] {
			continue
		}
		if st, ok, err := deltalog.ParseStats(a.Stats); err == nil && ok {
			if opMax, ok := statInt(st.MaxValues, bronze.ColOperation); ok && opMax == int64(bronze.OpSnapshot) {
				continue // snapshot rows only
			}
		}
		out = append(out, a)
	}
	return out
}

// chunkDeletes adds a delete at the chunk's stamp for every silver row of the pass's key
// range in a chunk's range that the images do not name and whose _start_lsn is older than
// S: the chunk does not hold its key, and nothing after S does (docs/silver.md § Chunk
// waves). It reads the key columns and _start_lsn of the files that may hold such rows.
func (p *pass) chunkDeletes(ctx context.Context) error {
	if p.waves == nil || len(p.waves.spans) == 0 {
		return nil
	}
	files := p.files()
	for fi := range files {
		f := &files[fi]
		if !f.rng.overlaps(p.kc, p.lo, p.hi) {
			continue
		}
		if !slices.ContainsFunc(p.waves.spans, func(c chunkSpan) bool { return f.rng.overlaps(p.kc, c.lo, c.hi) }) {
			continue
		}
		sel := selection{lo: p.lo, hi: p.hi}
		err := p.lookup(ctx, f, func(k string, _ int64, rowLSN string) {
			if _, ok := p.set.byKey[k]; ok || !sel.inRange([]byte(k)) {
				return
			}
			if sp := p.waves.spanOf([]byte(k)); sp != nil && p.waves.supersedes(rowLSN) {
				p.set.byKey[k] = waveDelete(sp.stamp)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}
