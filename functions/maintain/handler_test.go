package maintain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/deltatest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/internal/connect"
	"github.com/mssqlcdc/mssqlcdc/internal/runtimeapi/runtimeapitest"
)

// smallFiles creates a table at dir with n small files, one commit each
// (deltatest.AppendIDs).
func smallFiles(t *testing.T, dir string, n int) {
	t.Helper()
	tbl, err := connect.Table(context.Background(), dir, location.Config{})
	if err != nil {
		t.Fatal(err)
	}
	deltatest.AppendIDs(t, tbl, 0, n)
}

func fixture(t *testing.T, bronzeFiles, factsFiles int) (*Handler, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	spec := &config.Spec{AppID: "orders-v1", Bronze: filepath.Join(dir, "bronze"), FactsTable: filepath.Join(dir, "facts")}
	if bronzeFiles > 0 {
		smallFiles(t, spec.Bronze, bronzeFiles)
	}
	if factsFiles > 0 {
		smallFiles(t, spec.FactsTable, factsFiles)
	}
	logs := &bytes.Buffer{}
	h := New(spec, OpenTables, slog.New(slog.NewJSONHandler(logs, nil)))
	h.TempDir = t.TempDir()
	return h, logs
}

// {} maintains bronze, then facts: both compacted and checkpointed, the report per table
// and a log line each. A dry run changes nothing; "tables" picks one.
func TestMaintainsBronzeAndFacts(t *testing.T) {
	h, logs := fixture(t, 5, 3)
	invoke := runtimeapitest.Start(t, "maintain", h.Handle).Invoke
	r := invoke(`{"dry_run": true}`)
	if r.Error != nil {
		t.Fatalf("dry run: %s", r.ErrorBody)
	}
	var out Output
	if err := json.Unmarshal(r.Output, &out); err != nil || len(out.Tables) != 2 || out.Tables[0].Compact.FilesRemoved != 5 || !out.Tables[0].DryRun {
		t.Fatalf("dry run output %s, %v", r.Output, err)
	}
	r = invoke(`{"tables": ["facts"]}`)
	if err := json.Unmarshal(r.Output, &out); err != nil || len(out.Tables) != 1 || out.Tables[0].Name != "facts" || out.Tables[0].Compact.FilesRemoved != 3 {
		t.Fatalf("facts only: %s %s", r.Output, r.ErrorBody)
	}
	r = invoke(`{}`)
	out = Output{}
	if err := json.Unmarshal(r.Output, &out); err != nil || len(out.Tables) != 2 {
		t.Fatalf("output %s %s", r.Output, r.ErrorBody)
	}
	b, f := out.Tables[0], out.Tables[1]
	if b.Name != "bronze" || b.Compact.FilesRemoved != 5 || b.Compact.LiveFiles != 1 || !b.Checkpoint.Written || b.Vacuum == nil || b.CleanupLog == nil || b.TempFiles == nil {
		t.Fatalf("bronze report %s", r.Output)
	}
	// Facts was maintained by the run before: nothing left to do.
	if f.Name != "facts" || f.Compact.Commits != 0 || f.Compact.LiveFiles != 1 || f.Checkpoint.Written {
		t.Fatalf("facts report %s", r.Output)
	}
	for _, want := range []string{`"table":"bronze"`, `"table":"facts"`, `"compacted_files":5`, `"checkpoint_written":true`} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("log lacks %s:\n%s", want, logs)
		}
	}
}

// A table not created yet is skipped; a bad event and a failed open fail by name.
func TestMaintainErrorsAndMissingTables(t *testing.T) {
	h, _ := fixture(t, 2, 0)
	invoke := runtimeapitest.Start(t, "maintain", h.Handle).Invoke
	r := invoke(`{}`)
	var out Output
	if err := json.Unmarshal(r.Output, &out); err != nil || len(out.Tables) != 1 || out.Tables[0].Name != "bronze" {
		t.Fatalf("facts not created yet: %s %s", r.Output, r.ErrorBody)
	}
	// A bad event is an EventError whose message says it is the maintain event, not a
	// ConfigError's "invalid table spec" (the spec is fine).
	for _, payload := range []string{`{"tables": ["silver"]}`, `{"target_file_size": -1}`, `[]`, `{"dry_run": "yes, please"}`} {
		if r := invoke(payload); r.Error == nil || r.Error.Type != "EventError" || !strings.HasPrefix(r.Error.Message, "maintain event: ") ||
			strings.Contains(r.Error.Message, "table spec") {
			t.Errorf("%s: %s, want an EventError on the maintain event", payload, r.ErrorBody)
		}
	}
	// The refusal says what the field takes: 0 (or none) is the default size, not an error.
	if r := invoke(`{"target_file_size": -1}`); r.Error == nil || !strings.Contains(r.Error.Message, "0 or leave it out for") {
		t.Errorf("negative target_file_size: %s, want the message to say 0 is the default", r.ErrorBody)
	}
	for want, typed := range map[string]error{
		"ConcurrentModificationError": &deltalog.ConcurrentModificationError{Version: 3, Reason: "removed a file"},
		"UnexpectedError":             errors.New("bucket on fire"),
	} {
		h.Open = func(context.Context, *config.Spec) (*deltalog.Table, *deltalog.Table, error) {
			return nil, nil, fmt.Errorf("open: %w", typed)
		}
		if r := runtimeapitest.Start(t, "maintain", h.Handle).Invoke(`{}`); r.Error == nil || r.Error.Type != want {
			t.Errorf("%T: %s, want %s", typed, r.ErrorBody, want)
		}
	}
	h = New(nil, nil, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)))
	h.SpecErr = &config.ConfigError{Problems: []config.Problem{{Field: "app_id", Reason: "required"}}}
	if r := runtimeapitest.Start(t, "maintain", h.Handle).Invoke(`{}`); r.Error == nil || r.Error.Type != "ConfigError" {
		t.Errorf("invalid spec: %s", r.ErrorBody)
	}
}
