package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// coordinationEnv is a stream environment whose bronze holds one drained insert (id 1),
// and insert, which inserts an orders row of id.
func coordinationEnv(t *testing.T) (*env, func(id int)) {
	e := newEnv(t, cdcsim.Config{Seed: 1})
	insert := func(id int) {
		e.exec(func(tx *cdcsim.Txn) error {
			_, err := tx.Insert("orders", cdcsim.Row{"id": id, "amount": id, "note": "n"})
			return err
		})
	}
	insert(1)
	e.mustDrain(Options{})
	return e, insert
}

// refusedRun marks the table at url as written through DynamoDB (temp, a DynamoDB log
// store's temporary commit file), inserts id 2 and runs the stream with opts, which must
// end with *deltalog.UncoordinatedCommitError naming temp. It returns the table's store.
func refusedRun(t *testing.T, e *env, insert func(int), url, temp string, opts Options) storage.Store {
	t.Helper()
	store := e.lake.RawStore(url)
	if err := store.Put(context.Background(), temp, strings.NewReader("{}"), 2); err != nil {
		t.Fatal(err)
	}
	insert(2)
	var uce *deltalog.UncoordinatedCommitError
	if _, err := e.run(opts); !errors.As(err, &uce) || uce.TempFile != temp {
		t.Fatalf("run: %v, want *deltalog.UncoordinatedCommitError naming %s", err, temp)
	}
	return store
}

// A stream that does not commit through DynamoDB (here local disk) refuses a bronze table
// whose _delta_log/.tmp/ shows DynamoDB writers (a Spark job with S3DynamoDBLogStore
// appending to it): its batch commits nothing and the run ends with
// *deltalog.UncoordinatedCommitError, which names the file; bronze keeps its version.
func TestStreamRefusesBronzeCoordinatedThroughDynamoDB(t *testing.T) {
	ctx := context.Background()
	e, insert := coordinationEnv(t)
	before, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refusedRun(t, e, insert, e.spec.Bronze, "_delta_log/.tmp/00000000000000000009.json.3d9e1f0a", Options{})
	after, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil || after.Version() != before.Version() {
		t.Fatalf("bronze at version %d after the refusal (%v), want %d", after.Version(), err, before.Version())
	}
}

// Invariant 5 across a refusal: a batch refused for DynamoDB coordination has written its
// offsets file and Parquet files but no commit; once the user fixes the table (here every
// writer left DynamoDB, so _delta_log/.tmp/ is deleted, as docs/operations.md § Log stores
// must match says) the rerun, with more changes arrived meanwhile, commits every change
// exactly once and the facts rows one per batch.
func TestStreamRefusedForCoordinationRerunsWhole(t *testing.T) {
	ctx := context.Background()
	e, insert := coordinationEnv(t)
	temp := "_delta_log/.tmp/00000000000000000009.json.3d9e1f0a"
	store := refusedRun(t, e, insert, e.spec.Bronze, temp, Options{})
	// A second refused run changes nothing either.
	var uce *deltalog.UncoordinatedCommitError
	if _, err := e.run(Options{}); !errors.As(err, &uce) {
		t.Fatalf("second run: %v, want *deltalog.UncoordinatedCommitError", err)
	}
	if err := store.Delete(ctx, temp); err != nil {
		t.Fatal(err)
	}
	insert(3)
	e.mustDrain(Options{})
	e.assertConverged()
	st, _ := e.bronzeState()
	if n := len(st.Rows); n != 3 {
		t.Errorf("bronze rebuilds %d rows, want 3", n)
	}
}

// A facts table whose log shows DynamoDB writers refuses the facts commit (here every
// batch's, FactsEvery 1) after bronze committed the batch; once it is cleared the rerun
// brings the facts table level: every change once in bronze, one facts row per batch.
func TestStreamRefusedFactsCommitRerunsWhole(t *testing.T) {
	ctx := context.Background()
	e, insert := coordinationEnv(t)
	temp := "_delta_log/.tmp/00000000000000000004.json.77aa0c1e"
	store := refusedRun(t, e, insert, e.spec.FactsTable, temp, Options{FactsEvery: 1})
	if err := store.Delete(ctx, temp); err != nil {
		t.Fatal(err)
	}
	insert(3)
	e.mustDrain(Options{FactsEvery: 1})
	e.assertConverged()
	if st, _ := e.bronzeState(); len(st.Rows) != 3 {
		t.Errorf("bronze rebuilds %d rows, want 3", len(st.Rows))
	}
	// The facts table itself holds every batch's row, none left waiting.
	rows, through := e.tableFactsRows()
	n := 0
	for _, r := range rows {
		if r.Event == "" {
			n++
		}
	}
	if through < 2 || n != int(through)+1 {
		t.Errorf("facts table holds %d batch rows through batch %d, want one for each of at least 3 batches", n, through)
	}
}
