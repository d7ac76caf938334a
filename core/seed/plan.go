package seed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mssqlcdc/mssqlcdc/core/lsn"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Request is what a seed is asked to do: the seed machine's input, the CLI's flags.
type Request struct {
	// Copy is the copy's URL: a Delta table, a folder (or prefix) of Parquet files, or one
	// Parquet file.
	Copy string `json:"copy"`
	// CopyFiles lists Parquet files under Copy (keys relative to it) to read instead of
	// every *.parquet under it.
	CopyFiles []string `json:"copy_files,omitempty"`
	// CopyFormat is FormatDelta, FormatParquet, or FormatAuto (detect).
	CopyFormat string `json:"copy_format,omitempty"`
	// AsOf is where the copy ends (ParseAsOf).
	AsOf string `json:"as_of"`
	// AllowMissingColumns seeds a captured column the copy lacks as NULL instead of
	// refusing the copy.
	AllowMissingColumns bool `json:"allow_missing_columns,omitempty"`
	// Reseed seeds a newer copy over an older snapshot in bronze, for a new stream (new
	// checkpoint and app_id in the spec).
	Reseed bool `json:"reseed,omitempty"`
}

// normalized splits a Copy naming one Parquet file into its folder and the file.
func (r Request) normalized() Request {
	if len(r.CopyFiles) == 0 && strings.HasSuffix(strings.ToLower(r.Copy), ".parquet") {
		if i := strings.LastIndex(r.Copy, "/"); i > 0 {
			r.CopyFiles = []string{r.Copy[i+1:]}
			r.Copy = r.Copy[:i]
		}
	}
	return r
}

// Status is what Plan found.
type Status string

// Plan's outcomes.
const (
	// Planned: a new seed at L; convert every group, then commit.
	Planned Status = "planned"
	// Found: bronze already holds the seed at L (a rerun): nothing is converted; commit
	// only makes sure the bootstrap row is there.
	Found Status = "found"
)

// Group names one file group of a plan in the machine's payload: its index (the files are
// in the plan, in the staging area).
type Group struct {
	Index int `json:"index"`
}

