package deltalog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/condput"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
)

// dynamoTemp is a temporary commit file as Spark's S3DynamoDBLogStore (and logstore/dynamo)
// leave them: _delta_log/.tmp/<v:020>.json.<uuid>.
const dynamoTemp = "_delta_log/.tmp/00000000000000000002.json.5f0c2f5e-3a52-4c3e-9d3c-0a1b2c3d4e5f"

// putFile writes an empty file at key under dir.
func putFile(t *testing.T, dir, key string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commitOne appends one empty-handed commit (a txn only) to tbl and returns Commit's error.
func commitOne(t *testing.T, tbl *deltalog.Table, version int64) error {
	t.Helper()
	ctx := context.Background()
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Begin(snap)
	tx.SetAppTxn("other", version)
	_, err = tx.Commit(ctx)
	return err
}

// coordinatedStore stands for logstore/dynamo (which needs DynamoDB): a log store that
// says its commits are coordinated elsewhere.
type coordinatedStore struct{ *condput.LogStore }

func (coordinatedStore) Coordinator() string { return "DynamoDB table delta_log" }

// A commit through S3 conditional put (or any log store that is not logstore.Coordinated)
// to a table whose _delta_log/.tmp/ holds a DynamoDB log store's temporary commit file is
// refused with *UncoordinatedCommitError naming the file, and writes nothing: such a
// table's writers exclude one another through DynamoDB only. The same table commits
// through a Coordinated log store (also under a wrapper), and through conditional put once
// the file is gone (the same Table, no new process). A ".tmp/<v>.json" without an id (a
// file other writers leave: testdata/delta/simple_table) is no sign.
func TestCommitRefusesATableCoordinatedThroughDynamoDB(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	deltatest.AppendIDs(t, openCondPut(t, dir, &deltatest.Faults{}), 0, 3)
	putFile(t, dir, "_delta_log/.tmp/00000000000000000001.json")
	if err := commitOne(t, openCondPut(t, dir, &deltatest.Faults{}), 1); err != nil {
		t.Fatalf("a .tmp file without an id: %v", err)
	}
	putFile(t, dir, dynamoTemp)

	tbl := openCondPut(t, dir, &deltatest.Faults{})
	err := commitOne(t, tbl, 2)
	var uce *deltalog.UncoordinatedCommitError
	if !errors.As(err, &uce) || uce.TempFile != dynamoTemp {
		t.Fatalf("commit through conditional put: %v, want *UncoordinatedCommitError naming %s", err, dynamoTemp)
	}
	for _, want := range []string{"--dynamo-table", "storage.dynamo_table", dynamoTemp} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if snap, err := tbl.Snapshot(ctx); err != nil || snap.Version() != 3 {
		t.Fatalf("after the refusal: %v, %v; want version 3, nothing written", snap, err)
	}
	if err := tbl.CheckCoordination(ctx); !errors.As(err, &uce) {
		t.Errorf("CheckCoordination: %v, want *UncoordinatedCommitError", err)
	}

	s, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, logs := range map[string]logstore.LogStore{
		"coordinated":         coordinatedStore{condput.New(s)},
		"coordinated wrapped": (&deltatest.Faults{}).LogStore(coordinatedStore{condput.New(s)}),
	} {
		if err := commitOne(t, deltalog.Open(s, logs, deltalog.Options{}), 3); err != nil {
			t.Errorf("commit through a %s log store: %v", name, err)
		}
	}

	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(dynamoTemp))); err != nil {
		t.Fatal(err)
	}
	if err := commitOne(t, tbl, 4); err != nil {
		t.Errorf("commit after the temp file was deleted: %v", err)
	}
}

// The check costs no request on a Table whose first open listed the log from its start
// (a log without a checkpoint: the temporary files sort before the commits), one listing
// of _delta_log/.tmp/ at the first commit of a Table that listed from a checkpoint, and
// none at the commits after it.
func TestCoordinationCheckRequests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commits int
		lists   int // listings of _delta_log/.tmp/ over two commits
	}{
		{"no checkpoint", 3, 0},
		{"after checkpoint 10", 13, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			deltatest.AppendIDs(t, openCondPut(t, dir, &deltatest.Faults{}), 0, tc.commits)
			f := &deltatest.Faults{}
			tbl := openCondPut(t, dir, f)
			for v := range int64(2) {
				if err := commitOne(t, tbl, v+1); err != nil {
					t.Fatal(err)
				}
			}
			lists := 0
			for _, op := range f.Ops() {
				if op == "store.List "+logstore.DynamoTempDir {
					lists++
				}
			}
			if lists != tc.lists {
				t.Errorf("%d listings of %s, want %d: %q", lists, logstore.DynamoTempDir, tc.lists, f.Ops())
			}
		})
	}
}

// Temp-file clean-up keeps the newest DynamoDB temporary commit file, however old and
// decided: it is the mark by which a writer through another log store is refused, and
// without it a table idle for a day after a clean-up would lose it.
func TestCleanupTempFilesKeepsTheDynamoDBMark(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	deltatest.AppendIDs(t, openCondPut(t, dir, &deltatest.Faults{}), 0, 3)
	old := time.Now().Add(-48 * time.Hour)
	var temps []string
	for v := range 3 {
		key := fmt.Sprintf("_delta_log/.tmp/%020d.json.id%d", v, v)
		putFile(t, dir, key)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(key)), old, old); err != nil {
			t.Fatal(err)
		}
		temps = append(temps, key)
	}
	tbl := openCondPut(t, dir, &deltatest.Faults{})
	res, err := tbl.CleanupTempFiles(ctx, deltalog.TempFileOptions{})
	if err != nil || !slices.Equal(res.Deleted, temps[:2]) {
		t.Fatalf("deleted %v, %v; want %v (the newest kept)", res.Deleted, err, temps[:2])
	}
	var uce *deltalog.UncoordinatedCommitError
	if err := tbl.CheckCoordination(ctx); !errors.As(err, &uce) || uce.TempFile != temps[2] {
		t.Errorf("after the clean-up: %v, want *UncoordinatedCommitError naming %s", err, temps[2])
	}
}
