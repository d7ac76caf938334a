package storagetest

import (
	"context"
	"io"
	"iter"
	"maps"
	"sync"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Counter counts calls per op. One Counter can be shared by several wrappers (a Store and
// a DynamoDB client) to count every request of an operation. Safe for concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
}

// Add counts one call of op.
func (c *Counter) Add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[op]++
}

// Count is the number of calls of op.
func (c *Counter) Count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[op]
}

// Total is the number of calls of every op.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Counts is a copy of the counts per op.
func (c *Counter) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Reset sets every count to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = nil
}

// Counting wraps a Store and counts its calls by method name ("Get", "PutIfAbsent", …).
// Each Store call is one request on S3 (List is one request per page of 1000 keys; it is
// counted once per call).
type Counting struct {
	storage.Store
	Counter *Counter
}

var _ storage.Store = (*Counting)(nil)

// NewCounting wraps s; c may be shared with other wrappers, or nil for a new one.
func NewCounting(s storage.Store, c *Counter) *Counting {
	if c == nil {
		c = &Counter{}
	}
	return &Counting{Store: s, Counter: c}
}

func (s *Counting) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	s.Counter.Add("Get")
	return s.Store.Get(ctx, key)
}

var _ storage.TagGetter = (*Counting)(nil)

// GetTag is one request, counted as Get.
func (s *Counting) GetTag(ctx context.Context, key string) ([]byte, string, error) {
	s.Counter.Add("Get")
	return storage.GetTag(ctx, s.Store, key)
}

func (s *Counting) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	s.Counter.Add("GetRange")
	return s.Store.GetRange(ctx, key, offset, length)
}

func (s *Counting) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	s.Counter.Add("Head")
	return s.Store.Head(ctx, key)
}

func (s *Counting) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	s.Counter.Add("Put")
	return s.Store.Put(ctx, key, r, size)
}

func (s *Counting) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	s.Counter.Add("PutIfAbsent")
	return s.Store.PutIfAbsent(ctx, key, data)
}

var _ storage.TagPutter = (*Counting)(nil)

// PutIfAbsentTag is one request, counted as PutIfAbsent.
func (s *Counting) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	s.Counter.Add("PutIfAbsent")
	return storage.PutIfAbsentTag(ctx, s.Store, key, data)
}

func (s *Counting) Copy(ctx context.Context, src, dst string) error {
	s.Counter.Add("Copy")
	return s.Store.Copy(ctx, src, dst)
}

func (s *Counting) CopyIfAbsent(ctx context.Context, src, dst string) error {
	s.Counter.Add("CopyIfAbsent")
	return s.Store.CopyIfAbsent(ctx, src, dst)
}

var _ storage.TagCopier = (*Counting)(nil)

// CopyIfAbsentTag is one request, counted as CopyIfAbsent.
func (s *Counting) CopyIfAbsentTag(ctx context.Context, src, dst string) (string, error) {
	s.Counter.Add("CopyIfAbsent")
	return storage.CopyIfAbsentTag(ctx, s.Store, src, dst)
}

func (s *Counting) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	s.Counter.Add("List")
	return s.Store.List(ctx, prefix, startAfter)
}

func (s *Counting) Delete(ctx context.Context, key string) error {
	s.Counter.Add("Delete")
	return s.Store.Delete(ctx, key)
}

// DeleteKeys counts one DeleteKeys call (one request when the store is a KeysDeleter).
func (s *Counting) DeleteKeys(ctx context.Context, keys []string) error {
	s.Counter.Add("DeleteKeys")
	return storage.DeleteKeys(ctx, s.Store, keys)
}
