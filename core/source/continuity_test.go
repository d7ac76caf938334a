package source_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// rewindDB is a simulated database with one captured table and n one-row commits a second
// apart; it returns the commits' LSNs.
func rewindDB(t *testing.T) *cdcsim.DB {
	t.Helper()
	db := cdcsim.New(cdcsim.Config{Seed: 3})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "t", Columns: []source.Column{{Name: "id", DataType: "int"}, {Name: "v", DataType: "int", Nullable: true}}, Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnableCapture("t", cdcsim.CaptureOptions{}); err != nil {
		t.Fatal(err)
	}
	return db
}

func commitN(t *testing.T, db *cdcsim.DB, from, n int) []lsn.LSN {
	t.Helper()
	var out []lsn.LSN
	for i := from; i < from+n; i++ {
		db.Advance(time.Second)
		l, err := db.Exec(func(tx *cdcsim.Txn) error {
			_, err := tx.Insert("t", cdcsim.Row{"id": i, "v": i})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// After a restore to an earlier point, a checkpoint past the restored max_lsn is refused;
// once new commits reuse the lost LSNs, the checkpoint's commit time no longer matches and
// it is refused too. Without the check a stream would call itself caught up and then skip
// every commit below its checkpoint.
func TestCheckContinuityAfterRestore(t *testing.T) {
	ctx := context.Background()
	db := rewindDB(t)
	commitN(t, db, 0, 3)
	b, err := db.Backup()
	if err != nil {
		t.Fatal(err)
	}
	lost := commitN(t, db, 3, 5)
	ckpt := lost[3]
	ckptTime, ok, err := db.CommitTime(ctx, ckpt)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := source.CheckContinuity(ctx, db, ckpt, ckptTime); err != nil {
		t.Fatalf("before the restore: %v", err)
	}
	if err := db.Restore(b); err != nil {
		t.Fatal(err)
	}
	var rw *source.LSNRewoundError
	err = source.CheckContinuity(ctx, db, ckpt, ckptTime)
	if !errors.As(err, &rw) || !rw.MaxLSN.Less(ckpt) {
		t.Fatalf("max_lsn below the checkpoint: %v, want *LSNRewoundError", err)
	}
	// The same statements again, later: the same LSNs with new commit times.
	db.Advance(time.Hour)
	again := commitN(t, db, 3, 5)
	if again[3] != ckpt {
		t.Fatalf("the simulator did not reuse the lost LSNs: %s vs %s", again[3], ckpt)
	}
	err = source.CheckContinuity(ctx, db, ckpt, ckptTime)
	if !errors.As(err, &rw) || rw.Found.LSN != ckpt || rw.Found.Time.Equal(ckptTime) {
		t.Fatalf("same LSN, new commit time: %v, want *LSNRewoundError", err)
	}
	// A checkpoint that was no commit's (zero recorded time) is only checked against max_lsn.
	if err := source.CheckContinuity(ctx, db, ckpt, time.Time{}); err != nil {
		t.Fatalf("no recorded time: %v", err)
	}
}

// Restored and then written with other statements: the checkpoint's LSN is no commit's any
// more while older commits remain.
func TestCheckContinuityCommitGone(t *testing.T) {
	ctx := context.Background()
	db := rewindDB(t)
	commitN(t, db, 0, 2)
	b, _ := db.Backup()
	lost := commitN(t, db, 2, 3)
	ckpt := lost[1]
	ckptTime, _, _ := db.CommitTime(ctx, ckpt)
	if err := db.Restore(b); err != nil {
		t.Fatal(err)
	}
	// Two-row transactions take other LSNs than the lost one-row ones.
	for i := 0; i < 4; i++ {
		db.Advance(time.Second)
		if _, err := db.Exec(func(tx *cdcsim.Txn) error {
			if _, err := tx.Insert("t", cdcsim.Row{"id": 100 + 2*i}); err != nil {
				return err
			}
			_, err := tx.Insert("t", cdcsim.Row{"id": 101 + 2*i})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	var rw *source.LSNRewoundError
	if err := source.CheckContinuity(ctx, db, ckpt, ckptTime); !errors.As(err, &rw) || rw.Found.LSN == ckpt {
		t.Fatalf("%v, want *LSNRewoundError with another commit found", err)
	}
}

// Normal operation passes: a later max_lsn, cleanup that removed the checkpoint's mapping
// row (retention is the MinLSN checks' business), the zero LSN.
func TestCheckContinuityPasses(t *testing.T) {
	ctx := context.Background()
	db := rewindDB(t)
	ls := commitN(t, db, 0, 4)
	at, _, _ := db.CommitTime(ctx, ls[0])
	if err := source.CheckContinuity(ctx, db, ls[0], at); err != nil {
		t.Fatal(err)
	}
	if err := db.Cleanup("dbo_t", ls[3]); err != nil {
		t.Fatal(err)
	}
	if err := source.CheckContinuity(ctx, db, ls[0], at); err != nil {
		t.Fatalf("after cleanup: %v", err)
	}
	if err := source.CheckContinuity(ctx, db, lsn.Zero, time.Time{}); err != nil {
		t.Fatal(err)
	}
}

// A position without a commit time just below a capture instance capture has not reached
// (start_lsn − 1, a snapshot stamp or a stream start on a quiet database) is above max_lsn
// and still not rewound; the same position with a commit time, or once no such instance
// exists, is refused.
func TestCheckContinuityBeforeUnreachedInstance(t *testing.T) {
	ctx := context.Background()
	db := cdcsim.New(cdcsim.Config{Seed: 4, ManualCapture: true})
	if err := db.CreateTable(cdcsim.TableSpec{Name: "t", Columns: []source.Column{{Name: "id", DataType: "int"}}, Key: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	ci, err := db.EnableCapture("t", cdcsim.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	maxLSN, err := db.MaxLSN(ctx)
	if err != nil || !maxLSN.Less(ci.StartLSN.Prev()) {
		t.Fatalf("max_lsn %s (%v) is not below start_lsn - 1 of %s", maxLSN, err, ci.StartLSN)
	}
	if err := source.CheckContinuity(ctx, db, ci.StartLSN.Prev(), time.Time{}); err != nil {
		t.Fatalf("start_lsn - 1 of an unreached instance: %v", err)
	}
	var rw *source.LSNRewoundError
	if err := source.CheckContinuity(ctx, db, ci.StartLSN.Prev(), time.Unix(1e9, 0)); !errors.As(err, &rw) {
		t.Fatalf("the same LSN recorded as a commit's: %v, want *LSNRewoundError", err)
	}
	if err := source.CheckContinuity(ctx, db, ci.StartLSN, time.Time{}); !errors.As(err, &rw) {
		t.Fatalf("the start LSN itself, above max_lsn: %v, want *LSNRewoundError", err)
	}
	if err := db.DisableCapture(ci.Name); err != nil {
		t.Fatal(err)
	}
	if err := source.CheckContinuity(ctx, db, ci.StartLSN.Prev(), time.Time{}); !errors.As(err, &rw) {
		t.Fatalf("no unreached instance left: %v, want *LSNRewoundError", err)
	}
}
