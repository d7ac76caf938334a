package snapshot

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// runStaging is the staging store of one in-process Run: a staging file
// (snapshots/<L>/...json) the run wrote or read once is read back from memory by its later
// steps, which in one process see exactly what the run wrote. The steps run alone (the
// snapshot machine's Lambdas) read the store, as before. Everything else passes through.
type runStaging struct {
	storage.Store
	mu    sync.Mutex
	files map[string][]byte
}

func newRunStaging(s storage.Store) *runStaging {
	return &runStaging{Store: s, files: map[string][]byte{}}
}

func stagedJSON(key string) bool {
	return strings.HasPrefix(key, "snapshots/") && strings.HasSuffix(key, ".json")
}

func (s *runStaging) forget(key string) {
	s.mu.Lock()
	delete(s.files, key)
	s.mu.Unlock()
}

func (s *runStaging) keep(key string, b []byte) {
	s.mu.Lock()
	s.files[key] = b
	s.mu.Unlock()
}

func (s *runStaging) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if !stagedJSON(key) {
		return s.Store.Put(ctx, key, r, size)
	}
	s.forget(key)
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := s.Store.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return err
	}
	s.keep(key, b)
	return nil
}

func (s *runStaging) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if !stagedJSON(key) {
		return s.Store.Get(ctx, key)
	}
	s.mu.Lock()
	b, ok := s.files[key]
	s.mu.Unlock()
	if ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	rc, err := s.Store.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if b, err = io.ReadAll(rc); err != nil {
		return nil, err
	}
	s.keep(key, b)
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (s *runStaging) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	s.forget(key)
	return s.Store.PutIfAbsent(ctx, key, data)
}

func (s *runStaging) Copy(ctx context.Context, src, dst string) error {
	s.forget(dst)
	return s.Store.Copy(ctx, src, dst)
}

func (s *runStaging) CopyIfAbsent(ctx context.Context, src, dst string) error {
	s.forget(dst)
	return s.Store.CopyIfAbsent(ctx, src, dst)
}

func (s *runStaging) Delete(ctx context.Context, key string) error {
	s.forget(key)
	return s.Store.Delete(ctx, key)
}

// DeleteKeys keeps the store's batch delete (one request on S3).
func (s *runStaging) DeleteKeys(ctx context.Context, keys []string) error {
	for _, k := range keys {
		s.forget(k)
	}
	return storage.DeleteKeys(ctx, s.Store, keys)
}
