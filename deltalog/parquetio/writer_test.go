package parquetio

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

func TestWriterRollsFilesAtTargetSize(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	tmp := t.TempDir()
	w := NewWriter(st, s, WriterOptions{TargetFileSize: 256 << 10, RowGroupBytes: 64 << 10, TempDir: tmp})
	const batches, rows = 8, 10_000
	for i := range batches {
		rec := bronzeRecord(memory.DefaultAllocator, s, rows, i == 0)
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	files, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d files, want several", len(files))
	}
	var total int64
	names := map[string]bool{}
	for i, f := range files {
		total += f.NumRecords
		if names[f.Path] {
			t.Errorf("name %s reused", f.Path)
		}
		names[f.Path] = true
		if f.Path[:10] != "part-0000"+string(rune('0'+i)) {
			t.Errorf("file %d named %s", i, f.Path)
		}
		var stats struct{ NumRecords int64 }
		if err := json.Unmarshal([]byte(f.Stats), &stats); err != nil || stats.NumRecords != f.NumRecords {
			t.Errorf("stats %s", f.Stats)
		}
		// A file ends at most one slice of rows past the target.
		if f.Size > 256<<10+sliceRows*100 {
			t.Errorf("file %s is %d bytes", f.Path, f.Size)
		}
		got := readAll(t, st, f.Path, nil)
		if got.NumRows() != f.NumRecords {
			t.Errorf("file %s: read %d rows, File says %d", f.Path, got.NumRows(), f.NumRecords)
		}
		got.Release()
	}
	if total != batches*rows {
		t.Errorf("%d rows in files, wrote %d", total, batches*rows)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriterRefusesOtherSchemaAndBadOptions(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	other := mustSchema(t, allTypeColumns)
	rec := bronzeRecord(memory.DefaultAllocator, other, 2, false)
	defer rec.Release()
	var se *SchemaMismatchError
	if err := NewWriter(st, s, WriterOptions{}).Write(ctx, rec); !errors.As(err, &se) {
		t.Errorf("other schema: %v", err)
	}
	var oe *OptionError
	for _, o := range []WriterOptions{{Codec: "gzip"}, {TargetFileSize: -1}, {RowGroupBytes: -5}, {NumIndexedCols: -2}} {
		if err := NewWriter(st, other, o).Write(ctx, rec); !errors.As(err, &oe) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestWriterEmptyCloseAndAbort(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	w := NewWriter(st, s, WriterOptions{})
	files, err := w.Close(ctx)
	if err != nil || len(files) != 0 {
		t.Errorf("empty writer: %v, %v", files, err)
	}
	if _, err := w.Close(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v", err)
	}

	tmp := t.TempDir()
	w = NewWriter(st, s, WriterOptions{TargetFileSize: 64 << 10, RowGroupBytes: 64 << 10, TempDir: tmp})
	rec := bronzeRecord(memory.DefaultAllocator, s, 20_000, false)
	defer rec.Release()
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	small := bronzeRecord(memory.DefaultAllocator, s, 10, false)
	defer small.Release()
	if err := w.Write(ctx, small); err != nil {
		t.Fatal(err)
	}
	uploaded := len(w.files)
	if uploaded == 0 || w.cur == nil {
		t.Fatalf("want uploaded files and an open one, got %d, %v", uploaded, w.cur)
	}
	if err := w.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	for obj, err := range st.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("after Abort, %s is left", obj.Key)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := w.Write(ctx, rec); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Abort: %v", err)
	}
}

// putErrStore fails every Put.
type putErrStore struct{ storage.Store }

var errPut = errors.New("put refused")

func (putErrStore) Put(context.Context, string, io.Reader, int64) error { return errPut }

func TestWriterReportsUploadError(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	tmp := t.TempDir()
	w := NewWriter(putErrStore{st}, s, WriterOptions{TempDir: tmp})
	rec := bronzeRecord(memory.DefaultAllocator, s, 10, false)
	defer rec.Release()
	if err := w.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(ctx); !errors.Is(err, errPut) {
		t.Errorf("Close: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWriterSpillsLargeFiles: a file is encoded in memory until it passes spillBytes,
// then in one temporary file; both kinds upload whole, read back, and leave no temporary
// file after Close or Abort.
func TestWriterSpillsLargeFiles(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t)
	s := mustSchema(t, benchColumns)
	tmp := t.TempDir()
	temps := func() int {
		left, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		return len(left)
	}
	for _, c := range []struct {
		name  string
		rows  int
		spill bool
		abort bool
	}{{"small", 2_000, false, false}, {"large", 50_000, true, false}, {"large, aborted", 50_000, true, true}} {
		w := NewWriter(st, s, WriterOptions{RowGroupBytes: 64 << 10, TempDir: tmp})
		rec := bronzeRecord(memory.DefaultAllocator, s, c.rows, false)
		if err := w.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if w.cur == nil || w.cur.cw.n == 0 {
			t.Fatalf("%s: no row group encoded yet", c.name)
		}
		if spilled := temps() == 1; spilled != c.spill || (w.cur.cw.n > spillBytes) != c.spill {
			t.Fatalf("%s: %d bytes encoded, %d temporary files", c.name, w.cur.cw.n, temps())
		}
		if c.abort {
			if err := w.Abort(ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			files, err := w.Close(ctx)
			if err != nil || len(files) != 1 {
				t.Fatalf("%s: %v, %v", c.name, files, err)
			}
			got := readAll(t, st, files[0].Path, nil)
			if got.NumRows() != int64(c.rows) || files[0].NumRecords != int64(c.rows) {
				t.Errorf("%s: read %d rows, File says %d, wrote %d", c.name, got.NumRows(), files[0].NumRecords, c.rows)
			}
			got.Release()
			if info, err := st.Head(ctx, files[0].Path); err != nil || info.Size != files[0].Size {
				t.Errorf("%s: uploaded %+v (%v), File says %d bytes", c.name, info, err, files[0].Size)
			}
		}
		if n := temps(); n != 0 {
			t.Errorf("%s: %d temporary files left", c.name, n)
		}
	}
}
