// Package ingest is the one way rows get into a Delta table in this project: Arrow records
// are written with bounded memory into Parquet data files of bounded size in the table's
// folder (Writer), and the files are then committed in one Delta commit keyed by a txn
// (Append), exactly once. The stream's batches, the full snapshot's ranges and the facts
// rows all go through it (docs/design.md §4.2, §5 invariants 4, 5 and 8); chunked
// snapshots' waves and seeding append through it too.
//
// # The exactly-once contract
//
//   - Every append carries txn(AppID, Version) (docs/reference/delta-protocol.md §2.7). A
//     table whose recorded version for AppID is at or above Version already holds the
//     append: Append writes nothing and reports Replayed (also when a rival writer's commit
//     recorded it while ours was retrying). A replay never doubles rows.
//   - Data files are written before the commit and are invisible until it lands. A step
//     killed after writing files and before committing leaves orphans, never rows: VACUUM
//     removes them. A rerun writes new files (names are never reused) and commits those.
//   - A commit whose outcome is unknown (deltalog.CommitUnknownError) may be retried with the
//     same txn: a landed commit makes the retry a replay.
//   - The files one step writes can be committed by another (a Lambda invocation per range,
//     chunk or file group, then one that commits them all): Stage records a step's Files as
//     a manifest under a staging store, replacing that step's earlier attempt, and Gather
//     collects every step's manifest for the one commit. The commit itself is still one
//     Append, so the rows of all the steps appear at once or not at all.
//   - A table created by two writers at once: the one that loses the race re-reads the
//     table the winner created and appends to it (if its schema fits), as Spark's CREATE
//     adopts an existing table.
//
// # Memory
//
// A Writer holds one row group of Arrow data (WriterOptions.RowGroupBytes, default
// DefaultRowGroupBytes) plus one column chunk's encoder state, whatever the rows written;
// files roll at TargetFileSize. Parallel runs several reads at once, each into a Writer of
// its own, so a step's memory is its width times one row group.
//
// # Why a package of its own
//
// deltalog is the Delta log protocol (actions, replay, commits, checkpoints) and parquetio
// the file format; neither knows about steps, staging manifests or parallel reads. ingest
// composes them, and nothing in it is specific to SQL Server or CDC, so every writer of a
// table (core/stream, core/snapshot, core/facts) calls it rather than its own copy.
package ingest
