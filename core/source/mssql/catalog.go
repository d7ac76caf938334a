package mssql

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// CaptureInstances is P1, sorted by source.CompareInstances (create_date, then start_lsn,
// NULL last).
func (d *DB) CaptureInstances(ctx context.Context) ([]source.CaptureInstance, error) {
	recs, err := d.queryRecords(ctx, d.ec("list capture instances"), sqlHelpCDC, nil)
	if err != nil {
		return nil, err
	}
	out := make([]source.CaptureInstance, 0, len(recs))
	for _, r := range recs {
		ci, err := captureInstanceFrom(r)
		if err != nil {
			return nil, err
		}
		out = append(out, ci)
	}
	slices.SortStableFunc(out, source.CompareInstances)
	return out, nil
}

// captureInstanceFrom reads one row of sp_cdc_help_change_data_capture.
func captureInstanceFrom(r record) (source.CaptureInstance, error) {
	ci := source.CaptureInstance{
		Name:         asString(r["capture_instance"]),
		SourceSchema: asString(r["source_schema"]),
		SourceTable:  asString(r["source_table"]),
	}
	if b, ok := r["start_lsn"].([]byte); ok {
		l, err := lsn.FromBytes(b)
		if err != nil {
			return ci, fmt.Errorf("list capture instances: start_lsn of %s: %w", ci.Name, err)
		}
		ci.StartLSN = l
	}
	if t, ok := r["create_date"].(time.Time); ok {
		ci.CreateDate = wallUTC(t)
	}
	cols, err := parseIndexColumns(asString(r["index_column_list"]))
	if err != nil {
		return ci, fmt.Errorf("list capture instances: index_column_list of %s: %w", ci.Name, err)
	}
	ci.IndexColumns = cols
	return ci, nil
}

// parseIndexColumns reads index_column_list, QUOTENAME'd names joined by ", " ("[a], [b]";
// a ']' inside a name is doubled). Empty text is no columns (a heap).
func parseIndexColumns(s string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		if i >= len(s) {
			return out, nil
		}
		if s[i] != '[' {
			return nil, fmt.Errorf("%q: want [name] at offset %d", s, i)
		}
		i++
		var name strings.Builder
		closed := false
		for i < len(s) {
			if s[i] == ']' {
				if i+1 < len(s) && s[i+1] == ']' {
					name.WriteByte(']')
					i += 2
					continue
				}
				i++
				closed = true
				break
			}
			name.WriteByte(s[i])
			i++
		}
		if !closed {
			return nil, fmt.Errorf("%q: unterminated name", s)
		}
		out = append(out, name.String())
	}
}

// CapturedColumns is P2 joined with P3 by column_id: Computed, Present, Collation and
// Nullable come from the source table's sys.columns.
func (d *DB) CapturedColumns(ctx context.Context, ci string) ([]source.Column, error) {
	if err := checkCaptureInstance(ci); err != nil {
		return nil, err
	}
	ec := d.ec("read captured columns")
	ec.CaptureInstance = ci
	q, args := capturedColumnsSQL(ci)
	recs, err := d.queryRecords(ctx, ec, q, args)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, &source.CaptureInstanceNotFoundError{Name: ci}
	}
	cols := make([]source.Column, 0, len(recs))
	for _, r := range recs {
		cols = append(cols, columnFrom(r))
	}
	schema, table := asString(recs[0]["source_schema"]), asString(recs[0]["source_table"])
	q, args = sourceColumnsSQL(schema, table)
	srcRecs, err := d.queryRecords(ctx, d.ec("read source columns"), q, args)
	if err != nil {
		return nil, err
	}
	mergeSourceColumns(cols, srcRecs)
	sort.SliceStable(cols, func(i, j int) bool { return cols[i].Ordinal < cols[j].Ordinal })
	return cols, nil
}

// columnFrom reads one row of sp_cdc_get_captured_columns. The change-table ordinal is
// column_ordinal where the server returns it, else ordinal_position.
func columnFrom(r record) source.Column {
	c := source.Column{
		Name:              asString(r["column_name"]),
		ColumnID:          asInt(r["column_id"]),
		DataType:          strings.ToLower(asString(r["data_type"])),
		Precision:         asInt(r["numeric_precision"]),
		Scale:             asInt(r["numeric_scale"]),
		DatetimePrecision: asInt(r["datetime_precision"]),
		MaxLength:         asInt(r["character_maximum_length"]),
	}
	if v, ok := r["column_ordinal"]; ok && v != nil {
		c.Ordinal = asInt(v)
	} else {
		c.Ordinal = asInt(r["ordinal_position"])
	}
	return c
}

