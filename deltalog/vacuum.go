package deltalog

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// VacuumOptions tune Vacuum.
type VacuumOptions struct {
	// Retention is the minimum age of a file Vacuum deletes, and how long removed files
	// stay protected for time travel; 0 means the table's
	// delta.deletedFileRetentionDuration, else DefaultTombstoneRetention (7 days).
	Retention time.Duration
	// DryRun lists what would be deleted without deleting it.
	DryRun bool
	// Progress, when set, is told how the listing goes: after every ProgressEvery
	// objects listed, the result so far and the objects listed (hidden ones included,
	// except _delta_log/, which is not listed).
	Progress func(listed int, so VacuumResult)
	// ProgressEvery is how many listed objects apart Progress is called; 1000 when 0.
	ProgressEvery int
}

// VacuumResult is what Vacuum did.
type VacuumResult struct {
	// Version is the snapshot version whose references were protected.
	Version int64
	// Deleted are the keys deleted (or, with DryRun, that would be), in key order.
	Deleted []string
	// DeletedBytes is the size of the Deleted files, as listed.
	DeletedBytes int64
	// Protected counts the files kept because the snapshot references them: Live, its
	// live files (and the deletion vector files they name), plus Removed, the files of
	// its removes younger than the retention (and their deletion vector files), which
	// time travel within the retention still reads. TooNew counts unreferenced files kept
	// because they are younger than the retention (possibly a writer's uncommitted file).
	Protected, Live, Removed, TooNew int
}

