package mssql

import (
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
)

// The metadata and change-table statements of docs/reference/sqlserver-cdc.md §12 as pure
// builders: SQL text and arguments, no I/O. Names (M1, P2, C1, …) are that table's labels.

// M1: capture progress. NULL on a database capture never wrote.
const sqlMaxLSN = "SELECT " + "CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1)"

// sqlServerNow is the server's clock now, UTC (ServerNow).
const sqlServerNow = "SELECT SYSUTCDATETIME()"

// minLSNSQL is M2: the low watermark of a capture instance (NULL or zero: not found, not
// visible, or not processed yet).
func minLSNSQL(ci string) (string, []any) {
	var p params
	return "SELECT " + lsnOut("sys.fn_cdc_get_min_lsn("+p.add(ci)+")"), p.args
}

// nthCommitSQL is M5: the n-th cdc.lsn_time_mapping row after l, or the last when fewer,
// counted database-wide (idle entries and other tables' commits count).
func nthCommitSQL(after lsn.LSN, n int) (string, []any) {
	var p params
	l := p.lsn(after)
	top := p.add(int64(n))
	return "SELECT " + lsnOut("MAX(t.start_lsn)") + " FROM (SELECT TOP (" + top + ") m.start_lsn " +
		"FROM cdc.lsn_time_mapping m WHERE m.start_lsn > " + l + " ORDER BY m.start_lsn) AS t", p.args
}

// commitTimeSQL is TZ6: the UTC commit time of the commit whose LSN is exactly l; with
// atOrBefore, the last commit at or before l, and its LSN. ts converts tran_end_time and
// must be built on the same params (p carries its arguments first).
func commitTimeSQL(p *params, ts commitTS, l lsn.LSN, atOrBefore bool) string {
	b := p.lsn(l)
	t := ts.expr("m.tran_end_time", "m.start_lsn")
	if atOrBefore {
		return "SELECT TOP (1) " + lsnOut("m.start_lsn") + ", " + t + " FROM cdc.lsn_time_mapping m " +
			"WHERE m.start_lsn <= " + b + " ORDER BY m.start_lsn DESC"
	}
	return "SELECT TOP (1) " + lsnOut("m.start_lsn") + ", " + t + " FROM cdc.lsn_time_mapping m WHERE m.start_lsn = " + b
}

// timeToLSNSQL is TZ7: sys.fn_cdc_map_time_to_lsn('largest less than or equal', …) on the
// server-clock reading of a UTC time, truncated to whole seconds and biased earlier.
func timeToLSNSQL(z zone, utc time.Time) (string, []any) {
	var p params
	clock := serverClock(&p, z, utc)
	return "SELECT " + lsnOut("sys.fn_cdc_map_time_to_lsn(N'largest less than or equal', "+clock+")"), p.args
}

// P1: every capture instance of the database.
const sqlHelpCDC = "EXEC sys.sp_cdc_help_change_data_capture"

// capturedColumnsSQL is P2.
func capturedColumnsSQL(ci string) (string, []any) {
	var p params
	return "EXEC sys.sp_cdc_get_captured_columns @capture_instance = " + p.add(ci), p.args
}

// sourceColumnsSQL is P3: sys.columns of the source table, found with OBJECT_ID on the
// quoted names (schema and table bound, QUOTENAME on the server). max_length (bytes, -1
// for max) gives a binary column its length, which sp_cdc_get_captured_columns documents
// only for character columns.
func sourceColumnsSQL(schema, table string) (string, []any) {
	var p params
	s, t := p.add(schema), p.add(table)
	return "SELECT c.name, c.column_id, c.is_computed, c.collation_name, c.is_nullable, c.max_length FROM sys.columns c " +
		"WHERE c.object_id = OBJECT_ID(QUOTENAME(" + s + ") + '.' + QUOTENAME(" + t + "))", p.args
}

// ddlHistorySQL is P4; the (after, upto] filter is applied on the client, like the
// original, because the procedure takes no range.
func ddlHistorySQL(ci string) (string, []any) {
	var p params
	return "EXEC sys.sp_cdc_get_ddl_history @capture_instance = " + p.add(ci), p.args
}

// spaceUsedSQL is P5 / S8: sp_spaceused on [schema].[table]; rows comes back as padded text.
func spaceUsedSQL(quotedTable string) (string, []any) {
	var p params
	return "EXEC sys.sp_spaceused @objname = " + p.add(quotedTable), p.args
}

// permissionProbeSQL is P6: HAS_PERMS_BY_NAME on the change table when the instance still
// exists (min LSN above zero), else NULL; and the database user to name in the GRANT.
func permissionProbeSQL(ci string) (string, []any) {
	var p params
	return "SELECT CASE WHEN sys.fn_cdc_get_min_lsn(" + p.add(ci) + ") > " + zeroLSNLiteral +
		" THEN HAS_PERMS_BY_NAME(" + p.add(changeTable(ci)) + ", 'OBJECT', 'SELECT') END, USER_NAME()", p.args
}

// changeColumn is one captured column of a change read: read from the change table
// (Present), or a NULL when the instance does not capture it.
type changeColumn struct {
	Name    string
	Present bool
	// DataType is the column's SQL type as captured (hierarchyid, geometry, geography and
	// sql_variant are read through columnExpr).
	DataType string
}

