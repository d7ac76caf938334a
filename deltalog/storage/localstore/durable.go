package localstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Durability. A commit (a log file made by PutIfAbsent) names data files written earlier
// by Put, so everything a commit depends on is on disk before the call that made it
// returns: the file's bytes (synced before it gets its name), its name (the directory is
// synced after the rename or link), and every directory created on the way (each new
// directory's parent is synced after the mkdir). A power loss can then lose only writes
// whose calls had not returned, never a file a durable commit names.

// fsync syncs an open file or directory; tests replace it to watch the order of the
// syncs and to make one fail.
var fsync = func(f *os.File) error { return f.Sync() }

// syncDir syncs directory dir, so the names created in it are durable. Its errors are
// returned, save one: a file system that does not sync directories at all (EINVAL or
// ENOTSUP from fsync, as some network and FUSE file systems answer) gives no stronger
// guarantee to have.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = fsync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}

// mkdirAllDurable is os.MkdirAll(dir) that also syncs the parent of every directory it
// finds missing (after creating it, or seeing another writer create it), so the new
// directories survive a power loss with the files put in them.
func mkdirAllDurable(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return &fs.PathError{Op: "mkdir", Path: d, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := syncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}
