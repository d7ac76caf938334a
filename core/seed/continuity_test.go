package seed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// A database restored to before the seed's L between its plan and its commit (a copy of
// billions of rows converts for hours; docs/reference/sqlserver-cdc.md §13.2) makes the
// commit refuse with LSNRewoundError and write nothing: the stream, starting after L,
// would never read the commits L claims the copy holds. The same once new commits reuse L
// (another commit time at L).
func TestCommitAfterARestoreRefusesTheSeed(t *testing.T) {
	for _, reuse := range []bool{false, true} {
		t.Run(map[bool]string{false: "max_lsn below L", true: "L reused by a later commit"}[reuse], func(t *testing.T) {
			e := tEnv(t, 3, cdcsim.Config{})
			ctx := context.Background()
			backup, err := e.db.Backup()
			if err != nil {
				t.Fatal(err)
			}
			l := e.insert(4)
			at, _, _ := e.db.CommitTime(ctx, l)
			url := e.copyNow("copy")
			plan, err := seed.Plan(ctx, e.deps(), seed.Request{Copy: url, AsOf: at.Format(time.RFC3339Nano)})
			if err != nil || plan.Status != seed.Planned || plan.Seed.LSN != l {
				t.Fatalf("plan %+v, %v; want planned at %s", plan, err, l)
			}
			for _, g := range plan.Groups {
				if _, err := seed.Convert(ctx, e.deps(), plan.Seed, plan.Plan, g); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.db.Restore(backup); err != nil {
				t.Fatal(err)
			}
			if reuse {
				e.db.Advance(time.Hour)
				if got := e.insert(40); got != l {
					t.Fatalf("the simulator did not reuse L: %s, L %s", got, l)
				}
			}
			v := e.bronzeVersion()
			_, err = seed.Commit(ctx, e.deps(), plan.Seed, plan.Plan)
			var rw *source.LSNRewoundError
			if !errors.As(err, &rw) || rw.Recorded != l {
				t.Fatalf("commit after a restore: %v, want LSNRewoundError at %s", err, l)
			}
			// The stamp is named as the seed's L (as_of), not as a snapshot's.
			if want := "seed stamp " + l.String() + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q, want it to begin %q", err, want)
			}
			// The advice is the seed's (a copy of the restored database, a new as_of), not
			// the stream checkpoint's (it said "the changes the checkpoint passed may never
			// be read ... re-snapshot", of a seed that has no checkpoint position yet).
			if msg := err.Error(); strings.Contains(msg, "checkpoint") || strings.Contains(msg, "re-snapshot") ||
				!strings.Contains(msg, "export a copy of the restored database and seed again with a new as_of (docs/seed.md)") {
				t.Errorf("message %q: want the seed's advice, not the checkpoint's", msg)
			}
			if got := e.bronzeVersion(); got != v || e.seedCommits() != 0 {
				t.Fatalf("bronze moved to version %d (was %d), seed commits %d", got, v, e.seedCommits())
			}
		})
	}
}
