package stream

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// DataLossError: changes the stream has not read are gone from the change table, because
// CDC cleanup purged them or because the capture instance that alone held them was
// disabled (docs/reference/original-library.md §7.1, §7.2). A rerun fails the
// same way: the checkpoint still points before the gap. Step Functions matches the name.
//
// With on_data_loss "resnapshot" the stream recovers by itself instead, except in the two
// cases this error then reports: the loss came within resnapshot_interval_days of the
// previous automatic re-snapshot or failed attempt (Previous: the stream cannot keep up, a
// person decides), or a full re-snapshot's own LSN was purged before the stream could read
// past it (Outlived: the table is too big to snapshot within the retention).
type DataLossError struct {
	CaptureInstance string
	// From is the first LSN the stream still had to read; MinLSN the instance's low
	// watermark that is now above it.
	From, MinLSN lsn.LSN
	// DuringRead is true when cleanup moved past From while the range was being read
	// (the check after the read), false when found at planning.
	DuringRead bool
	// Previous is the re-snapshot or failed attempt inside the anti-loop interval, nil
	// otherwise.
	Previous *PreviousRecovery
	// Outlived is the LSN of a full re-snapshot that outlived the retention; zero
	// otherwise.
	Outlived lsn.LSN
}

// PreviousRecovery names the last automatic re-snapshot ("resnapshot", the generation it
// opened) or failed attempt ("failed") and when it happened; Interval is
// resnapshot_interval_days.
type PreviousRecovery struct {
	Kind       string
	Generation int
	Attempt    int
	At         time.Time
	Interval   time.Duration
}

func (e *DataLossError) Error() string {
	if !e.Outlived.IsZero() {
		return fmt.Sprintf("%s: the full re-snapshot at %s outlived the CDC retention: the changes after it were purged (min_lsn is now %s) before the stream could read them. "+
			"The table is too big for a full snapshot within the retention: set snapshot to \"chunked\" and resnapshot_interval_days to 0, then run the stream again "+
			"(a chunked re-snapshot starts the stream at once and reads the table next to it)",
			e.CaptureInstance, e.Outlived, e.MinLSN)
	}
	when := ""
	if e.DuringRead {
		when = " while it was read"
	}
	msg := fmt.Sprintf("%s: change data from %s is gone%s (min_lsn is now %s): purged by CDC cleanup, "+
		"or held only by an older capture instance disabled before the stream read it. ",
		e.CaptureInstance, e.From, when, e.MinLSN)
	if p := e.Previous; p != nil {
		what := fmt.Sprintf("the automatic re-snapshot that opened generation %d", p.Generation)
		if p.Kind == "failed" {
			what = fmt.Sprintf("a failed re-snapshot attempt (generation %d, attempt %d)", p.Generation, p.Attempt)
		}
		return msg + fmt.Sprintf("This loss comes within resnapshot_interval_days (%s) of %s at %s: the stream cannot keep up with the source, "+
			"and a person must decide (make the stream faster, lengthen the CDC retention, use chunked snapshots, or lower resnapshot_interval_days; 0 allows an immediate retry).",
			days(p.Interval), what, p.At.UTC().Format(time.RFC3339))
	}
	return msg + "A re-snapshot is required: set on_data_loss to \"resnapshot\" to take one by itself, or take one by hand " +
		"(mssqlcdc snapshot --spec FILE --resnapshot) and start a new checkpoint and app_id from its LSN (startingLsn); " +
		"or set failOnDataLoss=false to skip ahead (loses changes)."
}

// days writes d in days ("7 days", "0.5 days").
func days(d time.Duration) string {
	return strconv.FormatFloat(d.Hours()/24, 'f', -1, 64) + " days"
}

// SchemaChangedError: the source's captured columns changed in a way the stream does not
// follow by itself (docs/stream.md "Schema changes"). Step Functions matches the name. Kind
// says which:
//
//   - SchemaTypeChanged: a captured column's type is one bronze's column does not hold (a
//     widening ALTER COLUMN, or two capture instances typing it differently), and bronze
//     cannot widen to it: Delta's typeWidening does not allow the change, or bronze lacks
//     the table property delta.enableTypeWidening (Widenable says which). Nothing is read.
//     Set the property and rerun (Widenable), else write to a new bronze table.
//   - SchemaDDLPolicy: schemaChangePolicy is "fail" and the batch holds DDL at At; the
//     replay holds the same DDL, so run once with "classify" to go on.
//   - SchemaInstancesConflict: two capture instances of the table type a column
//     differently and the newer type does not hold the older's values.
type SchemaChangedError struct {
	Kind            string
	CaptureInstance string
	Column          string
	// Was is the column's bronze (or older instance's) type, Now the type the source now
	// reports.
	Was, Now string
	// At is the DDL's LSN, or the newer instance's start LSN, when known.
	At lsn.LSN
	// Command is the DDL statement (SchemaDDLPolicy).
	Command string
	// Widenable is true when Delta's typeWidening allows the change (SchemaTypeChanged);
	// WideningEnabled when bronze has delta.enableTypeWidening "true".
	Widenable, WideningEnabled bool
}

