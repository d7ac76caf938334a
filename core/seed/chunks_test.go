package seed_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pgo "github.com/parquet-go/parquet-go"

	"github.com/mssqlcdc/mssqlcdc/core/seed"
	"github.com/mssqlcdc/mssqlcdc/core/source"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
	"github.com/mssqlcdc/mssqlcdc/deltalog"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
	"github.com/mssqlcdc/mssqlcdc/internal/testfiles"
	"github.com/mssqlcdc/mssqlcdc/internal/testlake"
)

// seededFiles are bronze's files after a seed: their add actions and their rows (the
// columns cols as texts, sorted).
func seededFiles(t *testing.T, e *env, cols []string) ([]deltalog.Add, []string) {
	t.Helper()
	snap, err := e.lake.RawTable(e.spec.Bronze).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	e.scanBronze(cols, func(rec arrow.RecordBatch) { rows = append(rows, rowTexts(rec)...) }, nil)
	slices.Sort(rows)
	return snap.Files(), rows
}

// convertCopied plans a seed of url and converts its first group, returning how many
// column chunks were copied as they are.
func convertCopied(t *testing.T, e *env, url string) int {
	t.Helper()
	ctx := context.Background()
	plan, err := seed.Plan(ctx, e.deps(), seed.Request{Copy: url, AsOf: e.maxLSN().String()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := seed.Convert(ctx, e.deps(), plan.Seed, plan.Plan, plan.Groups[0])
	if err != nil {
		t.Fatal(err)
	}
	return r.CopiedChunks
}

// COVID-19_NYT (a Databricks table: parquet-mr 1.10, dictionary pages without their
// offset in the footer) seeded with its county, state, fips, cases and deaths chunks
// copied as they are and its date texts parsed: bronze holds the same rows, with the
// same Delta statistics, as when every column is decoded and encoded again.
func TestCopiedChunksMatchDecoding(t *testing.T) {
	url := testfiles.DeltaTable(t, "COVID-19_NYT")
	names := []string{"date", "county", "state", "fips", "cases", "deaths", "_operation", "_start_lsn", "_commit_ts", "_snapshot", "_capture_instance"}
	seedIt := func(decodeAll bool) (int, []deltalog.Add, []string) {
		e := newEnv(t, testlake.Local, cdcsim.TableSpec{Name: "covid", Columns: covidColumns}, cdcsim.Config{})
		e.db.Idle()
		e.opts.DecodeAll = decodeAll
		copied := convertCopied(t, e, url)
		res := e.mustRun(seed.Request{Copy: url, AsOf: e.maxLSN().String()})
		if *res.Commit.Rows != 1_111_930 {
			t.Fatalf("seeded %d rows", *res.Commit.Rows)
		}
		adds, rows := seededFiles(t, e, names)
		return copied, adds, rows
	}
	copied, adds, rows := seedIt(false)
	decCopied, decAdds, decRows := seedIt(true)
	if copied != 8*5 || decCopied != 0 {
		t.Fatalf("copied %d chunks (want 40: five columns of eight files), %d decoding all", copied, decCopied)
	}
	if len(adds) != 1 || len(decAdds) != 1 {
		t.Fatalf("%d and %d files", len(adds), len(decAdds))
	}
	if adds[0].Stats != decAdds[0].Stats {
		t.Fatalf("statistics differ:\ncopied  %s\ndecoded %s", adds[0].Stats, decAdds[0].Stats)
	}
	if len(rows) != len(decRows) {
		t.Fatalf("%d rows, %d decoding all", len(rows), len(decRows))
	}
	for i := range rows {
		if rows[i] != decRows[i] {
			t.Fatalf("row %d: %q, decoding all %q", i, rows[i], decRows[i])
		}
	}
}

// kSpec is dbo.k: an int key, a text, a date and a bigint.
var kSpec = cdcsim.TableSpec{Name: "k", Key: []string{"id"}, Columns: []source.Column{
	{Name: "id", DataType: "int"}, {Name: "v", DataType: "nvarchar", MaxLength: 40, Nullable: true},
	{Name: "d", DataType: "date", Nullable: true}, {Name: "n", DataType: "bigint", Nullable: true}}}

// kRecord is a user's copy of dbo.k with n rows: ID int32, V text (a few distinct values,
// NULL every 7th row), D a date as text, N int64; edit changes row i's texts.
func kRecord(n int, edit func(i int, v, d *string)) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	ib, vb, db, nb := array.NewInt32Builder(mem), array.NewStringBuilder(mem), array.NewStringBuilder(mem), array.NewInt64Builder(mem)
	defer ib.Release()
	defer vb.Release()
	defer db.Release()
	defer nb.Release()
	for i := range n {
		v, d := fmt.Sprintf("value %d", i%5), fmt.Sprintf("2024-01-%02d", 1+i%28)
		if edit != nil {
			edit(i, &v, &d)
		}
		ib.Append(int32(i + 1))
		if i%7 == 3 {
			vb.AppendNull()
		} else {
			vb.Append(v)
		}
		db.Append(d)
		nb.Append(int64(i) << 33)
	}
	cols := []arrow.Array{ib.NewArray(), vb.NewArray(), db.NewArray(), nb.NewArray()}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "ID", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "V", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "D", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "N", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil), cols, int64(n))
}

