package stream

import (
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/rebuild"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// A snapshot taken alone (snapshot(target), `mssqlcdc snapshot`) writes no facts rows, yet
// it is in bronze as operation-0 rows: a fresh checkpoint with bootstrap=true finds it
// there (docs/snapshots.md "How it behaves": the snapshot is found by its operation-0 rows)
// and starts after its LSN, instead of failing with NoSnapshotError and advice that leads
// back to the same error.
func TestBootstrapFindsStandaloneSnapshotInBronze(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 21})
	e.spec.Bootstrap, e.spec.Options.StartingLsn = true, ""
	e.exec(insert(1, 1))
	e.exec(insert(2, 2))
	off, err := snapshot.Run(t.Context(), e.standaloneDeps())
	if err != nil {
		t.Fatal(err)
	}
	if rows := e.factsRows(); len(rows) != 0 {
		t.Fatalf("a standalone snapshot wrote facts rows: %+v", rows)
	}
	e.exec(insert(3, 3))
	res := e.mustDrain(Options{})
	if res.Rows != 1 {
		t.Errorf("after the snapshot at %s: %+v, want only row 3", off.LSN, res)
	}
	st, lg := e.bronzeState()
	if lg.ByOp[0] != 2 || lg.ByOp[2] != 1 || len(st.Rows) != 3 {
		t.Errorf("bronze %+v rows %v", lg, st.Rows)
	}
	if d := rebuild.Diff(e.sourceState(), st, 10); len(d) > 0 {
		t.Errorf("rebuilt state differs from the table:\n%s", joinLines(d))
	}
}

// With neither a snapshot in bronze nor one in the facts, the error says what to run.
func TestNoSnapshotErrorSaysWhatToRun(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 22})
	e.spec.Bootstrap, e.spec.Options.StartingLsn = true, ""
	e.exec(insert(1, 1))
	_, err := e.run(Options{})
	var ns *NoSnapshotError
	if !errors.As(err, &ns) {
		t.Fatalf("err = %v, want NoSnapshotError", err)
	}
	for _, want := range []string{"bronze", "mssqlcdc bootstrap"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %q", err, want)
		}
	}
}
