package deltalog

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
)

// rawOperationParameters is the operationParameters object of a commit file's commitInfo,
// compacted, exactly as written.
func rawOperationParameters(t *testing.T, commit []byte) string {
	t.Helper()
	for line := range bytes.SplitSeq(commit, []byte("\n")) {
		var a struct {
			CommitInfo *struct {
				OperationParameters json.RawMessage `json:"operationParameters"`
			} `json:"commitInfo"`
		}
		if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &a) != nil || a.CommitInfo == nil {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, a.CommitInfo.OperationParameters); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	t.Fatal("no commitInfo in the commit")
	return ""
}

// An append's commitInfo.operationParameters is byte for byte what Spark writes for a
// WRITE in Append mode (a Spark 3 / Delta commit of the golden tables in testdata/delta):
// every value a JSON string, the partition list as the string "[]".
func TestAppendOperationParametersMatchSpark(t *testing.T) {
	spark, err := os.ReadFile(filepath.Join(testfiles.DeltaDir(t), "checkpoints", "_delta_log", "00000000000000000001.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := rawOperationParameters(t, spark)
	if want != `{"mode":"Append","partitionBy":"[]"}` {
		t.Fatalf("golden commit's operationParameters = %s", want)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		set  func(tx *Transaction)
	}{
		{"default", func(*Transaction) {}},
		{"SetOperation", func(tx *Transaction) {
			tx.SetOperation("WRITE", map[string]string{"mode": "Append", "partitionBy": "[]"})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl, s := newMemTable(Options{})
			createTable(t, tbl)
			tx := tbl.Begin(snapshot(t, tbl))
			tx.Add(testAdd("x"))
			c.set(tx)
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			ours, err := s.GetRange(ctx, CommitFileKey(1), 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if got := rawOperationParameters(t, ours); got != want {
				t.Fatalf("operationParameters = %s, want Spark's %s", got, want)
			}
		})
	}
}
