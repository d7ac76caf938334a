package deltalog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/parquet-go/parquet-go"

	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
)

// TestCheckpointMatchesSpark compares the Parquet layout of our checkpoint with the
// checkpoints Spark and delta-rs wrote in testdata/delta: every leaf column they
// have that we write must have the same path, physical type and logical type (a signed
// INT(64)/INT(32) annotation equals none), and Spark's nesting levels (delta-rs makes
// metaData.format.options required, Spark does not), so engines that read theirs read
// ours.
func TestCheckpointMatchesSpark(t *testing.T) {
	p := &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	ours, err := encodeCheckpoint([]Action{{Protocol: p}, {MetaData: lgMetadata("p")}, {Add: lgAdd(1)}})
	if err != nil {
		t.Fatal(err)
	}
	ourCols := parquetLeaves(t, ours)
	root := testfiles.DeltaDir(t)
	for cp, levels := range map[string]bool{
		"simple_table_with_checkpoint/_delta_log/00000000000000000010.checkpoint.parquet": true,  // Spark
		"checkpoint_with_partitions/_delta_log/00000000000000000002.checkpoint.parquet":   false, // delta-rs
	} {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(cp)))
		if err != nil {
			t.Fatal(err)
		}
		compared := 0
		for path, theirs := range parquetLeaves(t, data) {
			top, _, _ := strings.Cut(path, ".")
			if !checkpointColumns[top] || strings.HasPrefix(path, "remove.tags.") || strings.Contains(path, "_parsed.") {
				continue // columns we never write
			}
			mine, ok := ourCols[path]
			if !ok {
				t.Errorf("%s: column %s (%s) missing from our checkpoint", cp, path, theirs)
				continue
			}
			if !levels {
				mine, theirs = dropLevels(mine), dropLevels(theirs)
			}
			if mine != theirs {
				t.Errorf("%s: column %s is %s in theirs, %s in ours", cp, path, theirs, mine)
			}
			compared++
		}
		if compared < 20 {
			t.Errorf("%s: only %d columns compared", cp, compared)
		}
	}
}

// parquetLeaves maps each leaf column path to "physical logical def=N rep=N".
func parquetLeaves(t *testing.T, data []byte) map[string]string {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	out := map[string]string{}
	sc := pf.MetaData().Schema
	for i := 0; i < sc.NumColumns(); i++ {
		c := sc.Column(i)
		logical := "none"
		if lt := c.LogicalType(); lt != nil && !lt.Equals(schema.NoLogicalType{}) {
			logical = lt.String()
		}
		if logical == "Int(bitWidth=64, isSigned=true)" && c.PhysicalType().String() == "INT64" ||
			logical == "Int(bitWidth=32, isSigned=true)" && c.PhysicalType().String() == "INT32" {
			logical = "none"
		}
		out[c.ColumnPath().String()] = fmt.Sprintf("%s %s|def=%d rep=%d", c.PhysicalType(), logical, c.MaxDefinitionLevel(), c.MaxRepetitionLevel())
	}
	return out
}

func dropLevels(s string) string {
	before, _, _ := strings.Cut(s, "|")
	return before
}

// TestCheckpointReadByParquetGo reads our checkpoint with a second, independent Parquet
// implementation (parquet-go), by column name as engines do.
func TestCheckpointReadByParquetGo(t *testing.T) {
	p := &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"timestampNtz"}}
	data, err := encodeCheckpoint([]Action{{Protocol: p}, {MetaData: lgMetadata("p")}, {Add: lgAdd(1)}, {Txn: &Txn{AppID: "app", Version: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	type addRow struct {
		Path            string            `parquet:"path"`
		PartitionValues map[string]string `parquet:"partitionValues"`
		Size            int64             `parquet:"size"`
		DataChange      bool              `parquet:"dataChange"`
		Stats           string            `parquet:"stats"`
	}
	type protoRow struct {
		MinReaderVersion int32    `parquet:"minReaderVersion"`
		MinWriterVersion int32    `parquet:"minWriterVersion"`
		ReaderFeatures   []string `parquet:"readerFeatures,list"`
		WriterFeatures   []string `parquet:"writerFeatures,list"`
	}
	type metaRow struct {
		ID               string   `parquet:"id"`
		SchemaString     string   `parquet:"schemaString"`
		PartitionColumns []string `parquet:"partitionColumns,list"`
	}
	type txnRow struct {
		AppID   string `parquet:"appId"`
		Version int64  `parquet:"version"`
	}
	type row struct {
		Txn      *txnRow   `parquet:"txn,optional"`
		Add      *addRow   `parquet:"add,optional"`
		MetaData *metaRow  `parquet:"metaData,optional"`
		Protocol *protoRow `parquet:"protocol,optional"`
	}
	rows, err := parquet.Read[row](bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	if pr := rows[0].Protocol; pr == nil || pr.MinReaderVersion != 3 || pr.MinWriterVersion != 7 ||
		len(pr.ReaderFeatures) != 1 || pr.ReaderFeatures[0] != "timestampNtz" || len(pr.WriterFeatures) != 1 || rows[0].Add != nil {
		t.Errorf("protocol row %+v %+v", rows[0], pr)
	}
	if m := rows[1].MetaData; m == nil || m.ID != lgMetadata().ID || m.SchemaString != lgMetadata().SchemaString || len(m.PartitionColumns) != 1 || m.PartitionColumns[0] != "p" {
		t.Errorf("metaData row %+v", m)
	}
	want := lgAdd(1)
	if a := rows[2].Add; a == nil || a.Path != want.Path || a.PartitionValues["p"] != "1" || a.Size != want.Size || !a.DataChange || a.Stats != want.Stats {
		t.Errorf("add row %+v", a)
	}
	if x := rows[3].Txn; x == nil || x.AppID != "app" || x.Version != 4 {
		t.Errorf("txn row %+v", x)
	}
}
