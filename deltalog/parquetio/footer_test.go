package parquetio

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// footerSchema decodes the Thrift FileMetaData at the end of f with parquet-go's format
// package (no code shared with the writer, nothing derived by a reader's schema mapping)
// and returns its schema elements by name.
func footerSchema(t *testing.T, f *os.File, size int64) map[string]format.SchemaElement {
	t.Helper()
	tail := make([]byte, 8)
	if _, err := f.ReadAt(tail, size-8); err != nil || string(tail[4:]) != "PAR1" {
		t.Fatalf("no Parquet footer: %q %v", tail, err)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	raw := make([]byte, n)
	if _, err := f.ReadAt(raw, size-8-n); err != nil {
		t.Fatal(err)
	}
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), raw, &md); err != nil {
		t.Fatal(err)
	}
	out := map[string]format.SchemaElement{}
	for _, e := range md.Schema {
		out[e.Name] = e
	}
	return out
}

// The footer's bytes annotate timestamps exactly as Spark writes them (parquet-java's
// ParquetMetadataConverter, which follows the Parquet format's LogicalTypes.md): INT64 with
// the logical type TIMESTAMP(MICROS), isAdjustedToUTC=false for timestamp_ntz and true for
// timestamp, and in both cases the legacy converted type TIMESTAMP_MICROS, which the format
// requires writers to add to local timestamps too so that readers older than logical types
// can read them. Checked on the bytes, because a reader's schema mapping hides it (arrow-go
// reports no converted type once a logical type is present). docs/decisions/0010.
func TestFooterTimestampAnnotationsAreSparks(t *testing.T) {
	f, size := writeAllTypes(t)
	schema := footerSchema(t, f, size)
	for name, wantLogical := range map[string]string{
		"_commit_ts":      "TIMESTAMP(isAdjustedToUTC=false,unit=MICROS)",
		"c_datetime2":     "TIMESTAMP(isAdjustedToUTC=false,unit=MICROS)",
		"c_datetime":      "TIMESTAMP(isAdjustedToUTC=false,unit=MICROS)",
		"c_smalldatetime": "TIMESTAMP(isAdjustedToUTC=false,unit=MICROS)",
		"c_dto":           "TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)",
	} {
		e, ok := schema[name]
		if !ok {
			t.Errorf("no %s in the footer", name)
			continue
		}
		if !e.Type.Valid || e.Type.V != format.Int64 {
			t.Errorf("%s: physical type %v, want INT64", name, e.Type)
		}
		if got := e.LogicalType.String(); got != wantLogical {
			t.Errorf("%s: logical type %s, want %s", name, got, wantLogical)
		}
		if !e.ConvertedType.Valid || e.ConvertedType.V != deprecated.TimestampMicros {
			t.Errorf("%s: converted type %v, want TIMESTAMP_MICROS (what parquet-java writes for every MICROS timestamp)", name, e.ConvertedType)
		}
	}
}
