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
