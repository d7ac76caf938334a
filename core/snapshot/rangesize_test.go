package snapshot_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// tableSize is the source's size estimate of the env's table.
func tableSize(t *testing.T, e *env) source.TableSize {
	t.Helper()
	size, err := e.db.SizeEstimate(context.Background(), source.Table{Schema: "dbo", Name: "t"})
	if err != nil || size.Bytes <= 0 {
		t.Fatalf("size estimate %+v, %v", size, err)
	}
	return size
}

// Ranges are sized by the table's estimated bytes as well as its rows (decision 0008): a
// table whose rows are few but whose data is large is cut into as many ranges as its bytes
// need, and every row is still read once, into one commit.
func TestPlanSizesRangesByBytes(t *testing.T) {
	e := newEnv(t, keyCases[0], 100)
	ctx := context.Background()
	e.spec.Options.NumPartitions = 2
	size := tableSize(t, e)
	e.opts.MaxRangeRows = -1
	e.opts.TargetRangeBytes = (size.Bytes + 4) / 5 // five ranges' worth
	open, err := snapshot.Open(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := snapshot.Plan(ctx, e.deps(), open.Snapshot)
	if err != nil || plan.NumPartitions != 2 || len(plan.Ranges) != 5 {
		t.Fatalf("plan: %d ranges, %v; want 5 for %d bytes at %d a range", len(plan.Ranges), err, size.Bytes, e.opts.TargetRangeBytes)
	}
	if err := snapshot.ReadAll(ctx, e.deps(), open.Snapshot, plan); err != nil {
		t.Fatal(err)
	}
	if res, err := snapshot.Commit(ctx, e.deps(), open.Snapshot); err != nil || res.Rows == nil || *res.Rows != 100 {
		t.Fatalf("commit %+v %v", res, err)
	}
}

// When the range cap binds and each range would still hold more than MaxRangeBytes, the
// plan is refused with PlanTooLargeError before anything is read, naming the way out; with
// no bound (the CLI's -1) the same table plans at the cap.
func TestPlanRefusesATableTooLargeForTheMachine(t *testing.T) {
	e := newEnv(t, keyCases[0], 100)
	ctx := context.Background()
	size := tableSize(t, e)
	e.opts.MaxRanges = 3
	e.opts.TargetRangeBytes = size.Bytes / 10
	e.opts.MaxRangeBytes = size.Bytes / 4
	open, err := snapshot.Open(ctx, e.deps())
	if err != nil {
		t.Fatal(err)
	}
	_, err = snapshot.Plan(ctx, e.deps(), open.Snapshot)
	var tl *snapshot.PlanTooLargeError
	if !errors.As(err, &tl) || tl.Ranges != 3 || tl.EstimatedBytes != size.Bytes || tl.MaxRangeBytes != size.Bytes/4 {
		t.Fatalf("plan: %v, want PlanTooLargeError at 3 ranges of %d bytes", err, size.Bytes)
	}
	for _, w := range []string{`snapshot "chunked"`, "mssqlcdc bootstrap"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %s", err, w)
		}
	}
	if n := e.db.Calls("ReadTable"); n != 0 {
		t.Errorf("%d table reads before the refusal", n)
	}
	e.opts.MaxRangeBytes = -1
	plan, err := snapshot.Plan(ctx, e.deps(), open.Snapshot)
	if err != nil || len(plan.Ranges) != 3 {
		t.Fatalf("plan without a bound: %d ranges, %v; want the cap, 3", len(plan.Ranges), err)
	}
}
