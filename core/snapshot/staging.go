package snapshot

import (
	"context"
	"fmt"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Staging keys under the checkpoint prefix, per snapshot LSN L. Plain puts: a rerun of a
// step replaces its own file. A range's manifest is its ingest.Files (ingest.Stage), the
// files one read of range i wrote; Commit gathers them all (ingest.Gather).
func openKey(l lsn.LSN) string            { return "snapshots/" + l.String() + "/open.json" }
func planKey(l lsn.LSN) string            { return "snapshots/" + l.String() + "/plan.json" }
func manifestKey(l lsn.LSN, i int) string { return fmt.Sprintf("snapshots/%s/ranges/%d.json", l, i) }

// openState is snapshots/<L>/open.json: what Open decided, for the later steps.
type openState struct {
	AppID           string     `json:"app_id"`
	CaptureInstance string     `json:"capture_instance"`
	Snapshot        lsn.Offset `json:"snapshot"`
	StartedAt       time.Time  `json:"started_at"`
}

// planState is snapshots/<L>/plan.json.
type planState struct {
	Keys   []string `json:"keys"`
	Ranges []Range  `json:"ranges"`
}

// loadOpen reads the staging state of snapshot l; ok is false when Open did not record it.
func loadOpen(ctx context.Context, d Deps, l lsn.LSN) (openState, bool, error) {
	var st openState
	ok, err := getJSON(ctx, d.Staging, openKey(l), &st)
	return st, ok, err
}

// loadPlan reads the plan of snapshot l; ok is false when there is none.
func loadPlan(ctx context.Context, d Deps, l lsn.LSN) (planState, bool, error) {
	var ps planState
	ok, err := getJSON(ctx, d.Staging, planKey(l), &ps)
	return ps, ok, err
}

func putJSON(ctx context.Context, st storage.Store, key string, v any) error {
	return storage.PutJSON(ctx, st, key, v)
}

// getJSON reads key into v; ok is false when it does not exist.
func getJSON(ctx context.Context, st storage.Store, key string, v any) (ok bool, err error) {
	return storage.GetJSON(ctx, st, key, v)
}
