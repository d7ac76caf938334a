package deltalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
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

// TempFileResult is what CleanupTempFiles did.
type TempFileResult struct {
	// Deleted are the keys deleted (or, with DryRun, that would be), relative to the table
	// root: the listed temporary files in key order, then the store's own (TempFileCleaner).
	Deleted []string
	// DeletedBytes is the size of the listed files deleted; the store's own temporary
	// files, which List does not show, count 0.
	DeletedBytes int64
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
// The newest ".tmp/" file (of the highest version) is kept whatever its age: it marks the
// table as one whose writers coordinate through DynamoDB, which Table.CheckCoordination
// tells a writer through another log store by (docs/decisions/0029-mixed-log-stores.md).
//
// Only files older than MinAge are deleted. It lists the ".tmp/" and "_commit_" prefixes,
// and only when a ".tmp/" file is old enough, the commits of the versions those name (one
// listing from the lowest to the highest) and, for one with no commit file, the oldest
// commit (a listing that stops there): never the whole log (docs/performance.md
// § Maintenance that does not grow with age).
func (t *Table) CleanupTempFiles(ctx context.Context, opts TempFileOptions) (TempFileResult, error) {
	var res TempFileResult
	age := opts.MinAge
	if age <= 0 {
		age = DefaultTempFileAge
	}
	cutoff := t.opts.now().Add(-age)
	type tmp struct {
		key     string
		version int64 // -1: no version in the name
		size    int64
	}
	var cands []tmp
	lowest, highest := int64(-1), int64(-1) // the versions the candidates name
	// mark is the newest DynamoDB temporary commit file of any age, kept as the mark of a
	// table whose writers coordinate through DynamoDB.
	mark, markVersion := "", int64(-1)
	for _, prefix := range []string{logstore.DynamoTempDir, LogDir + "_commit_"} {
		for oi, err := range t.store.List(ctx, prefix, "") {
			if err != nil {
				return res, fmt.Errorf("temp files: list: %w", err)
			}
			v, isDynamo := logstore.DynamoTempFile(oi.Key)
			if isDynamo && (v > markVersion || (v == markVersion && oi.Key > mark)) {
				mark, markVersion = oi.Key, v
			}
			if !oi.ModTime.Before(cutoff) {
				continue
			}
			name := strings.TrimPrefix(oi.Key, LogDir)
			if isDynamo {
				cands = append(cands, tmp{oi.Key, v, oi.Size})
				lowest, highest = minVersion(lowest, v), max(highest, v)
				continue
			}
			if strings.HasPrefix(name, "_commit_") && strings.HasSuffix(name, ".json.tmp") && !strings.Contains(name, "/") {
				cands = append(cands, tmp{oi.Key, -1, oi.Size})
			}
		}
	}
	// The commit files of the candidates' versions: listed from the lowest version to past
	// the highest, in version order.
	commits := map[int64]bool{}
	if highest >= 0 {
		for oi, err := range t.store.List(ctx, LogDir, fmt.Sprintf("%s%020d", LogDir, lowest)) {
			if err != nil {
				return res, fmt.Errorf("temp files: list: %w", err)
			}
			name := strings.TrimPrefix(oi.Key, LogDir)
			if name == "" || name[0] < '0' || name[0] > '9' {
				break // past the versioned files
			}
			f := parseLogFile(oi.Key)
			if f.key != "" && f.version > highest {
				break
			}
			if f.kind == kindCommit {
				commits[f.version] = true
			}
		}
	}
	oldest := int64(-2) // not looked up yet
	for _, c := range cands {
		if c.key == mark {
			continue
		}
		if c.version >= 0 && !commits[c.version] {
			if oldest == -2 {
				var err error
				if oldest, err = t.oldestCommit(ctx); err != nil {
					return res, fmt.Errorf("temp files: %w", err)
				}
			}
			if oldest < 0 || c.version >= oldest {
				continue
			}
		}
		if !opts.DryRun {
			if err := t.store.Delete(ctx, c.key); err != nil {
				return res, fmt.Errorf("temp files: %w", err)
			}
		}
		res.Deleted = append(res.Deleted, c.key)
		res.DeletedBytes += c.size
	}
	if c, ok := t.store.(TempFileCleaner); ok {
		more, err := c.RemoveTempFiles(ctx, cutoff, opts.DryRun)
		res.Deleted = append(res.Deleted, more...)
		if err != nil {
			return res, fmt.Errorf("temp files: %w", err)
		}
	}
	return res, nil
}

// oldestCommit is the version of the oldest commit file in the log, -1 when there is none:
// the first commit of a listing of the versioned files, which stops there.
func (t *Table) oldestCommit(ctx context.Context) (int64, error) {
	for oi, err := range t.store.List(ctx, LogDir, versionedLogStart) {
		if err != nil {
			return -1, fmt.Errorf("list: %w", err)
		}
		if f := parseLogFile(oi.Key); f.kind == kindCommit {
			return f.version, nil
		}
	}
	return -1, nil
}

// minVersion is the lower of two versions, where -1 is none.
func minVersion(a, b int64) int64 {
	if a < 0 || b < a {
		return b
	}
	return a
}
