package storagetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// ErrInjected is the error Faults returns when no other error was given.
var ErrInjected = errors.New("storagetest: injected fault")

// Faults decides which calls fail. One Faults can be shared by several wrappers (a Store and
// a DynamoDB client, say) so that "the k-th call" counts the calls to all of them, in the
// order they are made. It is safe for concurrent use.
type Faults struct {
	mu     sync.Mutex
	calls  int      // calls checked so far
	ops    []string // the op of each call, in order
	op     string   // "" for any op
	opSeen int      // calls of op (or of any op) since the rule was set
	at     int      // fail when opSeen reaches at; 0 disarms
	sticky bool     // keep failing every later call (the process died)
	after  bool     // the failing call reaches the backend; only its answer is lost
	err    error
}

// FailAt makes the k-th call (1-based) from now fail with err (ErrInjected when nil); the
// calls after it succeed.
func (f *Faults) FailAt(k int, err error) { f.set("", k, false, err) }

// FailFrom makes the k-th call from now and every later call fail, like a process that
// died at that call.
func (f *Faults) FailFrom(k int, err error) { f.set("", k, true, err) }

// KillAt makes the writer die at its k-th call from now: that call fails, and so does every
// later one. With after, the k-th call still reaches the backend and only its answer is
// lost (the request was served, the process died before reading the response).
func (f *Faults) KillAt(k int, after bool, err error) {
	f.set("", k, true, err)
	f.mu.Lock()
	f.after = after
	f.mu.Unlock()
}

// FailOp makes the k-th call of op (a method name such as "PutIfAbsent") from now fail.
func (f *Faults) FailOp(op string, k int, err error) { f.set(op, k, false, err) }

func (f *Faults) set(op string, k int, sticky bool, err error) {
	if err == nil {
		err = ErrInjected
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.op, f.at, f.sticky, f.err, f.opSeen, f.after = op, k, sticky, err, 0, false
}

// Disarm stops injecting faults.
func (f *Faults) Disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at, f.sticky, f.after = 0, false, false
}

// Calls is the number of calls checked so far.
func (f *Faults) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Ops lists the op of every call checked so far, in order.
func (f *Faults) Ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}

// Check records a call of op and returns the injected error when this call must fail.
// Wrappers that cannot run the call themselves call it before passing the call on; it
// treats a KillAt(…, after=true) call as failing before it is made.
func (f *Faults) Check(op string) error {
	err, _ := f.check(op)
	return err
}

// Do records a call of op and runs call unless the fault plan fails it first. Wrappers
// route each call through it.
func (f *Faults) Do(op string, call func() error) error {
	err, runAnyway := f.check(op)
	if err == nil {
		return call()
	}
	if runAnyway {
		_ = call()
	}
	return err
}

func (f *Faults) check(op string) (err error, runAnyway bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.ops = append(f.ops, op)
	if f.at == 0 {
		return nil, false
	}
	if f.op == "" || f.op == op {
		f.opSeen++
	}
	switch {
	case f.opSeen == f.at && (f.op == "" || f.op == op):
		if !f.sticky {
			f.at = 0
		}
		return fmt.Errorf("storagetest (call %d, %s): %w", f.calls, op, f.err), f.after
	case f.sticky && f.opSeen > f.at:
		return fmt.Errorf("storagetest (call %d, %s): %w", f.calls, op, f.err), false
	}
	return nil, false
}

// Faulty wraps a Store and fails the calls its Faults chooses, before they reach the store.
type Faulty struct {
	storage.Store
	Faults *Faults
}

var _ storage.Store = (*Faulty)(nil)

// NewFaulty wraps s; f may be shared with other wrappers, or nil for a new one.
func NewFaulty(s storage.Store, f *Faults) *Faulty {
	if f == nil {
		f = &Faults{}
	}
	return &Faulty{Store: s, Faults: f}
}

func (s *Faulty) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := s.Faults.Do("Get", func() (err error) { rc, err = s.Store.Get(ctx, key); return err })
	if err != nil {
		if rc != nil {
			rc.Close()
		}
		return nil, err
	}
	return rc, nil
}

var _ storage.TagGetter = (*Faulty)(nil)

// GetTag is one faultable call, counted as Get.
func (s *Faulty) GetTag(ctx context.Context, key string) (b []byte, tag string, err error) {
	err = s.Faults.Do("Get", func() (err error) { b, tag, err = storage.GetTag(ctx, s.Store, key); return err })
	if err != nil {
		return nil, "", err
	}
	return b, tag, nil
}

func (s *Faulty) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	var b []byte
	err := s.Faults.Do("GetRange", func() (err error) { b, err = s.Store.GetRange(ctx, key, offset, length); return err })
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (s *Faulty) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	var info storage.ObjectInfo
	err := s.Faults.Do("Head", func() (err error) { info, err = s.Store.Head(ctx, key); return err })
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	return info, nil
}

func (s *Faulty) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	return s.Faults.Do("Put", func() error { return s.Store.Put(ctx, key, r, size) })
}

func (s *Faulty) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.Faults.Do("PutIfAbsent", func() error { return s.Store.PutIfAbsent(ctx, key, data) })
}

var _ storage.TagPutter = (*Faulty)(nil)

// PutIfAbsentTag is one faultable call, counted as PutIfAbsent.
func (s *Faulty) PutIfAbsentTag(ctx context.Context, key string, data []byte) (tag string, err error) {
	err = s.Faults.Do("PutIfAbsent", func() (err error) { tag, err = storage.PutIfAbsentTag(ctx, s.Store, key, data); return err })
	if err != nil {
		return "", err
	}
	return tag, nil
}

func (s *Faulty) Copy(ctx context.Context, src, dst string) error {
	return s.Faults.Do("Copy", func() error { return s.Store.Copy(ctx, src, dst) })
}

func (s *Faulty) CopyIfAbsent(ctx context.Context, src, dst string) error {
	return s.Faults.Do("CopyIfAbsent", func() error { return s.Store.CopyIfAbsent(ctx, src, dst) })
}

var _ storage.TagCopier = (*Faulty)(nil)

// CopyIfAbsentTag is one faultable call, counted as CopyIfAbsent.
func (s *Faulty) CopyIfAbsentTag(ctx context.Context, src, dst string) (tag string, err error) {
	err = s.Faults.Do("CopyIfAbsent", func() (err error) { tag, err = storage.CopyIfAbsentTag(ctx, s.Store, src, dst); return err })
	if err != nil {
		return "", err
	}
	return tag, nil
}

func (s *Faulty) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		if err := s.Faults.Check("List"); err != nil {
			yield(storage.ObjectInfo{}, err)
			return
		}
		for info, err := range s.Store.List(ctx, prefix, startAfter) {
			if !yield(info, err) {
				return
			}
		}
	}
}

func (s *Faulty) Delete(ctx context.Context, key string) error {
	return s.Faults.Do("Delete", func() error { return s.Store.Delete(ctx, key) })
}

// DeleteKeys is one faultable call.
func (s *Faulty) DeleteKeys(ctx context.Context, keys []string) error {
	return s.Faults.Do("DeleteKeys", func() error { return storage.DeleteKeys(ctx, s.Store, keys) })
}
