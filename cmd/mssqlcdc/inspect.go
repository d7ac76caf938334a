package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
)

func init() {
	register(command{
		name:    "inspect",
		summary: "describe a Delta table: version, protocol, schema, files, rows, txn versions, checkpoint",
		run:     runInspect,
	})
}

// inspectReport is what inspect prints; with --json, this JSON object.
type inspectReport struct {
	Table            string            `json:"table"`
	Version          int64             `json:"version"`
	Protocol         deltalog.Protocol `json:"protocol"`
	TableID          string            `json:"tableId"`
	Schema           json.RawMessage   `json:"schema"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	LiveFiles        int               `json:"liveFiles"`
	SizeBytes        int64             `json:"sizeBytes"`
	// Rows is the number of live rows: numRecords over the live files less the rows
	// their deletion vectors mark deleted; null when some file has no stats
	// (FilesWithoutStats > 0).
	Rows *int64 `json:"rows"`
	// DeletedRows is the number of rows deletion vectors mark deleted in the live files
	// (still in the Parquet files, never returned by readers).
	DeletedRows       int64            `json:"deletedRows"`
	FilesWithoutStats int              `json:"filesWithoutStats"`
	TxnVersions       map[string]int64 `json:"txnVersions"`
	// LastCheckpoint is the newest checkpoint at or below Version, the one the snapshot
	// was read from; null when there is none.
	LastCheckpoint *int64 `json:"lastCheckpoint"`
	// LastCheckpointFile is _delta_log/_last_checkpoint as found, or null.
	LastCheckpointFile *deltalog.LastCheckpoint `json:"lastCheckpointFile"`
}

func inspectUsage(fs *flag.FlagSet) func() {
	return func() {
		fmt.Fprintln(fs.Output(), "Usage: mssqlcdc inspect TABLE_URL [flags]")
		fmt.Fprintln(fs.Output(), "TABLE_URL is a path, file:///path or s3://bucket/prefix.")
		fs.PrintDefaults()
	}
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("inspect", stderr)
	fs.Usage = inspectUsage(fs)
	asJSON := fs.Bool("json", false, "print a JSON object instead of text")
	version := addVersionFlag(fs, "inspect")
	cfg := addTableFlags(fs)
	positional, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return &usageError{msg: "want exactly one TABLE_URL (a path, file:// or s3:// URL)"}
	}
	rep, err := inspectTable(ctx, positional[0], *cfg, version.version())
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printInspect(stdout, rep)
}

// errNoTable is returned by inspect for a location with no Delta log.
var errNoTable = errors.New("no Delta table there (no _delta_log commits)")

func inspectTable(ctx context.Context, url string, cfg location.Config, version int64) (*inspectReport, error) {
	store, logs, err := location.Open(ctx, url, cfg)
	if err != nil {
		return nil, err
	}
	tbl := deltalog.Open(store, logs, deltalog.Options{})
	var snap *deltalog.Snapshot
	if version >= 0 {
		snap, err = tbl.SnapshotAt(ctx, version)
	} else {
		snap, err = tbl.Snapshot(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if snap.Version() < 0 {
		return nil, fmt.Errorf("%s: %w", url, errNoTable)
	}
	md := snap.Metadata()
	rep := &inspectReport{
		Table:            store.URL(),
		Version:          snap.Version(),
		Protocol:         snap.Protocol(),
		TableID:          md.ID,
		PartitionColumns: md.PartitionColumns,
		Configuration:    md.Configuration,
		TxnVersions:      map[string]int64{},
	}
	if rep.PartitionColumns == nil {
		rep.PartitionColumns = []string{}
	}
	if rep.Configuration == nil {
		rep.Configuration = map[string]string{}
	}
	st, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	rep.Schema = json.RawMessage(st.String())
	// Totals reads numRecords without decoding every file's stats (a 100k-file
	// checkpoint holds some 64 MB of them).
	tot, err := snap.Totals()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	rep.LiveFiles, rep.SizeBytes, rep.DeletedRows, rep.FilesWithoutStats = tot.Files, tot.Bytes, tot.DeletedRows, tot.FilesWithoutStats
	if rep.FilesWithoutStats == 0 {
		rep.Rows = &tot.Rows
	}
	for _, t := range snap.Txns() {
		rep.TxnVersions[t.AppID] = t.Version
	}
	if cp := snap.CheckpointVersion(); cp >= 0 {
		rep.LastCheckpoint = &cp
	}
	lc, ok, err := deltalog.ReadLastCheckpoint(ctx, store)
	if err != nil {
		return nil, err
	}
	if ok {
		rep.LastCheckpointFile = &lc
	}
	return rep, nil
}

func printInspect(w io.Writer, r *inspectReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := r.Protocol
	fmt.Fprintf(tw, "table:\t%s\n", r.Table)
	fmt.Fprintf(tw, "version:\t%d\n", r.Version)
	fmt.Fprintf(tw, "protocol:\treader %d, writer %d\n", p.MinReaderVersion, p.MinWriterVersion)
	if len(p.ReaderFeatures) > 0 {
		fmt.Fprintf(tw, "reader features:\t%s\n", strings.Join(p.ReaderFeatures, ", "))
	}
	if len(p.WriterFeatures) > 0 {
		fmt.Fprintf(tw, "writer features:\t%s\n", strings.Join(p.WriterFeatures, ", "))
	}
	fmt.Fprintf(tw, "table id:\t%s\n", r.TableID)
	parts := "(none)"
	if len(r.PartitionColumns) > 0 {
		parts = strings.Join(r.PartitionColumns, ", ")
	}
	fmt.Fprintf(tw, "partition columns:\t%s\n", parts)
	fmt.Fprintf(tw, "live files:\t%d (%d bytes)\n", r.LiveFiles, r.SizeBytes)
	if r.Rows != nil && r.DeletedRows > 0 {
		fmt.Fprintf(tw, "rows (stats):\t%d live (%d more marked deleted by deletion vectors)\n", *r.Rows, r.DeletedRows)
	} else if r.Rows != nil {
		fmt.Fprintf(tw, "rows (stats):\t%d\n", *r.Rows)
	} else {
		fmt.Fprintf(tw, "rows (stats):\tunknown (%d of %d files without stats)\n", r.FilesWithoutStats, r.LiveFiles)
	}
	// Two different checkpoints: the one this version was read from, and the table's
	// newest as _last_checkpoint names it (above Version when time travelling).
	switch cp := r.LastCheckpoint; {
	case cp != nil && *cp == r.Version:
		fmt.Fprintf(tw, "read from checkpoint:\tversion %d\n", *cp)
	case cp != nil:
		fmt.Fprintf(tw, "read from checkpoint:\tversion %d, then commits %d..%d\n", *cp, *cp+1, r.Version)
	default:
		fmt.Fprintf(tw, "read from checkpoint:\tnone at or below version %d (commits replayed)\n", r.Version)
	}
	if lc := r.LastCheckpointFile; lc != nil {
		desc := fmt.Sprintf("version %d, %d actions", lc.Version, lc.Size)
		if lc.NumOfAddFiles > 0 {
			desc += fmt.Sprintf(", %d add files", lc.NumOfAddFiles)
		}
		if lc.SizeInBytes > 0 {
			desc += fmt.Sprintf(", %d bytes", lc.SizeInBytes)
		}
		fmt.Fprintf(tw, "_last_checkpoint file:\t%s (the table's newest checkpoint)\n", desc)
	}
	if len(r.TxnVersions) == 0 {
		fmt.Fprintf(tw, "txn versions:\t(none)\n")
	} else {
		fmt.Fprintf(tw, "txn versions:\t\n")
		for _, app := range slices.Sorted(maps.Keys(r.TxnVersions)) {
			fmt.Fprintf(tw, "  %s\t%d\n", app, r.TxnVersions[app])
		}
	}
	if len(r.Configuration) > 0 {
		fmt.Fprintf(tw, "configuration:\t\n")
		for _, k := range slices.Sorted(maps.Keys(r.Configuration)) {
			fmt.Fprintf(tw, "  %s\t%s\n", k, r.Configuration[k])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	st, err := deltalog.ParseSchema(string(r.Schema))
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "schema:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range st.Fields {
		printField(tw, f, "  ")
	}
	return tw.Flush()
}

// printField writes one schema field per line, nested struct fields indented below it.
func printField(w io.Writer, f deltalog.StructField, indent string) {
	null := "not null"
	if f.Nullable {
		null = "nullable"
	}
	fmt.Fprintf(w, "%s%s\t%s\t%s\n", indent, f.Name, typeName(f.Type), null)
	if st, ok := f.Type.(*deltalog.StructType); ok {
		for _, c := range st.Fields {
			printField(w, c, indent+"  ")
		}
	}
}

// typeName is a Delta type in Spark SQL's DDL form: long, decimal(19,4), array<string>,
// map<string,long>, struct<...> (its fields are listed below it).
func typeName(t deltalog.DataType) string {
	switch t := t.(type) {
	case deltalog.PrimitiveType:
		return string(t)
	case *deltalog.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case *deltalog.ArrayType:
		return "array<" + typeName(t.ElementType) + ">"
	case *deltalog.MapType:
		return "map<" + typeName(t.KeyType) + "," + typeName(t.ValueType) + ">"
	case *deltalog.StructType:
		return "struct"
	}
	return fmt.Sprint(t)
}
