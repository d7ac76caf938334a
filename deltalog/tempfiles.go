package deltalog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultTempFileAge is how old an orphaned temporary file must be before
// CleanupTempFiles deletes it: a day, far beyond any commit in progress.
const DefaultTempFileAge = 24 * time.Hour

// TempFileOptions tune CleanupTempFiles.
type TempFileOptions struct {
	// MinAge is the age (by the object's modification time) below which no temporary file
	// is touched; 0 is DefaultTempFileAge.
	MinAge time.Duration
	// DryRun lists what would be deleted without deleting it.
	DryRun bool
}

// TempFileCleaner is implemented by stores that keep temporary files of their own outside
// what List shows (localstore's ".localstore-*.tmp" files of writes that never finished):
// RemoveTempFiles deletes (or with dryRun only lists) those modified before olderThan and
// returns their keys.
type TempFileCleaner interface {
	RemoveTempFiles(ctx context.Context, olderThan time.Time, dryRun bool) ([]string, error)
}

// CleanupTempFiles deletes the temporary commit files writers leave in _delta_log when
// they die between writing a commit's temporary copy and finishing the commit, and are
// never needed again (docs/reference/delta-protocol.md §13.5, §13.8):
//   - "_delta_log/.tmp/<v:020>.json.<id>" (the DynamoDB log store's, Spark's and ours):
//     deleted when version v's commit file exists, or v is below the oldest commit left
//     (log clean-up removed it): the commit is decided, so recovery never copies the
//     temporary file again. A temporary file of a version with no commit file yet may be
//     what recovery completes, and is kept whatever its age;
//   - "_delta_log/_commit_<id>.json.tmp" (delta-rs's), which holds no version: deleted by
//     age alone;
//   - the store's own temporary files (TempFileCleaner), by age alone.
//
// Only files older than MinAge are deleted. Keys are returned relative to the table root,
// sorted as listed.
func (t *Table) CleanupTempFiles(ctx context.Context, opts TempFileOptions) ([]string, error) {
	age := opts.MinAge
	if age <= 0 {
		age = DefaultTempFileAge
	}
	cutoff := t.opts.now().Add(-age)
	commits := map[int64]bool{}
	oldest := int64(-1)
	type tmp struct {
		key     string
		version int64 // -1: no version in the name
	}
	var cands []tmp
	for oi, err := range t.store.List(ctx, LogDir, "") {
		if err != nil {
			return nil, fmt.Errorf("temp files: list: %w", err)
		}
		name := strings.TrimPrefix(oi.Key, LogDir)
		if v, ok := commitVersion(name); ok {
			commits[v] = true
			if oldest < 0 || v < oldest {
				oldest = v
			}
			continue
		}
		if !oi.ModTime.Before(cutoff) {
			continue
		}
		if rest, ok := strings.CutPrefix(name, ".tmp/"); ok && len(rest) > 26 && rest[20:26] == ".json." {
			if v, err := strconv.ParseInt(rest[:20], 10, 64); err == nil {
				cands = append(cands, tmp{oi.Key, v})
			}
			continue
		}
		if strings.HasPrefix(name, "_commit_") && strings.HasSuffix(name, ".json.tmp") && !strings.Contains(name, "/") {
			cands = append(cands, tmp{oi.Key, -1})
		}
	}
	var deleted []string
	for _, c := range cands {
		if c.version >= 0 && !commits[c.version] && (oldest < 0 || c.version >= oldest) {
			continue
		}
		if !opts.DryRun {
			if err := t.store.Delete(ctx, c.key); err != nil {
				return deleted, fmt.Errorf("temp files: %w", err)
			}
		}
		deleted = append(deleted, c.key)
	}
	if c, ok := t.store.(TempFileCleaner); ok {
		more, err := c.RemoveTempFiles(ctx, cutoff, opts.DryRun)
		deleted = append(deleted, more...)
		if err != nil {
			return deleted, fmt.Errorf("temp files: %w", err)
		}
	}
	return deleted, nil
}

// commitVersion parses a commit file name "<v:020>.json".
func commitVersion(name string) (int64, bool) {
	if len(name) != 25 || !strings.HasSuffix(name, ".json") {
		return 0, false
	}
	v, err := strconv.ParseInt(name[:20], 10, 64)
	return v, err == nil
}
