package deltalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// Compaction defaults, used when CompactOptions leaves them zero.
const (
	// DefaultCompactTargetSize is the size compaction packs small files into: Spark's and
	// delta-rs's target of 128 MiB (parquetio.DefaultTargetFileSize).
	DefaultCompactTargetSize = parquetio.DefaultTargetFileSize
	// DefaultCompactMaxBytes bounds the input bytes one Compact call rewrites (2 GiB), so
	// that a run fits in a Lambda invocation; the rest waits for the next run.
	DefaultCompactMaxBytes int64 = 2 << 30
	// DefaultMaxDeletedRowsRatio: a file whose deletion vector marks more than this share
	// of its rows deleted is rewritten whatever its size (Spark's
	// optimize.maxDeletedRowsRatio default, 0.05).
	DefaultMaxDeletedRowsRatio = 0.05
)

// CompactOptions tune Table.Compact. The zero value is usable.
type CompactOptions struct {
	// TargetFileSize in bytes is the size the small files are packed into; 0 is
	// DefaultCompactTargetSize.
	TargetFileSize int64
	// MinFileSize in bytes: files at least this large are left alone (unless their
	// deletion vector crosses MaxDeletedRowsRatio); 0 is three quarters of
	// TargetFileSize.
	MinFileSize int64
	// MaxBytes bounds the input bytes one call rewrites (whole groups; the first group is
	// always done); 0 is DefaultCompactMaxBytes. The file sizes count here, not the
	// estimates that cut the groups.
	MaxBytes int64
	// MaxDeletedRowsRatio: a file with a deletion vector marking more than this share of
	// its rows deleted is rewritten; 0 is DefaultMaxDeletedRowsRatio.
	MaxDeletedRowsRatio float64
	// Writer tunes the Parquet files written (TempDir, Codec, RowGroupBytes);
	// TargetFileSize is taken from above.
	Writer parquetio.WriterOptions
	// DryRun plans the groups and writes nothing.
	DryRun bool
}

func (o CompactOptions) withDefaults() CompactOptions {
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = DefaultCompactTargetSize
	}
	if o.MinFileSize <= 0 {
		o.MinFileSize = o.TargetFileSize / 4 * 3
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultCompactMaxBytes
	}
	if o.MaxDeletedRowsRatio <= 0 {
		o.MaxDeletedRowsRatio = DefaultMaxDeletedRowsRatio
	}
	return o
}

// CompactResult is what Compact did (with DryRun: would do).
type CompactResult struct {
	// Version is the table version after the last compaction commit (the version read
	// when nothing was committed); -1 for a table that does not exist.
	Version int64
	// Commits is the number of compaction commits made, one per group.
	Commits int
	// FilesRemoved and BytesRemoved are the small files taken out; FilesAdded and
	// BytesAdded the files written in their place.
	FilesRemoved, FilesAdded int
	BytesRemoved, BytesAdded int64
	// Rows is the number of rows rewritten (a row repacked by the second pass counts
	// twice); DeletedRows the rows deletion vectors of the removed files marked deleted,
	// which the new files no longer hold.
	Rows, DeletedRows int64
	// FilesLeft is the number of small files that MaxBytes (or a cancelled context) left
	// for the next run.
	FilesLeft int
	// LiveFiles is the number of live files after the run.
	LiveFiles int
}

// CompactRowsError: the rows written for a group differ from the live rows its files'
// statistics count. Nothing was committed and the files written were deleted; the
// statistics or the data of Path (the group's first file) are wrong.
type CompactRowsError struct {
	Path        string
	Want, Wrote int64
}

func (e *CompactRowsError) Error() string {
	return fmt.Sprintf("deltalog: compaction of the group starting at %s wrote %d rows, its files' statistics count %d live rows; nothing committed", e.Path, e.Wrote, e.Want)
}

