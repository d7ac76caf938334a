package deltalog

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

// arrow-go's page writer, closing a column chunk, serializes the chunk's footer entry (the
// Thrift ColumnChunk) through a 4,096-byte bufio.Writer it never flushes: the file gets
// bytes of it exactly when the entry is longer than the buffer (parquetio.FooterEntrySpill,
// called by WritePlainChunk and ChunkPager.Close;
// docs/decisions/0020-checkpoint-pages-encoded-here.md, follow-ups).

// footerEntryBuffer is the size of that bufio.Writer, in bytes.
const footerEntryBuffer = 4096

// entryBytes is the compact-protocol size of a footer entry (a *format.ColumnChunk of
// arrow-go's, as FileMetaData.RowGroups[i].Columns[j]).
func entryBytes(t *testing.T, s thrift.TStruct) int {
	t.Helper()
	buf := thrift.NewTMemoryBuffer()
	if err := s.Write(context.Background(), thrift.NewTCompactProtocolConf(buf, nil)); err != nil {
		t.Fatal(err)
	}
	return buf.Len()
}

// statsEntryActions are a checkpoint whose add.stats column chunk has statistics of k
// bytes: a minimum of k/2 bytes and a maximum of the rest.
func statsEntryActions(k int) []Action {
	acts := headActions(2, 0)
	acts[3].Add.Stats = strings.Repeat("a", k/2)
	acts[4].Add.Stats = strings.Repeat("b", k-k/2)
	return acts
}

// statsEntry is the add.stats chunk's footer entry size in data, and where the chunk after
// it starts less where it ends (the bytes spilled between them).
func statsEntry(t *testing.T, data []byte) (size int, spilled int64) {
	t.Helper()
	_, md := footerOf(t, data)
	for col := range md.Schema.NumColumns() {
		if md.Schema.Column(col).ColumnPath().String() != "add.stats" {
			continue
		}
		cc := md.RowGroups[0].Columns[col]
		next := md.RowGroups[0].Columns[col+1].MetaData
		return entryBytes(t, cc), next.DataPageOffset - (cc.MetaData.DataPageOffset + cc.MetaData.TotalCompressedSize)
	}
	t.Fatal("no add.stats column")
	return 0, 0
}

// At the buffer's edge: an entry of 4,095 and 4,096 bytes stays in the buffer, one of
// 4,097 passes 4,096 bytes of it into the file (and the largest, both statistics at
// MaxStatsSize, 8,192 bytes); the files are pqarrow's, byte for byte.
func TestCheckpointFooterEntrySpillEdges(t *testing.T) {
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 50_000
	encode := func(acts []Action) []byte {
		got, err := encodeCheckpointByDay(acts, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeCheckpointPqarrow(acts, false)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes, pqarrow's %d, differing from byte %d", len(got), len(want), firstDiff(got, want))
		}
		return got
	}
	// The entry grows by a byte with each byte of statistics (their lengths' varints and
	// the chunk's sizes keeping their widths here): find the k giving each size.
	base, _ := statsEntry(t, encode(statsEntryActions(3800)))
	for _, c := range []struct {
		size    int
		spilled int64
	}{{footerEntryBuffer - 1, 0}, {footerEntryBuffer, 0}, {footerEntryBuffer + 1, footerEntryBuffer}} {
		t.Run(fmt.Sprintf("entry of %d bytes", c.size), func(t *testing.T) {
			acts := statsEntryActions(3800 + c.size - base)
			size, spilled := statsEntry(t, encode(acts))
			if size != c.size || spilled != c.spilled {
				t.Fatalf("entry of %d bytes, %d spilled; want %d, %d", size, spilled, c.size, c.spilled)
			}
		})
	}
	t.Run("statistics at MaxStatsSize", func(t *testing.T) {
		size, spilled := statsEntry(t, encode(statsEntryActions(2*4096)))
		if size <= 2*footerEntryBuffer || spilled != 2*footerEntryBuffer {
			t.Fatalf("entry of %d bytes, %d spilled; want past %d, %d spilled", size, spilled, 2*footerEntryBuffer, 2*footerEntryBuffer)
		}
	})
}

// parquetio.FooterEntrySpill serializes an entry to learn its size only when a bound of
// it passes the buffer: the bytes of the statistics' min and max, +64 for
// the rest of the statistics, +512 for the entry's integers, encodings and field headers,
// + the path. The rest of a checkpoint's entries (the path, the integers, the encodings,
// the lengths' varints) must stay under those 576 bytes (the path's allowance left out)
// in every column of the schema, with the largest offsets and sizes a checkpoint has.
func TestCheckpointFooterEntryRest(t *testing.T) {
	defer func(n int) { checkpointBatchRows = n }(checkpointBatchRows)
	checkpointBatchRows = 50_000
	long := headActions(3000, 0)
	for i := range long {
		if a := long[i].Add; a != nil {
			a.Stats += strings.Repeat(" ", 400) // two data pages
		}
	}
	sets := [][]Action{long, statsEntryActions(2 * 4096), variedActions(rand.New(rand.NewPCG(3, 4)), 3000, false)}
	most := 0
	for _, acts := range sets {
		data, err := encodeCheckpointByDay(acts, false)
		if err != nil {
			t.Fatal(err)
		}
		_, md := footerOf(t, data)
		for _, rg := range md.RowGroups {
			for _, cc := range rg.Columns {
				st, stats := cc.MetaData.Statistics, 0
				if st != nil {
					stats = len(st.Max) + len(st.Min) + len(st.MaxValue) + len(st.MinValue)
				}
				most = max(most, entryBytes(t, cc)-stats)
			}
		}
	}
	// The widest integers a chunk could hold (offsets and sizes of 2^63) add at most 5
	// bytes each to these (files of some MB) for about ten of them.
	const rest = 512 + 64
	if most+60 >= rest {
		t.Fatalf("an entry's bytes besides its statistics: up to %d (+60 for the widest integers), not under %d", most, rest)
	}
	t.Logf("an entry's bytes besides its statistics: at most %d", most)
}
