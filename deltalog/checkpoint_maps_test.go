package deltalog

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// nullMapValues counts the null values of the map field of the struct column col.
func nullMapValues(t *testing.T, data []byte, col, field string) int {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	idx := tbl.Schema().FieldIndices(col)[0]
	n := 0
	for _, chunk := range tbl.Column(idx).Data().Chunks() {
		st := chunk.(*array.Struct)
		fi, _ := st.DataType().(interface{ FieldIdx(string) (int, bool) }).FieldIdx(field)
		m := st.Field(fi).(*array.Map)
		n += m.Items().NullN()
	}
	return n
}

// Only partition values use the empty string for null (docs/reference/delta-protocol.md §3).
// Configuration, format options and tags are plain string maps: an empty value stays an empty
// string in a checkpoint, as in the JSON commit (Spark reads a null configuration value as a
// missing one, or fails on it).
func TestCheckpointKeepsEmptyStringsOutsidePartitionValues(t *testing.T) {
	md := lgMetadata()
	md.Configuration = map[string]string{"delta.checkpointInterval": "10", "note": ""}
	md.Format.Options = map[string]string{"o": ""}
	add := testAdd("x")
	add.Tags = map[string]string{"tag": ""}
	add.PartitionValues = map[string]string{}
	data, err := encodeCheckpoint([]Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}}, {MetaData: md}, {Add: &add}})
	if err != nil {
		t.Fatal(err)
	}
	if n := nullMapValues(t, data, "metaData", "configuration"); n != 0 {
		t.Errorf("metaData.configuration has %d null values, want 0", n)
	}
	if n := nullMapValues(t, data, "add", "tags"); n != 0 {
		t.Errorf("add.tags has %d null values, want 0", n)
	}
}