// Compact rewrites the table's small files into files of about TargetFileSize (bin-packing,
// Spark's OPTIMIZE without ZORDER; docs/reference/delta-protocol.md §2.4, §2.5, §10.3):
//
//   - Candidates are live files smaller than MinFileSize and files whose deletion vector
//     marks more than MaxDeletedRowsRatio of their rows deleted. Per partition (files with
//     equal partitionValues), candidates are taken in log order — when their rows were
//     written: the MIN_INSERTION_TIME tag a compacted file carries (Databricks' tags, in
//     µs), else the add's modificationTime, then the path; a checkpoint keeps no versions —
//     and cut into consecutive groups whose estimated output fits TargetFileSize: by the
//     files' sizes at first, then by their live rows times the bytes per row the last
//     group written came to (small files are mostly Parquet footers, so their rows pack
//     far tighter than their sizes add up to). A group of one file without a deletion
//     vector is left as it is. So a file's rows stay together and in order, and a bronze
//     group covers one LSN range. When the first pass committed something, a second pass
//     plans again and repacks the small files it wrote (its first group's, cut before the
//     bytes per row were known, and the tails).
//   - Each group is read (Scan's rules: the table's schema, missing columns NULL, rows a
//     deletion vector deletes dropped) and written as new files with fresh names and
//     statistics, tagged with the group's INSERTION_TIME range; the rows written must
//     equal the live rows the files' statistics count (*CompactRowsError otherwise,
//     nothing committed).
//   - Each group is one commit: a remove (dataChange false, keeping the file's deletion
//     vector, size and partition values) per file and an add (dataChange false) per new
//     file, with the commitInfo Spark writes for OPTIMIZE (operation "OPTIMIZE",
//     isolationLevel SnapshotIsolation, isBlindAppend false, operationMetrics). Under the
//     conflict rules (conflict.go) a concurrent blind append never conflicts with it in
//     either direction, and it fails with *ConcurrentModificationError only when a winner
//     removed one of its files (another compaction, a delete) or changed the protocol or
//     metadata; a later run plans again from the new state.
//
// Killed at any point, it leaves whole commits only: files written for an uncommitted
// group are unreferenced and VACUUM deletes them after the retention; a group's removed
// files stay readable for time travel until VACUUM. Re-running does the remaining work.
// MaxBytes bounds the work of one call; a cancelled ctx stops it between groups with the
// groups done committed (the error is ctx's). The table must be writable by this package
// (Snapshot.CanWrite) and its rows readable (Snapshot.CanReadData).
func (t *Table) Compact(ctx context.Context, opts CompactOptions) (CompactResult, error) {
	opts = opts.withDefaults()
	res := CompactResult{Version: -1}
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return res, err
	}
	res.Version = snap.Version()
	if snap.Version() < 0 {
		return res, nil
	}
	res.LiveFiles = snap.NumFiles()
	if err := snap.CanWrite(); err != nil {
		return res, err
	}
	if err := snap.CanReadData(); err != nil {
		return res, err
	}
	budget := opts.MaxBytes
	var rate float64 // output bytes per row of the last group written; 0 unknown
	first := true
	// A second pass repacks the small files the first one wrote (its first group, cut by
	// file sizes before the bytes per row were known, and each partition's tail), now
	// that the estimate is good.
	for pass := 0; pass < 2; pass++ {
		parts := compactCandidates(snap.Files(), opts)
		left := func(p, from int) int {
			n := len(parts[p][from:])
			for _, rest := range parts[p+1:] {
				n += len(rest)
			}
			return n
		}
		commits := res.Commits
		for p, cands := range parts {
			for i := 0; i < len(cands); {
				g, next := nextGroup(cands, i, opts.TargetFileSize, rate)
				if g.files == nil { // a lone file that packing cannot improve
					i = next
					continue
				}
				if !first && (budget-g.bytes < 0 || ctx.Err() != nil) {
					res.FilesLeft = left(p, i)
					return res, ctx.Err()
				}
				first = false
				budget -= g.bytes
				if opts.DryRun {
					res.FilesRemoved += len(g.files)
					res.BytesRemoved += g.bytes
					res.Commits++
					i = next
					continue
				}
				rows, added := res.Rows, res.BytesAdded
				nsnap, err := t.compactGroup(ctx, snap, g, opts, &res)
				if err != nil {
					res.FilesLeft = left(p, i)
					return res, err
				}
				snap = nsnap
				res.Version, res.LiveFiles = snap.Version(), snap.NumFiles()
				// The last group's bytes per row: groups grow as the estimate improves,
				// so the footer's share in it shrinks.
				if n := res.Rows - rows; n > 0 && res.BytesAdded > added {
					rate = float64(res.BytesAdded-added) / float64(n)
				}
				i = next
			}
		}
		if opts.DryRun || res.Commits == commits {
			break
		}
	}
	return res, nil
}

// compactGroup is a group of files rewritten together in one commit.
type compactGroup struct {
	files []Add
	bytes int64
	// partition is the group's partition values.
	partition map[string]string
}

// nextGroup cuts the group starting at cands[i]: consecutive files while their estimated
// output stays within target (at least one file). A file's output is estimated as its
// live rows times rate (the bytes per row the last group written came to) when that is
// known and smaller than the file, else the file's size: many tiny files are mostly
// Parquet footers, and their rows pack far tighter than their sizes add up to. It returns
// the group (nil files when it would be one file without a deletion vector, which packing
// cannot improve) and the index after it.
func nextGroup(cands []Add, i int, target int64, rate float64) (compactGroup, int) {
	est := func(a *Add) int64 {
		if rate > 0 {
			if n, ok := a.LiveRecords(); ok {
				if e := int64(float64(n) * rate); e < a.Size {
					return e
				}
			}
		}
		return a.Size
	}
	var g compactGroup
	var sum int64
	j := i
	for ; j < len(cands); j++ {
		e := est(&cands[j])
		if j > i && sum+e > target {
			break
		}
		sum += e
		g.files = append(g.files, cands[j])
		g.bytes += cands[j].Size
	}
	if len(g.files) == 1 && g.files[0].DeletionVector == nil {
		return compactGroup{}, j
	}
	g.partition = g.files[0].PartitionValues
	return g, j
}

