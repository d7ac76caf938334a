package snapshot

import (
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// Status is what Open found.
type Status string

// Open's outcomes.
const (
	// Opened: no snapshot in bronze and no checkpoint offsets; L was stamped, read the table.
	Opened Status = "opened"
	// Found: bronze already holds a whole snapshot of the table; nothing is read again.
	Found Status = "found"
	// Resume: the checkpoint already has offsets; the stream resumes from them, no snapshot.
	Resume Status = "resume"
)

// OpenResult is the output of Open.
type OpenResult struct {
	Status Status `json:"status"`
	// Snapshot is the snapshot's offset (Opened, Found), or the checkpoint's latest (Resume).
	Snapshot lsn.Offset `json:"snapshot"`
	// CaptureInstance is the instance the snapshot is taken for (as SQL Server names it).
	CaptureInstance string `json:"capture_instance,omitempty"`
	// StartedAt is when Open stamped L (Opened), UTC.
	StartedAt *time.Time `json:"started_at,omitempty"`
}

// Range is one key range of a plan: [Lo, Hi) in key order, nil ends open. Bounds are JSON
// lists with one value per key column (docs/reference/original-library.md §6.5 key
// values: types JSON lacks as text, binary as 0x hex). The bounds stay in the staging
// area (plan.json, under the checkpoint prefix): the plan's output and the read's input
// carry only the index, so no source key value reaches the Step Functions history
// (docs/design.md §4.3: key values only where bronze's access policy applies).
type Range struct {
	Index int   `json:"index"`
	Lo    []any `json:"lo,omitempty"`
	Hi    []any `json:"hi,omitempty"`
}

// PlanResult is the output of Plan.
type PlanResult struct {
	// NumPartitions is the most ranges read at once (the Map's MaxConcurrency).
	NumPartitions int `json:"numPartitions"`
	// Keys are the key columns the ranges are cut on; empty with one open range.
	Keys []string `json:"keys"`
	// Ranges are the ranges' indexes ({"index": i}); their bounds are in plan.json.
	Ranges []Range `json:"ranges"`
	// EstimatedRows is the table's row estimate when it was planned (Source.SizeEstimate),
	// 0 when unknown. It sizes the progress a CLI prints (ReadProgress) and is not part
	// of the step's output.
	EstimatedRows int64 `json:"-"`
}

// ReadProgress is what Options.Progress is told while ranges are read.
type ReadProgress struct {
	// Range is the range's index, of Ranges in the plan.
	Range, Ranges int
	// Rows and Bytes (Arrow bytes read) so far in this range; when Done, its totals.
	Rows, Bytes int64
	// Done: the range's files are written and staged.
	Done bool
	// EstimatedRows is PlanResult.EstimatedRows when ReadAll reports (0 from a single
	// Read, which has no plan result).
	EstimatedRows int64
}

// ReadResult is the output of Read for one range.
type ReadResult struct {
	Range int   `json:"range"`
	Rows  int64 `json:"rows"`
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// CommitResult is the output of Commit.
type CommitResult struct {
	// Version is the bronze version holding the snapshot; -1 for an empty table
	// (no commit).
	Version int64 `json:"version"`
	// Rows are the snapshot's rows (nil when a found snapshot's count is unknown).
	Rows *int64 `json:"rows"`
	// Skipped is true when bronze already held the commit (a rerun).
	Skipped bool `json:"skipped"`
}
