package deltalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/internal/logname"
)

// DefaultLogRetention is delta.logRetentionDuration's default, "interval 30 days"
// (docs/reference/delta-protocol.md §11.1, §11.2).
const DefaultLogRetention = 30 * 24 * time.Hour

// CleanupOptions tune CleanupLog.
type CleanupOptions struct {
	// Retention is how long log history is kept; 0 means the table's
	// delta.logRetentionDuration, else DefaultLogRetention.
	Retention time.Duration
	// DryRun lists what would be deleted without deleting it.
	DryRun bool
}

// CleanupResult is what CleanupLog did.
type CleanupResult struct {
	// Checkpoint is the version of the checkpoint that the kept log starts from, -1 when
	// no checkpoint is old enough and nothing was deleted.
	Checkpoint int64
	// Deleted are the keys deleted (or, with DryRun, that would be), oldest first.
	Deleted []string
	// DeletedBytes is the size of the Deleted files, as listed.
	DeletedBytes int64
	// Cutoff is midnight UTC of the day Retention ago (step 1 below): only commits at or
	// before it can expire. Zero when the table does not exist.
	Cutoff time.Time
}

// versionedLogStart is where the versioned files of _delta_log/ start in key order: every
// "<v:020>.…" name starts with a digit, and "/" sorts just below "0", so listing after
// this key skips the ".tmp/" files (and any other name below the digits) that sort first.
const versionedLogStart = LogDir + "/"

// CleanupLog deletes expired log files (docs/reference/delta-protocol.md §11.2), as Spark does
// after a checkpoint:
//
//  1. The cutoff is midnight UTC of the day Retention ago. Commit times are the commit
//     files' modification times, made increasing along versions (a commit is never older
//     than its predecessor plus 1 ms, as Spark's BufferingLogDeletionIterator does) so
//     clock skew never expires a newer commit before an older one.
//  2. The cutoff commit is the newest commit at or before the cutoff; the cutoff
//     checkpoint is the newest complete checkpoint at or below it. With none, nothing is
//     deleted. The cutoff checkpoint must read back as a snapshot (it becomes the oldest
//     state the table can rebuild), else nothing is deleted; it is read only when there
//     is something older to delete.
//  3. Commits, checkpoints, .crc files and compacted files whose (start) version is below
//     the cutoff checkpoint are deleted, oldest first, so an interrupted clean-up leaves
//     a log that still starts at a checkpoint. The cutoff checkpoint, its commit and all
//     later files are kept, as are _last_checkpoint and every other file.
//
// The log is listed once, from its oldest versioned file, and only as far as the first
// commit newer than the cutoff: keys list in version order (20-digit zero-padded
// versions), and every file of a version sorts before the next version's, so every file
// at or below the cutoff commit has been seen there, every checkpoint part included, and
// every later commit is newer still (step 1). A cleaned log is listed from the checkpoint
// the last clean-up kept to a day past it, whatever the table's age
// (docs/performance.md § Maintenance that does not grow with age).
//
// Versions older than the cutoff checkpoint can no longer be read by time travel.
func (t *Table) CleanupLog(ctx context.Context, opts CleanupOptions) (CleanupResult, error) {
	res := CleanupResult{Checkpoint: -1}
	snap, err := t.Snapshot(ctx)
	if err != nil {
		return res, err
	}
	if snap.Version() < 0 {
		return res, nil
	}
	retention := opts.Retention
	if retention == 0 {
		if retention, err = retentionProperty(snap.Metadata(), "delta.logRetentionDuration", DefaultLogRetention); err != nil {
			return res, err
		}
	}
	cutoff := t.opts.now().Add(-retention).UTC().Truncate(24 * time.Hour)
	res.Cutoff = cutoff

	type logEntry struct {
		key     string
		version int64
		size    int64
	}
	var entries []logEntry // every file of a version kind, in key (so version) order
	checkpoints := newLogGrouper()
	cutoffCommit := int64(-1)
	var prev time.Time // the last commit's time, made increasing
	commits := 0
	for oi, err := range t.store.List(ctx, LogDir, versionedLogStart) {
		if err != nil {
			return res, fmt.Errorf("list log: %w", err)
		}
		f := parseLogFile(oi.Key)
		v, ok := f.version, f.kind != kindOther
		if !ok {
			v, ok = otherLogFileVersion(oi.Key)
		}
		if !ok {
			continue
		}
		if f.kind == kindCommit {
			ts := oi.ModTime
			if commits > 0 && !ts.After(prev) {
				ts = prev.Add(time.Millisecond)
			}
			prev = ts
			commits++
			if ts.After(cutoff) {
				break // this commit and every later one are newer than the cutoff
			}
			cutoffCommit = v
		}
		checkpoints.add(oi)
		entries = append(entries, logEntry{key: oi.Key, version: v, size: oi.Size})
	}
	cp := checkpoints.listing().newestCheckpoint(cutoffCommit)
	if cutoffCommit < 0 || cp == nil || cp.version <= 0 {
		return res, nil
	}
	expired := 0
	for expired < len(entries) && entries[expired].version < cp.version {
		expired++
	}
	if expired > 0 {
		// The checkpoint that will be the oldest state must be readable: read that
		// checkpoint itself (SnapshotAt could start from an older _last_checkpoint hint).
		if _, err := t.build(ctx, cp, cp.version, snap.Version()); err != nil {
			return res, fmt.Errorf("clean up log: checkpoint %d is not readable: %w", cp.version, err)
		}
	}
	res.Checkpoint = cp.version
	for _, e := range entries[:expired] {
		if !opts.DryRun {
			if err := t.store.Delete(ctx, e.key); err != nil {
				return res, fmt.Errorf("clean up log: %w", err)
			}
		}
		res.Deleted = append(res.Deleted, e.key)
		res.DeletedBytes += e.size
	}
	return res, nil
}

// otherLogFileVersion is the version of a .crc file (<v:020>.crc) or the start version of a
// compacted file (<x:020>.<y:020>.compacted.json) (docs/reference/delta-protocol.md §12,
// §1.1).
func otherLogFileVersion(key string) (int64, bool) {
	name, ok := strings.CutPrefix(key, LogDir)
	if !ok || len(name) < 21 || name[20] != '.' || strings.Contains(name, "/") {
		return 0, false
	}
	v, ok := logname.ParseVersion(name[:20])
	if !ok {
		return 0, false
	}
	rest := name[21:]
	if rest == "crc" {
		return v, true
	}
	if len(rest) == 20+len(".compacted.json") && strings.HasSuffix(rest, ".compacted.json") {
		if _, ok := logname.ParseVersion(rest[:20]); ok {
			return v, true
		}
	}
	return 0, false
}

// retentionProperty parses an interval table property, or returns def when it is unset.
func retentionProperty(md Metadata, key string, def time.Duration) (time.Duration, error) {
	v, ok := md.Configuration[key]
	if !ok {
		return def, nil
	}
	d, err := ParseInterval(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return d, nil
}
