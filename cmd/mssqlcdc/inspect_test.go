package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
)

// writeInspectTable creates, at url, a table partitioned by p with a timestamp_ntz column
// (protocol 3/7), versions 0..11 each adding one 10-row file with txn(stream, v), a
// txn(stream#snap.S, 0) at version 5, and a checkpoint of version 10.
func writeInspectTable(t *testing.T, url string, cfg location.Config) {
	t.Helper()
	ctx := context.Background()
	store, logs, err := location.Open(ctx, url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"ts","type":"timestamp_ntz","nullable":true,"metadata":{}},` +
		`{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"decimal(19,4)","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}},` +
		`{"name":"p","type":"string","nullable":true,"metadata":{}}]}`
	st, err := deltalog.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	proto := deltalog.ProtocolFor(st)
	tbl := deltalog.Open(store, logs, deltalog.Options{})
	for v := int64(0); v <= 11; v++ {
		var acts []deltalog.Action
		if v == 0 {
			acts = append(acts, deltalog.Action{Protocol: &proto}, deltalog.Action{MetaData: &deltalog.Metadata{
				ID: "table-id-1", SchemaString: schema, PartitionColumns: []string{"p"},
				Configuration: map[string]string{"delta.checkpointInterval": "10"},
			}})
		} else {
			acts = append(acts,
				deltalog.Action{Add: &deltalog.Add{
					Path: fmt.Sprintf("p=a/part-%05d.parquet", v), PartitionValues: map[string]string{"p": "a"},
					Size: 1000, ModificationTime: 1, DataChange: true, Stats: `{"numRecords":10}`,
				}},
				deltalog.Action{Txn: &deltalog.Txn{AppID: "stream", Version: v}})
		}
		if v == 5 {
			acts = append(acts, deltalog.Action{Txn: &deltalog.Txn{AppID: "stream#snap.S", Version: 0}})
		}
		data, err := deltalog.EncodeActions(acts)
		if err != nil {
			t.Fatal(err)
		}
		if err := logs.Write(ctx, v, data); err != nil {
			t.Fatal(err)
		}
		if v == 10 {
			snap, err := tbl.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := deltalog.WriteCheckpoint(ctx, snap); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestInspectText(t *testing.T) {
	dir := t.TempDir()
	writeInspectTable(t, dir, location.Config{})
	out, errOut, code := runCLI(t, "inspect", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := squash(out)
	for _, want := range []string{
		"version: 11\n",
		"protocol: reader 3, writer 7\n",
		"reader features: timestampNtz\n",
		"writer features: timestampNtz\n",
		"table id: table-id-1\n",
		"partition columns: p\n",
		"live files: 11 (11000 bytes)\n",
		"rows (stats): 110\n",
		"read from checkpoint: version 10, then commits 11..11\n",
		"_last_checkpoint file: version 10, 14 actions, 10 add files, ",
		"txn versions:\nstream 11\nstream#snap.S 0\n",
		"configuration:\ndelta.checkpointInterval 10\n",
		"schema:\nid long nullable\nts timestamp_ntz nullable\ns struct nullable\nx decimal(19,4) not null\np string nullable\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "\n    x  decimal(19,4)") {
		t.Errorf("nested field not indented:\n%s", out)
	}
}

// squash collapses each line's runs of spaces to one and trims it.
func squash(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		b.WriteString(strings.Join(strings.Fields(line), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestInspectJSONAndTimeTravel(t *testing.T) {
	dir := t.TempDir()
	writeInspectTable(t, dir, location.Config{})
	abs, _ := filepath.Abs(dir)
	// Flags after the URL, as the usage line shows, and a file:// URL.
	out, errOut, code := runCLI(t, "inspect", "file://"+filepath.ToSlash(abs), "--json", "--version", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Version != 4 || rep.LiveFiles != 4 || rep.Rows == nil || *rep.Rows != 40 || rep.LastCheckpoint != nil ||
		rep.TxnVersions["stream"] != 4 || len(rep.TxnVersions) != 1 || rep.Protocol.MinWriterVersion != 7 ||
		rep.PartitionColumns[0] != "p" || rep.LastCheckpointFile == nil || rep.LastCheckpointFile.Version != 10 {
		t.Errorf("report %+v", rep)
	}
	if !strings.Contains(string(rep.Schema), `"timestamp_ntz"`) {
		t.Errorf("schema %s", rep.Schema)
	}
}

// TestInspectS3 inspects an s3:// table on the in-process S3 emulator.
func TestInspectS3(t *testing.T) {
	s3 := emulators.StartS3(t)
	bucket := s3.Bucket(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEMULATOR")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "emulator-secret")
	t.Setenv("AWS_REGION", emulators.Region)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	url := "s3://" + bucket + "/lake/orders"
	writeInspectTable(t, url, location.Config{Endpoint: s3.URL, PathStyle: true})
	out, errOut, code := runCLI(t, "inspect", url, "--endpoint", s3.URL, "--path-style", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Table != url || rep.Version != 11 || rep.LiveFiles != 11 || *rep.Rows != 110 || *rep.LastCheckpoint != 10 || rep.TxnVersions["stream"] != 11 {
		t.Errorf("report %+v", rep)
	}
}

func TestInspectRefusalsAndErrors(t *testing.T) {
	features := filepath.Join(testfiles.DeltaDir(t), "simple_table_features")
	_, errOut, code := runCLI(t, "inspect", features)
	if code != 1 || !strings.Contains(errOut, `reader feature "blahabl" is not supported`) {
		t.Errorf("simple_table_features: exit %d, %q", code, errOut)
	}
	empty := t.TempDir()
	if _, errOut, code := runCLI(t, "inspect", empty); code != 1 || !strings.Contains(errOut, "no Delta table") {
		t.Errorf("empty directory: exit %d, %q", code, errOut)
	}
	if _, _, code := runCLI(t, "inspect"); code != 2 {
		t.Errorf("no URL: exit %d, want 2", code)
	}
	if _, _, code := runCLI(t, "inspect", "a", "b"); code != 2 {
		t.Errorf("two URLs: exit %d, want 2", code)
	}
	if _, err := inspectTable(context.Background(), empty, location.Config{}, -1); !errors.Is(err, errNoTable) {
		t.Errorf("inspectTable(empty) = %v", err)
	}
}

// TestInspectGoldenTable reads a Spark-written table with a checkpoint.
func TestInspectGoldenTable(t *testing.T) {
	out, errOut, code := runCLI(t, "inspect", filepath.Join(testfiles.DeltaDir(t), "checkpoint_with_partitions"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Version != 2 || rep.LiveFiles != 2 || rep.LastCheckpoint == nil || *rep.LastCheckpoint != 2 || rep.Protocol.MinReaderVersion != 1 {
		t.Errorf("report %+v", rep)
	}
}

// inspect's row total is of live rows: Databricks deleted rows 0 and 9 of the 10 in
// table-with-dv-small with a deletion vector, so 8 rows are live and 2 marked deleted.
func TestInspectCountsLiveRowsAfterDeletionVectors(t *testing.T) {
	out, errOut, code := runCLI(t, "inspect", filepath.Join(testfiles.DeltaDir(t), "table-with-dv-small"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Rows == nil || *rep.Rows != 8 || rep.DeletedRows != 2 {
		t.Fatalf("rows %v, deleted %d; want 8 live, 2 deleted", rep.Rows, rep.DeletedRows)
	}
	text, _, _ := runCLI(t, "inspect", filepath.Join(testfiles.DeltaDir(t), "table-with-dv-small"))
	if !strings.Contains(text, "8 live (2 more marked deleted by deletion vectors)") {
		t.Fatalf("text report:\n%s", text)
	}
}

// A checkpoint whose stats are only in stats_parsed (Spark with writeStatsAsJson=false):
// inspect totals its rows from add.stats_parsed.numRecords.
func TestInspectStatsParsedOnly(t *testing.T) {
	out, errOut, code := runCLI(t, "inspect", filepath.Join("..", "..", "deltalog", "testdata", "protocol", "v1-single-part-struct-stats-only"), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Rows == nil || *rep.Rows != 5 || rep.FilesWithoutStats != 0 || rep.LastCheckpoint == nil {
		t.Fatalf("rows %v, %d files without stats, checkpoint %v; want 5, 0, read from a checkpoint", rep.Rows, rep.FilesWithoutStats, rep.LastCheckpoint)
	}
}

// The help of inspect and show shows no "(default -1)" for --version (a user read -1 as a
// version), says the default is the latest, and a negative --version is refused as a usage
// error instead of being taken silently as "the latest"; --version 0 is version 0.
func TestVersionFlagHelpAndNegatives(t *testing.T) {
	for _, cmd := range []string{"inspect", "show"} {
		help, _, code := runCLI(t, cmd, "-h")
		if code != 0 {
			t.Errorf("%s -h: exit %d", cmd, code)
		}
		if strings.Contains(help, "(default -1)") || !strings.Contains(help, "default: the latest version") {
			t.Errorf("%s -h, --version's line:\n%s", cmd, help)
		}
		_, errOut, code := runCLI(t, cmd, t.TempDir(), "--version", "-1")
		if code != 2 || !strings.Contains(errOut, "-version") {
			t.Errorf("%s --version -1: exit %d, stderr %q; want 2 and the flag named", cmd, code, errOut)
		}
	}
	dir := t.TempDir()
	writeInspectTable(t, dir, location.Config{})
	out, errOut, code := runCLI(t, "inspect", dir, "--json", "--version", "0")
	var rep inspectReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Version != 0 {
		t.Errorf("inspect --version 0: exit %d, version %d, stderr %s", code, rep.Version, errOut)
	}
}
