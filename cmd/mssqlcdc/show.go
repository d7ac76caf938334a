package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

func init() {
	register(command{
		name:    "show",
		summary: "print a Delta table's rows (bronze, facts), read through mssqlcdc's reader: --where COL=VALUE or 'COL IS NULL', --limit N",
		run:     runShow,
	})
}

// Defaults of show.
const (
	showDefaultLimit = 20
	// showCellWidth cuts a text cell to this many characters ("…" marks the cut); --json
	// prints whole values.
	showCellWidth = 48
)

// whereFlag collects --where conditions; every one must hold.
type whereFlag []whereCond

// whereCond is COL=VALUE, or with null set COL IS NULL (COL=NULL, NULL unquoted), and
// with not too COL IS NOT NULL.
type whereCond struct {
	column, value string
	null, not     bool
}

// String is the condition as the user wrote it, for messages.
func (c whereCond) String() string {
	switch {
	case c.null && c.not:
		return c.column + " IS NOT NULL"
	case c.null:
		return c.column + " IS NULL"
	}
	return c.column + "=" + c.value
}

// isNullCond matches COL IS NULL and COL IS NOT NULL, any case.
var isNullCond = regexp.MustCompile(`(?i)^\s*(.+?)\s+is\s+(not\s+)?null\s*$`)

func (w *whereFlag) String() string { return "" }

func (w *whereFlag) Set(s string) error {
	if m := isNullCond.FindStringSubmatch(s); m != nil && !strings.Contains(m[1], "=") {
		*w = append(*w, whereCond{column: m[1], null: true, not: m[2] != ""})
		return nil
	}
	col, val, ok := strings.Cut(s, "=")
	col = strings.TrimSpace(col)
	if !ok || col == "" {
		return fmt.Errorf("want COLUMN=VALUE or COLUMN IS [NOT] NULL, e.g. _operation=2, customer='ACME' or event IS NULL")
	}
	val = strings.TrimSpace(val)
	if strings.EqualFold(val, "NULL") {
		*w = append(*w, whereCond{column: col, null: true})
		return nil
	}
	if len(val) >= 2 && (val[0] == '\'' || val[0] == '"') && val[len(val)-1] == val[0] {
		val = val[1 : len(val)-1]
	}
	*w = append(*w, whereCond{column: col, value: val})
	return nil
}

func showUsage(fs *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: mssqlcdc show TABLE_URL [--where COL=VALUE|'COL IS [NOT] NULL']... [--columns A,B] [--limit N] [--version N] [--json]")
		fmt.Fprintln(w, "TABLE_URL is a path, file:///path or s3://bucket/prefix. Rows are read through mssqlcdc's")
		fmt.Fprintln(w, "Delta reader (the live files of the version, file skipping by statistics), in file order,")
		fmt.Fprintln(w, "not sorted. --where compares a string or integer column for equality, or tests any column")
		fmt.Fprintln(w, "for NULL (COL=NULL or COL IS NULL, COL IS NOT NULL; 'NULL' quoted is the string); several")
		fmt.Fprintln(w, "--where must all hold. Text output cuts long values; --json prints one whole row per line.")
		fs.PrintDefaults()
	}
}

func runShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("show", stderr)
	fs.Usage = showUsage(fs)
	var where whereFlag
	fs.Var(&where, "where", "keep rows where COLUMN equals VALUE (a string or integer column), or COLUMN IS [NOT] NULL (COLUMN=NULL is IS NULL); repeat to AND, e.g. _operation=2, 'event IS NULL'")
	columns := fs.String("columns", "", "comma-separated columns to print, in this order (default: all)")
	limit := fs.Int("limit", showDefaultLimit, "print at most N rows (0: all)")
	version := addVersionFlag(fs, "read")
	asJSON := fs.Bool("json", false, "print each row as a JSON object on its own line")
	cfg := addTableFlags(fs)
	positional, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return &usageError{msg: "want exactly one TABLE_URL (a path, file:// or s3:// URL)"}
	}
	if *limit < 0 {
		return &usageError{msg: "--limit: want 0 (all) or more"}
	}
	var cols []string
	if *columns != "" {
		for _, c := range strings.Split(*columns, ",") {
			if c = strings.TrimSpace(c); c != "" {
				cols = append(cols, c)
			}
		}
	}
	n, more, err := showTable(ctx, positional[0], *cfg, showOptions{where: where, columns: cols, limit: *limit, version: version.version(), json: *asJSON}, stdout)
	if err != nil {
		return err
	}
	switch {
	case more:
		fmt.Fprintf(stderr, "%d %s shown; more match (raise --limit, or 0 for all)\n", n, plural(n, "row"))
	default:
		fmt.Fprintf(stderr, "%d %s\n", n, plural(n, "row"))
	}
	return nil
}

type showOptions struct {
	where   []whereCond
	columns []string
	limit   int
	version int64
	json    bool
}

