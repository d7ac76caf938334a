package bronze

import (
	"encoding/json"
	"strings"
	"time"
)

// WaveTxnMarker separates the app id from S in a wave's txn app id,
// <app_id>#snap.<S> (docs/snapshots.md § How a chunked snapshot behaves).
const WaveTxnMarker = "#snap."

// WaveTag is the userMetadata of a chunked snapshot's wave commit in bronze
// (docs/snapshots.md § Crash recovery): the wave's chunks with their key bounds and the
// stamp L its rows carry as _start_lsn. The backfill writes it; a rerun of the backfill
// and silver's apply (docs/silver.md § Chunk waves) read it. It holds source key values:
// bronze's history needs bronze's access policy.
type WaveTag struct {
	// Backfill is the wave's txn app id, <app_id>#snap.<S>.
	Backfill string `json:"backfill"`
	// Wave is the wave's number (its txn version), from 0.
	Wave int64 `json:"wave"`
	// LSN is the stamp L: max_lsn recorded before the chunks were read.
	LSN string `json:"lsn"`
	// HighLSN is max_lsn after the read (informational).
	HighLSN string  `json:"high_lsn"`
	Seconds float64 `json:"seconds"`
	Rounds  int32   `json:"rounds"`
	// Keys are the key columns the chunks' bounds are values of, in order (absent in tags
	// written before they were recorded).
	Keys   []string    `json:"keys,omitempty"`
	Chunks []WaveChunk `json:"chunks"`
	ReadAt time.Time   `json:"read_at"`
}

// WaveChunk is one chunk of a wave: the key range [Lo, Hi) it read, in SQL Server's order
// of the key columns (one JSON value per column: integers as numbers, dates and times as
// RFC 3339 text, binary as 0x hex; nil is open), and whether it is the plan's last.
type WaveChunk struct {
	Chunk       int32    `json:"chunk"`
	Lo          []any    `json:"lo"`
	Hi          []any    `json:"hi"`
	Last        bool     `json:"last"`
	Rows        int64    `json:"rows"`
	ReadSeconds *float64 `json:"read_seconds,omitempty"`
	ReadMB      *float64 `json:"read_mb,omitempty"`
}

// Snapshot is the chunked snapshot's S, from Backfill ("" when it is not a wave's app id).
func (t WaveTag) Snapshot() string {
	i := strings.LastIndex(t.Backfill, WaveTxnMarker)
	if i < 0 {
		return ""
	}
	return t.Backfill[i+len(WaveTxnMarker):]
}

// ParseWaveTag reads a commit's userMetadata as a wave tag; ok is false for any other
// commit. Numbers in the bounds are json.Number, so 64-bit keys stay exact.
func ParseWaveTag(userMetadata string) (WaveTag, bool) {
	if !strings.Contains(userMetadata, WaveTxnMarker) {
		return WaveTag{}, false
	}
	var t WaveTag
	d := json.NewDecoder(strings.NewReader(userMetadata))
	d.UseNumber()
	if err := d.Decode(&t); err != nil || t.Snapshot() == "" || t.LSN == "" {
		return WaveTag{}, false
	}
	return t, true
}
