// Package localstore is a storage.Store on local disk, rooted at one directory. Keys map to
// files below the root ("a/b.json" is <root>/a/b.json); directories are created on demand
// and are not objects themselves.
//
// Writes never expose partial content: every write goes to a temporary file in the target's
// directory, is synced, and then becomes visible in one step, by rename (Put, Copy) or by
// hard link (PutIfAbsent, CopyIfAbsent: link(2) fails with EEXIST when the target exists,
// which makes the create exclusive). A write is durable when it returns: the directory
// holding the new name, and the parent of every directory created for it, are synced too
// (durable.go), so a commit never names a file a power loss can take back. Temporary files are named ".localstore-*.tmp"; List
// never yields them, so keys of that form are reserved.
package localstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

const (
	tempPrefix = ".localstore-"
	tempSuffix = ".tmp"
)

// Store is a storage.Store on local disk. It is safe for concurrent use, also by several
// processes sharing the directory.
type Store struct {
	root  string // absolute, cleaned
	cache dirCache
}

var _ storage.Store = (*Store)(nil)

// New returns a Store rooted at dir (made absolute). It does no I/O: the directory is created
// by the first write.
func New(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localstore: resolve %q: %w", dir, err)
	}
	return &Store{root: abs}, nil
}

// Root is the absolute directory the store is rooted at.
func (s *Store) Root() string { return s.root }

// URL is "file://" followed by the absolute root, with a path escaped as a URL path.
func (s *Store) URL() string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(s.root)}
	return strings.TrimSuffix(u.String(), "/")
}

// path maps a key to its file, refusing keys that would leave the root.
func (s *Store) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "\\") {
		return "", fmt.Errorf("localstore: invalid key %q", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("localstore: invalid key %q", key)
		}
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Get opens the file for reading.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, mapErr("get", key, err)
	}
	if st, err := f.Stat(); err != nil || st.IsDir() {
		f.Close()
		if err == nil {
			err = fs.ErrNotExist
		}
		return nil, mapErr("get", key, err)
	}
	return f, nil
}

var _ storage.TagGetter = (*Store)(nil)

// GetTag reads the whole file and returns it with its ETag (storage.TagGetter), from the
// file it opened, so a file put at the key since is not taken for it.
func (s *Store) GetTag(ctx context.Context, key string) ([]byte, string, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	f := rc.(*os.File)
	st, err := f.Stat()
	if err != nil {
		return nil, "", mapErr("get", key, err)
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, "", mapErr("get", key, err)
	}
	return b, etag(st), nil
}

// GetRange reads length bytes from offset; length < 0 reads to the end. A range past the
// end of the file is cut at the end, like S3.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 {
		return nil, fmt.Errorf("localstore: get range %s: negative offset %d", key, offset)
	}
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	f := rc.(*os.File)
	st, err := f.Stat()
	if err != nil {
		return nil, mapErr("get range", key, err)
	}
	end := st.Size()
	if length >= 0 && offset+length < end {
		end = offset + length
	}
	if offset > end {
		return nil, fmt.Errorf("localstore: get range %s: offset %d past size %d", key, offset, st.Size())
	}
	buf := make([]byte, end-offset)
	if _, err := f.ReadAt(buf, offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, mapErr("get range", key, err)
	}
	return buf, nil
}

// Head describes the file. The ETag is derived from the file's device and inode (where
// the platform gives them), modification time and size, not from its content: a file
// written again at the key, even with the same content, has another.
func (s *Store) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	p, err := s.path(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return storage.ObjectInfo{}, err
	}
	st, err := os.Stat(p)
	if err == nil && st.IsDir() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return storage.ObjectInfo{}, mapErr("head", key, err)
	}
	return info(key, st), nil
}

func info(key string, st fs.FileInfo) storage.ObjectInfo {
	return storage.ObjectInfo{
		Key:     key,
		Size:    st.Size(),
		ModTime: st.ModTime(),
		ETag:    etag(st),
	}
}

// etag is the file's identity: device, inode, modification time (ns) and size.
func etag(st fs.FileInfo) string {
	if s, ok := stampOf(st); ok {
		return fmt.Sprintf("%x-%x-%x-%x", s.dev, s.ino, st.ModTime().UnixNano(), st.Size())
	}
	return fmt.Sprintf("%x-%x", st.ModTime().UnixNano(), st.Size())
}

