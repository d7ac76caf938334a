package testlake

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
)

func TestKillPlans(t *testing.T) {
	ops := []string{"source.MaxLSN", "store.PutIfAbsent offsets/0.json", "store.Get x", "log.Write 0", "ddb.PutItem"}
	var got []string
	for _, f := range KillPlans(ops, 1) {
		got = append(got, ops[f.KillAt-1]+map[bool]string{false: " before", true: " after"}[f.After])
	}
	want := []string{"source.MaxLSN before", "store.PutIfAbsent offsets/0.json before", "store.Get x before", "log.Write 0 before",
		"ddb.PutItem before", "store.PutIfAbsent offsets/0.json after", "log.Write 0 after", "ddb.PutItem after"}
	if len(got) != len(want) {
		t.Fatalf("plans %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("plans %v, want %v", got, want)
		}
	}
	// Every second call: 1, 3 and 5 before; of those, only 5 mutates.
	if n := len(KillPlans(ops, 2)); n != 4 {
		t.Fatalf("every second call: %d plans, want 4", n)
	}
}

// Every handle a lake opens while Faults is set goes through it, and a kill stops them all;
// the raw handles do not.
func TestFaultsReachEveryHandle(t *testing.T) {
	for _, b := range Backends {
		t.Run(string(b), func(t *testing.T) {
			ctx := context.Background()
			l := New(t, b)
			spec := &config.Spec{}
			l.Use(spec)
			f := &deltatest.Faults{}
			l.Faults = f
			db := cdcsim.New(cdcsim.Config{Seed: 1})
			if _, err := l.Source(db).MaxLSN(ctx); err != nil {
				t.Fatal(err)
			}
			tbl := l.Table(spec.Bronze)
			tx := tbl.Begin(mustSnapshot(t, tbl))
			if err := tx.SetSchema(schema); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.Store(spec.Checkpoint).PutIfAbsent(ctx, "offsets/0.json", []byte("{}")); err != nil {
				t.Fatal(err)
			}
			ops := f.Ops()
			seen := map[string]bool{}
			for _, op := range ops {
				for _, p := range []string{"source.", "store.", "log.", "ddb."} {
					if len(op) >= len(p) && op[:len(p)] == p {
						seen[p] = true
					}
				}
			}
			want := 3
			if b == AWS {
				want = 4
			}
			if len(seen) != want {
				t.Fatalf("calls %v: want source, store, log (and ddb on AWS) calls", ops)
			}
			before := f.Calls()
			if _, err := l.RawTable(spec.Bronze).Snapshot(ctx); err != nil || f.Calls() != before {
				t.Fatalf("a raw table's read went through the plan: %v", err)
			}
			f.KillAt = f.Calls() + 1
			if _, err := l.Source(db).MaxLSN(ctx); !errors.Is(err, deltatest.ErrKilled) {
				t.Fatalf("after the kill: %v", err)
			}
			if _, err := tbl.Snapshot(ctx); !errors.Is(err, deltatest.ErrKilled) {
				t.Fatalf("table after the kill: %v", err)
			}
		})
	}
}

var schema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

func mustSnapshot(t *testing.T, tbl *deltalog.Table) *deltalog.Snapshot {
	t.Helper()
	snap, err := tbl.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
