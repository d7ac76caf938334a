package seed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
)

// TxnAppID is the Delta txn appId of a seed's commit, version 0 (docs/design.md §4.2):
// <app_id>#seed.<L>.
func TxnAppID(appID string, l lsn.LSN) string { return appID + snapshot.SeedMarker + l.String() }

// emptySuffix marks the txn of a seed whose copy held no rows: it adds no file, so only its
// txn says the seed exists (core/snapshot finds it as an empty table's snapshot).
const emptySuffix = "#empty"

// CommitResult is the output of Commit.
type CommitResult struct {
	// Version is the bronze version holding the seed; -1 when nothing was committed (a
	// found seed).
	Version int64 `json:"version"`
	// Rows are the seed's rows (nil when a found seed's count is unknown).
	Rows *int64 `json:"rows"`
	// Skipped is true when bronze already held the seed (a rerun).
	Skipped bool `json:"skipped"`
}

// seedMetadata is the commitInfo userMetadata of a seed's commit (docs/bronze.md
// § Commits): the capture instance, L and its commit time, the rows and where they came
// from.
type seedMetadata struct {
	Seed     string  `json:"seed"`
	LSN      lsn.LSN `json:"lsn"`
	CommitTS string  `json:"commit_ts"`
	Rows     int64   `json:"rows"`
	Copy     string  `json:"copy"`
	Version  *int64  `json:"copy_version,omitempty"`
}

// Commit appends every file group's files of plan id in one Delta commit keyed
// txn(<app_id>#seed.<L>, 0) (docs/design.md §4.2), so the seed appears at once and a rerun
// adds nothing, then writes the bootstrap facts row with the copy's row count, once. Before
// the commit it checks again what may have changed while the copy was converted: the mode
// lock, another snapshot in bronze, and that CDC cleanup has not passed L. An empty copy
// commits its txn alone (<app_id>#seed.<L>#empty), which is how the seed is found later.
// id "" (a found seed, Plan's Found) only offers the bootstrap row. A group without a
// manifest is a *MissingGroupError.
func Commit(ctx context.Context, d Deps, seed lsn.Offset, id string) (CommitResult, error) {
	if id == "" {
		return commitFound(ctx, d, seed)
	}
	st, err := loadPlan(ctx, d, seed.LSN, id)
	if err != nil {
		return CommitResult{}, err
	}
	keys := make([]string, len(st.Groups))
	for i := range st.Groups {
		keys[i] = groupKey(seed.LSN, id, i)
	}
	files, err := ingest.Gather(ctx, d.Staging, keys)
	var ns *ingest.NotStagedError
	if errors.As(err, &ns) {
		return CommitResult{}, &MissingGroupError{Seed: seed.LSN, Group: ns.Index}
	}
	if err != nil {
		return CommitResult{}, err
	}
	bronzeSnap, err := d.Bronze.Snapshot(ctx)
	if err != nil {
		return CommitResult{}, fmt.Errorf("read bronze: %w", err)
	}
	txnApp := TxnAppID(d.Spec.AppID, seed.LSN)
	if len(files.Adds) == 0 {
		txnApp += emptySuffix
	}
	res, replayed := ingest.Replayed(bronzeSnap, txnApp, 0)
	if !replayed {
		if err := d.recheck(ctx, st); err != nil {
			return CommitResult{}, err
		}
		schema, err := st.bronzeSchema(ctx, d)
		if err != nil {
			return CommitResult{}, err
		}
		meta := seedMetadata{Seed: st.CaptureInstance, LSN: seed.LSN, CommitTS: commitTS(seed), Rows: files.Rows, Copy: st.Copy}
		if st.Version >= 0 {
			meta.Version = &st.Version
		}
		mj, _ := json.Marshal(meta)
		res, err = ingest.Append(ctx, d.Bronze, bronzeSnap, ingest.Commit{AppID: txnApp, Version: 0, Schema: schema, Files: files,
			UserMetadata: string(mj), Operation: "WRITE",
			OperationParameters: map[string]string{"mode": "Append", "seed": seed.LSN.String(), "copy": st.Copy,
				"rows": strconv.FormatInt(files.Rows, 10), "bytes": strconv.FormatInt(files.Bytes, 10)}})
		if err != nil {
			return CommitResult{}, fmt.Errorf("commit seed to bronze: %w", err)
		}
	}
	rows := files.Rows
	if err := d.bootstrapRow(ctx, seed, &rows, &st.StartedAt); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Version: res.Version, Rows: &rows, Skipped: res.Replayed}, nil
}

