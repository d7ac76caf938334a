package deltalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// memStore is an in-memory storage.Store that honours the contract exactly: PutIfAbsent
// and CopyIfAbsent refuse existing keys atomically, List is in key order after startAfter,
// Delete of a missing key is not an error. Now sets ModTime (defaults to time.Now).
type memStore struct {
	mu   sync.Mutex
	objs map[string]memObj
	Now  func() time.Time
}

type memObj struct {
	data []byte
	mod  time.Time
}

func newMemStore() *memStore { return &memStore{objs: map[string]memObj{}} }

var _ storage.Store = (*memStore)(nil)

func (m *memStore) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *memStore) URL() string { return "mem://table" }

func (m *memStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, storage.ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(o.data)), nil
}

func (m *memStore) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, storage.ErrNotFound)
	}
	if offset > int64(len(o.data)) {
		offset = int64(len(o.data))
	}
	end := int64(len(o.data))
	if length >= 0 && offset+length < end {
		end = offset + length
	}
	return append([]byte(nil), o.data[offset:end]...), nil
}

func (m *memStore) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return storage.ObjectInfo{}, fmt.Errorf("head %s: %w", key, storage.ErrNotFound)
	}
	return storage.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.mod}, nil
}

func (m *memStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	// Sized up front when the size is known, so the store's own copy allocates what it
	// stores once (benchmarks count the allocation), not io.ReadAll's growing buffers.
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size) + bytes.MinRead) // ReadFrom wants room for one more read to see EOF
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	b := buf.Bytes()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[key] = memObj{data: b, mod: m.now()}
	return nil
}

func (m *memStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key]; ok {
		return fmt.Errorf("put %s: %w", key, storage.ErrExists)
	}
	m.objs[key] = memObj{data: append([]byte(nil), data...), mod: m.now()}
	return nil
}

func (m *memStore) Copy(ctx context.Context, src, dst string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[src]
	if !ok {
		return fmt.Errorf("copy %s: %w", src, storage.ErrNotFound)
	}
	m.objs[dst] = memObj{data: o.data, mod: m.now()}
	return nil
}

func (m *memStore) CopyIfAbsent(ctx context.Context, src, dst string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[src]
	if !ok {
		return fmt.Errorf("copy %s: %w", src, storage.ErrNotFound)
	}
	if _, ok := m.objs[dst]; ok {
		return fmt.Errorf("copy %s: %w", dst, storage.ErrExists)
	}
	m.objs[dst] = memObj{data: o.data, mod: m.now()}
	return nil
}

func (m *memStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		m.mu.Lock()
		var infos []storage.ObjectInfo
		for k, o := range m.objs {
			if strings.HasPrefix(k, prefix) && k > startAfter {
				infos = append(infos, storage.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.mod})
			}
		}
		m.mu.Unlock()
		sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
		for _, oi := range infos {
			if !yield(oi, nil) {
				return
			}
		}
	}
}

func (m *memStore) Delete(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, key)
	return nil
}

// memLogStore commits with the store's PutIfAbsent, as the S3 conditional-put log store does.
type memLogStore struct{ s storage.Store }

var _ logstore.LogStore = (*memLogStore)(nil)

func commitKey(v int64) string { return fmt.Sprintf("_delta_log/%020d.json", v) }

func (l *memLogStore) Write(ctx context.Context, v int64, data []byte) error {
	err := l.s.PutIfAbsent(ctx, commitKey(v), data)
	if errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("write version %d: %w", v, logstore.ErrVersionExists)
	}
	return err
}

func (l *memLogStore) Latest(ctx context.Context) (int64, error) {
	latest := int64(-1)
	for oi, err := range l.s.List(ctx, "_delta_log/", "") {
		if err != nil {
			return 0, err
		}
		var v int64
		name := strings.TrimPrefix(oi.Key, "_delta_log/")
		if len(name) == 25 && strings.HasSuffix(name, ".json") {
			if _, err := fmt.Sscanf(name[:20], "%d", &v); err == nil && v > latest {
				latest = v
			}
		}
	}
	return latest, nil
}

func (l *memLogStore) Read(ctx context.Context, v int64) ([]byte, error) {
	rc, err := l.s.Get(ctx, commitKey(v))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
