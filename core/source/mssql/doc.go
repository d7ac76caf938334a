// Package mssql is the only T-SQL in mssqlcdc: source.Source on go-mssqldb, sending the
// statements of docs/reference/sqlserver-cdc.md §12 (their labels are used below).
//
// Rules every query here keeps:
//   - LSNs go in as CONVERT(binary(10), @pN, 1) on the canonical "0x…" text and come out
//     as CONVERT(varchar(22), x, 1), so string order is LSN order
//     (docs/reference/sqlserver-cdc.md §1.2).
//   - Change tables are read directly as cdc.[<ci>_CT] joined to cdc.lsn_time_mapping, in
//     (__$start_lsn, __$command_id, __$seqval, __$operation) order
//     (docs/reference/sqlserver-cdc.md §3.3, §3.5: cdc.fn_cdc_get_all_changes_<ci> does not
//     return __$command_id on 2022).
//     CDC metadata comes only from the documented procedures (sp_cdc_help_change_data_capture,
//     sp_cdc_get_captured_columns, sp_cdc_get_ddl_history, sp_spaceused) and sys.columns, so a
//     least-privilege login works (docs/reference/sqlserver-cdc.md §4.2, §9).
//   - Identifiers are validated (ident.go) and bracket-quoted; every value is a parameter
//     (@p1, @p2, … in go-mssqldb's positional style).
//   - Source-table reads run on a connection of their own, after a parameterless
//     SET LOCK_TIMEOUT / SET TRANSACTION ISOLATION LEVEL batch (the session keeps it, so it
//     is sent before every read and reset after). Never NOLOCK
//     (docs/reference/sqlserver-cdc.md §8.1, §8.2).
//   - Composite key ranges are cut into seekable UNION ALL pieces by a pure builder
//     (keyrange.go) that the tests evaluate in Go (docs/reference/sqlserver-cdc.md §8.5,
//     §8.6).
//   - tran_end_time is on the server's local clock; commit times are converted to UTC by
//     the rules of docs/reference/sqlserver-cdc.md §2.3–§2.6 (timezone.go).
package mssql
