package localstore

import (
	"os"
	"strings"
	"sync"
	"time"
)

// Listing cache. Reading a directory costs time in proportion to all its entries, even
// when a listing wants only the names after startAfter (the tail of a 10,000-commit
// _delta_log: milliseconds of getdents for ten names). A directory's sorted entries are
// therefore kept and reused while the directory is provably unchanged:
//
//   - POSIX updates a directory's mtime and ctime on every entry created, removed or
//     renamed; the stamp (device, inode, mtime, ctime, size) is compared with one stat;
//   - the kernel stamps with a coarse clock (one tick, a few milliseconds), so a change
//     made just after a read could keep the stamp the read saw. A listing is only kept
//     when the directory's last change was over quietFor before the stat that preceded
//     the read: any later change then carries a later stamp. This holds on file systems
//     whose timestamps are at most 1 s coarse (ext4, xfs, btrfs, tmpfs, overlayfs);
//     network file systems that cache attributes (NFS) are not supported by localstore
//     anyway (its exclusive create is only exclusive on one machine).
//
// A directory that changes all the time (a log being committed to) is read afresh each
// time, as before; a quiet one (a reader opening a table) costs a stat. Small directories
// are not kept.
const (
	quietFor      = 2 * time.Second
	cacheMinNames = 256
	cacheMaxDirs  = 16
)

// dirStamp identifies a directory's state; ok is false on systems without ctime.
type dirStamp struct {
	dev, ino     uint64
	mtime, ctime int64 // nanoseconds since the epoch
	size         int64
}

type cachedDir struct {
	stamp dirStamp
	ents  []entry // sorted by name
}

type dirCache struct {
	mu   sync.Mutex
	dirs map[string]*cachedDir
	now  func() time.Time // time.Now; tests move it
}

func (c *dirCache) get(path string, st dirStamp) []entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.dirs[path]; d != nil && d.stamp == st {
		return d.ents
	}
	return nil
}

func (c *dirCache) put(path string, st dirStamp, ents []entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirs == nil {
		c.dirs = map[string]*cachedDir{}
	}
	if _, ok := c.dirs[path]; !ok && len(c.dirs) >= cacheMaxDirs {
		for k := range c.dirs { // evict any one
			delete(c.dirs, k)
			break
		}
	}
	c.dirs[path] = &cachedDir{stamp: st, ents: ents}
}

// entries returns the entries of the directory at path that can hold keys after after
// (relative to the directory) with prefix prefix, sorted by name. They may include more
// (the whole directory, from the cache): callers apply the bounds.
func (s *Store) entries(path, after, prefix string) ([]entry, error) {
	now := s.cache.now
	if now == nil {
		now = time.Now
	}
	t0 := now()
	var st dirStamp
	stamped := false
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		st, stamped = stampOf(fi)
	}
	if stamped {
		if ents := s.cache.get(path, st); ents != nil {
			return ents, nil
		}
	}
	quiet := stamped && t0.UnixNano()-max(st.mtime, st.ctime) > int64(quietFor)
	if quiet {
		ents, err := readDir(path, func(string, bool) bool { return true })
		if err != nil {
			return nil, err
		}
		sortEntries(ents)
		if len(ents) >= cacheMinNames {
			s.cache.put(path, st, ents)
		}
		return ents, nil
	}
	ents, err := readDir(path, func(name string, isDir bool) bool {
		// Skip names wholly before after or outside the prefix, before sorting.
		if name < after && !strings.HasPrefix(after, name) {
			return false
		}
		return strings.HasPrefix(name, prefix) || (isDir && strings.HasPrefix(prefix, name))
	})
	if err != nil {
		return nil, err
	}
	sortEntries(ents)
	return ents, nil
}