// Put writes the file atomically (temporary file, then rename over the target).
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	tmp, err := writeTemp(ctx, p, r)
	if err != nil {
		return writeErr("put", key, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return writeErr("put", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return writeErr("put", key, err)
	}
	return nil
}

// PutIfAbsent writes the file only if it does not exist: the content goes to a synced
// temporary file that is then hard-linked to the target (EEXIST → storage.ErrExists).
func (s *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	_, err := s.PutIfAbsentTag(ctx, key, data)
	return err
}

var _ storage.TagPutter = (*Store)(nil)

// PutIfAbsentTag is PutIfAbsent returning the new file's ETag (storage.TagPutter), read
// from the temporary file linked to the key, so a file put at the key since is not taken
// for it.
func (s *Store) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	p, err := s.path(key)
	if err != nil {
		return "", err
	}
	var tag string
	err = s.linkNew(ctx, "put if absent", key, p, bytes.NewReader(data), &tag)
	return tag, err
}

// Copy copies src to dst, replacing dst.
func (s *Store) Copy(ctx context.Context, src, dst string) error {
	rc, err := s.Get(ctx, src)
	if err != nil {
		return err
	}
	defer rc.Close()
	return s.Put(ctx, dst, rc, -1)
}

// CopyIfAbsent copies src to dst only if dst does not exist (storage.ErrExists otherwise).
func (s *Store) CopyIfAbsent(ctx context.Context, src, dst string) error {
	_, err := s.CopyIfAbsentTag(ctx, src, dst)
	return err
}

var _ storage.TagCopier = (*Store)(nil)

// CopyIfAbsentTag is CopyIfAbsent returning the new file's ETag (storage.TagCopier).
func (s *Store) CopyIfAbsentTag(ctx context.Context, src, dst string) (string, error) {
	p, err := s.path(dst)
	if err != nil {
		return "", err
	}
	rc, err := s.Get(ctx, src)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	var tag string
	err = s.linkNew(ctx, "copy if absent", dst, p, rc, &tag)
	return tag, err
}

// linkNew writes r to the new file p (storage.ErrExists when it exists); tag, when not
// nil, receives the file's ETag.
func (s *Store) linkNew(ctx context.Context, op, key, p string, r io.Reader, tag *string) error {
	if _, err := os.Lstat(p); err == nil {
		return fmt.Errorf("localstore: %s %s: %w", op, key, storage.ErrExists)
	}
	tmp, err := writeTemp(ctx, p, r)
	if err != nil {
		return writeErr(op, key, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		return writeErr(op, key, err)
	}
	if tag != nil {
		// The temporary name is the same file as p (a hard link): its inode, time and size.
		st, err := os.Stat(tmp)
		if err != nil {
			return writeErr(op, key, err)
		}
		*tag = etag(st)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return writeErr(op, key, err)
	}
	return nil
}

// writeTemp writes r to a synced temporary file in the directory of p and returns its path.
func writeTemp(ctx context.Context, p string, r io.Reader) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	dir := filepath.Dir(p)
	if err := mkdirAllDurable(dir); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, tempPrefix+"*"+tempSuffix)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, ctxReader{ctx, r})
	if err == nil {
		err = fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// ctxReader stops a long copy when ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Delete removes the file; a missing file is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return mapErr("delete", key, err)
	}
	return nil
}

// List yields the files whose keys start with prefix and sort after startAfter, in key
// (byte) order. It walks only the directories that can hold such keys, from the one the
// prefix names, and reuses the sorted entries of a large directory that has not changed
// since it was last read (see dircache.go), so listing the tail of a quiet 10,000-commit
// log costs a few stat calls.
func (s *Store) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		w := walker{ctx: ctx, store: s, prefix: prefix, startAfter: startAfter, yield: yield}
		if err := w.walk(); err != nil && !errors.Is(err, errStop) {
			yield(storage.ObjectInfo{}, fmt.Errorf("localstore: list %q: %w", prefix, err))
		}
	}
}

// writeErr is a write's error: a file that exists is storage.ErrExists; anything else
// keeps its reason. A directory that cannot be made is not a missing key, even when mkdir
// says ENOENT (under /proc, or a parent removed meanwhile): storage.ErrNotFound is for
// reads, and callers take it for "the object is not there" (a copy's source gone).
func writeErr(op, key string, err error) error {
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("localstore: %s %s: %w", op, key, storage.ErrExists)
	}
	return fmt.Errorf("localstore: %s %s: %w", op, key, err)
}

// mapErr is a read's error: a missing file is storage.ErrNotFound.
func mapErr(op, key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("localstore: %s %s: %w", op, key, storage.ErrNotFound)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("localstore: %s %s: %w", op, key, storage.ErrExists)
	}
	return fmt.Errorf("localstore: %s %s: %w", op, key, err)
}