// mergeSourceColumns fills Computed, Present, Collation and Nullable from sys.columns rows
// matched by column_id (a column dropped and added back has a new id: not present), and
// the length of a binary or varbinary column that P2 gave none.
func mergeSourceColumns(cols []source.Column, src []record) {
	byID := make(map[int]record, len(src))
	for _, r := range src {
		byID[asInt(r["column_id"])] = r
	}
	for i := range cols {
		r, ok := byID[cols[i].ColumnID]
		if !ok {
			continue
		}
		cols[i].Present = true
		cols[i].Computed = asBool(r["is_computed"])
		cols[i].Nullable = asBool(r["is_nullable"])
		cols[i].Collation = asString(r["collation_name"])
		if t := cols[i].DataType; cols[i].MaxLength == 0 && (t == "binary" || t == "varbinary") {
			// sys.columns.max_length is in bytes, which is a binary type's length.
			cols[i].MaxLength = asInt(r["max_length"])
		}
	}
}

func asInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case []byte:
		n, _ := strconv.Atoi(strings.TrimSpace(string(x)))
		return n
	case string:
		n, _ := strconv.Atoi(strings.TrimSpace(x))
		return n
	}
	return 0
}

func asBool(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case int64:
		return x != 0
	}
	return false
}

// DDLHistory is P4 filtered to (after, upto]; each event's time is the commit at or before
// its LSN (a DDL LSN is no commit's).
func (d *DB) DDLHistory(ctx context.Context, ci string, after, upto lsn.LSN) ([]source.DDLEvent, error) {
	if err := checkCaptureInstance(ci); err != nil {
		return nil, err
	}
	ec := d.ec("read ddl history")
	ec.CaptureInstance = ci
	q, args := ddlHistorySQL(ci)
	recs, err := d.queryRecords(ctx, ec, q, args)
	if err != nil {
		return nil, err
	}
	var out []source.DDLEvent
	for _, r := range recs {
		b, ok := r["ddl_lsn"].([]byte)
		if !ok {
			continue
		}
		l, err := lsn.FromBytes(b)
		if err != nil {
			return nil, fmt.Errorf("read ddl history: %w", err)
		}
		if !after.Less(l) || upto.Less(l) {
			continue
		}
		out = append(out, source.DDLEvent{
			LSN:                  l,
			Command:              asString(r["ddl_command"]),
			RequiredColumnUpdate: asBool(r["required_column_update"]),
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LSN.Less(out[j].LSN) })
	for i := range out {
		c, ok, err := d.CommitAtOrBefore(ctx, out[i].LSN)
		if err != nil {
			return nil, err
		}
		if ok {
			out[i].Time = c.Time
		}
	}
	return out, nil
}

// SizeEstimate is P5 / S8: sp_spaceused's rows and data, metadata estimates.
func (d *DB) SizeEstimate(ctx context.Context, t source.Table) (source.TableSize, error) {
	tn, err := tableName(t)
	if err != nil {
		return source.TableSize{}, err
	}
	ec := d.ec("estimate size")
	ec.Table = tn
	q, args := spaceUsedSQL(tn)
	recs, err := d.queryRecords(ctx, ec, q, args)
	if err != nil {
		return source.TableSize{}, err
	}
	if len(recs) == 0 {
		return source.TableSize{}, fmt.Errorf("estimate size of %s: sp_spaceused returned nothing", tn)
	}
	return parseSpaceUsed(asString(recs[0]["rows"]), asString(recs[0]["data"]))
}

// parseSpaceUsed reads sp_spaceused's rows (text padded with spaces) and data (kilobytes
// as text: "1234 KB").
func parseSpaceUsed(rows, data string) (source.TableSize, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(rows), 10, 64)
	if err != nil {
		return source.TableSize{}, fmt.Errorf("estimate size: rows %q: %w", rows, err)
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(data), "KB")), 10, 64)
	if err != nil {
		return source.TableSize{}, fmt.Errorf("estimate size: data %q: %w", data, err)
	}
	return source.TableSize{Rows: n, Bytes: kb * 1024}, nil
}
