package deltalog

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// listLogUpTo lists the whole log when it has fewer keys than the bound, and reports a
// log of the bound's size or more as not listed (complete false), having asked for no key
// past the bound: a log of exactly one page is taken as longer, since its next key would
// cost a second listing request.
func TestListLogUpToStopsAtTheBound(t *testing.T) {
	ctx := context.Background()
	st := newMemStore()
	for v := range 3 {
		key := fmt.Sprintf("%s%020d.json", LogDir, v)
		if err := st.Put(ctx, key, bytes.NewReader([]byte("{}\n")), 3); err != nil {
			t.Fatal(err)
		}
	}
	l, complete, err := listLogUpTo(ctx, st, 0, 4)
	if err != nil || !complete || l.maxCommit != 2 || len(l.commits) != 3 {
		t.Fatalf("3 keys, bound 4: complete %t, newest %d, %d commits, %v; want whole, 2, 3", complete, l.maxCommit, len(l.commits), err)
	}
	if _, complete, err := listLogUpTo(ctx, st, 0, 3); err != nil || complete {
		t.Fatalf("3 keys, bound 3: complete %t, %v; want not listed", complete, err)
	}
	empty, complete, err := listLogUpTo(ctx, newMemStore(), 0, listPage)
	if err != nil || !complete || empty.maxCommit != -1 {
		t.Fatalf("empty log: complete %t, newest %d, %v; want whole, -1", complete, empty.maxCommit, err)
	}
}
