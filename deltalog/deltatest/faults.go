package deltatest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// ErrKilled is returned by every call a Faults-wrapped writer makes from the moment it is
// "killed": the process is gone, so nothing it does afterwards reaches storage.
var ErrKilled = errors.New("deltatest: writer killed")

// Faults kills a writer at its k-th external call (storage, log store, or any call a backend
// routes through Hit, e.g. a DynamoDB client wrapper). Before the k-th call the writer runs
// normally; at it, the call either does not happen (Mode Before) or happens and its answer is
// lost (Mode After); every later call returns ErrKilled without reaching the backend.
//
// A zero Faults with KillAt 0 never kills and only counts calls. Safe for concurrent use.
type Faults struct {
	// KillAt is the 1-based index of the call at which the writer dies; 0 never.
	KillAt int
	// After makes the killing call take effect before the writer dies (the request reached
	// the service, the response was lost).
	After bool

	mu    sync.Mutex
	calls int
	dead  bool
	ops   []string
}

// Calls is the number of calls made so far, including the killing one.
func (f *Faults) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Ops names the calls made so far in order ("store.PutIfAbsent _delta_log/…", …).
func (f *Faults) Ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}

// Killed reports whether the writer has been killed.
func (f *Faults) Killed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dead
}

// Hit runs call as the next external call named op, applying the fault plan. Backends
// route their own client calls through it (e.g. every DynamoDB request) so a kill can land
// between any two requests of a commit.
func (f *Faults) Hit(op string, call func() error) error {
	f.mu.Lock()
	if f.dead {
		f.mu.Unlock()
		return fmt.Errorf("%s: %w", op, ErrKilled)
	}
	f.calls++
	f.ops = append(f.ops, op)
	kill := f.KillAt > 0 && f.calls == f.KillAt
	if kill {
		f.dead = true
	}
	after := f.After
	f.mu.Unlock()
	if !kill {
		return call()
	}
	if after {
		_ = call()
	}
	return fmt.Errorf("%s: %w", op, ErrKilled)
}

// Store wraps s so every call except URL goes through Hit.
func (f *Faults) Store(s storage.Store) storage.Store { return &faultStore{s: s, f: f} }

// LogStore wraps l so every call goes through Hit. The wrapper is a logstore.Lister when
// l is: OpenLatest is passed on without a Hit of its own (its listing goes through the
// caller's store, DynamoDB's requests through the Faults' DynamoDB client).
//
// It is a logstore.Joint when l is both a Lister and a Joint (the DynamoDB log store):
// LatestWith goes through Hit as "log.LatestWith" (the other log store's DynamoDB
// requests go through the Faults' DynamoDB client), and Unwrap returns l
// (logstore.Wrapper), so a Joint log store finds its own kind under the wrapper.
func (f *Faults) LogStore(l logstore.LogStore) logstore.LogStore {
	w := &faultLogStore{l: l, f: f}
	if ll, ok := l.(logstore.Lister); ok {
		if j, ok := l.(logstore.Joint); ok {
			return &faultJoint{faultLister: &faultLister{faultLogStore: w, ll: ll}, j: j}
		}
		return &faultLister{faultLogStore: w, ll: ll}
	}
	return w
}

type faultJoint struct {
	*faultLister
	j logstore.Joint
}

func (w *faultJoint) JointWith(other logstore.LogStore) bool { return w.j.JointWith(other) }

func (w *faultJoint) LatestWith(ctx context.Context, other logstore.LogStore) (v, ov int64, ok bool, err error) {
	err = w.f.Hit("log.LatestWith", func() error {
		var err error
		v, ov, ok, err = w.j.LatestWith(ctx, other)
		return err
	})
	return v, ov, ok, err
}

type faultLister struct {
	*faultLogStore
	ll logstore.Lister
}

func (w *faultLister) OpenLatest(ctx context.Context, list func(ctx context.Context, from int64) (int64, string, error)) (int64, error) {
	if w.f.Killed() {
		return 0, fmt.Errorf("log.OpenLatest: %w", ErrKilled)
	}
	return w.ll.OpenLatest(ctx, list)
}

type faultStore struct {
	s storage.Store
	f *Faults
}

var _ storage.Store = (*faultStore)(nil)

func (w *faultStore) URL() string { return w.s.URL() }

func (w *faultStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := w.f.Hit("store.Get "+key, func() error {
		var err error
		rc, err = w.s.Get(ctx, key)
		return err
	})
	if err != nil {
		if rc != nil {
			rc.Close()
		}
		return nil, err
	}
	return rc, nil
}

var _ storage.TagGetter = (*faultStore)(nil)