// showTable prints the rows of the table at url and returns how many it printed and
// whether more match.
func showTable(ctx context.Context, url string, cfg location.Config, o showOptions, out io.Writer) (n int, more bool, err error) {
	store, logs, err := location.Open(ctx, url, cfg)
	if err != nil {
		return 0, false, err
	}
	tbl := deltalog.Open(store, logs, deltalog.Options{})
	var snap *deltalog.Snapshot
	if o.version >= 0 {
		snap, err = tbl.SnapshotAt(ctx, o.version)
	} else {
		snap, err = tbl.Snapshot(ctx)
	}
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", url, err)
	}
	if snap.Version() < 0 {
		return 0, false, fmt.Errorf("%s: %w", url, errNoTable)
	}
	if err := checkColumns(snap, o.columns); err != nil {
		return 0, false, err
	}
	filter, err := whereFilter(snap, o.where)
	if err != nil {
		return 0, false, err
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{Columns: o.columns, Filter: filter})
	if err != nil {
		return 0, false, err
	}
	defer it.Close()

	var tw *tabwriter.Writer
	if !o.json {
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		names := make([]string, 0, it.Schema().NumFields())
		for _, f := range it.Schema().Fields() {
			names = append(names, f.Name)
		}
		fmt.Fprintln(tw, strings.Join(names, "\t"))
	}
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, false, err
		}
		rows := int(rec.NumRows())
		if o.limit > 0 && n+rows > o.limit {
			more = true
			rows = o.limit - n
		}
		if o.json {
			err = printJSONRows(out, rec, rows)
		} else {
			printTextRows(tw, rec, rows)
		}
		rec.Release()
		if err != nil {
			return n, false, err
		}
		n += rows
		if more || (o.limit > 0 && n == o.limit) {
			if !more {
				// Exactly at the limit: more match only if another row comes.
				more, err = hasMoreRows(ctx, it)
				if err != nil {
					return n, false, err
				}
			}
			break
		}
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return n, more, err
		}
	}
	return n, more, nil
}

// hasMoreRows reports whether it yields another row.
func hasMoreRows(ctx context.Context, it deltalog.RecordIterator) (bool, error) {
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		rows := rec.NumRows()
		rec.Release()
		if rows > 0 {
			return true, nil
		}
	}
}

// noColumn is the usage mistake of a flag naming a column the table lacks, listing the
// table's columns.
func noColumn(flag, column string, columns []string) error {
	return &usageError{msg: fmt.Sprintf("%s: no column %q (columns: %s)", flag, column, strings.Join(columns, ", "))}
}

// checkColumns refuses --columns naming a column the table lacks, as --where does.
func checkColumns(snap *deltalog.Snapshot, columns []string) error {
	if len(columns) == 0 {
		return nil
	}
	st, err := snap.Schema()
	if err != nil {
		return err
	}
	for _, c := range columns {
		if _, ok := st.Field(c); !ok {
			return noColumn("--columns", c, st.FieldNames())
		}
	}
	return nil
}

// whereFilter turns the --where conditions into one deltalog filter: a value compared
// with an integer column must be an integer; a NULL test takes any column.
func whereFilter(snap *deltalog.Snapshot, where []whereCond) (deltalog.Filter, error) {
	if len(where) == 0 {
		return nil, nil
	}
	st, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	var fs []deltalog.Filter
	for _, w := range where {
		f, ok := st.Field(w.column)
		if !ok {
			what := "--where " + w.column + "=..."
			if w.null {
				what = "--where " + w.String()
			}
			return nil, noColumn(what, w.column, st.FieldNames())
		}
		if w.null {
			if w.not {
				fs = append(fs, deltalog.NotNull(f.Name))
			} else {
				fs = append(fs, deltalog.IsNull(f.Name))
			}
			continue
		}
		switch f.Type {
		case deltalog.TypeLong, deltalog.TypeInteger, deltalog.TypeShort, deltalog.TypeByte:
			v, err := strconv.ParseInt(w.value, 10, 64)
			if err != nil {
				return nil, &usageError{msg: fmt.Sprintf("--where %s=%s: %s is an integer column, want an integer", w.column, w.value, f.Name)}
			}
			fs = append(fs, deltalog.Eq(f.Name, v))
		case deltalog.TypeString:
			fs = append(fs, deltalog.Eq(f.Name, w.value))
		default:
			return nil, &usageError{msg: fmt.Sprintf("--where %s=...: column %s is %s; --where compares string and integer columns only", w.column, f.Name, typeName(f.Type))}
		}
	}
	return deltalog.And(fs...), nil
}

// printTextRows writes the first rows of rec as tab-separated cells, NULL as NULL and
// long values cut.
func printTextRows(w io.Writer, rec arrow.RecordBatch, rows int) {
	cells := make([]string, rec.NumCols())
	for r := range rows {
		for c := range cells {
			col := rec.Column(c)
			if col.IsNull(r) {
				cells[c] = "NULL"
				continue
			}
			cells[c] = cutCell(strings.NewReplacer("\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(col.ValueStr(r)))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
}

// cutCell shortens s to showCellWidth characters, marking the cut with "…".
func cutCell(s string) string {
	if utf8.RuneCountInString(s) <= showCellWidth {
		return s
	}
	return string([]rune(s)[:showCellWidth-1]) + "…"
}

// printJSONRows writes the first rows of rec as one JSON object per line, keys in column
// order, values in Arrow's JSON forms (GetOneForMarshal).
func printJSONRows(w io.Writer, rec arrow.RecordBatch, rows int) error {
	names := make([][]byte, rec.NumCols())
	for c, f := range rec.Schema().Fields() {
		names[c], _ = json.Marshal(f.Name)
	}
	var line []byte
	for r := range rows {
		line = append(line[:0], '{')
		for c := range names {
			if c > 0 {
				line = append(line, ',')
			}
			v, err := json.Marshal(rec.Column(c).GetOneForMarshal(r))
			if err != nil {
				return fmt.Errorf("row %d, column %s: %w", r, rec.Schema().Field(c).Name, err)
			}
			line = append(append(append(line, names[c]...), ':'), v...)
		}
		line = append(line, '}', '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}
