package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mssqlcdc/mssqlcdc/core/checkpoint"
	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// simWritable reports whether a --sim run may write to url: local disk (a path, file://
// or file:/), or S3 through an emulator on this machine (storage.s3_endpoint on a
// loopback address, and storage.dynamo_endpoint too when commits go through a DynamoDB
// log table): never AWS itself.
func simWritable(url string, st config.Storage) bool {
	scheme, _, ok := strings.Cut(url, "://")
	if !ok || strings.EqualFold(scheme, "file") {
		return true
	}
	return loopback(st.S3Endpoint) && (st.DynamoTable == "" || loopback(st.DynamoEndpoint))
}

// loopback reports whether endpoint is an http(s) URL on a loopback address.
func loopback(endpoint string) bool {
	u, err := neturl.Parse(endpoint)
	if err != nil || endpoint == "" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkSimLocal refuses a --sim run whose spec (or extra location: export's --to) names a
// location it may not write (simWritable): a simulated run writes simulated rows, and
// must never write them into real tables.
func checkSimLocal(spec *config.Spec, extra ...string) error {
	return checkSimLocations(spec, urlsOf("--to", extra)...)
}

// checkSimLocations is checkSimLocal with the extra locations named by their fields.
func checkSimLocations(spec *config.Spec, extra ...struct{ field, url string }) error {
	for _, l := range append([]struct{ field, url string }{{"bronze", spec.Bronze}, {"checkpoint", spec.Checkpoint}, {"facts_table", spec.FactsTable}},
		extra...) {
		if l.url != "" && !simWritable(l.url, spec.Storage) {
			return &usageError{msg: fmt.Sprintf("--sim writes simulated rows, so it writes only to local paths or to S3 and DynamoDB emulators on this machine (storage.s3_endpoint, storage.dynamo_endpoint on 127.0.0.1): %s is %s; point a copy of the spec at local paths (docs/getting-started.md)", l.field, l.url)}
		}
	}
	return nil
}

// claimSpecLocations makes the spec's locations fit for this run before anything is
// written (deltalog.ClaimLocation): bronze, the facts table and the checkpoint, with or
// without sim (the Lambda handlers claim nothing: the CLI checks here, before it
// connects, what a handler's first write would find). A simulated run may write only to
// local locations that are new or that a simulated run made; a real run refuses a
// location a simulated run made; and a location with files but no table is refused,
// never adopted.
func claimSpecLocations(ctx context.Context, spec *config.Spec, sim bool) error {
	if sim {
		if err := checkSimLocal(spec); err != nil {
			return err
		}
	}
	want := deltalog.Location{Sim: sim}
	cfg := connect.Location(spec)
	locs := urlsOf("bronze", []string{spec.Bronze})
	locs = append(locs, urlsOf("facts_table", []string{spec.FactsTable})...)
	if spec.Snapshot == config.SnapshotChunked {
		locs = append(locs, urlsOf("facts_table (its plans table)", []string{spec.PlansTable()})...)
	}
	for _, l := range locs {
		if l.url == "" {
			continue
		}
		tbl, err := connect.Table(ctx, l.url, cfg)
		if err != nil {
			return unwritable(l.field, l.url, err)
		}
		if err := tbl.Claim(ctx, want); err != nil {
			return unwritable(l.field, l.url, err)
		}
	}
	st, _, err := location.Open(ctx, spec.Checkpoint, cfg)
	if err != nil {
		return unwritable("checkpoint", spec.Checkpoint, err)
	}
	if err := deltalog.ClaimLocation(ctx, st, want, checkpointDirs...); err != nil {
		return unwritable("checkpoint", spec.Checkpoint, err)
	}
	return nil
}

// checkpointDirs are the key prefixes whose objects show that a stream, snapshot or seed
// has used a checkpoint location (a real run uses such a checkpoint without a marker as
// it is): the offsets and commits logs, generations, schema switches, snapshot staging and
// seed plans.
var checkpointDirs = []string{checkpoint.OffsetsDir, checkpoint.CommitsDir, checkpoint.GenerationsDir, checkpoint.SwitchesDir, "snapshots/", "seeds/"}

// LocationWriteError is a spec location on local disk that cannot be written: the field,
// the location, and why in the file system's words (permission denied, read-only file
// system, a file in its path, a directory that cannot be made there).
type LocationWriteError struct {
	Field, URL string
	// Path is the file or directory the failure is on; Reason what the file system said.
	Path, Reason string
	// Op is what failed ("cannot create directory", "cannot write a file in"); empty for
	// a file where a directory must be.
	Op  string
	Err error
}

func (e *LocationWriteError) Error() string {
	what := fmt.Sprintf("%s %s: %s", e.Op, e.Path, e.Reason)
	if e.Op == "" {
		what = e.Path + " is a file, not a directory"
	}
	return fmt.Sprintf("cannot write %s (%s): %s; point %s at a directory this user can create and write, or fix its permissions",
		e.Field, e.URL, what, strings.Fields(e.Field)[0])
}

func (e *LocationWriteError) Unwrap() error { return e.Err }

// unwritable turns a local file system failure to claim field's location into a
// *LocationWriteError; any other error (a foreign or simulated location, S3) is returned
// as it is, having its own words.
func unwritable(field, url string, err error) error {
	var nd *location.NotADirectoryError
	if errors.As(err, &nd) {
		return &LocationWriteError{Field: field, URL: url, Path: nd.File, Reason: "not a directory", Err: err}
	}
	var le *os.LinkError // the hard link or rename that puts a written file in place
	if errors.As(err, &le) {
		return &LocationWriteError{Field: field, URL: url, Op: "cannot write a file in", Path: filepath.Dir(le.New), Reason: le.Err.Error(), Err: err}
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return err
	}
	op := map[string]string{"mkdir": "cannot create directory", "stat": "cannot read", "open": "cannot write a file in"}[pe.Op]
	if op == "" {
		op = "cannot " + pe.Op
	}
	path := pe.Path
	if pe.Op != "mkdir" && pe.Op != "stat" {
		path = filepath.Dir(path)
	}
	return &LocationWriteError{Field: field, URL: url, Op: op, Path: path, Reason: pe.Err.Error(), Err: err}
}

func urlsOf(field string, urls []string) []struct{ field, url string } {
	var out []struct{ field, url string }
	for _, u := range urls {
		out = append(out, struct{ field, url string }{field, u})
	}
	return out
}
