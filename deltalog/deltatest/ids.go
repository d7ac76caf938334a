package deltatest

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// IDSchema is the schema of the tables AppendIDs writes: one nullable bigint column, id.
var IDSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

// AppendIDs commits n one-file commits to tbl as the stream's batches do: for i in
// [from, from+n), one Parquet file of ids 10i..10i+9 (IDSchema), its add's
// modificationTime 1700000000000 + 1000i ms, and the txn ("stream", i+1). The first commit
// of an empty table sets the schema. Any error fails t.
func AppendIDs(t testing.TB, tbl *deltalog.Table, from, n int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for j := range 10 {
			b.Append(int64(10*i + j))
		}
		rec := array.NewRecordBatch(IDSchema, []arrow.Array{b.NewArray()}, 10)
		w := parquetio.NewWriter(tbl.Store(), IDSchema, parquetio.WriterOptions{TempDir: t.TempDir()})
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
		files, err := w.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := tbl.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.Begin(snap)
		if err := tx.SetSchema(IDSchema); err != nil {
			t.Fatal(err)
		}
		add := deltalog.AddFromParquet(files[0])
		add.ModificationTime = 1700000000000 + int64(i)*1000
		tx.Add(add)
		tx.SetAppTxn("stream", int64(i+1))
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// IDs returns every id in tbl's latest snapshot, read from its data files, sorted. The
// table's first column must be a bigint (IDSchema's). Any error fails t.
func IDs(t testing.TB, tbl *deltalog.Table) []int64 {
	t.Helper()
	ctx := context.Background()
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	it, err := snap.Scan(ctx, deltalog.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var ids []int64
	for {
		rec, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
		rec.Release()
	}
	slices.Sort(ids)
	return ids
}
