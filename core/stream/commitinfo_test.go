package stream

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

// A bronze batch commit's operationParameters are Spark's STREAMING UPDATE, values bare as
// Spark writes them ({"outputMode":"Append","queryId":...,"epochId":"0"}), read from the
// committed JSON line itself: quoted values ("\"Append\"") show as another output mode in
// DESCRIBE HISTORY.
func TestBronzeCommitInfoIsSparks(t *testing.T) {
	e := newEnv(t, cdcsim.Config{Seed: 1})
	e.exec(func(tx *cdcsim.Txn) error {
		_, err := tx.Insert("orders", cdcsim.Row{"id": 1, "amount": 10, "note": "n"})
		return err
	})
	if res := e.mustDrain(Options{}); res.Batches != 1 {
		t.Fatalf("drain: %+v, want one batch", res)
	}
	r, err := e.lake.RawStore(e.spec.Bronze).Get(context.Background(), "_delta_log/00000000000000000000.json")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	var op string
	for _, line := range strings.Split(string(data), "\n") {
		var a struct {
			CommitInfo *struct {
				Operation           string            `json:"operation"`
				OperationParameters map[string]string `json:"operationParameters"`
			} `json:"commitInfo"`
		}
		if json.Unmarshal([]byte(line), &a) == nil && a.CommitInfo != nil {
			op, got = a.CommitInfo.Operation, a.CommitInfo.OperationParameters
		}
	}
	want := map[string]string{"outputMode": "Append", "queryId": e.spec.AppID, "epochId": "0"}
	if op != "STREAMING UPDATE" || !maps.Equal(got, want) {
		t.Fatalf("commitInfo %q %v, want STREAMING UPDATE %v\n%s", op, got, want, data)
	}
}
