package stream

import (
	"context"
	"sync"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	corestream "github.com/mssqlcdc/mssqlcdc/core/stream"
)

// warm keeps the connections of a successful open for the next invocations of this
// execution environment (a warm Lambda): the SQL Server pool and its login, the secret and
// the AWS clients are reused. database/sql replaces broken connections by itself.
type warm struct {
	mu   sync.Mutex
	open Opener
	deps *corestream.Deps
}

// Open returns the kept connections, opening them on first use; its close is a no-op.
func (w *warm) Open(ctx context.Context, spec *config.Spec) (corestream.Deps, func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deps == nil {
		d, _, err := w.open(ctx, spec)
		if err != nil {
			return d, nil, err
		}
		w.deps = &d
	}
	return *w.deps, func() {}, nil
}
