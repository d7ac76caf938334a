package checkpoint

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// prefixStore is a Store under a key prefix of another (a generation's checkpoint under
// the root): keys are given and returned relative to the prefix.
type prefixStore struct {
	storage.Store
	prefix string // ends with "/"
}

func (p *prefixStore) URL() string {
	return p.Store.URL() + "/" + strings.TrimSuffix(p.prefix, "/")
}

func (p *prefixStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	return p.Store.Get(ctx, p.prefix+key)
}

var _ storage.TagGetter = (*prefixStore)(nil)

func (p *prefixStore) GetTag(ctx context.Context, key string) ([]byte, string, error) {
	return storage.GetTag(ctx, p.Store, p.prefix+key)
}

func (p *prefixStore) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	return p.Store.GetRange(ctx, p.prefix+key, offset, length)
}

func (p *prefixStore) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	oi, err := p.Store.Head(ctx, p.prefix+key)
	oi.Key = strings.TrimPrefix(oi.Key, p.prefix)
	return oi, err
}

func (p *prefixStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return p.Store.Put(ctx, p.prefix+key, r, size)
}

func (p *prefixStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return p.Store.PutIfAbsent(ctx, p.prefix+key, data)
}

var _ storage.TagPutter = (*prefixStore)(nil)

func (p *prefixStore) PutIfAbsentTag(ctx context.Context, key string, data []byte) (string, error) {
	return storage.PutIfAbsentTag(ctx, p.Store, p.prefix+key, data)
}

func (p *prefixStore) Copy(ctx context.Context, src, dst string) error {
	return p.Store.Copy(ctx, p.prefix+src, p.prefix+dst)
}

func (p *prefixStore) CopyIfAbsent(ctx context.Context, src, dst string) error {
	return p.Store.CopyIfAbsent(ctx, p.prefix+src, p.prefix+dst)
}

var _ storage.TagCopier = (*prefixStore)(nil)

func (p *prefixStore) CopyIfAbsentTag(ctx context.Context, src, dst string) (string, error) {
	return storage.CopyIfAbsentTag(ctx, p.Store, p.prefix+src, p.prefix+dst)
}

func (p *prefixStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	after := ""
	if startAfter != "" {
		after = p.prefix + startAfter
	}
	return func(yield func(storage.ObjectInfo, error) bool) {
		for oi, err := range p.Store.List(ctx, p.prefix+prefix, after) {
			oi.Key = strings.TrimPrefix(oi.Key, p.prefix)
			if !yield(oi, err) {
				return
			}
		}
	}
}

func (p *prefixStore) Delete(ctx context.Context, key string) error {
	return p.Store.Delete(ctx, p.prefix+key)
}

func unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