// GetTag is one call, named as Get's.
func (w *faultStore) GetTag(ctx context.Context, key string) (b []byte, tag string, err error) {
	err = w.f.Hit("store.Get "+key, func() (err error) { b, tag, err = storage.GetTag(ctx, w.s, key); return err })
	if err != nil {
		return nil, "", err
	}
	return b, tag, nil
}

func (w *faultStore) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	var b []byte
	err := w.f.Hit("store.GetRange "+key, func() error {
		var err error
		b, err = w.s.GetRange(ctx, key, offset, length)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (w *faultStore) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	var oi storage.ObjectInfo
	err := w.f.Hit("store.Head "+key, func() error {
		var err error
		oi, err = w.s.Head(ctx, key)
		return err
	})
	return oi, err
}

func (w *faultStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return w.f.Hit("store.Put "+key, func() error { return w.s.Put(ctx, key, r, size) })
}

func (w *faultStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return w.f.Hit("store.PutIfAbsent "+key, func() error { return w.s.PutIfAbsent(ctx, key, data) })
}

var _ storage.TagPutter = (*faultStore)(nil)

// PutIfAbsentTag is one call, named as PutIfAbsent's.
func (w *faultStore) PutIfAbsentTag(ctx context.Context, key string, data []byte) (tag string, err error) {
	err = w.f.Hit("store.PutIfAbsent "+key, func() (err error) { tag, err = storage.PutIfAbsentTag(ctx, w.s, key, data); return err })
	if err != nil {
		return "", err
	}
	return tag, nil
}

func (w *faultStore) Copy(ctx context.Context, src, dst string) error {
	return w.f.Hit("store.Copy "+dst, func() error { return w.s.Copy(ctx, src, dst) })
}

func (w *faultStore) CopyIfAbsent(ctx context.Context, src, dst string) error {
	return w.f.Hit("store.CopyIfAbsent "+dst, func() error { return w.s.CopyIfAbsent(ctx, src, dst) })
}

var _ storage.TagCopier = (*faultStore)(nil)

// CopyIfAbsentTag is one call, named as CopyIfAbsent's.
func (w *faultStore) CopyIfAbsentTag(ctx context.Context, src, dst string) (tag string, err error) {
	err = w.f.Hit("store.CopyIfAbsent "+dst, func() (err error) { tag, err = storage.CopyIfAbsentTag(ctx, w.s, src, dst); return err })
	if err != nil {
		return "", err
	}
	return tag, nil
}

func (w *faultStore) Delete(ctx context.Context, key string) error {
	return w.f.Hit("store.Delete "+key, func() error { return w.s.Delete(ctx, key) })
}

// DeleteKeys is one call, as the store's KeysDeleter makes it one request.
func (w *faultStore) DeleteKeys(ctx context.Context, keys []string) error {
	return w.f.Hit(fmt.Sprintf("store.DeleteKeys %s (%d keys)", keys[0], len(keys)), func() error { return storage.DeleteKeys(ctx, w.s, keys) })
}

// List counts as one call when iteration starts (one LIST request per page is the real
// cost; pages are not visible through the interface).
func (w *faultStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		var seq iter.Seq2[storage.ObjectInfo, error]
		err := w.f.Hit("store.List "+prefix, func() error {
			seq = w.s.List(ctx, prefix, startAfter)
			return nil
		})
		if err != nil {
			yield(storage.ObjectInfo{}, err)
			return
		}
		for oi, err := range seq {
			if !yield(oi, err) {
				return
			}
		}
	}
}

type faultLogStore struct {
	l logstore.LogStore
	f *Faults
}

var (
	_ logstore.LogStore = (*faultLogStore)(nil)
	_ logstore.Wrapper  = (*faultLogStore)(nil)
	_ logstore.Joint    = (*faultJoint)(nil)
)

// Unwrap is the wrapped log store (logstore.Wrapper).
func (w *faultLogStore) Unwrap() logstore.LogStore { return w.l }

func (w *faultLogStore) Write(ctx context.Context, version int64, data []byte) error {
	return w.f.Hit(fmt.Sprintf("log.Write %d", version), func() error { return w.l.Write(ctx, version, data) })
}

func (w *faultLogStore) Latest(ctx context.Context) (int64, error) {
	var v int64
	err := w.f.Hit("log.Latest", func() error {
		var err error
		v, err = w.l.Latest(ctx)
		return err
	})
	return v, err
}

// Replaced passes on the wrapped log store's count of replaced logs
// (logstore.Replacements; 0 when it tells none): no call of its own.
func (w *faultLogStore) Replaced() uint64 {
	if r, ok := w.l.(logstore.Replacements); ok {
		return r.Replaced()
	}
	return 0
}

func (w *faultLogStore) Read(ctx context.Context, version int64) ([]byte, error) {
	var b []byte
	err := w.f.Hit(fmt.Sprintf("log.Read %d", version), func() error {
		var err error
		b, err = w.l.Read(ctx, version)
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}
