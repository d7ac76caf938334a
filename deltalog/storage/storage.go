// Package storage is the object store under a Delta table: S3 (storage/s3store) or local
// disk (storage/localstore). A Store is rooted at one location (a bucket and prefix, or a
// directory); keys are relative to that root, use "/" as separator and never start with "/".
//
// Every call that does I/O takes ctx first. Errors callers branch on are ErrNotFound and
// ErrExists (match with errors.Is); other errors are wrapped with the operation and key.
package storage

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"
)

// ErrNotFound is returned (wrapped) by Get, GetRange, Head, Copy and Delete when the key does
// not exist. Delete of a missing key is not an error on S3; Store implementations return
// nil there too.
var ErrNotFound = errors.New("storage: not found")

// ErrExists is returned (wrapped) by PutIfAbsent and CopyIfAbsent when the key already
// exists (S3 answers 412 Precondition Failed to If-None-Match: *).
var ErrExists = errors.New("storage: already exists")

// ObjectInfo describes one object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
	ETag    string
}

// Store is an object store rooted at one location. Implementations are safe for
// concurrent use.
type Store interface {
	// URL is the root as a URL: "s3://bucket/prefix" or "file:///abs/dir", without a
	// trailing slash.
	URL() string

	// Get opens the object for reading. The caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)

	// GetRange reads length bytes from offset (length < 0 reads to the end).
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)

	// Head describes an object.
	Head(ctx context.Context, key string) (ObjectInfo, error)

	// Put writes the object, replacing any existing one. size is the length of r, or -1
	// when unknown (implementations may then buffer). The write is atomic: readers see the
	// old object or the whole new one.
	Put(ctx context.Context, key string, r io.Reader, size int64) error

	// PutIfAbsent writes the object only if the key does not exist (If-None-Match: *),
	// atomically; otherwise ErrExists and nothing is written.
	PutIfAbsent(ctx context.Context, key string, data []byte) error

	// Copy copies src to dst, replacing dst.
	Copy(ctx context.Context, src, dst string) error

	// CopyIfAbsent copies src to dst only if dst does not exist; otherwise ErrExists.
	CopyIfAbsent(ctx context.Context, src, dst string) error

	// List yields the objects whose keys start with prefix and sort strictly after
	// startAfter (lexicographic byte order; "" for all), in key order.
	List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error]

	// Delete removes the object. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// TagPutter is a Store whose conditional put reports the identity of the object it
// wrote: its ETag, as List and Head report it for as long as that object stands. A later
// object at the key has another ETag when its content differs (on S3 the ETag of an
// object put whole is a digest of its content, so an identical copy written again may
// have the same one; on local disk it also names the file's inode and modification
// time). A writer that must tell its own object from any other (core/checkpoint's warm
// resume) writes content no one else writes, such as a random writer id, and compares the
// ETag a listing shows with the one its put returned: no request more.
// docs/decisions/0016-own-write-identity.md.
type TagPutter interface {
	// PutIfAbsentTag is PutIfAbsent, also returning the ETag of the object written.
	PutIfAbsentTag(ctx context.Context, key string, data []byte) (etag string, err error)
}

// PutIfAbsentTag is s.PutIfAbsent that also returns the written object's ETag (see
// TagPutter); "" when s is no TagPutter (a wrapper that does not pass it on) or its
// answer did not say. Callers treat "" as unknown: no listing matches it.
func PutIfAbsentTag(ctx context.Context, s Store, key string, data []byte) (string, error) {
	if t, ok := s.(TagPutter); ok {
		return t.PutIfAbsentTag(ctx, key, data)
	}
	return "", s.PutIfAbsent(ctx, key, data)
}

// TagGetter is a Store whose read of a whole object also reports that object's ETag, as
// List and Head report it, from the same request (S3's GetObject answers it; local disk
// stats the file it opened). A writer that read back an object it may have written
// (condput's commit whose conditional-put answer was lost) learns its identity without a
// HEAD. docs/decisions/0016-own-write-identity.md.
type TagGetter interface {
	// GetTag reads the whole object and returns it with its ETag; ErrNotFound (wrapped)
	// when the key does not exist.
	GetTag(ctx context.Context, key string) (data []byte, etag string, err error)
}

// GetTag reads the whole object at key with its ETag (see TagGetter); the ETag is "" when
// s is no TagGetter (a wrapper that does not pass it on): callers treat "" as unknown.
func GetTag(ctx context.Context, s Store, key string) ([]byte, string, error) {
	if t, ok := s.(TagGetter); ok {
		return t.GetTag(ctx, key)
	}
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, "", err
	}
	return b, "", nil
}

// TagCopier is a Store whose conditional copy reports the identity of the object it
// wrote, as TagPutter's put does (S3's CopyObject answers its ETag; local disk stats the
// new file). The DynamoDB log store keeps the ETag of the commit file it copied.
type TagCopier interface {
	// CopyIfAbsentTag is CopyIfAbsent, also returning the ETag of the object written.
	CopyIfAbsentTag(ctx context.Context, src, dst string) (etag string, err error)
}

// CopyIfAbsentTag is s.CopyIfAbsent that also returns the written object's ETag (see
// TagCopier); "" when s is no TagCopier or its answer did not say.
func CopyIfAbsentTag(ctx context.Context, s Store, src, dst string) (string, error) {
	if t, ok := s.(TagCopier); ok {
		return t.CopyIfAbsentTag(ctx, src, dst)
	}
	return "", s.CopyIfAbsent(ctx, src, dst)
}

// KeysDeleter is a Store that deletes many objects in one request (S3's DeleteObjects).
type KeysDeleter interface {
	// DeleteKeys removes the objects; missing keys are not an error. A key the store could
	// not delete is an error (S3 answers DeleteObjects per key), also when others were
	// deleted.
	DeleteKeys(ctx context.Context, keys []string) error
}

// DeleteKeys removes keys from s: in as few requests as s allows when it is a
// KeysDeleter, else one Delete each, in the order given, stopping at the first that fails.
func DeleteKeys(ctx context.Context, s Store, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if d, ok := s.(KeysDeleter); ok {
		return d.DeleteKeys(ctx, keys)
	}
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}
