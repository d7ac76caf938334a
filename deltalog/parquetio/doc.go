// Package parquetio writes Arrow record batches as Parquet data files of a Delta table and
// reads them back, on arrow-go's pqarrow (docs/decisions/0003-parquet-library.md). Files of
// flat columns are written through arrow-go's column chunk writers with pqarrow's
// per-column encoding (flat.go), the same bytes as pqarrow.FileWriter writes, at a smaller
// fixed cost per column chunk.
//
// Files follow the Delta data-type mapping (docs/reference/delta-protocol.md §5.2): timestamps
// are INT64 TIMESTAMP(MICROS) with isAdjustedToUTC=true for a zoned Arrow timestamp (Delta
// timestamp) and false without a zone (Delta timestamp_ntz); dates are INT32 DATE; decimals
// are exact, as Spark writes them (INT32 for precision <= 9, INT64 for <= 18,
// FIXED_LEN_BYTE_ARRAY above); int16 is INT32 with INT(16, signed). Pages are DataPageV1, the
// recommended format for tables that non-Delta engines read.
//
// Each file gets a name that is unique per attempt and never reused
// (part-NNNNN-<uuid>-c000.<codec>.parquet, docs/reference/delta-protocol.md §1.2), is written
// to a local temporary file first and then uploaded with storage.Store.Put and its size. Its
// Delta statistics (stats.go) come from the values written.
package parquetio
