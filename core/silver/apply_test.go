package silver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// After a full bootstrap, under a live workload (inserts, updates, deletes, key updates in
// both of SQL Server's shapes, transactions of several statements), silver equals the
// source table after every apply, for an int, a composite and a case-insensitive string
// key, on local disk and on the emulators, and stays clustered by key.
func TestApplyFollowsTheSource(t *testing.T) {
	for _, w := range worldsWith(world{testlake.AWS, workload.Orders(), false}, world{testlake.AWS, workload.OrderLines(), true}) {
		def, split := w.def, w.split
		{
			t.Run(fmt.Sprintf("%s/%s/keyUpdateAsDeleteInsert=%v", w.backend, def.Spec.Name, split), func(t *testing.T) {
				e := newEnv(t, w.backend, cdcsim.Config{Seed: 7, KeyUpdateAsDeleteInsert: split}, def, 300)
				e.bootstrap()
				e.drain()
				res := e.apply()
				if res.Rebuilds != 1 || res.Inserted != 300 {
					t.Fatalf("first apply: %+v, want a rebuild of 300 rows", res)
				}
				e.assertSilverEqualsSource("after the bootstrap")
				for round := range 8 {
					e.step(40)
					e.drain()
					res := e.apply()
					if res.Rebuilds != 0 || res.Commits == 0 {
						t.Fatalf("round %d: %+v", round, res)
					}
					e.assertSilverEqualsSource(fmt.Sprintf("round %d", round))
					e.assertClustered()
				}

				if e.gen.Stats.KeyUpdates == 0 || e.gen.Stats.Deletes == 0 {
					t.Fatalf("the workload wrote no key update or delete: %+v", e.gen.Stats)
				}
			})
		}
	}
}

// A run larger than the memory budget is applied in key ranges, one commit each, and gives
// the same silver.
func TestApplyInKeyRanges(t *testing.T) {
	e := newEnv(t, testlake.Local, cdcsim.Config{Seed: 8}, workload.Orders(), 2000)
	e.opts.MemoryBytes = 64 << 10
	e.bootstrap()
	e.drain()
	res := e.apply()
	if res.Commits < 3 || res.Rebuilds != 1 {
		t.Fatalf("rebuild: %+v, want several key ranges", res)
	}
	e.assertSilverEqualsSource("after the rebuild in key ranges")
	e.assertClustered()
	e.step(400)
	e.drain()
	res = e.apply()
	if res.Commits < 2 {
		t.Fatalf("incremental: %+v, want several key ranges", res)
	}
	e.assertSilverEqualsSource("after the incremental run in key ranges")
	e.assertClustered()
	if p := e.position(); p.Pass != nil || p.Step != int64(len(e.silverVersions())) {
		t.Fatalf("position %+v after %d commits", p, len(e.silverVersions()))
	}
}

// Nothing new in bronze: an apply commits nothing.
func TestApplyCaughtUpCommitsNothing(t *testing.T) {
	e := newEnv(t, testlake.Local, cdcsim.Config{Seed: 9}, workload.Orders(), 50)
	e.bootstrap()
	e.drain()
	e.apply()
	v := e.position().Step
	res := e.apply()
	if res.Commits != 0 || e.position().Step != v {
		t.Fatalf("second apply: %+v", res)
	}
}

// Keys other than the ones silver was built with are refused even when there is nothing to
// apply (a caught-up silver must not look like it accepted the new key).
func TestApplyRefusesOtherKeysWhenCaughtUp(t *testing.T) {
	e := newEnv(t, testlake.Local, cdcsim.Config{Seed: 9}, workload.Orders(), 20)
	e.bootstrap()
	e.drain()
	e.apply()
	opts := e.opts
	opts.Keys = []string{"customer"}
	_, err := Apply(context.Background(), e.tables(), opts)
	var ke *KeyError
	if !errors.As(err, &ke) || !strings.Contains(ke.Error(), "keyed on [id]") {
		t.Fatalf("apply with other keys: %v, want a *KeyError naming silver's keys", err)
	}
	opts.Keys = []string{"ID"} // the same key in another case is the same key
	if res, err := Apply(context.Background(), e.tables(), opts); err != nil || !res.CaughtUp || res.Commits != 0 {
		t.Fatalf("apply with ID: %+v, %v", res, err)
	}
}

// Bronze replaced by another table with as many versions and the same table id (here its
// newest commit rewritten) is refused with a *BronzeChangedError, also when silver has
// caught up and there is nothing new to apply: the version count alone would not show it.
func TestApplyRefusesABronzeReplacedWithAsManyVersions(t *testing.T) {
	e := newEnv(t, testlake.Local, cdcsim.Config{Seed: 9}, workload.Orders(), 30)
	e.bootstrap()
	e.step(5)
	e.drain()
	e.apply()
	pos := e.position()
	if pos.BronzeCommit == "" {
		t.Fatalf("position %+v records no bronze commit", pos)
	}
	ctx := context.Background()
	store := e.lake.RawStore(e.spec.Bronze)
	key := deltalog.CommitFileKey(pos.Version)
	rc, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(string(data), pos.BronzeCommit, "00000000-0000-4000-8000-000000000000", 1)
	if other == string(data) {
		t.Fatalf("commit %d does not carry the txnId %s", pos.Version, pos.BronzeCommit)
	}
	if err := store.Put(ctx, key, strings.NewReader(other), int64(len(other))); err != nil {
		t.Fatal(err)
	}
	_, err = Apply(ctx, e.tables(), e.opts)
	var bce *BronzeChangedError
	if !errors.As(err, &bce) || !strings.Contains(err.Error(), "silver applied "+pos.BronzeCommit) {
		t.Fatalf("apply over the replaced bronze: %v, want a *BronzeChangedError naming the commit silver applied", err)
	}
	if p := e.position(); p.Step != pos.Step {
		t.Fatalf("silver moved: %+v", p)
	}
}