// compactCandidates picks the candidate files (see Compact) and returns them per partition,
// each in log order.
func compactCandidates(files []Add, opts CompactOptions) [][]Add {
	byPart := map[string][]Add{}
	var keys []string
	for _, a := range files {
		if !compactCandidate(&a, opts) {
			continue
		}
		k := partitionKey(a.PartitionValues)
		if _, ok := byPart[k]; !ok {
			keys = append(keys, k)
		}
		byPart[k] = append(byPart[k], a)
	}
	slices.Sort(keys)
	out := make([][]Add, 0, len(keys))
	for _, k := range keys {
		cands := byPart[k]
		slices.SortStableFunc(cands, func(a, b Add) int {
			if c := compareInt64(minInsertionTime(&a), minInsertionTime(&b)); c != 0 {
				return c
			}
			return strings.Compare(a.Path, b.Path)
		})
		out = append(out, cands)
	}
	return out
}

// Tags recording when a file's rows were first written, in microseconds since the epoch, as
// Databricks writes them (INSERTION_TIME on new files; MIN_ and MAX_INSERTION_TIME kept
// across OPTIMIZE). A compacted file carries its inputs' range, so that a later compaction
// still sees it in log order among files appended after it was written.
const (
	tagInsertionTime    = "INSERTION_TIME"
	tagMinInsertionTime = "MIN_INSERTION_TIME"
	tagMaxInsertionTime = "MAX_INSERTION_TIME"
)

// minInsertionTime is when a's oldest row was written (µs): its MIN_INSERTION_TIME or
// INSERTION_TIME tag, else its modificationTime.
func minInsertionTime(a *Add) int64 {
	for _, k := range []string{tagMinInsertionTime, tagInsertionTime} {
		if v, err := strconv.ParseInt(a.Tags[k], 10, 64); err == nil {
			return v
		}
	}
	return a.ModificationTime * 1000
}

// maxInsertionTime is when a's newest row was written (µs), as minInsertionTime.
func maxInsertionTime(a *Add) int64 {
	for _, k := range []string{tagMaxInsertionTime, tagInsertionTime} {
		if v, err := strconv.ParseInt(a.Tags[k], 10, 64); err == nil {
			return v
		}
	}
	return a.ModificationTime * 1000
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compactCandidate reports whether a is rewritten: small, or with too many deleted rows.
func compactCandidate(a *Add, opts CompactOptions) bool {
	if a.Size < opts.MinFileSize {
		return true
	}
	if a.DeletionVector == nil {
		return false
	}
	n, ok := a.NumRecords()
	return !ok || n <= 0 || float64(a.DeletionVector.Cardinality) > opts.MaxDeletedRowsRatio*float64(n)
}

// partitionKey is a canonical text of partition values, for grouping.
func partitionKey(pv map[string]string) string {
	keys := slices.Sorted(maps.Keys(pv))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(strconv.Quote(k))
		b.WriteByte('=')
		b.WriteString(strconv.Quote(pv[k]))
		b.WriteByte(';')
	}
	return b.String()
}

