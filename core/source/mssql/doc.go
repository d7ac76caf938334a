// Package mssql is the only T-SQL in mssqlcdc: source.Source on go-mssqldb, following
// shared/reference/original-snapshots-and-sql.md §1 statement by statement.
//
// Rules every query here keeps:
//   - LSNs go in as CONVERT(binary(10), @pN, 1) on the canonical "0x…" text and come out
//     as CONVERT(varchar(22), x, 1), so string order is LSN order (§1.0, §7 pitfall 13).
//   - Change tables are read directly as cdc.[<ci>_CT] joined to cdc.lsn_time_mapping, in
//     (__$start_lsn, __$command_id, __$seqval, __$operation) order (§1.4, ADR 0009 of the
//     original: cdc.fn_cdc_get_all_changes_<ci> does not return __$command_id on 2022).
//     CDC metadata comes only from the documented procedures (sp_cdc_help_change_data_capture,
//     sp_cdc_get_captured_columns, sp_cdc_get_ddl_history, sp_spaceused) and sys.columns, so a
//     least-privilege login works (§1.3, §7 pitfall 16).
//   - Identifiers are validated (ident.go) and bracket-quoted; every value is a parameter
//     (@p1, @p2, … in go-mssqldb's positional style).
//   - Source-table reads run on a connection of their own, after a parameterless
//     SET LOCK_TIMEOUT / SET TRANSACTION ISOLATION LEVEL batch (the session keeps it, so it
//     is sent before every read and reset after). Never NOLOCK (§1.0).
//   - Composite key ranges are cut into seekable UNION ALL pieces by a pure builder
//     (keyrange.go) that the tests evaluate in Go (§1.5, §7 pitfalls 21–23).
//   - tran_end_time is on the server's local clock; commit times are converted to UTC by
//     the rules of §1.1 (timezone.go).
package mssql
