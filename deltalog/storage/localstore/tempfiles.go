package localstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RemoveTempFiles deletes the temporary files of writes that never finished (a process
// killed between creating ".localstore-*.tmp" and renaming or linking it into place; List
// never yields them) that were modified before olderThan, anywhere under the root, and
// returns their paths relative to the root, slash-separated, in walk order. With dryRun it
// only lists them. A write in progress is younger than any sensible olderThan (a day by
// default, deltalog.DefaultTempFileAge). A missing root has none.
func (s *Store) RemoveTempFiles(ctx context.Context, olderThan time.Time, dryRun bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(s.root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := de.Name()
		if de.IsDir() || !strings.HasPrefix(name, tempPrefix) || !strings.HasSuffix(name, tempSuffix) {
			return nil
		}
		info, err := de.Info()
		if err != nil || !info.ModTime().Before(olderThan) {
			return nil // gone meanwhile (renamed into place), or too young
		}
		if !dryRun {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	return out, err
}
