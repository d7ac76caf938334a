// Package bronze is the shape of a bronze Delta table (docs/design.md §4.2): the metadata
// columns, the SQL Server → Arrow → Delta type mapping of the captured columns, and the
// assemblers that turn a Source record batch into a bronze record batch.
//
// A bronze table holds, in this order:
//
//	_capture_instance  utf8                 instance the row was read from
//	_start_lsn         utf8                 "0x" + 20 uppercase hex digits
//	_seqval            utf8                 NULL on snapshot rows
//	_operation         int32                1 delete, 2 insert, 3 before-image, 4 after-image, 0 snapshot
//	_command_id        int32                NULL on snapshot rows
//	_commit_ts         timestamp[us]        UTC commit time, no zone (Delta timestamp_ntz)
//	<captured columns> mapped types (ArrowType)
//	_batch_id          int64                NULL on snapshot rows
//	_snapshot          utf8                 NULL on change rows
//	_chunk             int32                NULL except on chunked snapshot rows
//
// Integer widths: the original library says INT for _operation, _command_id, _batch_id and
// _chunk. _operation, _command_id and _chunk are int32 (Delta "integer"), as in the
// original. _batch_id is int64 (Delta "long"): batch ids only grow, and a stream that runs a
// batch a minute for decades must not overflow; a reader that compares it with an INT works
// unchanged. Every column is nullable, so that schema evolution (adding nullable columns) and
// Spark writers on the same table never trip over a NOT NULL invariant.
package bronze
