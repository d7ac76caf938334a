package cdcsim

import (
	"errors"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// FaultKind is the failure an injected fault produces.
type FaultKind int

const (
	// FaultTransient fails the call with a *source.TransientError wrapping ErrInjected.
	FaultTransient FaultKind = iota
	// FaultLockTimeout fails the call with a *source.LockTimeoutError (error 1222).
	FaultLockTimeout
	// FaultLostConnection fails a ReadChanges or ReadTable stream from Rows.Next after
	// Fault.AfterBatches batches, with a *source.TransientError wrapping ErrConnectionLost.
	// On other methods it fails the call itself.
	FaultLostConnection
)

// Errors wrapped by injected transient faults.
var (
	ErrInjected       = errors.New("cdcsim: injected fault")
	ErrConnectionLost = errors.New("cdcsim: connection lost (injected)")
)

// Fault fails chosen calls of one Source method.
type Fault struct {
	// Method is the Source method name, e.g. "ReadChanges", "MaxLSN".
	Method string
	// Call is which call to fail, counted from the Inject: 1 (or 0) is the next call.
	Call int
	// Times is how many consecutive calls fail from there; 0 means 1.
	Times int
	Kind  FaultKind
	// Err, when set, is returned instead of Kind's error.
	Err error
	// AfterBatches is, for FaultLostConnection on a read, how many batches Rows.Next
	// returns before it fails.
	AfterBatches int
}

type armed struct {
	f        Fault
	from, to int // call numbers [from, to]
}

type faultState struct {
	calls map[string]int
	armed []armed
}

// Inject arms a fault.
func (db *DB) Inject(f Fault) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.faults.calls == nil {
		db.faults.calls = map[string]int{}
	}
	if f.Call < 1 {
		f.Call = 1
	}
	if f.Times < 1 {
		f.Times = 1
	}
	from := db.faults.calls[f.Method] + f.Call
	db.faults.armed = append(db.faults.armed, armed{f: f, from: from, to: from + f.Times - 1})
}

// Calls is how many times a Source method has been called.
func (db *DB) Calls(method string) int {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.faults.calls[method]
}

// enter counts a call of method and returns the fault armed for it, if any. It also
// refuses calls on a closed DB.
func (db *DB) enter(method string) (*Fault, error) {
	if db.closed {
		return nil, source.ErrClosed
	}
	if db.faults.calls == nil {
		db.faults.calls = map[string]int{}
	}
	db.faults.calls[method]++
	n := db.faults.calls[method]
	for _, a := range db.faults.armed {
		if a.f.Method == method && n >= a.from && n <= a.to {
			f := a.f
			return &f, nil
		}
	}
	return nil, nil
}

// callError is the error a fault makes a call return at once (nil for a lost connection
// on a streaming read, which fails later).
func (f *Fault) callError(method, tableName string, streaming bool) error {
	if f == nil {
		return nil
	}
	if f.Kind == FaultLostConnection && streaming {
		return nil
	}
	if f.Err != nil {
		return f.Err
	}
	switch f.Kind {
	case FaultLockTimeout:
		return &source.LockTimeoutError{Table: tableName}
	case FaultLostConnection:
		return &source.TransientError{Op: method, Err: ErrConnectionLost}
	}
	return &source.TransientError{Op: method, Err: ErrInjected}
}

func (f *Fault) streamError(method string) error {
	if f.Err != nil {
		return f.Err
	}
	return &source.TransientError{Op: method, Err: ErrConnectionLost}
}