// recheck repeats the rules that may have changed since the plan: the database still
// holds the history L was taken on (snapshot.CheckStampAs, "seed stamp L: ...": a restore
// while the copy was converted is a *source.LSNRewoundError), no snapshot open, no other snapshot appended to
// bronze meanwhile (this seed's own is not there yet: its txn was checked), and CDC
// cleanup not past L.
func (d Deps) recheck(ctx context.Context, st planState) error {
	if err := snapshot.CheckStampAs(ctx, d.Source, st.Seed, source.RecordedBySeedStamp); err != nil {
		return err
	}
	ci, insts, err := d.instances(ctx)
	if err != nil {
		return err
	}
	if err := d.modeLock(ctx, ci); err != nil {
		return err
	}
	held, err := snapshot.InBronze(ctx, d.Source, d.Bronze, ci.Name)
	if err != nil {
		return err
	}
	if err := checkOthers(held, st.Seed.LSN, st.Reseed, d.Spec.Bronze); err != nil {
		return err
	}
	asOf, _ := ParseAsOf(st.AsOf)
	return d.checkRetention(ctx, insts, st.Seed.LSN, asOf, true)
}

// commitFound handles a seed Plan found in bronze: nothing to commit; the bootstrap row is
// offered (a crash between the seed's commit and its row only delays the row), with the
// rows the seed's commit recorded when bronze's log still has it.
func commitFound(ctx context.Context, d Deps, seed lsn.Offset) (CommitResult, error) {
	held, err := snapshot.InBronze(ctx, d.Source, d.Bronze, d.Spec.Source.CaptureInstance)
	if err != nil {
		return CommitResult{}, err
	}
	found := false
	for _, w := range held.Whole {
		found = found || w.LSN == seed.LSN
	}
	if !found {
		return CommitResult{}, &PlanNotFoundError{Seed: seed.LSN}
	}
	rows, err := seedRows(ctx, d.Bronze, seed.LSN)
	if err != nil {
		return CommitResult{}, err
	}
	if err := d.bootstrapRow(ctx, seed, rows, nil); err != nil {
		return CommitResult{}, err
	}
	return CommitResult{Version: -1, Rows: rows, Skipped: true}, nil
}

// seedRows is the row count a seed commit at l recorded in its userMetadata, when bronze's
// log still holds that commit as JSON (nil otherwise).
func seedRows(ctx context.Context, bronzeT *deltalog.Table, l lsn.LSN) (*int64, error) {
	snap, err := bronzeT.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("read bronze: %w", err)
	}
	for v := snap.Version(); v > snap.CheckpointVersion() && v >= 0; v-- {
		ci, ok := snap.CommitInfo(v)
		if !ok || ci.UserMetadata == "" {
			continue
		}
		var m seedMetadata
		if json.Unmarshal([]byte(ci.UserMetadata), &m) == nil && m.Seed != "" && m.LSN == l {
			return &m.Rows, nil
		}
	}
	return nil, nil
}

// bootstrapRow writes the seed's bootstrap facts row (no facts table: nothing).
func (d Deps) bootstrapRow(ctx context.Context, seed lsn.Offset, rows *int64, started *time.Time) error {
	if d.Facts == nil {
		return nil
	}
	return snapshot.WriteBootstrapRow(ctx, d.Facts, d.Spec, seed, rows, started, d.now(), d.Options.Writer)
}

// commitTS is the offset's commit_ts as its JSON writes it ("" when unknown).
func commitTS(o lsn.Offset) string {
	if !o.HasTime() {
		return ""
	}
	return lsn.FormatTime(o.CommitTS)
}