// readChangesSQL is C1: the change rows of ci in [from, to] with their UTC commit times,
// in (__$start_lsn, __$command_id, __$seqval, __$operation) order; withoutCommandID reads
// NULL for _command_id and orders by (__$start_lsn, __$seqval, __$operation). ts must be
// built on p.
func readChangesSQL(p *params, ts commitTS, ci string, cols []changeColumn, from, to lsn.LSN, withoutCommandID bool) (string, error) {
	if err := checkCaptureInstance(ci); err != nil {
		return "", err
	}
	cmd, order := "c.[__$command_id]", "c.[__$start_lsn], c.[__$command_id], c.[__$seqval], c.[__$operation]"
	if withoutCommandID {
		cmd, order = "CAST(NULL AS int)", "c.[__$start_lsn], c.[__$seqval], c.[__$operation]"
	}
	var b strings.Builder
	b.WriteString("SELECT " + lsnOut("c.[__$start_lsn]") + " AS [_start_lsn], " +
		lsnOut("c.[__$seqval]") + " AS [_seqval], c.[__$operation] AS [_operation], " +
		cmd + " AS [_command_id], " + ts.expr("m.tran_end_time", "m.start_lsn") + " AS [_commit_ts]")
	for _, c := range cols {
		if err := checkName("column", c.Name); err != nil {
			return "", err
		}
		if c.Present {
			b.WriteString(", " + columnExpr("c", c.Name, c.DataType))
		} else {
			b.WriteString(", NULL AS " + bracket(c.Name))
		}
	}
	// LEFT JOIN: a change row keeps its place when its mapping row is missing (its
	// _commit_ts is then NULL); an inner join would drop it without a trace.
	b.WriteString(" FROM " + changeTable(ci) + " AS c LEFT JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = c.[__$start_lsn]")
	b.WriteString(" WHERE c.[__$start_lsn] BETWEEN " + p.lsn(from) + " AND " + p.lsn(to))
	b.WriteString(" ORDER BY " + order)
	return b.String(), nil
}

// splitChangesSQL is C2: NTILE(n) over the change rows' __$start_lsn in [from, to];
// per tile its last commit LSN and its rows, in order.
func splitChangesSQL(ci string, from, to lsn.LSN, n int) (string, []any, error) {
	if err := checkCaptureInstance(ci); err != nil {
		return "", nil, err
	}
	var p params
	tiles := p.add(int64(n))
	lo, hi := p.lsn(from), p.lsn(to)
	return "SELECT " + lsnOut("MAX(t.[__$start_lsn])") + ", COUNT_BIG(*) FROM (" +
		"SELECT c.[__$start_lsn], NTILE(" + tiles + ") OVER (ORDER BY c.[__$start_lsn]) AS [__$tile] " +
		"FROM " + changeTable(ci) + " AS c WHERE c.[__$start_lsn] BETWEEN " + lo + " AND " + hi + ") AS t " +
		"GROUP BY t.[__$tile] ORDER BY MAX(t.[__$start_lsn])", p.args, nil
}

// columnExpr is the SELECT expression of a captured column of alias: the column itself, or
// for the types with no driver value of their own a conversion on the server
// (docs/types.md):
//
//	hierarchyid          its ToString() path, "/1/3/"
//	geometry, geography  STAsBinary(), OGC well-known binary (SRID, Z and M are not kept)
//	sql_variant          "<base type>:<value as text>", each base type in a lossless text
//	                     style (ISO 8601 for dates and times, 17 digits for float and real,
//	                     0x hex for binary, 4 decimals for money)
//
// The result keeps the column's name.
func columnExpr(alias, name, dataType string) string {
	col := alias + "." + bracket(name)
	switch strings.ToLower(dataType) {
	case "hierarchyid":
		return col + ".ToString() AS " + bracket(name)
	case "geometry", "geography":
		return col + ".STAsBinary() AS " + bracket(name)
	case "sql_variant":
		base := "CAST(SQL_VARIANT_PROPERTY(" + col + ", 'BaseType') AS nvarchar(128))"
		conv := func(to, style string) string {
			s := "CONVERT(nvarchar(max), CAST(" + col + " AS " + to + ")"
			if style != "" {
				s += ", " + style
			}
			return s + ")"
		}
		return "CASE WHEN " + col + " IS NULL THEN NULL ELSE " + base + " + N':' + CASE " + base +
			" WHEN N'datetime' THEN " + conv("datetime", "126") +
			" WHEN N'smalldatetime' THEN " + conv("smalldatetime", "126") +
			" WHEN N'datetime2' THEN " + conv("datetime2(7)", "126") +
			" WHEN N'datetimeoffset' THEN " + conv("datetimeoffset(7)", "126") +
			" WHEN N'date' THEN " + conv("date", "23") +
			" WHEN N'time' THEN " + conv("time(7)", "") +
			" WHEN N'float' THEN " + conv("float", "3") +
			" WHEN N'real' THEN " + conv("real", "3") +
			" WHEN N'binary' THEN " + conv("varbinary(8000)", "1") +
			" WHEN N'varbinary' THEN " + conv("varbinary(8000)", "1") +
			" WHEN N'money' THEN " + conv("money", "2") +
			" WHEN N'smallmoney' THEN " + conv("smallmoney", "2") +
			" ELSE CONVERT(nvarchar(max), " + col + ") END END AS " + bracket(name)
	}
	return col
}
