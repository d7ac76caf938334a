package rebuild

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/ingest"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

type change struct {
	lsn, seq string
	cmd      int32 // -1: NULL (snapshot row)
	op       int32
	id       int32
	v        string
}

// writeBronze commits rows (in the order given) as one bronze file.
func writeBronze(t *testing.T, rows []change) *deltalog.Snapshot {
	t.Helper()
	ctx := context.Background()
	sc, err := bronze.Schema([]source.Column{{Name: "id", DataType: "int"}, {Name: "v", DataType: "nvarchar", MaxLength: 10, Nullable: true}})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for i, f := range sc.Fields() {
			fb := b.Field(i)
			switch f.Name {
			case bronze.ColStartLSN:
				fb.(*array.StringBuilder).Append(r.lsn)
			case bronze.ColSeqval:
				if r.seq == "" {
					fb.AppendNull()
				} else {
					fb.(*array.StringBuilder).Append(r.seq)
				}
			case bronze.ColOperation:
				fb.(*array.Int32Builder).Append(r.op)
			case bronze.ColCommandID:
				if r.cmd < 0 {
					fb.AppendNull()
				} else {
					fb.(*array.Int32Builder).Append(r.cmd)
				}
			case "id":
				fb.(*array.Int32Builder).Append(r.id)
			case "v":
				fb.(*array.StringBuilder).Append(r.v)
			default:
				fb.AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	lake := testlake.New(t, testlake.Local)
	tbl := lake.Table(lake.URL("bronze"))
	w := ingest.NewWriter(tbl.Store(), sc, parquetio.WriterOptions{})
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	files, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Append(ctx, tbl, nil, ingest.Commit{AppID: "test", Schema: sc, Files: files}); err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestLatestImagePerKey(t *testing.T) {
	const L1, L2, L3 = "0x00000000000000000001", "0x00000000000000000002", "0x00000000000000000003"
	rows := []change{
		// written out of order on purpose: the order comes from the columns.
		{L2, "0x02", 1, 4, 1, "b"},    // update after-image of 1
		{L1, "", -1, 0, 1, "snap"},    // snapshot row of 1 at L1
		{L2, "0x02", 1, 3, 1, "a"},    // before-image of 1
		{L1, "", -1, 0, 2, "snap"},    // snapshot row of 2
		{L2, "0x03", 2, 3, 2, "snap"}, // key update 2 -> 20 as 3+4 (old key: 3 not outranked)
		{L2, "0x03", 2, 4, 20, "snap"},
		{L3, "0x04", 1, 2, 3, "x"}, // insert then delete of 3 in one commit
		{L3, "0x05", 2, 1, 3, "x"},
		{L3, "0x06", 3, 1, 4, "y"}, // delete then re-insert of 4 (1 < 2 by command id)
		{L3, "0x07", 4, 2, 4, "z"},
	}
	st, lg, err := FromBronze(context.Background(), writeBronze(t, rows), []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range st.Rows {
		got[k] = v[1]
	}
	want := map[string]string{"1": "b", "20": "snap", "4": "z"}
	if len(got) != len(want) {
		t.Fatalf("state %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %s = %q, want %q", k, got[k], v)
		}
	}
	if lg.Duplicates != 0 || lg.ChangeRows() != 8 || lg.ByOp[0] != 2 {
		t.Errorf("log %+v", lg)
	}
	// The same change twice is a duplicate.
	_, lg, _ = FromBronze(context.Background(), writeBronze(t, append(rows, rows[0])), []string{"id"})
	if lg.Duplicates != 1 {
		t.Errorf("duplicates %d, want 1", lg.Duplicates)
	}
}

func TestDiff(t *testing.T) {
	a := &State{Columns: []string{"id", "v"}, Rows: map[string][]string{"1": {"1", "a"}, "2": {"2", "b"}}}
	b := &State{Columns: []string{"ID", "v", "extra"}, Rows: map[string][]string{"1": {"1", "a", "x"}, "3": {"3", "c", "x"}}}
	d := Diff(a, b, 0)
	if len(d) != 2 || !strings.Contains(strings.Join(d, "\n"), "key 2: missing") || !strings.Contains(strings.Join(d, "\n"), "key 3: unexpected") {
		t.Errorf("diff %v", d)
	}
	b.Rows["3"] = nil
	delete(b.Rows, "3")
	b.Rows["2"] = []string{"2", "B", "x"}
	if d := Diff(a, b, 0); len(d) != 1 || !strings.Contains(d[0], "v = B, want b") {
		t.Errorf("diff %v", d)
	}
}

// After a re-snapshot into the same bronze (data loss: the changes between the two
// snapshots are gone), the state is rebuilt from the newest snapshot S and the changes
// after it (docs/snapshots.md; docs/reference/original-library.md §9.1). A key deleted in
// the lost gap has no delete row; only its absence from the newer snapshot says it is gone.
func TestRebuildStartsAtTheNewestSnapshot(t *testing.T) {
	const L1, L2, L3, L4 = "0x00000000000000000001", "0x00000000000000000002", "0x00000000000000000003", "0x00000000000000000004"
	rows := []change{
		{L1, "", -1, 0, 1, "old"}, // first snapshot: keys 1 and 2
		{L1, "", -1, 0, 2, "old"},
		{L2, "0x02", 1, 4, 1, "stale"}, // a change before the re-snapshot
		{L3, "", -1, 0, 1, "new"},      // re-snapshot: key 2 was deleted in the lost gap
		{L4, "0x05", 1, 2, 5, "ins"},   // a change after it
	}
	st, _, err := FromBronze(context.Background(), writeBronze(t, rows), []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range st.Rows {
		got[k] = v[1]
	}
	if len(got) != 2 || got["1"] != "new" || got["5"] != "ins" {
		t.Fatalf("state %v, want 1=new and 5=ins (2 is gone with the lost gap)", got)
	}
}
