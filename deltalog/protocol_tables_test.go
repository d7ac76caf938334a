package deltalog

// protocolTablesDir holds the tables other engines wrote in layouts the protocol allows
// and mssqlcdc does not write itself: deletion vectors, v2 checkpoints with sidecars, log
// compaction files, stats only in stats_parsed, column mapping (see its README.md for
// their origin and expected contents).
const protocolTablesDir = "testdata/protocol"
