package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/snapshot"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/stream"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
)

// unreachable is the simulated database with SQL Server gone: listing capture instances
// fails as the mssql source fails, a *source.TransientError naming its operation.
type unreachable struct{ source.Source }

func (unreachable) CaptureInstances(context.Context) ([]source.CaptureInstance, error) {
	return nil, &source.TransientError{Op: "list capture instances", Err: errors.New("dial tcp 127.0.0.1:1433: connect: connection refused")}
}

// repeatedPrefix reports a segment that msg repeats right after itself ("a: a: b",
// "x (a): a: b").
func repeatedPrefix(msg string) (string, bool) {
	parts := strings.Split(msg, ": ")
	for i := 1; i < len(parts); i++ {
		if parts[i] == parts[i-1] || strings.HasSuffix(parts[i-1], "("+parts[i]+")") {
			return parts[i], true
		}
	}
	return "", false
}

// An error names each operation once: the snapshot and the stream add their own context
// to a Source's error without repeating the operation it already names (issue 12:
// "list capture instances: list capture instances: transient: ...").
func TestErrorsNameTheOperationOnce(t *testing.T) {
	ctx := context.Background()
	spec := loadSpec(t, writeSimSpec(t))
	ds, err := setupDemoSource(demoOptions{Rows: 10, Seed: 1}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	src := unreachable{ds.db}

	sdeps, err := connect.SnapshotDeps(ctx, spec, src)
	if err != nil {
		t.Fatal(err)
	}
	_, serr := snapshot.Run(ctx, sdeps)

	spec2 := *spec
	spec2.Bootstrap, spec2.Options.StartingLsn = false, config.StartEarliest
	tdeps, err := connect.StreamDeps(ctx, &spec2, src)
	if err != nil {
		t.Fatal(err)
	}
	_, terr := stream.Run(ctx, &spec2, tdeps, quietStreamOptions(io.Discard))

	for name, err := range map[string]error{"snapshot": serr, "stream": terr} {
		if err == nil || !strings.Contains(err.Error(), "list capture instances") || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%s: %v, want the failed operation and its cause", name, err)
			continue
		}
		if seg, ok := repeatedPrefix(err.Error()); ok {
			t.Errorf("%s: %q repeats %q", name, err, seg)
		}
	}
}
