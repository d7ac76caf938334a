package facts

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// The facts commits' operationParameters are Spark's WRITE in Append mode, values bare as
// Spark writes them ({"mode":"Append","partitionBy":"[]"}), read from the committed JSON
// line itself: a quoted value ("\"Append\"") shows as another mode in DESCRIBE HISTORY.
func TestAppendCommitInfoIsSparks(t *testing.T) {
	ctx := context.Background()
	lake := testlake.New(t, testlake.Local)
	tbl := lake.Table(lake.URL("facts"))
	for b := int64(0); b < 2; b++ {
		if _, err := Append(ctx, tbl, TxnFacts("a"), b, []Row{{AppID: "a", BatchID: Int64(b), Target: "t"}}, parquetio.WriterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st := lake.RawStore(lake.URL("facts"))
	for _, name := range []string{"00000000000000000000.json", "00000000000000000001.json"} {
		op, params := committedOperation(t, ctx, st.Get, "_delta_log/"+name)
		want := map[string]string{"mode": "Append", "partitionBy": "[]"}
		if op != "WRITE" || !maps.Equal(params, want) {
			t.Errorf("%s: operation %q %v, want WRITE %v", name, op, params, want)
		}
	}
}

// committedOperation reads a commit file's commitInfo line as written.
func committedOperation(t *testing.T, ctx context.Context, get func(context.Context, string) (io.ReadCloser, error), key string) (string, map[string]string) {
	t.Helper()
	r, err := get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var a struct {
			CommitInfo *struct {
				Operation           string            `json:"operation"`
				OperationParameters map[string]string `json:"operationParameters"`
			} `json:"commitInfo"`
		}
		if err := json.Unmarshal([]byte(line), &a); err == nil && a.CommitInfo != nil {
			return a.CommitInfo.Operation, a.CommitInfo.OperationParameters
		}
	}
	t.Fatalf("%s has no commitInfo line:\n%s", key, data)
	return "", nil
}
