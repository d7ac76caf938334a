// Package seed seeds bronze from an existing copy of a source table (a nightly export, an
// existing lake table) instead of reading the table: the copy is appended to bronze as
// snapshot rows at the LSN L of as_of, and the stream starts after L (docs/seed.md;
// docs/design.md §6.4; docs/reference/original-library.md §12). For a table of billions of
// rows a chunked snapshot takes weeks; converting a copy takes hours.
//
// as_of says where the copy ends: every commit at or before it must be in the copy; later
// commits may be in it too, and the stream replays them (the latest image per key ordered
// by (_start_lsn, _command_id, _seqval, _operation) absorbs the overlap, as after a
// snapshot, since every seed row sorts before the changes after L). A time maps to the
// last commit at or before it on SQL Server's clock, biased earlier (AsOf, Source.
// LSNAtOrBefore); an LSN is exact.
//
// The steps, each a short invocation resumable from what storage holds (the seed machine,
// statemachine/seed.asl.json, runs them; Run chains them in-process):
//
//   - Plan: the rules (docs/seed.md § Rules): the mode lock refuses a seed while a
//     snapshot of either mode is open; a seed already at L is a rerun and nothing is
//     written (after cleanup passed a time as_of, the newest whole snapshot at or before
//     it is the seed); another snapshot of the table in bronze is a *SnapshotExistsError
//     unless reseed over an older one; CDC must still hold the changes right after L
//     (*DataLossError). Then the copy's files are cut into groups and its columns matched
//     to the captured ones, recorded as the plan under the checkpoint prefix
//     (seeds/<L>/<plan>/plan.json).
//   - Convert: one file group, read a batch at a time (a Delta copy through deltalog's
//     scan, so partition values and deletion vectors apply), each value cast to the
//     stream's type (a value that cannot be cast is a *CastError naming the file, row
//     group, column and value), written into Parquet files in bronze's folder and staged as
//     the group's manifest (deltalog/ingest.Stage).
//   - Commit: the rules that may have changed are checked again, then one Delta commit of
//     every group's files keyed txn(<app_id>#seed.<L>, 0) (ingest.Gather, ingest.Append),
//     then the bootstrap facts row with the copy's row count, keyed so it is written once.
//   - Close: the offset {lsn, commit_ts} the stream starts after; the stream, with
//     bootstrap=true on a fresh checkpoint, finds the seed by its bootstrap row and never
//     reads the table.
package seed