// PlanResult is Plan's output.
type PlanResult struct {
	Status Status `json:"status"`
	// Seed is L with its commit time: the offset the stream starts after.
	Seed lsn.Offset `json:"seed"`
	// CaptureInstance is the configured instance, as SQL Server names it.
	CaptureInstance string `json:"capture_instance"`
	// Plan is the plan's id (Planned; "" for Found): the convert and commit steps name it.
	Plan string `json:"plan"`
	// Groups are the file groups to convert, Parallelism how many at once.
	Groups      []Group `json:"groups"`
	Parallelism int     `json:"parallelism"`
	// Files and Bytes are the copy's data files and their size.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// planState is seeds/<L>/<plan>/plan.json: everything the later steps need.
type planState struct {
	ID              string       `json:"id"`
	AppID           string       `json:"app_id"`
	CaptureInstance string       `json:"capture_instance"`
	Seed            lsn.Offset   `json:"seed"`
	AsOf            string       `json:"as_of"`
	Reseed          bool         `json:"reseed,omitempty"`
	Copy            string       `json:"copy"`
	Format          string       `json:"format"`
	Version         int64        `json:"version"` // the Delta copy's version; -1 for Parquet
	Columns         []columnPlan `json:"columns"`
	Groups          [][]copyFile `json:"groups"`
	StartedAt       time.Time    `json:"started_at"`
}

// Staging keys under the checkpoint prefix (docs/seed.md § Staging): a plan is keyed by
// the seed's LSN and its id, so two plans of one LSN (a copy that changed between two
// runs) never mix their groups' manifests.
func planKey(l lsn.LSN, id string) string { return "seeds/" + l.String() + "/" + id + "/plan.json" }
func groupKey(l lsn.LSN, id string, i int) string {
	return fmt.Sprintf("seeds/%s/%s/groups/%d.json", l, id, i)
}

// Plan starts a seed (docs/seed.md § How it runs): the rules (mode lock, as_of to L, a seed
// already at L, other snapshots, retention), then the copy's files in groups and its
// columns matched to the captured ones, recorded as the plan in the staging area. A rerun
// whose seed bronze already holds returns Found and opens no copy.
func Plan(ctx context.Context, d Deps, req Request) (PlanResult, error) {
	req = req.normalized()
	asOf, err := ParseAsOf(req.AsOf)
	if err != nil {
		return PlanResult{}, err
	}
	// Both required fields are checked before SQL Server is asked anything, so a missing
	// copy is not reported as whatever the as_of lookup finds first.
	if err := requireCopy(req.Copy); err != nil {
		return PlanResult{}, err
	}
	started := d.now()
	dec, err := d.decide(ctx, asOf, req.Reseed)
	if err != nil {
		return PlanResult{}, err
	}
	out := PlanResult{Status: Found, Seed: dec.Seed, CaptureInstance: dec.CI.Name, Groups: []Group{}, Parallelism: d.Options.parallelism()}
	if dec.Found {
		return out, nil
	}
	cd, err := openCopy(ctx, d.OpenCopy, req.Copy, req.CopyFormat, -1)
	if err != nil {
		return PlanResult{}, err
	}
	files, err := cd.files(ctx, req.CopyFiles)
	if err != nil {
		return PlanResult{}, err
	}
	schema, err := cd.schema(ctx, files)
	if err != nil {
		return PlanResult{}, err
	}
	cols, err := d.Source.CapturedColumns(ctx, dec.CI.Name)
	if err != nil {
		return PlanResult{}, fmt.Errorf("read captured columns: %w", err)
	}
	cplan, err := mapColumns(cols, schema, req.AllowMissingColumns)
	if err != nil {
		return PlanResult{}, err
	}
	st := planState{AppID: d.Spec.AppID, CaptureInstance: dec.CI.Name, Seed: dec.Seed, AsOf: asOf.String(), Reseed: req.Reseed,
		Copy: req.Copy, Format: cd.format, Version: -1, Columns: cplan,
		Groups: groupFiles(files, d.Options.groupBytes(), d.Options.maxGroups())}
	if cd.snap != nil {
		st.Version = cd.snap.Version()
	}
	st.ID = st.id()
	st.StartedAt = started
	if err := storage.PutJSON(ctx, d.Staging, planKey(dec.Seed.LSN, st.ID), st); err != nil {
		return PlanResult{}, err
	}
	out.Status, out.Plan = Planned, st.ID
	for i := range st.Groups {
		out.Groups = append(out.Groups, Group{Index: i})
	}
	for _, f := range files {
		out.Files++
		out.Bytes += f.Size
	}
	return out, nil
}

// id is a digest of what the plan reads and where its rows go: the same inputs plan the
// same id.
func (st planState) id() string {
	st.StartedAt, st.ID = time.Time{}, ""
	b, _ := json.Marshal(st)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// groupFiles cuts files (in order) into groups of about target bytes each, a file never
// split; when that makes more than maxGroups groups, the target grows until it does not.
func groupFiles(files []copyFile, target int64, maxGroups int) [][]copyFile {
	var total int64
	for _, f := range files {
		total += f.Size
	}
	target = max(target, (total+int64(maxGroups)-1)/int64(maxGroups), 1)
	for {
		groups := [][]copyFile{}
		var cur []copyFile
		var bytes int64
		for _, f := range files {
			if len(cur) > 0 && bytes+f.Size > target {
				groups = append(groups, cur)
				cur, bytes = nil, 0
			}
			cur = append(cur, f)
			bytes += f.Size
		}
		if len(cur) > 0 {
			groups = append(groups, cur)
		}
		if len(groups) <= maxGroups {
			return groups
		}
		target += target / 4
	}
}

// loadPlan reads the plan id of seed l; a missing one is a *PlanNotFoundError.
func loadPlan(ctx context.Context, d Deps, l lsn.LSN, id string) (planState, error) {
	var st planState
	ok, err := storage.GetJSON(ctx, d.Staging, planKey(l, id), &st)
	if err != nil {
		return planState{}, err
	}
	if !ok || id == "" {
		return planState{}, &PlanNotFoundError{Seed: l, Plan: id}
	}
	return st, nil
}
