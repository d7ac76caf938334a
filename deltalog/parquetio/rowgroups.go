package parquetio

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// RowGroupRows reads the footer of the Parquet file at key and returns the rows of each
// row group, in file order. A caller that reads a file's rows in order (ReadFile) and
// counts them can name the row group a row came from: RowGroupOf.
func RowGroupRows(ctx context.Context, store storage.Store, key string) ([]int64, error) {
	info, err := store.Head(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read parquet %s: %w", key, err)
	}
	pf, err := file.NewParquetReader(&rangeReader{ctx: ctx, store: store, key: key, size: info.Size})
	if err != nil {
		return nil, fmt.Errorf("read parquet %s: %w", key, err)
	}
	defer pf.Close()
	md := pf.MetaData()
	out := make([]int64, md.NumRowGroups())
	for i := range out {
		out[i] = md.RowGroup(i).NumRows()
	}
	return out, nil
}

// RowGroupOf is the row group holding the row at position pos (0-based, in file order)
// of a file whose row groups hold rows (RowGroupRows), and the row's position inside that
// row group; ok is false when pos is past the file's last row.
func RowGroupOf(rows []int64, pos int64) (group int, inGroup int64, ok bool) {
	for i, n := range rows {
		if pos < n {
			return i, pos, true
		}
		pos -= n
	}
	return 0, 0, false
}
