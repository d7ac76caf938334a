package silver

import (
	"encoding/json"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// Domain is the domain metadata (docs/reference/delta-protocol.md §2.9) in which every
// apply commit records silver's Position. Domain metadata is kept by checkpoints and log
// clean-up, unlike commitInfo, so the position survives as long as the table does
// (docs/silver.md § Position).
const Domain = "mssqlcdc.silver"

// TxnSuffix makes silver's txn app id from the spec's app_id: txn(<app_id>#silver, step).
const TxnSuffix = "#silver"

// Position is how far silver has applied bronze (docs/silver.md § Position), written as
// JSON in the Domain metadata and in commitInfo.userMetadata of every apply commit.
type Position struct {
	// Format is the position's format version (1).
	Format int `json:"format"`
	// BronzeID is bronze's Delta table id (metaData.id); a different id is another table.
	BronzeID string `json:"bronze_id"`
	// Version is the bronze version applied in full; -1 before the first apply.
	Version int64 `json:"bronze_version"`
	// AppliedLSN is the newest LSN silver reflects: its snapshot's, or the newest change
	// applied ("" none).
	AppliedLSN string `json:"applied_lsn"`
	// Snapshot is the whole snapshot silver was (re)built from, "" when none: rows older than it do
	// not count (docs/bronze.md § The current table).
	Snapshot string `json:"snapshot_lsn"`
	// OpenSnapshot is the open chunked snapshot whose waves silver applies as they arrive, "" when
	// none; Wave is the newest of its waves applied.
	OpenSnapshot string `json:"open_snapshot_lsn,omitempty"`
	Wave         *int64 `json:"snapshot_wave,omitempty"`
	// Keys are silver's key columns.
	Keys []string `json:"keys"`
	// Step is the txn version of the commit that recorded this position: every apply
	// commit takes the next one.
	Step int64 `json:"step"`
	// Pass is a run of key ranges in progress, nil between runs.
	Pass *Pass `json:"pass,omitempty"`
}

// Pass is one run over bronze versions (Position.Version, Target], applied key range by key
// range, one commit each, so a run larger than memory or than one invocation's time goes
// on where it stopped.
type Pass struct {
	// Target is the bronze version the run applies up to.
	Target int64 `json:"bronze_version"`
	// Rebuild, when set, is the snapshot LSN the run rebuilds silver from: each key range
	// is replaced by that snapshot's rows and the changes after it. "" for an incremental
	// run.
	Rebuild *string `json:"rebuild,omitempty"`
	// Bounds are the hex-encoded keys (docs/silver.md § Keys) between consecutive key ranges:
	// range i is [Bounds[i-1], Bounds[i]), the first open below, the last open above.
	Bounds []string `json:"bounds"`
	// Done is the number of key ranges applied.
	Done int `json:"done"`
}

// ReadPosition is the position recorded in silver at snap (docs/silver.md § Position); ok
// is false for a silver table without one (none yet, or not a silver table), and the
// position is then the zero position (Version -1). A position that is not ours is a
// *PositionError.
func ReadPosition(snap *deltalog.Snapshot) (Position, bool, error) {
	for _, d := range snap.DomainMetadata() {
		if d.Domain != Domain {
			continue
		}
		var p Position
		if err := json.Unmarshal([]byte(d.Configuration), &p); err != nil {
			return Position{}, false, &PositionError{Reason: "not JSON", Err: err}
		}
		if p.Format != 1 {
			return Position{}, false, &PositionError{Reason: "unknown format version (written by a newer mssqlcdc?)"}
		}
		return p, true, nil
	}
	return Position{Version: -1, Format: 1}, false, nil
}

func (p Position) encode() string {
	b, _ := json.Marshal(p) // plain fields: never fails
	return string(b)
}
