package facts

import (
	"math"
	"time"
)

// Row is one facts row. Strings use "" for NULL (no LSN, event or detail is empty);
// pointers are nil for NULL. Times are UTC. Its JSON form (a row still pending in the
// stream's checkpoint, docs/decisions/0013-facts-rows-deferred.md) names fields by column.
type Row struct {
	AppID   string `json:"app_id"`
	BatchID *int64 `json:"batch_id,omitempty"`
	// Rows is change rows written (all operations), 0 for an empty batch; snapshot rows
	// on bootstrap/resnapshot, nil when a reused snapshot's count is unknown.
	Rows *int64 `json:"rows,omitempty"`
	// MinLSN, MaxLSN: the batch's smallest and largest _start_lsn ("" when it had no
	// rows); on event rows the event's LSN (docs/reference/original-library.md §6.3).
	MinLSN      string     `json:"min_lsn,omitempty"`
	MaxLSN      string     `json:"max_lsn,omitempty"`
	MinCommitTS *time.Time `json:"min_commit_ts,omitempty"`
	MaxCommitTS *time.Time `json:"max_commit_ts,omitempty"`
	// Deletes (op 1), Inserts (op 2), Updates (op 4; op 3 not counted).
	Deletes int64 `json:"deletes,omitempty"`
	Inserts int64 `json:"inserts,omitempty"`
	Updates int64 `json:"updates,omitempty"`
	// StartedAt is when the batch started; DurationMs from then to the end of the bronze
	// commit.
	StartedAt  *time.Time `json:"started_at,omitempty"`
	DurationMs *int64     `json:"duration_ms,omitempty"`
	// Read metrics: median SELECT 1 round trip (ms), summed read time (task-seconds),
	// summed Arrow MB read (bytes/1e6), summed ASYNC_NETWORK_IO growth (ms).
	SourceRTTMs   *float64 `json:"source_rtt_ms,omitempty"`
	ReadSeconds   *float64 `json:"read_seconds,omitempty"`
	ReadMB        *float64 `json:"read_mb,omitempty"`
	NetworkWaitMs *int64   `json:"network_wait_ms,omitempty"`
	// RetentionWatermarkTS is the commit time of min_lsn(ci) after the read.
	RetentionWatermarkTS   *time.Time `json:"retention_watermark_ts,omitempty"`
	RetentionHeadroomHours *float64   `json:"retention_headroom_hours,omitempty"`
	// Event is "" for a micro-batch, else one of the Event* kinds.
	Event string `json:"event,omitempty"`
	// LostFromTS, LostToTS bound a gap (resnapshot, data_skipped).
	LostFromTS *time.Time `json:"lost_from_ts,omitempty"`
	LostToTS   *time.Time `json:"lost_to_ts,omitempty"`
	// SourceMaxCommitTS is the commit time of max_lsn after the read.
	SourceMaxCommitTS   *time.Time `json:"source_max_commit_ts,omitempty"`
	CaptureLagSeconds   *float64   `json:"capture_lag_seconds,omitempty"`
	IngestionLagSeconds *float64   `json:"ingestion_lag_seconds,omitempty"`
	// EndLSN is the batch's end offset (rows or not); EndCommitTS its commit time.
	EndLSN      string     `json:"end_lsn,omitempty"`
	EndCommitTS *time.Time `json:"end_commit_ts,omitempty"`
	// Detail is the event's payload (docs/reference/original-library.md §6.5) or
	// {"warnings": [...]} on a batch.
	Detail    string    `json:"detail,omitempty"`
	Target    string    `json:"target,omitempty"`
	WrittenAt time.Time `json:"written_at"`
}

// Position is how far through the commit history the row's stream had read:
// end_commit_ts, falling back to max_commit_ts (docs/reference/original-library.md §6.4).
func (r *Row) Position() *time.Time {
	if r.EndCommitTS != nil {
		return r.EndCommitTS
	}
	return r.MaxCommitTS
}

// Health is what the stream observed of the source around a batch's read: the inputs of
// the derived metrics (docs/reference/original-library.md §6.4).
type Health struct {
	// Watermark is the commit time of min_lsn(ci) after the read (nil when unknown).
	Watermark *time.Time
	// SourceMax is the commit time of max_lsn after the read.
	SourceMax *time.Time
	// Clock is the reader's UTC clock right after it read max_lsn.
	Clock time.Time
}

// ApplyHealth fills retention_watermark_ts, source_max_commit_ts and the three derived
// metrics of docs/reference/original-library.md §6.4 from h and the row's position.
func (r *Row) ApplyHealth(h Health) {
	r.RetentionWatermarkTS = h.Watermark
	r.SourceMaxCommitTS = h.SourceMax
	r.RetentionHeadroomHours = HeadroomHours(r.Position(), h.Watermark)
	r.IngestionLagSeconds = IngestionLagSeconds(h.SourceMax, r.Position())
	if h.SourceMax != nil && !h.Clock.IsZero() {
		v := round(h.Clock.Sub(*h.SourceMax).Seconds(), 3)
		r.CaptureLagSeconds = &v
	}
}

// HeadroomHours is round((position − watermark) / 1 h, 2): how far ahead of CDC cleanup
// the stream's position is; 0 means the next changes to read are being purged. nil when
// either is unknown (docs/reference/original-library.md §6.4).
func HeadroomHours(position, watermark *time.Time) *float64 {
	if position == nil || watermark == nil {
		return nil
	}
	v := round(position.Sub(*watermark).Hours(), 2)
	return &v
}

// IngestionLagSeconds is round(source_max_commit_ts − position, 3) in seconds, nil when
// either is unknown (docs/reference/original-library.md §6.4).
func IngestionLagSeconds(sourceMax, position *time.Time) *float64 {
	if sourceMax == nil || position == nil {
		return nil
	}
	v := round(sourceMax.Sub(*position).Seconds(), 3)
	return &v
}

// CaptureLagSeconds is round(clock − source_max_commit_ts, 3): how far capture is behind
// the reader's clock (docs/reference/original-library.md §6.4).
func CaptureLagSeconds(clock time.Time, sourceMax *time.Time) *float64 {
	if sourceMax == nil {
		return nil
	}
	v := round(clock.Sub(*sourceMax).Seconds(), 3)
	return &v
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// Int64 and Float64 and Time return pointers, for filling Row fields.
func Int64(v int64) *int64        { return &v }
func Float64(v float64) *float64  { return &v }
func Time(t time.Time) *time.Time { u := t.UTC(); return &u }
