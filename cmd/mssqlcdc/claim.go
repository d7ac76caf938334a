package main

import (
	"context"
	"fmt"
	"net"
	neturl "net/url"
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
	for _, l := range append([]struct{ field, url string }{{"bronze", spec.Bronze}, {"checkpoint", spec.Checkpoint}, {"facts_table", spec.FactsTable}},
		urlsOf("--to", extra)...) {
		if l.url != "" && !simWritable(l.url, spec.Storage) {
			return &usageError{msg: fmt.Sprintf("--sim writes simulated rows, so it writes only to local paths or to S3 and DynamoDB emulators on this machine (storage.s3_endpoint, storage.dynamo_endpoint on 127.0.0.1): %s is %s; point a copy of the spec at local paths (docs/getting-started.md)", l.field, l.url)}
		}
	}
	return nil
}

// claimSpecLocations makes the spec's locations fit for this run before anything is
// written (deltalog.ClaimLocation): bronze and the facts table, and with sim the
// checkpoint too. A simulated run may write only to local locations that are new or that
// a simulated run made; a real run refuses a location a simulated run made; and a
// location with files but no table is refused, never adopted.
func claimSpecLocations(ctx context.Context, spec *config.Spec, sim bool) error {
	if sim {
		if err := checkSimLocal(spec); err != nil {
			return err
		}
	}
	want := deltalog.Location{Sim: sim}
	cfg := connect.Location(spec)
	urls := []string{spec.Bronze, spec.FactsTable}
	if spec.Snapshot == config.SnapshotChunked {
		urls = append(urls, spec.PlansTable())
	}
	for _, url := range urls {
		if url == "" {
			continue
		}
		tbl, err := connect.Table(ctx, url, cfg)
		if err != nil {
			return err
		}
		if err := tbl.Claim(ctx, want); err != nil {
			return err
		}
	}
	if sim {
		st, _, err := location.Open(ctx, spec.Checkpoint, cfg)
		if err != nil {
			return err
		}
		if err := deltalog.ClaimLocation(ctx, st, want, checkpoint.OffsetsDir, checkpoint.CommitsDir, "snapshots/", "seeds/"); err != nil {
			return err
		}
	}
	return nil
}

func urlsOf(field string, urls []string) []struct{ field, url string } {
	var out []struct{ field, url string }
	for _, u := range urls {
		out = append(out, struct{ field, url string }{field, u})
	}
	return out
}
