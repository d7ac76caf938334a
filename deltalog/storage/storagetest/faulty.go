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
	err    error
}

// FailAt makes the k-th call (1-based) from now fail with err (ErrInjected when nil); the
// calls after it succeed.
func (f *Faults) FailAt(k int, err error) { f.set("", k, false, err) }

// FailFrom makes the k-th call from now and every later call fail, like a process that
// died at that call.
func (f *Faults) FailFrom(k int, err error) { f.set("", k, true, err) }

// FailOp makes the k-th call of op (a method name such as "PutIfAbsent") from now fail.
func (f *Faults) FailOp(op string, k int, err error) { f.set(op, k, false, err) }

func (f *Faults) set(op string, k int, sticky bool, err error) {
	if err == nil {
		err = ErrInjected
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.op, f.at, f.sticky, f.err, f.opSeen = op, k, sticky, err, 0
}

// Disarm stops injecting faults.
func (f *Faults) Disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at, f.sticky = 0, false
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
// Wrappers call it before passing the call on.
func (f *Faults) Check(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.ops = append(f.ops, op)
	if f.at == 0 {
		return nil
	}
	if f.op == "" || f.op == op {
		f.opSeen++
	}
	switch {
	case f.opSeen == f.at && (f.op == "" || f.op == op):
		if !f.sticky {
			defer func() { f.at = 0 }()
		}
		return fmt.Errorf("%s (call %d, %s): %w", "storagetest", f.calls, op, f.err)
	case f.sticky && f.opSeen > f.at:
		return fmt.Errorf("%s (call %d, %s): %w", "storagetest", f.calls, op, f.err)
	}
	return nil
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
	if err := s.Faults.Check("Get"); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, key)
}

func (s *Faulty) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := s.Faults.Check("GetRange"); err != nil {
		return nil, err
	}
	return s.Store.GetRange(ctx, key, offset, length)
}

func (s *Faulty) Head(ctx context.Context, key string) (storage.ObjectInfo, error) {
	if err := s.Faults.Check("Head"); err != nil {
		return storage.ObjectInfo{}, err
	}
	return s.Store.Head(ctx, key)
}

func (s *Faulty) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := s.Faults.Check("Put"); err != nil {
		return err
	}
	return s.Store.Put(ctx, key, r, size)
}

func (s *Faulty) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.Faults.Check("PutIfAbsent"); err != nil {
		return err
	}
	return s.Store.PutIfAbsent(ctx, key, data)
}

func (s *Faulty) Copy(ctx context.Context, src, dst string) error {
	if err := s.Faults.Check("Copy"); err != nil {
		return err
	}
	return s.Store.Copy(ctx, src, dst)
}

func (s *Faulty) CopyIfAbsent(ctx context.Context, src, dst string) error {
	if err := s.Faults.Check("CopyIfAbsent"); err != nil {
		return err
	}
	return s.Store.CopyIfAbsent(ctx, src, dst)
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
	if err := s.Faults.Check("Delete"); err != nil {
		return err
	}
	return s.Store.Delete(ctx, key)
}