// compactGroup writes group g's rows as new files and commits the swap; it returns the
// snapshot after the commit.
func (t *Table) compactGroup(ctx context.Context, snap *Snapshot, g compactGroup, opts CompactOptions, res *CompactResult) (*Snapshot, error) {
	schema, err := dataSchema(snap)
	if err != nil {
		return nil, err
	}
	// want is the live rows the files' statistics count, when every file has numRecords.
	var want, deleted int64
	known := true
	for i := range g.files {
		a := &g.files[i]
		if a.DeletionVector != nil {
			deleted += a.DeletionVector.Cardinality
		}
		n, ok := a.LiveRecords()
		known = known && ok
		want += n
	}
	wopts := opts.Writer
	wopts.TargetFileSize = opts.TargetFileSize
	if n, ok := numIndexedCols(snap.Metadata()); ok && wopts.NumIndexedCols == 0 {
		wopts.NumIndexedCols = n
	}
	w := parquetio.NewWriter(t.store, schema, wopts)
	written, err := copyRows(ctx, snap, g.files, schema, w)
	var files []parquetio.File
	if err == nil {
		files, err = w.Close(ctx)
	}
	if err == nil && known && written != want {
		err = &CompactRowsError{Path: g.files[0].Path, Want: want, Wrote: written}
	}
	if err != nil {
		// Best effort: a file left behind is unreferenced and VACUUM deletes it.
		_ = w.Abort(context.WithoutCancel(ctx))
		for _, f := range files {
			_ = t.store.Delete(context.WithoutCancel(ctx), f.Path)
		}
		return nil, fmt.Errorf("compact: %w", err)
	}

	tx := t.Begin(snap)
	tx.SetOperation("OPTIMIZE", map[string]string{"predicate": "[]", "zOrderBy": "[]", "auto": "false"})
	now := t.opts.now().UnixMilli()
	var added int64
	lo, hi := minInsertionTime(&g.files[0]), maxInsertionTime(&g.files[0])
	for i := range g.files {
		lo, hi = min(lo, minInsertionTime(&g.files[i])), max(hi, maxInsertionTime(&g.files[i]))
	}
	for _, f := range files {
		a := AddFromParquet(f)
		a.DataChange = false
		a.PartitionValues = maps.Clone(g.partition)
		a.Tags = map[string]string{
			tagInsertionTime:    strconv.FormatInt(lo, 10),
			tagMinInsertionTime: strconv.FormatInt(lo, 10),
			tagMaxInsertionTime: strconv.FormatInt(hi, 10),
		}
		tx.Add(a)
		added += f.Size
	}
	for i := range g.files {
		tx.Remove(g.files[i].RemoveAction(now, false))
	}
	tx.SetOperationMetrics(map[string]string{
		"numRemovedFiles":           strconv.Itoa(len(g.files)),
		"numRemovedBytes":           strconv.FormatInt(g.bytes, 10),
		"numAddedFiles":             strconv.Itoa(len(files)),
		"numAddedBytes":             strconv.FormatInt(added, 10),
		"numDeletionVectorsRemoved": strconv.Itoa(countDVs(g.files)),
	})
	if _, err := tx.Commit(ctx); err != nil {
		// Uncommitted (or undecided: then the files may be referenced, so they stay).
		var cue *CommitUnknownError
		if !errors.As(err, &cue) {
			for _, f := range files {
				_ = t.store.Delete(context.WithoutCancel(ctx), f.Path)
			}
		}
		return nil, fmt.Errorf("compact: %w", err)
	}
	res.Commits++
	res.FilesRemoved += len(g.files)
	res.BytesRemoved += g.bytes
	res.FilesAdded += len(files)
	res.BytesAdded += added
	res.Rows += written
	res.DeletedRows += deleted
	return tx.NextSnapshot(ctx)
}

func countDVs(files []Add) int {
	n := 0
	for i := range files {
		if files[i].DeletionVector != nil {
			n++
		}
	}
	return n
}

// dataSchema is the table schema as Arrow without the partition columns: the columns a
// data file holds.
func dataSchema(snap *Snapshot) (*arrow.Schema, error) {
	full, err := snap.ArrowSchema()
	if err != nil {
		return nil, err
	}
	parts := map[string]bool{}
	for _, p := range snap.Metadata().PartitionColumns {
		parts[strings.ToLower(p)] = true
	}
	fields := make([]arrow.Field, 0, len(full.Fields()))
	for _, f := range full.Fields() {
		if !parts[strings.ToLower(f.Name)] {
			fields = append(fields, f)
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

// numIndexedCols is the table's delta.dataSkippingNumIndexedCols, when set and valid.
func numIndexedCols(md Metadata) (int, bool) {
	v, ok := md.Configuration["delta.dataSkippingNumIndexedCols"]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < -1 || n == 0 {
		return 0, false
	}
	return n, true
}

// copyRows reads files in order through Scan's reader (deletion vectors applied, columns
// conformed to schema) and writes their rows to w; it returns the rows written.
func copyRows(ctx context.Context, snap *Snapshot, files []Add, schema *arrow.Schema, w *parquetio.Writer) (int64, error) {
	cols := make([]string, 0, len(schema.Fields()))
	for _, f := range schema.Fields() {
		cols = append(cols, f.Name)
	}
	parts := map[string]bool{}
	for _, p := range snap.Metadata().PartitionColumns {
		parts[strings.ToLower(p)] = true
	}
	ptrs := make([]*Add, len(files))
	for i := range files {
		if strings.Contains(files[i].Path, "://") {
			return 0, fmt.Errorf("%s: absolute file paths are not supported", files[i].Path)
		}
		ptrs[i] = &files[i]
	}
	it := &scanIter{snap: snap, out: schema, read: schema, fileCols: cols, parts: parts,
		files: ptrs, mem: memory.DefaultAllocator}
	defer it.Close()
	var n int64
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		err = w.Write(ctx, rec)
		n += rec.NumRows()
		rec.Release()
		if err != nil {
			return n, err
		}
	}
}
