package silver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

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
	// BronzeCommit identifies bronze's commit at Version (its commitInfo.txnId, else its
	// timestamp): bronze replaced by another table with as many versions and the same id
	// (a copy) shows a different one ("" in positions written before it was recorded).
	BronzeCommit string `json:"bronze_commit,omitempty"`
	// Version is the bronze version applied in full; -1 before the first apply.
	Version int64 `json:"bronze_version"`
	// AppliedLSN is the LSN up to which every transaction is in silver: the newest change
	// applied, or the snapshot silver stands on when newer ("" none). Never a chunk's
	// stamp: a wave's rows show their keys as of the stamp, but the stream may not have
	// delivered the changes up to it to the other keys (docs/silver.md § Position). Rows
	// may reflect later transactions (a snapshot's or chunk's read).
	AppliedLSN string `json:"applied_lsn"`
	// Snapshot is the whole snapshot silver was (re)built from, "" when none: rows older than it do
	// not count (docs/bronze.md § The current table).
	Snapshot string `json:"snapshot_lsn"`
	// OpenSnapshot is the open chunked snapshot whose waves silver applies as they arrive
	// (docs/silver.md § Chunk waves), "" when none; Wave is the newest of its waves
	// applied. When the wave holding the plan's last chunk is applied, the snapshot is
	// whole: it becomes Snapshot and OpenSnapshot is cleared.
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
	// Waves, when set, are the chunk waves among the run's bronze commits that it applies.
	Waves *PassWaves `json:"waves,omitempty"`
}

// PassWaves are the chunk waves a run applies: S, the newest wave, and whether the plan's
// last chunk is among them.
type PassWaves struct {
	Snapshot string `json:"snapshot_lsn"`
	Wave     int64  `json:"wave"`
	Complete bool   `json:"complete,omitempty"`
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

// commitMark identifies a bronze commit for Position.BronzeCommit: its commitInfo's txnId
// (a UUID per commit), else its timestamp; "" when the commit has no commitInfo.
func commitMark(actions []deltalog.Action) string {
	for _, a := range actions {
		if ci := a.CommitInfo; ci != nil {
			if ci.TxnID != "" {
				return ci.TxnID
			}
			return "ts:" + strconv.FormatInt(ci.Timestamp, 10)
		}
	}
	return ""
}

// bronzeCommitMark is commitMark of bronze's commit at version v ("" when log clean-up
// removed it).
func bronzeCommitMark(ctx context.Context, bronzeTable *deltalog.Table, v int64) (string, error) {
	commits, err := bronzeTable.ReadCommits(ctx, v, v)
	var vnf *deltalog.VersionNotFoundError
	if errors.As(err, &vnf) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read bronze commit %d: %w", v, err)
	}
	if len(commits) == 0 {
		return "", nil
	}
	return commitMark(commits[0]), nil
}

// checkBronzeCommit refuses a bronze whose commit at the version silver applied is not the
// one silver recorded (*BronzeChangedError): bronze was replaced by another table, which
// the version count alone cannot show.
func checkBronzeCommit(ctx context.Context, bronzeTable *deltalog.Table, pos Position) error {
	if pos.BronzeCommit == "" || pos.Version < 0 {
		return nil
	}
	m, err := bronzeCommitMark(ctx, bronzeTable, pos.Version)
	if err != nil || m == "" || m == pos.BronzeCommit {
		return err
	}
	return &BronzeChangedError{Reason: fmt.Sprintf("bronze's commit at version %d is %s, silver applied %s", pos.Version, m, pos.BronzeCommit)}
}
