package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
)

// A stream that does not commit through DynamoDB (here local disk) refuses a bronze table
// whose _delta_log/.tmp/ shows DynamoDB writers (a Spark job with S3DynamoDBLogStore
// appending to it): its batch commits nothing and the run ends with
// *deltalog.UncoordinatedCommitError, which names the file; bronze keeps its version.
func TestStreamRefusesBronzeCoordinatedThroughDynamoDB(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, cdcsim.Config{Seed: 1})
	insert := func(id int) {
		e.exec(func(tx *cdcsim.Txn) error {
			_, err := tx.Insert("orders", cdcsim.Row{"id": id, "amount": id, "note": "n"})
			return err
		})
	}
	insert(1)
	e.mustDrain(Options{})
	before, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	temp := "_delta_log/.tmp/00000000000000000009.json.3d9e1f0a"
	if err := e.lake.RawStore(e.spec.Bronze).Put(ctx, temp, strings.NewReader("{}"), 2); err != nil {
		t.Fatal(err)
	}
	insert(2)
	_, err = e.run(Options{})
	var uce *deltalog.UncoordinatedCommitError
	if !errors.As(err, &uce) || uce.TempFile != temp {
		t.Fatalf("run: %v, want *deltalog.UncoordinatedCommitError naming %s", err, temp)
	}
	after, err := e.lake.RawTable(e.spec.Bronze).Snapshot(ctx)
	if err != nil || after.Version() != before.Version() {
		t.Fatalf("bronze at version %d after the refusal (%v), want %d", after.Version(), err, before.Version())
	}
}
