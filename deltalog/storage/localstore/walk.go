package localstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

var errStop = errors.New("stop")

// walker yields files in key order. Within a directory, entries are sorted by their name,
// with "/" appended for directories: every key below directory d starts with d+"/", so
// this order, applied recursively, is the byte order of the full keys.
type walker struct {
	ctx        context.Context
	root       string
	prefix     string
	startAfter string
	yield      func(storage.ObjectInfo, error) bool
}

type entry struct {
	name  string // key relative to the root; directories end in "/"
	isDir bool
}

// dir walks the directory whose key prefix is rel ("" for the root, else ending in "/").
func (w *walker) dir(rel string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(w.root, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	des, err := f.ReadDir(-1) // unsorted; only the survivors of the bounds below are sorted
	f.Close()
	if err != nil {
		return err
	}
	// Every key here starts with rel, so the bounds apply to the names: the part of the
	// prefix and of startAfter past rel (the walk only enters rel when they fit it).
	after, prefix := "", ""
	if strings.HasPrefix(w.startAfter, rel) {
		after = w.startAfter[len(rel):]
	}
	if strings.HasPrefix(w.prefix, rel) {
		prefix = w.prefix[len(rel):]
	}
	ents := make([]entry, 0, min(len(des), 64))
	for _, de := range des {
		name := de.Name()
		if de.IsDir() {
			name += "/"
		} else if strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix) || !de.Type().IsRegular() {
			continue
		}
		// Skip names wholly before startAfter or outside the prefix, before allocating.
		if name < after && !strings.HasPrefix(after, name) {
			continue
		}
		if !strings.HasPrefix(name, prefix) && !(de.IsDir() && strings.HasPrefix(prefix, name)) {
			continue
		}
		ents = append(ents, entry{rel + name, de.IsDir()})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	for _, e := range ents {
		if e.isDir {
			// Descend only where keys can match the prefix and sort after startAfter.
			if !strings.HasPrefix(e.name, w.prefix) && !strings.HasPrefix(w.prefix, e.name) {
				continue
			}
			if e.name < w.startAfter && !strings.HasPrefix(w.startAfter, e.name) {
				continue
			}
			if err := w.dir(e.name); err != nil {
				return err
			}
			continue
		}
		if !strings.HasPrefix(e.name, w.prefix) || e.name <= w.startAfter {
			continue
		}
		st, err := os.Stat(filepath.Join(w.root, filepath.FromSlash(e.name)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted while listing
		}
		if err != nil {
			return err
		}
		if !w.yield(info(e.name, st), nil) {
			return errStop
		}
	}
	return nil
}
