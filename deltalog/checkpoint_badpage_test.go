package deltalog

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
)

// badPageHeader is a Thrift compact PageHeader of a data page (type 0) with its sizes but
// without its data_page_header field: a well-formed header that arrow-go 18.8's page
// reader dereferences without checking (it panicked on such bytes, met when a footer
// pointed into the middle of a column chunk; docs/decisions/0014-checkpoint-tombstones.md,
// follow-up "The carried groups' footer entries").
var badPageHeader = []byte{0x15, 0x00, 0x15, 0x02, 0x15, 0x02, 0x00}

// A checkpoint whose footer is sound but whose pages are not is unreadable like any other
// corrupt checkpoint: the open falls back to an older one (here, the JSON commits), and a
// decode of it returns an error, instead of the process panicking.
func TestCheckpointWithBadPageFallsBack(t *testing.T) {
	ctx := context.Background()
	tbl := lgBase(t)
	for v := int64(1); v <= 12; v++ {
		lgCommit(t, tbl, v, Action{Add: lgAdd(int(v))})
		if v == 10 {
			s, err := tbl.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteCheckpoint(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	data := checkpointBytes(t, tbl, 10)
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data)
	for _, rg := range pf.MetaData().RowGroups {
		for _, c := range rg.Columns {
			copy(bad[c.MetaData.DataPageOffset:], badPageHeader)
		}
	}
	pf.Close()
	if _, err := decodeCheckpoint(ctx, bad, nil); !errors.Is(err, errUnreadableParquet) {
		t.Fatalf("decoding a checkpoint of bad pages: %v, want errUnreadableParquet", err)
	}
	if err := tbl.Store().Put(ctx, CheckpointFileKey(10), bytes.NewReader(bad), int64(len(bad))); err != nil {
		t.Fatal(err)
	}
	s, err := reopen(tbl).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != 12 || s.CheckpointVersion() != -1 || len(s.Files()) != 12 {
		t.Fatalf("version %d from checkpoint %d with %d files; want 12 from the commits (-1) with 12", s.Version(), s.CheckpointVersion(), len(s.Files()))
	}
}