// Vacuum deletes the data files under the table root that the latest snapshot does not
// reference and that are older than the retention (docs/reference/delta-protocol.md
// §11.4, "FULL" mode):
//   - it lists the whole table root, skipping _delta_log and every hidden path: a path
//     segment starting with "." or with "_" unless it contains "=" (a partition
//     directory of a column named _x), as Spark's hidden-file rule does — so
//     _change_data, _delta_log and temporary files are never touched. The listing steps
//     over _delta_log/ (one listing up to it, one from past it), as Spark's does not
//     descend into a hidden directory: the log is most of a table's objects, 30 days of
//     commits and checkpoints against the data files VACUUM keeps within days
//     (docs/performance.md § Maintenance that does not grow with age);
//   - referenced are the live files and the files of removes whose deletionTimestamp is
//     within the retention, so a snapshot time travel can still reach within the retention
//     keeps its files, and the deletion vector files those adds and removes name
//     (docs/delta-reading.md § Deletion vectors); a path may be relative or an absolute URI
//     under the table root (docs/reference/delta-protocol.md §2.4), compared as the key it
//     names (tableKey);
//   - an unreferenced file is deleted only when its modification time is older than the
//     retention: a file a writer uploaded but has not committed yet is younger than that.
//
// The table must be writable by this package (Snapshot.CanWrite, the vacuumProtocolCheck
// rule): a table with a feature this package does not write may keep files Vacuum would
// not recognise. The log
// itself is cleaned by CleanupLog, never by Vacuum. Versions older than the retention
// may no longer be readable afterwards.
func (t *Table) Vacuum(ctx context.Context, opts VacuumOptions) (VacuumResult, error) {
	res := VacuumResult{Version: -1}
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return res, err
	}
	if snap.Version() < 0 {
		return res, nil
	}
	if err := snap.CanWrite(); err != nil {
		return res, err
	}
	res.Version = snap.Version()
	retention := opts.Retention
	if retention == 0 {
		if retention, err = retentionProperty(snap.Metadata(), "delta.deletedFileRetentionDuration", DefaultTombstoneRetention); err != nil {
			return res, err
		}
	}
	now := t.opts.now()
	cutoff := now.Add(-retention)

	root, err := url.Parse(t.store.URL())
	if err != nil {
		return res, fmt.Errorf("vacuum: table URL %q: %w", t.store.URL(), err)
	}
	referenced := make(map[string]bool, len(snap.Files())) // key -> live (else a kept remove's)
	// A key a live file names is live, whatever kept remove names it too.
	reference := func(p string, live bool) {
		if k, ok := tableKey(root, p); ok {
			referenced[k] = referenced[k] || live
		}
	}
	// A deletion vector's file is referenced by every live file and kept remove that names
	// it (one DV file may hold the DVs of many data files).
	referenceDV := func(dv *DeletionVector, live bool) {
		if dv == nil || dv.StorageType == DVStorageInline {
			return
		}
		if k, err := dvFileKey(t.store.URL(), dv); err == nil {
			referenced[k] = referenced[k] || live
		}
	}
	for i := range snap.Files() {
		reference(snap.Files()[i].Path, true)
		referenceDV(snap.Files()[i].DeletionVector, true)
	}
	// Of the checkpoint's tombstones only the path, deletionTimestamp and deletionVector
	// are read and decoded.
	tombstones, err := snap.tombstoneKeys()
	if err != nil {
		return res, fmt.Errorf("vacuum: %w", err)
	}
	for _, r := range tombstones {
		if r.DeletionTimestamp == nil || *r.DeletionTimestamp > cutoff.UnixMilli() {
			// A remove without a timestamp is kept: its age is unknown.
			reference(r.Path, false)
			referenceDV(r.DeletionVector, false)
		}
	}

	every := opts.ProgressEvery
	if every <= 0 {
		every = 1000
	}
	listed := 0
	visit := func(oi storage.ObjectInfo) error {
		if listed++; opts.Progress != nil && listed%every == 0 {
			opts.Progress(listed, res)
		}
		if hiddenPath(oi.Key) {
			return nil
		}
		if live, ok := referenced[oi.Key]; ok {
			res.Protected++
			if live {
				res.Live++
			} else {
				res.Removed++
			}
			return nil
		}
		if oi.ModTime.After(cutoff) {
			res.TooNew++
			return nil
		}
		if !opts.DryRun {
			if err := t.store.Delete(ctx, oi.Key); err != nil {
				return fmt.Errorf("vacuum: %w", err)
			}
		}
		res.Deleted = append(res.Deleted, oi.Key)
		res.DeletedBytes += oi.Size
		return nil
	}
	// Two listings: the keys before _delta_log/, then those after it. Every key from
	// LogDir up to afterLog starts with LogDir (or is afterLog, as hidden).
	afterLog := strings.TrimSuffix(LogDir, "/") + string(rune('/'+1))
	reachedLog := false
	for oi, err := range t.store.List(ctx, "", "") {
		if err != nil {
			return res, fmt.Errorf("vacuum: list: %w", err)
		}
		if strings.HasPrefix(oi.Key, LogDir) {
			reachedLog = true
			break
		}
		if err := visit(oi); err != nil {
			return res, err
		}
	}
	if reachedLog {
		for oi, err := range t.store.List(ctx, "", afterLog) {
			if err != nil {
				return res, fmt.Errorf("vacuum: list: %w", err)
			}
			if err := visit(oi); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// hiddenPath reports whether any segment of key is hidden from VACUUM: it starts with "."
// or starts with "_" and contains no "=" (Spark's DeltaTableUtils.isHiddenDirectory).
func hiddenPath(key string) bool {
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, ".") || (strings.HasPrefix(seg, "_") && !strings.Contains(seg, "=")) {
			return true
		}
	}
	return false
}

// tableKey is the store key a log path names (docs/reference/delta-protocol.md §2.4: a
// percent-encoded URI, relative to the table root or absolute): a relative path decoded,
// or an absolute URI under root made relative, as Spark's VACUUM relativizes paths.
// s3, s3a and s3n name the same bucket. ok is false for a file outside the table.
func tableKey(root *url.URL, p string) (string, bool) {
	if !strings.Contains(p, "://") && !strings.HasPrefix(p, "file:") && !strings.HasPrefix(p, "/") {
		return decodePath(p), true
	}
	u, err := url.Parse(p)
	if err != nil {
		return "", false
	}
	if u.Scheme == "" && root.Scheme == "file" {
		u.Scheme = "file"
	}
	if fsScheme(u.Scheme) != fsScheme(root.Scheme) || u.Host != root.Host {
		return "", false
	}
	dir := strings.TrimSuffix(root.Path, "/") + "/"
	key, ok := strings.CutPrefix(u.Path, dir)
	if !ok || key == "" {
		return "", false
	}
	return key, true
}

// fsScheme folds the URL schemes of one file system: s3a and s3n are s3.
func fsScheme(s string) string {
	s = strings.ToLower(s)
	if s == "s3a" || s == "s3n" {
		return "s3"
	}
	return s
}
