// Package deltalog reads and writes Delta Lake tables (the Delta transaction log protocol,
// as docs/reference/delta-protocol.md states it) on an object store, so that Spark, Databricks, delta-rs,
// Trino, Athena and DuckDB read what mssqlcdc writes, and mssqlcdc reads what they write.
//
// # Layout
//
// A table is a directory (storage.Store root). Version v is the commit file
// _delta_log/<v:020>.json: newline-delimited JSON, one action per line (Action). Versions
// start at 0 and have no gaps. Checkpoints (_delta_log/<v:020>.checkpoint.parquet, or
// multi-part <v>.checkpoint.<part:010>.<parts:010>.parquet) hold the reconciled state of
// version v; _delta_log/_last_checkpoint is a hint naming the newest one.
//
// # The commit contract
//
// A commit is the creation of _delta_log/<v>.json, exactly once, through a
// logstore.LogStore (DynamoDB compatible with Spark's S3DynamoDBLogStore, S3 conditional
// put, or an exclusive create on local disk):
//
//   - A commit file is never overwritten or deleted while its version is reachable.
//     Once logstore.Write returns nil, version v is those bytes for every reader; once it
//     returns logstore.ErrVersionExists, v belongs to another writer; any other error
//     leaves v undecided.
//   - A writer reads snapshot v_read, writes its data files (names unique per attempt,
//     never reused), then tries v_read+1. On a lost race it waits a jittered backoff
//     (Options.RetryBaseDelay doubling up to Options.RetryMaxDelay), reads every winning
//     commit and applies the conflict rules (docs/reference/delta-protocol.md §10.1; Spark's
//     ConflictChecker, conflict.go): blind appends proceed at latest+1; a changed protocol
//     or metaData, a domain we write, or a moved txn of the same app id, aborts with a typed
//     error (*ConcurrentModificationError, *ConcurrentTxnError). A commit that removes files
//     or declared what it read (Transaction.Remove, ReadFiles, ReadPredicate: a MERGE, a
//     compaction) also aborts when a winner removed a file it read or removes, or added
//     rows (dataChange true) its read predicate matches. Options.MaxCommitAttempts lost
//     races end in *CommitAttemptsError, nothing committed.
//   - A Write that fails without a verdict (a timeout, a reset connection) is read back
//     before anything else: our own bytes at v mean committed (Commit succeeds), no file
//     means v is free (the same bytes are written at v again), another writer's bytes mean
//     a lost race (as above). When v cannot be read back, Commit returns
//     *CommitUnknownError{Version: v}: the commit may or may not exist, and retrying the
//     whole append with the same txn(appId, version) is safe — a landed commit makes the
//     retry skipped. A committed version is never reported as failed. A refusal that
//     wrote nothing and would recur (matching logstore.ErrRefused: DynamoDB entries left
//     by a dropped table, a previous commit missing) is returned at once, wrapped, for an
//     operator to act on.
//   - Every writer of a table commits through the same kind of log store: a table whose
//     _delta_log/.tmp/ holds a DynamoDB log store's temporary commit file
//     (logstore.DynamoTempFile: Spark's S3DynamoDBLogStore and logstore/dynamo leave them)
//     is refused, before anything is written, with *UncoordinatedCommitError by a Table
//     whose log store is not logstore.Coordinated, since such a commit bypasses the
//     DynamoDB exclusion (Table.CheckCoordination, coordination.go; checked once per
//     Table, from its first open's listing or one listing of .tmp/).
//   - Version 0 carries protocol and metaData. Each commit carries at most one metaData,
//     one protocol, one txn per app id, one domainMetadata per domain, and one add or
//     remove per (path, DV id); a path re-added with another deletion vector removes the
//     live one in the same commit (*InvalidCommitError otherwise). mssqlcdc writes
//     commitInfo first, with isBlindAppend=true exactly for pure appends.
//   - Idempotence: an append carries txn(appId, version); an append whose version is not
//     above the recorded version for that app id is skipped (CommitResult.Skipped), never
//     doubled. The rule is applied to the snapshot the transaction read, and again to
//     every winning commit after a lost race (a winner that recorded our app id at or
//     above our version means our batch is in: skipped; below it: *ConcurrentTxnError).
//   - Checkpoints: after a successful commit at version v, Commit writes a checkpoint of v
//     (then _last_checkpoint) when v is a multiple of the checkpoint interval
//     (Options.CheckpointInterval, else the table's delta.checkpointInterval, else 10,
//     Spark's default), or when the snapshot's checkpoint is more than an interval behind
//     (an earlier one failed). It is built from the full state at v, never partial state,
//     and only after v.json exists; a failure never fails the commit, and writing the same
//     checkpoint twice is harmless. WriteCheckpoint writes one on demand.
//   - Log clean-up (Table.CleanupLog, delta.logRetentionDuration), VACUUM
//     (Table.Vacuum, delta.deletedFileRetentionDuration) and compaction (Table.Compact:
//     small files bin-packed in log order, one commit of removes and adds with dataChange
//     false per group, which concurrent blind appends never conflict with; compact.go) are
//     explicit calls: Commit never deletes a data file, a commit or a checkpoint.
//
// # Reading (log.go, replay.go, checkpoint_read.go)
//
// Table.Snapshot reads _last_checkpoint (a hint only) and the checkpoint it names (a
// v2 checkpoint's path when the hint embeds one), without listing. When the hint is missing, newer than a time-travel target, more than 20
// commits (two default intervals) behind it, or names a missing or unreadable checkpoint,
// it lists _delta_log (from the hint's version, else from 0) and
// takes the newest complete checkpoint at or below the target (a multi-part set missing a
// part is ignored; an unreadable checkpoint falls back to an older one, then to version
// 0). Then it replays the JSON commits after it, read through LogStore.Read so that half-done
// DynamoDB commits are completed first. Reconciliation (docs/reference/delta-protocol.md
// §9.2): the latest protocol and metaData win; the latest txn per app id; the
// latest domainMetadata per domain (removed deletes it); per logical file, keyed by
// (decoded path, deletion vector unique id), the latest add (live) or remove (tombstone).
// commitInfo comes only from JSON commits, never checkpoints. Unknown action types and
// fields are ignored (docs/reference/delta-protocol.md §2.1).
//
// # Protocol and table features (protocol.go)
//
// The protocol is checked before the rest of a snapshot is trusted. Reading refuses, with
// *UnsupportedFeatureError naming the feature, any reader feature outside timestampNtz,
// deletionVectors, v2Checkpoint, columnMapping, vacuumProtocolCheck and typeWidening, then any
// minReaderVersion above 3 (*UnsupportedVersionError). Deletion vectors are honoured:
// Scan never returns a row a DV marks deleted, and Add.LiveRecords counts live rows
// (deletion_vector.go, roaring.go). v2 checkpoints are read: UUID-named ones in JSON or
// Parquet, classic ones with checkpointMetadata, their sidecars under _delta_log/_sidecars/
// (a missing sidecar falls back to an older checkpoint). Log compaction files are ignored,
// as the protocol allows; the commits they stand for are read. Stats found only in a
// checkpoint's add.stats_parsed are read as the JSON document add.stats would hold. The
// log of a table with column mapping is read (files, stats, versions), but
// Snapshot.CanReadData refuses to scan its rows. Writing (Snapshot.CanWrite) refuses every
// feature not implemented, including legacy writer versions read as the feature bundles
// they imply (2: appendOnly, invariants; 3: checkConstraints; 4: changeDataFeed,
// generatedColumns; 5: columnMapping; 6: identityColumns), column mapping in any form, and
// features that
// are supported only while inactive (invariants, CHECK constraints, generated, identity
// and default columns) once the metadata uses them. New tables get reader 1 / writer 2,
// or reader 3 / writer 7 with timestampNtz in both feature lists when a column is
// timestamp_ntz (ProtocolFor, UpgradeProtocol). Deletion vectors are written too: a commit
// removes a file and adds it again with Add.WithDeletionVector (the DV inline or in a file
// WriteDeletionVectorFile wrote), on a table listing the feature (EnableFeatures); VACUUM
// keeps the DV files that live files and unexpired removes name. Type widening
// (widening.go): on a table with delta.enableTypeWidening "true", SetSchema widens a
// column as the protocol allows (Widens), records the change in the column's
// delta.typeChanges and lists typeWidening in the protocol; Scan casts older files'
// narrower columns to the table's type, and CanReadData refuses a recorded change that is
// not such a widening.
//
// # Checkpoints (checkpoint_write.go)
//
// WriteCheckpoint writes a classic V1 checkpoint with the columns txn, add, remove,
// metaData, protocol and domainMetadata in Spark's order and field names, every field
// nullable as Spark writes them, add.stats as the JSON string and no stats_parsed or
// partitionValues_parsed; the protocol's feature lists are non-null exactly at reader 3 /
// writer 7. It carries the live adds, the tombstones younger than
// delta.deletedFileRetentionDuration (default one week), every txn and live domain, never
// commitInfo, cdc or remove.stats/tags. _last_checkpoint gets version, size, sizeInBytes
// and numOfAddFiles (parts omitted) and never moves back to an older checkpoint.
//
// # Schemas (schema.go)
//
// metaData.schemaString is Delta's JSON schema (StructType). ToArrow and FromArrow map it
// to Arrow: timestamp is timestamp[us, UTC], timestamp_ntz is timestamp[us] with no zone,
// decimal(p,s) is decimal128(p,s), date is date32, byte/short/integer/long are int8..int64.
package deltalog
