package facts

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// eventRow fills the columns every event row shares (docs/reference/original-library.md
// §6.3): min_lsn, max_lsn and end_lsn hold the event's LSN, the commit-time columns its
// commit time (nil when unknown).
func eventRow(appID string, batch *int64, target, event string, at lsn.LSN, atTime *time.Time) Row {
	l := at.String()
	return Row{
		AppID: appID, BatchID: batch, Rows: Int64(0), Event: event, Target: target,
		MinLSN: l, MaxLSN: l, EndLSN: l,
		MinCommitTS: atTime, MaxCommitTS: atTime, EndCommitTS: atTime,
	}
}

// SchemaChangeRow is the schema_change row of a batch whose range holds DDL on the source
// table: its LSN, the time of the last commit at or before it, the statement as detail.
func SchemaChangeRow(appID string, batch int64, target string, ddlLSN lsn.LSN, ddlTime *time.Time, command string) Row {
	r := eventRow(appID, Int64(batch), target, EventSchemaChange, ddlLSN, ddlTime)
	r.Detail = command
	return r
}

// CaptureInstanceSwitchedRow is the row of the first batch that reads a newer capture
// instance, whose start LSN is s: detail "old -> new", plus the columns the stream reads
// that the new instance does not capture (NULL from s on).
func CaptureInstanceSwitchedRow(appID string, batch int64, target, oldCI, newCI string, s lsn.LSN, sTime *time.Time, notCaptured []string) Row {
	r := eventRow(appID, Int64(batch), target, EventCaptureInstanceSwitched, s, sTime)
	r.Detail = oldCI + " -> " + newCI
	if len(notCaptured) > 0 {
		r.Detail += "; not captured by " + newCI + ", read as NULL from " + s.String() + ": " + strings.Join(notCaptured, ", ")
	}
	return r
}

// DataSkippedDetail is the data_skipped row's detail (docs/reference/original-library.md
// §6.5): the first LSN not read, the min_lsn reading resumed at, whether the loss is
// certain (found at planning) and why.
type DataSkippedDetail struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Certain bool   `json:"certain"`
	Reason  string `json:"reason,omitempty"`
}

// DataSkippedRow is the row written when failOnDataLoss=false skipped purged changes: min =
// max = to (where reading resumed), lost_from_ts the commit time of the batch's start
// offset, lost_to_ts the commit time of to. end_lsn stays NULL
// (docs/reference/original-library.md §6.2).
func DataSkippedRow(appID string, batch int64, target string, from, to lsn.LSN, lostFrom, lostTo *time.Time, certain bool, reason string) Row {
	r := eventRow(appID, Int64(batch), target, EventDataSkipped, to, lostTo)
	r.EndLSN, r.EndCommitTS = "", nil
	r.LostFromTS, r.LostToTS = lostFrom, lostTo
	d, _ := json.Marshal(DataSkippedDetail{From: from.String(), To: to.String(), Certain: certain, Reason: reason})
	r.Detail = string(d)
	return r
}

// SnapshotRow is a snapshot's event row (snapshot_open, bootstrap, resnapshot) at the
// snapshot's offset: min_lsn, max_lsn and end_lsn its LSN, the commit-time columns its
// commit time (NULL when the LSN is no commit's), rows 0 (the caller sets a completion
// row's count).
func SnapshotRow(appID, target, event string, snap lsn.Offset) Row {
	return eventRow(appID, nil, target, event, snap.LSN, snap.CommitTime())
}

// OpenDetail is the snapshot_open row's detail (docs/reference/original-library.md §6.5,
// docs/facts.md), the one shape for writing it (String) and reading it (OpenSnapshots).
// JSON keys are only ever added. A missing or unknown Mode reads as chunked.
type OpenDetail struct {
	Mode       string          `json:"mode"`
	Kind       string          `json:"kind"`
	Generation int             `json:"generation"`
	LostFromTS *string         `json:"lost_from_ts"`
	LostToTS   *string         `json:"lost_to_ts"`
	Keys       []string        `json:"keys,omitempty"`
	Plan       json.RawMessage `json:"plan,omitempty"`
	// Switch ("<old> -> <new>"), S (the newer instance's start LSN) and CaptureInstance
	// (the newer instance, whose columns the chunks read) are set on a chunked snapshot of
	// kind switch (snapshot_on_switch with snapshot "chunked", docs/stream.md "Schema
	// changes"): the backfill reads them to read the right instance and to write the
	// completion row.
	Switch          string `json:"switch,omitempty"`
	S               string `json:"s,omitempty"`
	CaptureInstance string `json:"capture_instance,omitempty"`
}

// Modes and kinds of a snapshot_open row's detail.
const (
	ModeFull       = "full"
	ModeChunked    = "chunked"
	KindBootstrap  = "bootstrap"
	KindResnapshot = "resnapshot"
	// KindSwitch: the whole snapshot snapshot_on_switch takes after a switch to a newer
	// capture instance; its completion row is a bootstrap row (SwitchSnapshotRow).
	KindSwitch = "switch"
)

// String is the detail's JSON, e.g. {"mode":"full","kind":"bootstrap","generation":0,
// "lost_from_ts":null,"lost_to_ts":null}.
func (d OpenDetail) String() string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a switch's "->" as written, as capture_instance_switched's detail
	_ = enc.Encode(d)
	return strings.TrimSuffix(b.String(), "\n")
}

// WarningsDetail is a micro-batch row's detail: {"warnings": [...]}, or "" for none.
func WarningsDetail(warnings []string) string {
	if len(warnings) == 0 {
		return ""
	}
	b, _ := json.Marshal(struct {
		Warnings []string `json:"warnings"`
	}{warnings})
	return string(b)
}

// TimeText is t as detail payloads write a time: UTC ISO 8601 with milliseconds
// (lsn.FormatTime), nil for nil.
func TimeText(t *time.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := lsn.FormatTime(*t)
	return &s
}

// ResnapshotRow is the resnapshot row of a re-snapshot that opened a generation after data
// loss (docs/reference/original-library.md §6.2, §7.6): app_id the generation's
// (<app_id>.g<n>), min_lsn = max_lsn = end_lsn the snapshot's LSN S, rows the snapshot's
// (nil when a reused snapshot's count is unknown), lost_from_ts and lost_to_ts the gap.
// The caller keys its append txn(<app_id>#events, n).
func ResnapshotRow(generationAppID, target string, snap lsn.Offset, rows *int64, lostFrom, lostTo *time.Time) Row {
	r := SnapshotRow(generationAppID, target, EventResnapshot, snap)
	r.Rows = rows
	r.LostFromTS, r.LostToTS = lostFrom, lostTo
	return r
}
