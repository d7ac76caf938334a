// Package snapshot takes full snapshots of a source table into bronze, as the short,
// idempotent steps of the bootstrap state machine (docs/design.md §6.2; docs/snapshots.md;
// docs/reference/original-library.md §9). Each step is a function of Deps (the spec and
// the connections a caller opens) and what the previous step returned, so a Lambda
// invocation, the CLI and a test call the same code.
//
// The snapshot-LSN rule (docs/reference/sqlserver-cdc.md §8.3; docs/design.md §5
// invariant 1): the stamp L is recorded before the table is read. L is
// max(sys.fn_cdc_get_max_lsn(), start_lsn − 1 of a capture instance capture has not reached
// yet), so every commit at or before L is in what the read returns. A commit the read also
// sees has an LSN above L: the stream replays it after L, and keeping the latest image per
// key ordered by (_start_lsn, _command_id, _seqval, _operation) absorbs the overlap,
// because every snapshot row (_operation 0, _start_lsn L, NULL _command_id and _seqval)
// sorts before the changes after it.
//
// The steps, each resumable from what storage holds:
//
//   - Open: the mode lock (an open chunked snapshot of the stream refuses a full one), then
//     a snapshot already in bronze (operation-0 rows without a chunk under any capture
//     instance of the table, names matched ignoring case) is returned and nothing is read;
//     else a checkpoint with offsets resumes; else L is stamped and a snapshot_open facts
//     row written.
//   - Plan: key ranges for numPartitions (docs/reference/original-library.md §9.2), more
//     when the table's size would make a range too long for one invocation.
//   - Read: one range into Parquet files in the bronze table's folder, without a log entry,
//     staged as the range's manifest under the checkpoint prefix
//     (snapshots/<L>/ranges/<i>.json, deltalog/ingest.Stage). A rerun replaces its
//     manifest; the files of an earlier attempt are orphans left for VACUUM.
//   - Commit: one Delta commit of every range's files (ingest.Gather, ingest.Append) keyed
//     txn(<app_id>#full.<L>, 0), then the bootstrap facts row, keyed so it is written once.
//   - Close: the offset {lsn, commit_ts} the stream starts from. Nothing is written: the
//     stream, on a fresh checkpoint with bootstrap=true, finds the snapshot itself (its
//     bootstrap facts row, else its operation-0 rows in bronze: Find) and reads every
//     commit after its LSN.
//
// Run chains the steps in-process (the CLI, the demo); Handle runs the one step a Lambda
// event names; Export writes a stamped copy of the table to a folder without touching a
// table.
package snapshot
