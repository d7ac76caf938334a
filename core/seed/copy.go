package seed

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// The copy: a Delta table's live files, or a set of Parquet files (every *.parquet under a
// prefix, or a list of them), as Spark, Databricks, DMS, delta-rs or DuckDB wrote them
// (docs/seed.md § The copy).

// Formats of a copy (Request.Format).
const (
	// FormatAuto is a Delta table when the URL holds a Delta log, else Parquet files.
	FormatAuto = ""
	// FormatDelta reads the table's live files through its log (deletion vectors and
	// partition values apply).
	FormatDelta = "delta"
	// FormatParquet reads Parquet files: every *.parquet under the URL (objects under a
	// folder or file name starting with _ or . are left out: _delta_log, _SUCCESS,
	// _temporary, .crc), or the files listed.
	FormatParquet = "parquet"
)

// hiveNull is the partition value Hive, Spark and delta-rs write for NULL.
const hiveNull = "__HIVE_DEFAULT_PARTITION__"

// copyFile is one data file of the copy.
type copyFile struct {
	// Path is the add's path as the Delta log writes it, or the object key under the URL.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// DV is true for a Delta file with a deletion vector: its rows are read without the
	// deleted ones, so a position among the rows read is not the position in the file.
	DV bool `json:"dv,omitempty"`
}

// key is the object key of the file under the copy's URL.
func (f copyFile) key(format string) string {
	if format == FormatDelta {
		a := deltalog.Add{Path: f.Path}
		return a.DecodedPath()
	}
	return f.Path
}

// copyData is an opened copy: its format and, for a Delta table, the snapshot read.
type copyData struct {
	url    string
	format string
	store  storage.Store
	snap   *deltalog.Snapshot // Delta only
	adds   map[string]int     // Delta only: the index in snap.Files() by path, built on first use
}

// requireCopy refuses an empty copy URL, a *config.ConfigError on "copy".
func requireCopy(rawURL string) error {
	if rawURL == "" {
		return configErr("copy", "no copy URL: give the copy's location (a Delta table, a folder of Parquet files or one Parquet file)")
	}
	return nil
}