// Kinds of SchemaChangedError.
const (
	SchemaTypeChanged       = "type_changed"
	SchemaDDLPolicy         = "ddl_policy"
	SchemaInstancesConflict = "instances_conflict"
)

func (e *SchemaChangedError) Error() string {
	at := ""
	if !e.At.IsZero() {
		at = " at " + e.At.String()
	}
	switch e.Kind {
	case SchemaDDLPolicy:
		return fmt.Sprintf("%s: DDL%s inside the batch (%s), and schemaChangePolicy is \"fail\": the batch is not read. "+
			"The rerun holds the same DDL: run once with schemaChangePolicy \"classify\" to go on", e.CaptureInstance, at, e.Command)
	case SchemaInstancesConflict:
		return fmt.Sprintf("capture instances %s capture column %s as %s and %s: the newer type does not hold the older's values; "+
			"capture it with a type that does, or leave it out with options.columns", e.CaptureInstance, e.Column, e.Was, e.Now)
	}
	advice := "Delta's typeWidening does not allow this change either: write to a new bronze table (new bronze, app_id and checkpoint) or rewrite it"
	if e.Widenable && !e.WideningEnabled {
		advice = "Delta's typeWidening allows this widening: set the table property delta.enableTypeWidening = 'true' on bronze " +
			"(ALTER TABLE ... SET TBLPROPERTIES, docs/stream.md \"Schema changes\") and rerun, and the stream widens the column in place; " +
			"or write to a new bronze table (new bronze, app_id and checkpoint)"
	}
	return fmt.Sprintf("%s: the type of captured column %s changed%s (bronze has %s, the source now %s), and bronze's type does not hold the new one: "+
		"nothing of the batch was read; %s", e.CaptureInstance, e.Column, at, e.Was, e.Now, advice)
}

// SourceUnavailableError: SQL Server could not be reached, or a transient failure outlasted
// the source's retries (a refused login is source.LoginError, not retried). The batch is
// not committed; a retry later resumes it. Step Functions matches the name (and retries
// it).
type SourceUnavailableError struct {
	Op  string
	Err error
}

func (e *SourceUnavailableError) Error() string {
	if e.Err == nil {
		return "source unavailable (" + e.Op + ")"
	}
	if msg := e.Err.Error(); strings.HasPrefix(msg, e.Op+":") {
		return "source unavailable: " + msg // the error names the operation already
	}
	return "source unavailable (" + e.Op + "): " + e.Err.Error()
}

func (e *SourceUnavailableError) Unwrap() error { return e.Err }

// NoSnapshotError: bootstrap=true, the checkpoint is fresh, and neither the facts table
// (bootstrap/resnapshot rows, an open chunked snapshot of this app_id) nor bronze
// (operation-0 rows of the table) holds a snapshot to start from: run the bootstrap
// machine (or `mssqlcdc bootstrap`) first.
type NoSnapshotError struct {
	AppID string
}

func (e *NoSnapshotError) Error() string {
	return fmt.Sprintf("app_id %s: bootstrap=true and no snapshot to start from, neither in the facts table nor in bronze (operation-0 rows): "+
		"run the bootstrap state machine (or mssqlcdc bootstrap --spec FILE) before the stream, or drop bootstrap and set startingLsn", e.AppID)
}

// CheckpointRewoundError: the facts table already holds a batch of this app_id at or above
// the batch the checkpoint would run: the checkpoint was deleted or rewound under the same
// app_id, and the batches would be silently skipped by their txn
// (docs/reference/original-library.md §5.2). Start a new checkpoint with a new app_id.
type CheckpointRewoundError struct {
	AppID string
	Next  int64
	// FactsBatch is the newest batch the table holds.
	FactsBatch int64
	// Table is the table holding it: "" for the facts table, "bronze" for bronze (which a
	// fresh checkpoint handed its start by a bootstrap is checked against).
	Table string
}

func (e *CheckpointRewoundError) Error() string {
	table := "the facts table"
	if e.Table != "" {
		table = e.Table
	}
	return fmt.Sprintf("app_id %s: the checkpoint's next batch is %d but %s already has batch %d: "+
		"the checkpoint was deleted or rewound; a new checkpoint needs a new app_id", e.AppID, e.Next, table, e.FactsBatch)
}

// FactsEveryError: Options.FactsEvery exceeds the batches the checkpoint keeps
// (checkpoint.Checkpoint.Retains). A batch's facts rows wait in its commit file until
// the facts commit, which must come before a clean-up deletes the file; and a warm
// process relies on every batch a clean-up deleted being in the facts table
// (docs/decisions/0017-warm-resume-by-head.md). Nothing is read or written.
type FactsEveryError struct {
	FactsEvery, Retain int
}

func (e *FactsEveryError) Error() string {
	return fmt.Sprintf("stream options: FactsEvery %d exceeds the checkpoint's Retain %d: "+
		"facts rows wait in commit files, which the checkpoint keeps for Retain batches; set FactsEvery <= Retain", e.FactsEvery, e.Retain)
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
