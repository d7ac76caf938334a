package deltalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/thrift/lib/go/thrift"
)

// A carried checkpoint's footer splices the carried row groups' footer entries as the
// bytes serialized by an earlier checkpoint (rowGroupSplicer,
// docs/decisions/0014-checkpoint-tombstones.md, follow-up "The carried groups' footer
// entries"). The footer must be byte for byte what serializing the whole FileMetaData
// gives, with the list's length counting the spliced entries, on both sides of the
// compact protocol's short list header (up to 14 elements) and its long one.

// footerOf is the footer of Parquet file data as written (the Thrift bytes between the
// last row group's chunks and the length) and as arrow-go parses it.
func footerOf(t *testing.T, data []byte) ([]byte, *metadata.FileMetaData) {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	raw := data[len(data)-8-n : len(data)-8]
	md, err := metadata.NewFileMetaData(raw, nil)
	if err != nil {
		t.Fatalf("parse the footer: %v", err)
	}
	return raw, md
}

// thriftOf serializes md whole, every row group by the generated Thrift code: the footer
// as it was written before entries were spliced.
func thriftOf(t *testing.T, md *metadata.FileMetaData) []byte {
	t.Helper()
	buf := thrift.NewTMemoryBuffer()
	if err := md.FileMetaData.Write(context.Background(), thrift.NewTCompactProtocolConf(buf, nil)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// assertCanonicalFooter fails when checkpoint data's footer differs from the whole
// FileMetaData it holds serialized afresh, or when a row group's column chunks are not one
// run of bytes inside the file where the footer says.
func assertCanonicalFooter(t *testing.T, data []byte, what string) {
	t.Helper()
	raw, md := footerOf(t, data)
	if want := thriftOf(t, md); !bytes.Equal(raw, want) {
		t.Fatalf("%s: the footer (%d bytes) is not the serialized FileMetaData (%d bytes)", what, len(raw), len(want))
	}
	for rg := range md.RowGroups {
		if _, err := groupOf(md, rg, data); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// The splicer against the generated code: a footer of 0–30 row groups, any number of them
// spliced as entries serialized alone, is the same bytes (list headers of 1 byte up to 14
// elements, of 2 from 15).
func TestCarriedFooterSpliced(t *testing.T) {
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 1
	acts := []Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}}, {MetaData: lgMetadata("p")}}
	for i := range 28 {
		acts = append(acts, Action{Add: lgAdd(i)})
	}
	data, err := encodeCheckpoint(acts)
	if err != nil {
		t.Fatal(err)
	}
	raw, md := footerOf(t, data)
	if len(md.RowGroups) != 30 {
		t.Fatalf("%d row groups, want 30", len(md.RowGroups))
	}
	all := md.RowGroups
	defer func() { md.RowGroups = all }()
	for _, k := range []int{0, 1, 13, 14, 15, 29, 30} {
		for _, total := range slices.Compact([]int{max(k, 1), k + 1, 30}) {
			if total > 30 {
				continue
			}
			t.Run(fmt.Sprintf("%d of %d spliced", k, total), func(t *testing.T) {
				entries := make([][]byte, k)
				for i := range k {
					buf := thrift.NewTMemoryBuffer()
					if err := all[i].Write(context.Background(), thrift.NewTCompactProtocolConf(buf, nil)); err != nil {
						t.Fatal(err)
					}
					entries[i] = buf.Bytes()
				}
				md.RowGroups = all[:total]
				want := thriftOf(t, md)
				if total == 30 && !bytes.Equal(want, raw) {
					t.Fatal("the footer serialized again differs from arrow-go's")
				}
				md.RowGroups = all[k:total]
				buf := thrift.NewTMemoryBuffer()
				p := &rowGroupSplicer{TCompactProtocol: thrift.NewTCompactProtocolConf(buf, nil), out: buf, entries: entries}
				if err := md.FileMetaData.Write(context.Background(), p); err != nil {
					t.Fatal(err)
				}
				if p.entries != nil {
					t.Fatal("the entries were not spliced")
				}
				if got := buf.Bytes(); !bytes.Equal(got, want) {
					t.Fatalf("spliced footer: %d bytes, differing from the whole footer's %d", len(got), len(want))
				}
			})
		}
	}
}