// openCopy opens the copy at url through open. version pins a Delta table's version (-1:
// the latest). A Delta table asked for as Parquet is refused (its folder holds removed
// files too), and so is a folder without a log asked for as Delta.
func openCopy(ctx context.Context, open func(ctx context.Context, url string) (*deltalog.Table, error), rawURL, format string, version int64) (*copyData, error) {
	if err := requireCopy(rawURL); err != nil {
		return nil, err
	}
	t, err := open(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("open copy %s: %w", rawURL, err)
	}
	c := &copyData{url: rawURL, store: t.Store()}
	var snap *deltalog.Snapshot
	if version >= 0 {
		snap, err = t.SnapshotAt(ctx, version)
	} else {
		snap, err = t.Snapshot(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("read copy %s: %w", rawURL, err)
	}
	isDelta := snap.Version() >= 0
	switch {
	case format == FormatParquet && isDelta:
		return nil, configErr("copy_format", fmt.Sprintf("%s is a Delta table: read it as delta (its folder also holds files the table removed)", rawURL))
	case format == FormatDelta && !isDelta:
		return nil, configErr("copy", fmt.Sprintf("no Delta table at %s (no _delta_log): give copy_format parquet to read its Parquet files", rawURL))
	case format != FormatAuto && format != FormatDelta && format != FormatParquet:
		return nil, configErr("copy_format", fmt.Sprintf("%q: want delta, parquet or empty (detect)", format))
	}
	if isDelta {
		if err := snap.CanReadData(); err != nil {
			return nil, fmt.Errorf("copy %s: %w", rawURL, err)
		}
		c.format, c.snap = FormatDelta, snap
		return c, nil
	}
	c.format = FormatParquet
	return c, nil
}

// requestInput is what a seed's ConfigError names as holding its fields: the Request
// (as_of, copy, copy_format, copy_files, allow_missing_columns) and the copy it names.
const requestInput = "seed request"

// configErr is a ConfigError on one field of the seed's request.
func configErr(field, reason string) error {
	return &config.ConfigError{Problems: []config.Problem{{Field: field, Reason: reason}}, In: requestInput}
}

// files lists the copy's data files in path order: a Delta table's live files, the
// Parquet files under the URL, or those of list (keys under the URL).
func (c *copyData) files(ctx context.Context, list []string) ([]copyFile, error) {
	if c.format == FormatDelta {
		if len(list) > 0 {
			return nil, configErr("copy_files", "a Delta copy is read from its log: give no file list")
		}
		adds := c.snap.Files()
		out := make([]copyFile, 0, len(adds))
		for _, a := range adds {
			out = append(out, copyFile{Path: a.Path, Size: a.Size, DV: a.DeletionVector != nil})
		}
		return out, nil
	}
	var out []copyFile
	if len(list) > 0 {
		seen := map[string]bool{}
		for _, k := range list {
			k = strings.TrimPrefix(k, "/")
			if seen[k] {
				continue
			}
			seen[k] = true
			info, err := c.store.Head(ctx, k)
			if errors.Is(err, storage.ErrNotFound) {
				return nil, configErr("copy_files", fmt.Sprintf("%s: no such file under %s", k, c.url))
			}
			if err != nil {
				return nil, fmt.Errorf("copy %s: %w", c.url, err)
			}
			out = append(out, copyFile{Path: k, Size: info.Size})
		}
	} else {
		started, finished := false, false
		for info, err := range c.store.List(ctx, "", "") {
			if err != nil {
				return nil, fmt.Errorf("list copy %s: %w", c.url, err)
			}
			switch {
			case isParquetKey(info.Key):
				out = append(out, copyFile{Path: info.Key, Size: info.Size})
			case info.Key == snapshot.ExportStartedMarker:
				started = true
			case info.Key == snapshot.ExportMarker:
				finished = true
			}
		}
		if started && !finished {
			return nil, configErr("copy", fmt.Sprintf("%s holds a partial mssqlcdc export (%s and no %s: it was interrupted, or is still running), "+
				"which lacks the rows it did not write: seed a finished export, or export again into an empty URL", c.url, snapshot.ExportStartedMarker, snapshot.ExportMarker))
		}
		if len(out) == 0 {
			return nil, configErr("copy", fmt.Sprintf("no Parquet files (*.parquet) under %s", c.url))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// isParquetKey reports whether a listed key is a data file of a Parquet copy.
func isParquetKey(key string) bool {
	if !strings.HasSuffix(strings.ToLower(key), ".parquet") {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if strings.HasPrefix(seg, "_") || strings.HasPrefix(seg, ".") {
			return false
		}
	}
	return true
}

// hiveValues are the partition values a Parquet file's key names in its folders
// (col=value, percent-escaped), by lower-cased column; nil is NULL.
func hiveValues(key string) map[string]*string {
	var out map[string]*string
	for _, seg := range strings.Split(path.Dir(key), "/") {
		k, v, ok := strings.Cut(seg, "=")
		if !ok || k == "" {
			continue
		}
		if out == nil {
			out = map[string]*string{}
		}
		if uv, err := url.PathUnescape(v); err == nil {
			v = uv
		}
		if v == hiveNull {
			out[strings.ToLower(k)] = nil
			continue
		}
		out[strings.ToLower(k)] = &v
	}
	return out
}

// schema is the copy's columns: a Delta table's schema, or the first Parquet file's
// columns followed by its folders' partition columns (as text).
func (c *copyData) schema(ctx context.Context, files []copyFile) (*arrow.Schema, error) {
	if c.format == FormatDelta {
		st, err := c.snap.Schema()
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", c.url, err)
		}
		s, err := deltalog.ToArrow(st)
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", c.url, err)
		}
		return s, nil
	}
	if len(files) == 0 {
		return arrow.NewSchema(nil, nil), nil
	}
	first := files[0]
	it, err := parquetio.ReadFile(ctx, c.store, first.Path, nil)
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", c.fileURL(first.Path), err)
	}
	fields := append([]arrow.Field(nil), it.Schema().Fields()...)
	it.Close()
	for k := range hiveValues(first.Path) {
		if fieldIndexFold(fields, k) < 0 {
			fields = append(fields, arrow.Field{Name: k, Type: arrow.BinaryTypes.String, Nullable: true})
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

// fileURL is the full location of the copy's file at p (relative to the copy's URL), for
// the messages of errors about that file; a Delta add's absolute URI is itself.
func (c *copyData) fileURL(p string) string {
	if strings.Contains(p, "://") {
		return p
	}
	return strings.TrimSuffix(c.url, "/") + "/" + strings.TrimPrefix(p, "/")
}

// fieldIndexFold finds name among fields: an exact match, else the only match ignoring
// case; -1 when absent, -2 when two fields match ignoring case and none exactly.
func fieldIndexFold(fields []arrow.Field, name string) int {
	found := -1
	for i, f := range fields {
		if f.Name == name {
			return i
		}
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -2
			}
			found = i
		}
	}
	return found
}

// read streams the columns of one file of the copy (copy column names, as the schema
// spells them). A Delta file is read through the table's scan, so its partition values,
// its deletion vector and the table's types apply; a Parquet file as it is, with the
// columns it has (the caller fills the rest from its folders' partition values).
func (c *copyData) read(ctx context.Context, f copyFile, columns []string) (deltalog.RecordIterator, error) {
	if c.format == FormatDelta {
		a, ok := c.add(f.Path)
		if !ok {
			return nil, fmt.Errorf("copy %s: %s is not a live file of version %d (the plan's version): plan the seed again", c.url, f.Path, c.snap.Version())
		}
		return c.snap.Scan(ctx, deltalog.ScanOptions{Columns: columns, Files: []deltalog.Add{a}})
	}
	return parquetio.ReadFile(ctx, c.store, f.Path, columns)
}

// add is the live file at path of a Delta copy's snapshot.
func (c *copyData) add(path string) (deltalog.Add, bool) {
	if c.adds == nil {
		c.adds = map[string]int{}
		for i, a := range c.snap.Files() {
			c.adds[a.Path] = i
		}
	}
	i, ok := c.adds[path]
	if !ok {
		return deltalog.Add{}, false
	}
	return c.snap.Files()[i], true
}
