package silver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim/workload"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// exec runs one source transaction.
func (e *env) exec(fn func(tx *cdcsim.Txn) error) {
	e.t.Helper()
	if _, err := e.db.Exec(fn); err != nil {
		e.t.Fatal(err)
	}
}

// orderIDs are the ids of dbo.orders, ascending.
func (e *env) orderIDs() []int64 {
	e.t.Helper()
	var ids []int64
	for k := range e.sourceState().Rows {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			e.t.Fatalf("key %q", k)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// layers counts silver's base and delta files, and the files with a deletion vector.
func (e *env) layers() (base, delta, withDV int) {
	for _, a := range e.silverFiles() {
		if a.Tags[TagLayer] == layerDelta {
			delta++
		} else {
			base++
		}
		if a.DeletionVector != nil {
			withDV++
		}
	}
	return base, delta, withDV
}

// With deletion vectors (the default), a delete marks the row in its file's DV and rewrites
// nothing; an update marks the old row and writes the new image to the delta layer, whose
// files are rewritten as it grows; a file whose deleted share passes the threshold is
// rewritten; the delta layer folds into the base once it holds more than 1/8 of the base
// rows it spans. Silver equals the source after every apply, each layer stays clustered,
// and the table lists the deletionVectors feature as the protocol requires.
func TestDeletionVectorsMarkRowsInsteadOfRewriting(t *testing.T) {
	e := newEnv(t, testlake.Local, cdcsim.Config{Seed: 21}, workload.Orders(), 3000)
	// The rebuild in key ranges of a few hundred rows writes a base file per range.
	e.opts.MemoryBytes = 48 << 10
	e.bootstrap()
	e.drain()
	e.apply()
	e.opts.MemoryBytes = 0
	base0, delta0, _ := e.layers()
	if base0 < 4 || delta0 != 0 {
		t.Fatalf("after the rebuild: %d base and %d delta files, want several base files only", base0, delta0)
	}
	ids := e.orderIDs()
	applyAndCheck := func(when string) Result {
		t.Helper()
		e.drain()
		res := e.apply()
		e.assertSilverEqualsSource(when)
		e.assertClustered()
		return res
	}

	// Deletes: DVs only.
	e.exec(func(tx *cdcsim.Txn) error {
		for _, id := range []int64{ids[10], ids[1500], ids[2900]} {
			if err := tx.Delete("orders", []any{id}); err != nil {
				return err
			}
		}
		return nil
	})
	res := applyAndCheck("deletes")
	if res.Deleted != 3 || res.BytesRewritten != 0 || res.FilesAdded != 0 || res.DeletionVectors != 3 {
		t.Fatalf("deletes: %+v, want 3 rows marked by 3 DVs and no file rewritten", res)
	}
	if b, d, dv := e.layers(); b != base0 || d != 0 || dv != 3 {
		t.Fatalf("after deletes: %d base, %d delta, %d with a DV", b, d, dv)
	}
	snap, err := e.lake.RawTable(e.silver).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := snap.Protocol(); !p.HasReaderFeature(deltalog.FeatureDeletionVectors) || !p.HasWriterFeature(deltalog.FeatureDeletionVectors) ||
		snap.Metadata().Configuration["delta.enableDeletionVectors"] != "true" {
		t.Fatalf("protocol %+v, configuration %v", p, snap.Metadata().Configuration)
	}

	// Updates: the old rows marked, the new images in one delta file.
	update := func(keys ...int64) {
		e.exec(func(tx *cdcsim.Txn) error {
			for _, id := range keys {
				if err := tx.Update("orders", []any{id}, cdcsim.Row{"status": fmt.Sprint("u", id%97)}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	update(ids[20], ids[1000], ids[2000])
	res = applyAndCheck("updates")
	if res.Updated != 3 || res.BytesRewritten != 0 || res.FilesAdded != 1 {
		t.Fatalf("updates: %+v, want no file rewritten and one delta file", res)
	}
	if _, d, _ := e.layers(); d != 1 {
		t.Fatalf("after updates: %d delta files", d)
	}
	// More updates inside the delta file's span: it is rewritten with them (it stays one
	// file of the delta layer), the base rows get DVs.
	update(ids[30], ids[1200])
	res = applyAndCheck("updates into the delta span")
	if _, d, _ := e.layers(); d != 1 || res.FilesRemoved != 1 || res.FilesAdded != 1 {
		t.Fatalf("after more updates: %d delta files, %+v", d, res)
	}

	// Deleting more than a quarter of one base file's rows rewrites that file.
	var victim deltalog.Add
	for _, a := range e.silverFiles() {
		if a.Tags[TagLayer] == "" && a.DeletionVector == nil {
			victim = a
			break
		}
	}
	st, _, _ := deltalog.ParseStats(victim.Stats)
	lo, _ := strconv.ParseInt(string(st.MinValues["id"]), 10, 64)
	hi, _ := strconv.ParseInt(string(st.MaxValues["id"]), 10, 64)
	e.exec(func(tx *cdcsim.Txn) error {
		for _, id := range ids {
			if id >= lo && id <= lo+(hi-lo)/2 {
				if err := tx.Delete("orders", []any{id}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	res = applyAndCheck("a file past the deleted-fraction threshold")
	if res.BytesRewritten < victim.Size {
		t.Fatalf("%+v: the file past the threshold was not rewritten", res)
	}
	for _, a := range e.silverFiles() {
		if a.Path == victim.Path {
			t.Fatalf("file %s is still live", a.Path)
		}
	}

	// Updating more than 1/8 of the rows folds the delta layer into the base.
	var many []int64
	for i := 1; i < len(ids); i += 5 {
		if ids[i] < lo || ids[i] > hi {
			many = append(many, ids[i])
		}
	}
	update(many...)
	applyAndCheck("a fold")
	if _, d, _ := e.layers(); d != 0 {
		t.Fatalf("after updating %d rows: %d delta files, want the layer folded into the base", len(many), d)
	}
}

// Copy-on-write (deletion vectors off) and inline deletion vectors give the same silver.
func TestApplyCopyOnWriteAndInlineDVs(t *testing.T) {
	for _, mode := range []string{"copy-on-write", "inline"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, testlake.Local, cdcsim.Config{Seed: 23, KeyUpdateAsDeleteInsert: mode == "inline"}, workload.OrderLines(), 600)
			e.opts.TargetFileSize = 8 << 10
			e.opts.CopyOnWrite = mode == "copy-on-write"
			if mode == "inline" {
				e.opts.InlineDVBytes = 1 << 10
			}
			e.bootstrap()
			e.drain()
			e.apply()
			var total Result
			for round := range 5 {
				e.step(30)
				e.drain()
				res := e.apply()
				total.Counts.add(res.Counts)
				e.assertSilverEqualsSource(fmt.Sprintf("round %d", round))
				e.assertClustered()
			}
			_, delta, withDV := e.layers()
			switch mode {
			case "copy-on-write":
				if total.DeletionVectors != 0 || withDV != 0 || delta != 0 {
					t.Fatalf("copy-on-write wrote DVs or delta files: %+v, %d with DV, %d delta", total.Counts, withDV, delta)
				}
				snap, err := e.lake.RawTable(e.silver).Snapshot(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if snap.Protocol().HasReaderFeature(deltalog.FeatureDeletionVectors) {
					t.Fatal("a copy-on-write silver lists deletionVectors")
				}
			case "inline":
				if total.DeletionVectors == 0 || withDV == 0 {
					t.Fatalf("no DV written: %+v", total.Counts)
				}
				for _, a := range e.silverFiles() {
					if a.DeletionVector != nil && a.DeletionVector.StorageType != deltalog.DVStorageInline {
						t.Fatalf("DV of %d bytes not inline: %+v", a.DeletionVector.SizeInBytes, a.DeletionVector)
					}
				}
			}
		})
	}
}
