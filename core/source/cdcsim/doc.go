// Package cdcsim is an in-memory SQL Server CDC database that implements source.Source.
//
// The tests of every flow and the demo run on it, so it behaves like SQL Server wherever
// the engine depends on SQL Server (docs/reference/sqlserver-cdc.md; the lab findings of
// docs/reference/lab-findings.md are its specification). It models:
//
//   - One database-wide commit timeline (cdc.lsn_time_mapping). LSNs grow in commit order
//     with gaps; transactions that touch no CDC table get an LSN but no mapping row; idle
//     entries (Idle, or automatically every Config.IdleEvery of simulated time) are mapping
//     rows without change rows. tran_end_time is the server's local clock in Config.Location
//     rounded to 1/300 s like datetime; the Source methods return UTC with milliseconds.
//     Time is a simulated clock moved only by SetTime and Advance.
//   - Capture lag. With Config.ManualCapture, committed transactions reach the change
//     tables and the mapping (and so MaxLSN) only when RunCapture runs, like the capture job.
//   - Tables with SQL Server column types, a unique index (or a heap), key order NULL first
//     per column, trailing spaces ignored, case-insensitive strings under a _CI_ collation and
//     SQL Server's byte-group order for uniqueidentifier.
//   - Up to two capture instances per table. A new instance's start_lsn is an LSN above every
//     commit, so it sits above MaxLSN and MinLSN reports it as not found until capture writes
//     a later entry. command_id is numbered per instance; seqval is shared.
//   - Operations 1/2/3/4, an update as 3+4 sharing seqval and command_id, a key update as
//     3+4 or 1+2 (Config.KeyUpdateAsDeleteInsert), split updates (Txn.UpdateAsDeleteInsert),
//     multi-row statements (Txn.Statement: one command_id, a seqval per row) and
//     multi-statement transactions.
//   - DDL: ADD COLUMN (instances unchanged, updates touching only it write no change row),
//     DROP COLUMN (still captured, NULL from then on, a SELECT of it fails) and ALTER COLUMN
//     (change rows converted in place, required_column_update). Cleanup moves min LSN first,
//     then deletes change rows and mapping rows.
//   - Locks: rows written by an open transaction block READ COMMITTED reads of their range
//     (a *source.LockTimeoutError when a lock timeout is set); SNAPSHOT reads do not wait.
//   - CommitBeforeRead, which commits a transaction between a read's stamp and its SELECT.
//   - Injected faults: transient errors, lock timeouts and connections lost mid-read, by
//     method and call number (Inject).
//
// A DB is deterministic for a given Config.Seed and sequence of calls, and safe for
// concurrent use. Reads take what they need under the lock and build Arrow record batches
// lazily from the stored rows, so a read's memory does not grow with its range.
package cdcsim