// writeCopy writes rec as a user's Parquet file of 64-row row groups with a codec per
// column.
func writeCopy(t *testing.T, e *env, url string, rec arrow.RecordBatch, codecs map[string]compress.Compression) {
	t.Helper()
	opts := []parquet.WriterProperty{parquet.WithMaxRowGroupLength(64)}
	for col, c := range codecs {
		opts = append(opts, parquet.WithCompressionFor(col, c))
	}
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.lake.RawStore(url).Put(context.Background(), "part-0.parquet", bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatal(err)
	}
}

// A copy whose columns have different codecs: the copied chunks keep theirs (gzip, zstd)
// in bronze's files, a chunk of a codec not every reader decodes (LZ4_RAW) and the cast
// columns get bronze's Snappy; arrow-go (deltalog's scan) and parquet-go (a reader that
// shares no code with the writer) read every value, and the Delta statistics are those
// of decoding everything.
func TestMixedCodecsInBronze(t *testing.T) {
	rec := kRecord(150, nil)
	defer rec.Release()
	codecs := map[string]compress.Compression{"ID": compress.Codecs.Gzip, "V": compress.Codecs.Zstd, "D": compress.Codecs.Snappy, "N": compress.Codecs.Lz4Raw}
	var want []string
	for i := range 150 {
		v := fmt.Sprintf("value %d", i%5)
		if i%7 == 3 {
			v = "(null)"
		}
		want = append(want, fmt.Sprintf("%d|%s|2024-01-%02d|%d", i+1, v, 1+i%28, int64(i)<<33))
	}
	slices.Sort(want)
	seedIt := func(decodeAll bool) (*env, int, []deltalog.Add, []string) {
		e := newEnv(t, testlake.Local, kSpec, cdcsim.Config{})
		e.db.Idle()
		e.opts.DecodeAll = decodeAll
		url := e.lake.URL("copy")
		writeCopy(t, e, url, rec, codecs)
		copied := convertCopied(t, e, url)
		e.mustRun(seed.Request{Copy: url, AsOf: e.maxLSN().String(), AllowMissingColumns: true})
		adds, rows := seededFiles(t, e, []string{"id", "v", "d", "n"})
		return e, copied, adds, rows
	}
	e, copied, adds, rows := seedIt(false)
	_, decCopied, decAdds, decRows := seedIt(true)
	// id and v of each of the three row groups; n is LZ4_RAW, d is cast.
	if copied != 6 || decCopied != 0 {
		t.Fatalf("copied %d chunks (want 6), %d decoding all", copied, decCopied)
	}
	if strings.Join(rows, ",") != strings.Join(want, ",") || strings.Join(decRows, ",") != strings.Join(want, ",") {
		t.Fatalf("bronze rows\n%v\n%v\nwant\n%v", rows, decRows, want)
	}
	if len(adds) != 1 || len(decAdds) != 1 || adds[0].Stats != decAdds[0].Stats {
		t.Fatalf("statistics differ:\ncopied  %v\ndecoded %v", adds, decAdds)
	}
	ctx := context.Background()
	const jan1 = 19723 // 2024-01-01 in days since the epoch
	store := e.lake.RawTable(e.spec.Bronze).Store()
	src, err := parquetio.OpenSource(ctx, store, adds[0].DecodedPath(), adds[0].Size)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	md := src.MetaData()
	wantCodec := map[string]compress.Compression{"id": compress.Codecs.Gzip, "v": compress.Codecs.Zstd, "d": compress.Codecs.Snappy,
		"n": compress.Codecs.Snappy, "_capture_instance": compress.Codecs.Snappy}
	if md.NumRowGroups() != 3 {
		t.Fatalf("%d row groups, want the copy's 3", md.NumRowGroups())
	}
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		lo, hi := 64*g, min(64*g+63, 149) // the row group's first and last row
		for i := range rg.NumColumns() {
			m, err := rg.ColumnChunk(i)
			if err != nil {
				t.Fatal(err)
			}
			name := m.PathInSchema().String()
			if c, ok := wantCodec[name]; ok && m.Compression() != c {
				t.Errorf("row group %d column %s: codec %s, want %s", g, name, m.Compression(), c)
			}
			// The Parquet statistics readers skip row groups by: carried from the copy
			// (id, v), or from the written dictionaries (d, the stamp columns).
			st, err := m.Statistics()
			if err != nil || st == nil || !st.HasMinMax() {
				if name == "id" || name == "d" || name == "v" || name == "_capture_instance" {
					t.Fatalf("row group %d column %s: no statistics (%v)", g, name, err)
				}
				continue
			}
			var gotMin, gotMax, wantMin, wantMax string
			switch s := st.(type) {
			case *metadata.Int32Statistics:
				gotMin, gotMax = fmt.Sprint(s.Min()), fmt.Sprint(s.Max())
			case *metadata.ByteArrayStatistics:
				gotMin, gotMax = string(s.Min()), string(s.Max())
			}
			switch name {
			case "id":
				wantMin, wantMax = fmt.Sprint(lo+1), fmt.Sprint(hi+1)
			case "d":
				wantMin, wantMax = fmt.Sprint(jan1), fmt.Sprint(jan1+27)
			case "v":
				wantMin, wantMax = "value 0", "value 4"
			case "_capture_instance":
				wantMin, wantMax = "dbo_k", "dbo_k"
			default:
				continue
			}
			if gotMin != wantMin || gotMax != wantMax {
				t.Errorf("row group %d column %s: statistics %s..%s, want %s..%s", g, name, gotMin, gotMax, wantMin, wantMax)
			}
		}
	}
	// parquet-go reads every row of the spliced file.
	data, err := store.GetRange(ctx, adds[0].DecodedPath(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pgo.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rg := range pf.RowGroups() {
		rr := rg.Rows()
		buf := make([]pgo.Row, 100)
		for {
			n, err := rr.ReadRows(buf)
			for _, r := range buf[:n] {
				vals := map[string]string{}
				for _, v := range r {
					name := pf.Schema().Columns()[v.Column()][0]
					switch {
					case v.IsNull():
						vals[name] = "(null)"
					case name == "d":
						vals[name] = fmt.Sprint(v.Int32())
					default:
						vals[name] = v.String()
					}
				}
				got = append(got, vals["id"]+"|"+vals["v"]+"|"+vals["d"]+"|"+vals["n"]+"|"+vals["_capture_instance"])
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rr.Close()
	}
	if len(got) != 150 {
		t.Fatalf("parquet-go read %d rows", len(got))
	}
	slices.Sort(got)
	for _, row := range got {
		var id int
		if _, err := fmt.Sscanf(row, "%d|", &id); err != nil {
			t.Fatal(err)
		}
		i := id - 1
		v := fmt.Sprintf("value %d", i%5)
		if i%7 == 3 {
			v = "(null)"
		}
		if w := fmt.Sprintf("%d|%s|%d|%d|dbo_k", id, v, jan1+i%28, int64(i)<<33); row != w {
			t.Fatalf("parquet-go row %q, want %q", row, w)
		}
	}
}

// A value refused in a chunk that would be copied (a text longer than nvarchar(40), found
// in its dictionary) or in a text read as its dictionary (a date that does not exist) is
// the CastError of decoding: the file, the row group and the row of its first row.
func TestCastErrorInCopiedOrDictionaryChunk(t *testing.T) {
	for _, tc := range []struct {
		name          string
		edit          func(i int, v, d *string)
		group, row    int64
		column, value string
	}{
		{name: "text too long", column: "v", group: 2, row: 2, value: strings.Repeat("x", 41),
			edit: func(i int, v, _ *string) {
				if i == 130 || i == 140 {
					*v = strings.Repeat("x", 41)
				}
			}},
		{name: "no such date", column: "d", group: 1, row: 6, value: "2024-02-30",
			edit: func(i int, _, d *string) {
				if i == 70 || i == 75 {
					*d = "2024-02-30"
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, testlake.Local, kSpec, cdcsim.Config{})
			e.db.Idle()
			url := e.lake.URL("copy")
			rec := kRecord(150, tc.edit)
			defer rec.Release()
			writeCopy(t, e, url, rec, nil)
			_, err := e.run(seed.Request{Copy: url, AsOf: e.maxLSN().String()})
			var ce *seed.CastError
			if !errors.As(err, &ce) {
				t.Fatalf("seed: %v, want *CastError", err)
			}
			if ce.File != "part-0.parquet" || int64(ce.RowGroup) != tc.group || ce.Row != tc.row || ce.FileRow != 64*tc.group+tc.row ||
				ce.Column != tc.column || ce.Value != tc.value {
				t.Fatalf("cast error %+v", ce)
			}
			if e.bronzeVersion() != -1 {
				t.Fatal("a refused seed committed")
			}
		})
	}
}
