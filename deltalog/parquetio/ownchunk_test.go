package parquetio

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// chunkDiff describes where two Parquet files differ, column chunk by column chunk: the
// first chunk whose footer entry (offsets, sizes, encodings, statistics) or bytes differ,
// for a failing byte comparison to say which column and what.
func chunkDiff(got, want []byte) string {
	gr, err := file.NewParquetReader(bytes.NewReader(got))
	if err != nil {
		return "ours unreadable: " + err.Error()
	}
	wr, err := file.NewParquetReader(bytes.NewReader(want))
	if err != nil {
		return "pqarrow's unreadable: " + err.Error()
	}
	if gr.NumRowGroups() != wr.NumRowGroups() {
		return fmt.Sprintf("%d row groups, pqarrow %d", gr.NumRowGroups(), wr.NumRowGroups())
	}
	for rg := range gr.NumRowGroups() {
		g, w := gr.MetaData().RowGroup(rg), wr.MetaData().RowGroup(rg)
		for c := range g.NumColumns() {
			gc, _ := g.ColumnChunk(c)
			wc, _ := w.ColumnChunk(c)
			desc := func(cc interface {
				DataPageOffset() int64
				TotalCompressedSize() int64
				TotalUncompressedSize() int64
				NumValues() int64
			}) string {
				return fmt.Sprintf("data@%d comp %d uncomp %d values %d", cc.DataPageOffset(), cc.TotalCompressedSize(), cc.TotalUncompressedSize(), cc.NumValues())
			}
			gd, wd := desc(gc), desc(wc)
			gd += fmt.Sprintf(" dict %v@%d enc %v stats %v", gc.HasDictionaryPage(), gc.DictionaryPageOffset(), gc.Encodings(), gc.EncodingStats())
			wd += fmt.Sprintf(" dict %v@%d enc %v stats %v", wc.HasDictionaryPage(), wc.DictionaryPageOffset(), wc.Encodings(), wc.EncodingStats())
			gs, _ := gc.StatsSet()
			ws, _ := wc.StatsSet()
			if gs {
				st, _ := gc.Statistics()
				e, _ := st.Encode()
				gd += fmt.Sprintf(" min %x max %x nulls %d", e.Min, e.Max, e.NullCount)
			}
			if ws {
				st, _ := wc.Statistics()
				e, _ := st.Encode()
				wd += fmt.Sprintf(" min %x max %x nulls %d", e.Min, e.Max, e.NullCount)
			}
			if gd != wd {
				return fmt.Sprintf("row group %d column %d (%s):\n ours   %s\n pqarrow %s", rg, c, gc.PathInSchema(), gd, wd)
			}
			start := gc.DataPageOffset()
			if gc.HasDictionaryPage() {
				start = gc.DictionaryPageOffset()
			}
			end := start + gc.TotalCompressedSize()
			if !bytes.Equal(got[start:end], want[start:end]) {
				i := 0
				for got[start+int64(i)] == want[start+int64(i)] {
					i++
				}
				return fmt.Sprintf("row group %d column %d (%s): bytes differ at +%d of [%d,%d): ours % x, pqarrow % x", rg, c, gc.PathInSchema(), i, start, end,
					got[start+int64(i):min(end, start+int64(i)+16)], want[start+int64(i):min(end, start+int64(i)+16)])
			}
		}
	}
	return strings.TrimSpace("no chunk differs: the footers or the bytes between chunks do")
}
