package localstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

var errStop = errors.New("stop")

// walker yields files in key order. Within a directory, entries are sorted by their name,
// with "/" appended for directories: every key below directory d starts with d+"/", so
// this order, applied recursively, is the byte order of the full keys.
type walker struct {
	ctx        context.Context
	store      *Store
	prefix     string
	startAfter string
	yield      func(storage.ObjectInfo, error) bool
}

type entry struct {
	name  string // key relative to the root; directories end in "/"
	isDir bool
}

// walk lists from the deepest directory the prefix names ("_delta_log/" for a log
// listing), so the table root, which holds the data files, is not read. Keys sorting
// after everything below that directory end the walk at once.
func (w *walker) walk() error {
	base := w.prefix[:strings.LastIndex(w.prefix, "/")+1]
	if !validDirKey(base) {
		base = "" // never leave the root: walk it from the top, as the names come
	}
	if !strings.HasPrefix(w.startAfter, base) && w.startAfter > base {
		return nil // every key below base sorts before startAfter
	}
	return w.dir(base)
}

// validDirKey reports whether base ("" or "a/b/") names a directory below the root.
func validDirKey(base string) bool {
	if base == "" {
		return true
	}
	for _, seg := range strings.Split(strings.TrimSuffix(base, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." || strings.Contains(seg, `\`) {
			return false
		}
	}
	return true
}

// dir walks the directory whose key prefix is rel ("" for the root, else ending in "/").
func (w *walker) dir(rel string) error {
	if err := w.ctx.Err(); err != nil {
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
	ents, err := w.store.entries(filepath.Join(w.store.root, filepath.FromSlash(rel)), after, prefix)
	if err != nil {
		return err
	}
	// ents are sorted: start at the first name that can sort after startAfter, which is
	// the directory on startAfter's path when there is one (it is a prefix of after).
	lo := after
	if i := strings.IndexByte(after, '/'); i >= 0 {
		lo = after[:i+1]
	}
	start := sort.Search(len(ents), func(i int) bool { return ents[i].name >= lo })
	for _, e := range ents[start:] {
		name := e.name
		if name > prefix && !strings.HasPrefix(name, prefix) && !strings.HasPrefix(prefix, name) {
			break // sorted: no later name can match the prefix
		}
		key := rel + name
		if e.isDir {
			// Descend only where keys can match the prefix and sort after startAfter.
			if !strings.HasPrefix(key, w.prefix) && !strings.HasPrefix(w.prefix, key) {
				continue
			}
			if key < w.startAfter && !strings.HasPrefix(w.startAfter, key) {
				continue
			}
			if err := w.dir(key); err != nil {
				return err
			}
			continue
		}
		if !strings.HasPrefix(key, w.prefix) || key <= w.startAfter {
			continue
		}
		st, err := os.Stat(filepath.Join(w.store.root, filepath.FromSlash(key)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted while listing
		}
		if err != nil {
			return err
		}
		if !w.yield(info(key, st), nil) {
			return errStop
		}
	}
	return nil
}

// readDir reads a directory's entries (names relative to it, directories ending in "/",
// temporary files and other non-regular files left out), keeping only those that keep
// filter true, unsorted. A missing directory has none.
func readDir(path string, keep func(name string, isDir bool) bool) ([]entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	des, err := f.ReadDir(-1)
	f.Close()
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents := make([]entry, 0, min(len(des), 64))
	for _, de := range des {
		name := de.Name()
		if de.IsDir() {
			name += "/"
		} else if strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix) || !de.Type().IsRegular() {
			continue
		}
		if keep(name, de.IsDir()) {
			ents = append(ents, entry{name, de.IsDir()})
		}
	}
	return ents, nil
}

func sortEntries(ents []entry) {
	sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
}
