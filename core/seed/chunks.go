package seed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/mssqlcdc/mssqlcdc/core/bronze"
	"github.com/mssqlcdc/mssqlcdc/deltalog/parquetio"
)

// Converting a copy's file row group by row group, carrying the column chunks bronze can
// take as they are (docs/seed.md § Conversion). A copy row group becomes one bronze row
// group. A captured column is copied without decoding when its copy column is a flat
// optional column of bronze's Parquet type, read as bronze's Arrow type, and its chunk
// proves from its metadata that every value passes the cast unchanged:
//
//   - integers, dates and timestamps: the chunk's exact min and max (every such cast is a
//     range check) pass the cast; they are also the Delta statistics;
//   - strings: every data page is dictionary-encoded, and every dictionary value passes
//     the cast unchanged (length, UTF-8); the dictionary gives the Delta statistics.
//
// The NULL count comes from the chunk's statistics. Any other column, or a chunk that
// proves nothing, is decoded and cast as before, batch by batch, so a refused value is
// the same *CastError; the stamp columns are one dictionary value and a run of indices.
// Files this path does not take (a Delta file with a deletion vector or column mapping, a
// copy column from partition values, INT96 timestamps, row groups too big to hold their
// decoded columns) are converted record batch by record batch (convertFile).

// maxSpliceRows and maxSpliceDecodeBytes bound a copy row group converted as one bronze
// row group: the decoded columns of the row group (their Arrow size, estimated from the
// footer) are held until it is encoded.
const (
	maxSpliceRows        = 1 << 21
	maxSpliceDecodeBytes = 64 << 20
)

// splicer converts files of one group by row group into a parquetio.SpliceWriter.
type splicer struct {
	cv     *converter
	w      *parquetio.SpliceWriter
	codec  parquetio.Codec
	stamps arrow.RecordBatch // one row of bronze's schema: the stamp columns' values
	copied int               // column chunks copied as they are
	// deltaTypes are a Delta copy's column types by lower-cased name.
	deltaTypes map[string]arrow.DataType
}

func newSplicer(cv *converter, w *parquetio.SpliceWriter, codec parquetio.Codec) (*splicer, error) {
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	stamps, err := bronze.SnapshotRecord(cv.schema, one, cv.stamp)
	if err != nil {
		return nil, err
	}
	return &splicer{cv: cv, w: w, codec: codec, stamps: stamps}, nil
}

func (s *splicer) release() { s.stamps.Release() }

// spliceColumn is one plan column of a file: its leaf in the copy and, when the chunk
// may be copied, the leaf's bronze column.
type spliceColumn struct {
	plan  int // index in cv.plan
	leaf  int // the copy file's leaf column
	field int // index in the pqarrow manifest's fields
	raw   bool
	kind  arrow.Type // bronze's Arrow type id, when raw
}

// convert converts file f by row group; ok false (nothing written) when the file is not
// one this path takes.
func (s *splicer) convert(ctx context.Context, cd *copyData, f copyFile) (rows int64, ok bool, err error) {
	if f.DV || (cd.format == FormatParquet && len(hiveValues(f.Path)) > 0) {
		return 0, false, nil
	}
	if cd.format == FormatDelta {
		md := cd.snap.Metadata()
		if m := md.Configuration["delta.columnMapping.mode"]; (m != "" && m != "none") || len(md.PartitionColumns) > 0 {
			return 0, false, nil
		}
		if s.deltaTypes == nil {
			sch, err := cd.schema(ctx, nil)
			if err != nil {
				return 0, false, err
			}
			s.deltaTypes = map[string]arrow.DataType{}
			for _, fl := range sch.Fields() {
				s.deltaTypes[strings.ToLower(fl.Name)] = fl.Type
			}
		}
	}
	src, err := parquetio.OpenSource(ctx, cd.store, f.key(cd.format), f.Size)
	if err != nil {
		return 0, false, fmt.Errorf("copy %s: %w", cd.fileURL(f.Path), err)
	}
	defer src.Close()
	props := pqarrow.ArrowReadProperties{BatchSize: parquetio.ReadBatchRows}
	manifest, err := pqarrow.NewSchemaManifest(src.MetaData().Schema, src.MetaData().KeyValueMetadata(), &props)
	if err != nil {
		return 0, false, fmt.Errorf("copy %s: %w", cd.fileURL(f.Path), err)
	}
	bsc, err := s.w.ParquetSchema()
	if err != nil {
		return 0, false, err
	}
	fields := make([]arrow.Field, len(manifest.Fields))
	for i, mf := range manifest.Fields {
		fields[i] = *mf.Field
	}
	var cols []spliceColumn
	for i, p := range s.cv.plan {
		if p.Copy == "" {
			continue
		}
		j := fieldIndexFold(fields, p.Copy)
		if j < 0 {
			return 0, false, nil // a partition value, or a file without the column
		}
		mf := manifest.Fields[j]
		if len(mf.Children) > 0 || mf.ColIndex < 0 {
			return 0, false, nil
		}
		descr := src.MetaData().Schema.Column(mf.ColIndex)
		if descr.PhysicalType() == parquet.Types.Int96 {
			return 0, false, nil // read as parquetio.ReadFile reads it (microseconds)
		}
		if dt, ok := s.deltaTypes[strings.ToLower(p.Copy)]; cd.format == FormatDelta && (!ok || !arrow.TypeEqual(dt, mf.Field.Type)) {
			return 0, false, nil // the table's type differs from the file's: the scan's cast
		}
		c := spliceColumn{plan: i, leaf: mf.ColIndex, field: j}
		if bi := s.cv.schema.FieldIndices(p.Column.Name); len(bi) == 1 {
			want := s.cv.schema.Field(bi[0]).Type
			bd := bsc.Column(bi[0])
			c.raw = arrow.TypeEqual(want, mf.Field.Type) && rawKind(want) &&
				descr.PhysicalType() == bd.PhysicalType() && descr.MaxDefinitionLevel() == 1 && descr.MaxRepetitionLevel() == 0
			c.kind = want.ID()
		}
		if !c.raw && descr.PhysicalType() == parquet.Types.ByteArray && mf.Field.Type.ID() == arrow.STRING {
			// Texts to cast (a date as text, a GUID): read as the chunk's dictionary, so
			// each distinct text is cast once and written as a dictionary again.
			props.SetReadDict(mf.ColIndex, true)
		}
		cols = append(cols, c)
	}
	fr, err := pqarrow.NewFileReader(src.Reader, props, memory.DefaultAllocator)
	if err != nil {
		return 0, false, fmt.Errorf("copy %s: %w", cd.fileURL(f.Path), err)
	}
	md := src.MetaData()
	if v := md.WriterVersion(); v != nil && v.App == "parquet-mr" && v.LessThan(parquetMR18) {
		// Its pages may carry byte-array statistics in the wrong order (fixed in 1.8):
		// they are not carried under bronze's name.
		for i := range cols {
			cols[i].raw = false
		}
	}
	for g := 0; g < md.NumRowGroups(); g++ {
		rg := md.RowGroup(g)
		// The decoded columns' Arrow size: a fixed width per row, or an index or offset
		// per row plus the values (at most the chunk's uncompressed size), and the cast's
		// output as much again.
		var decode int64
		for _, c := range cols {
			if m, err := rg.ColumnChunk(c.leaf); err == nil && !c.raw {
				per := int64(4)
				if fw, ok := fields[c.field].Type.(arrow.FixedWidthDataType); ok {
					per = int64(max(fw.BitWidth()/8, 1))
				}
				decode += 2 * (rg.NumRows()*per + m.TotalUncompressedSize())
			}
		}
		if rg.NumRows() > maxSpliceRows || decode > maxSpliceDecodeBytes {
			return 0, false, nil
		}
	}
	for g := 0; g < md.NumRowGroups(); g++ {
		n, err := s.rowGroup(ctx, cd, f, src, fr, cols, g, rows)
		if err != nil {
			return 0, true, err
		}
		rows += n
	}
	return rows, true, nil
}

// parquetMR18 is the first parquet-mr version whose byte-array statistics sort unsigned.
var parquetMR18 = metadata.NewAppVersionExplicit("parquet-mr", 1, 8, 0)

// rawCodecs are the codecs of chunks copied as they are: those every reader of bronze
// decodes (Spark, Databricks, Trino, Athena, DuckDB, delta-rs, arrow-go). LZ4 in its two
// framings, Brotli and LZO are not read everywhere: such chunks are decoded and
// compressed again with bronze's codec.
var rawCodecs = map[compress.Compression]bool{
	compress.Codecs.Uncompressed: true, compress.Codecs.Snappy: true, compress.Codecs.Gzip: true, compress.Codecs.Zstd: true,
}

// rawEncodings are the encodings of chunks copied as they are: the dictionary, plain,
// RLE (levels, booleans) and the delta encodings; BYTE_STREAM_SPLIT of integers is too
// new for parquet-mr's readers.
var rawEncodings = map[parquet.Encoding]bool{
	parquet.Encodings.Plain: true, parquet.Encodings.PlainDict: true, parquet.Encodings.RLEDict: true,
	parquet.Encodings.RLE: true, parquet.Encodings.BitPacked: true, parquet.Encodings.DeltaBinaryPacked: true,
	parquet.Encodings.DeltaLengthByteArray: true, parquet.Encodings.DeltaByteArray: true,
}

// rawKind says whether chunks of Arrow type t may be copied: types whose chunk min/max
// are exact and whose casts are range checks, and strings.
func rawKind(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32, arrow.STRING:
		return true
	case arrow.TIMESTAMP:
		return t.(*arrow.TimestampType).Unit == arrow.Microsecond
	}
	return false
}

// rowGroup converts row group g of the file (before rows before it) into one bronze row
// group and returns its rows.
func (s *splicer) rowGroup(ctx context.Context, cd *copyData, f copyFile, src *parquetio.Source, fr *pqarrow.FileReader,
	cols []spliceColumn, g int, before int64) (int64, error) {
	rgm := src.MetaData().RowGroup(g)
	rows := rgm.NumRows()
	if rows == 0 {
		return 0, nil
	}
	raw := map[int]parquetio.Chunk{} // by plan index
	var decode []spliceColumn
	for _, c := range cols {
		if c.raw {
			m, err := rgm.ColumnChunk(c.leaf)
			if err != nil {
				return 0, fmt.Errorf("copy %s: %w", cd.fileURL(f.Path), err)
			}
			if ch, ok, err := s.rawChunk(src, g, c, m, rows); err != nil {
				return 0, fmt.Errorf("copy %s: %w", cd.fileURL(f.Path), err)
			} else if ok {
				raw[c.plan] = ch
				continue
			}
		}
		decode = append(decode, c)
	}
	decoded := make(map[int][]arrow.Array, len(decode)) // by plan index
	defer func() {
		for _, as := range decoded {
			for _, a := range as {
				a.Release()
			}
		}
	}()
	if len(decode) > 0 {
		fieldIdx := make([]int, len(decode))
		for i, c := range decode {
			fieldIdx[i] = c.field
		}
		rr, err := fr.GetRecordReader(ctx, fieldIdx, []int{g})
		if err != nil {
			return 0, fmt.Errorf("copy %s: %w", cd.fileURL(f.Path), err)
		}
		defer rr.Release()
		var off int64
		for rr.Next() {
			rec := rr.RecordBatch()
			for i, c := range decode {
				out, fl, err := s.castColumn(c.plan, rec.Column(i))
				if err != nil {
					return 0, fmt.Errorf("file %s: %w", f.Path, err)
				}
				if fl != nil {
					return 0, castError(ctx, cd, f, before+off+int64(fl.Row), &columnFailure{plan: s.cv.plan[c.plan], failure: *fl})
				}
				decoded[c.plan] = append(decoded[c.plan], out)
			}
			off += rec.NumRows()
		}
		if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("copy %s: %w", cd.fileURL(f.Path), err)
		}
		if off != rows {
			return 0, fmt.Errorf("copy %s: row group %d read %d rows of %d", cd.fileURL(f.Path), g, off, rows)
		}
	}
	// Bronze's columns in order: copied chunks as they are, the rest encoded together.
	byName := map[string]int{}
	for i, p := range s.cv.plan {
		byName[p.Column.Name] = i
	}
	chunks := make([]parquetio.Chunk, s.cv.schema.NumFields())
	var encFields []arrow.Field
	var encCols [][]arrow.Array
	var encAt []int
	var zeros *memory.Buffer
	var release []arrow.Array
	defer func() {
		for _, a := range release {
			a.Release()
		}
		if zeros != nil {
			zeros.Release()
		}
	}()
	for j, fl := range s.cv.schema.Fields() {
		pi, captured := byName[fl.Name]
		if ch, ok := raw[pi]; captured && ok {
			chunks[j] = ch
			s.copied++
			continue
		}
		var pieces []arrow.Array
		switch {
		case captured && decoded[pi] != nil:
			one, err := oneDictionary(decoded[pi])
			if err != nil {
				return 0, err
			}
			release = append(release, one...)
			pieces = one
		case captured || s.stamps.Column(j).IsNull(0):
			a := array.MakeArrayOfNull(memory.DefaultAllocator, fl.Type, int(rows))
			release = append(release, a)
			pieces = []arrow.Array{a}
		default:
			// A stamp column: one dictionary value, every row pointing at it.
			if zeros == nil {
				zeros = memory.NewResizableBuffer(memory.DefaultAllocator)
				zeros.Resize(int(rows) * 4) // zeroed: index 0
			}
			dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: fl.Type}
			d := array.NewData(dt, int(rows), []*memory.Buffer{nil, zeros}, nil, 0, 0)
			d.SetDictionary(s.stamps.Column(j).Data())
			a := array.MakeFromData(d)
			d.Release()
			release = append(release, a)
			pieces = []arrow.Array{a}
		}
		encFields = append(encFields, arrow.Field{Name: fl.Name, Type: fl.Type, Nullable: true})
		encCols = append(encCols, pieces)
		encAt = append(encAt, j)
	}
	defer parquetio.ReleaseChunks(chunks)
	if len(encCols) > 0 {
		enc, err := parquetio.EncodeChunks(encFields, encCols, rows, s.codec)
		if err != nil {
			return 0, err
		}
		for i, j := range encAt {
			chunks[j] = enc[i]
		}
	}
	if err := s.w.WriteRowGroup(ctx, rows, chunks); err != nil {
		return 0, err
	}
	return rows, nil
}

// rawChunk is column chunk m of row group g (rows rows) as it lies, when its metadata proves every
// value passes column c's cast unchanged (ok false: decode it).
func (s *splicer) rawChunk(src *parquetio.Source, g int, c spliceColumn, m *metadata.ColumnChunkMetaData, rows int64) (parquetio.Chunk, bool, error) {
	if set, err := m.StatsSet(); err != nil || !set || !rawCodecs[m.Compression()] {
		return parquetio.Chunk{}, false, nil
	}
	for _, e := range m.Encodings() {
		if !rawEncodings[e] {
			return parquetio.Chunk{}, false, nil
		}
	}
	st, err := m.Statistics()
	if err != nil || st == nil || !st.HasNullCount() {
		return parquetio.Chunk{}, false, nil
	}
	nulls := st.NullCount()
	var values arrow.Array
	var data []byte
	var start int64
	if c.kind == arrow.STRING {
		// The chunk is read once: its pages are walked for the dictionary in the bytes
		// that are then copied.
		if data, start, err = src.ChunkBytes(m); err != nil {
			return parquetio.Chunk{}, false, err
		}
		if values, err = dictionaryValues(src, g, c.leaf, data, start); err != nil || values == nil {
			return parquetio.Chunk{}, false, err
		}
	} else if nulls < rows {
		if !st.HasMinMax() {
			return parquetio.Chunk{}, false, nil
		}
		values = minMaxArray(st, s.cv.schema.Field(s.cv.schema.FieldIndices(s.cv.plan[c.plan].Column.Name)[0]).Type)
		if values == nil {
			return parquetio.Chunk{}, false, nil
		}
	}
	if values != nil {
		defer values.Release()
		fn, err := s.cv.cast(c.plan, values.DataType())
		if err != nil {
			return parquetio.Chunk{}, false, nil
		}
		out, fl := fn(values)
		if fl != nil {
			return parquetio.Chunk{}, false, nil // decoded, the value found and named
		}
		same := array.Equal(out, values)
		out.Release()
		if !same {
			return parquetio.Chunk{}, false, nil
		}
	}
	if data == nil {
		if data, start, err = src.ChunkBytes(m); err != nil {
			return parquetio.Chunk{}, false, err
		}
	}
	ch := parquetio.Chunk{Data: data, Meta: m, Start: start, Nulls: nulls}
	if values != nil {
		values.Retain()
		ch.Values = []arrow.Array{values}
	}
	return ch, true, nil
}

// minMaxArray is a chunk's min and max as a two-value array of Arrow type t (nil when the
// statistics are not of t's physical type).
func minMaxArray(st metadata.TypedStatistics, t arrow.DataType) arrow.Array {
	var lo, hi int64
	switch s := st.(type) {
	case *metadata.Int32Statistics:
		lo, hi = int64(s.Min()), int64(s.Max())
	case *metadata.Int64Statistics:
		lo, hi = s.Min(), s.Max()
	default:
		return nil
	}
	b := array.NewBuilder(memory.DefaultAllocator, t)
	defer b.Release()
	for _, v := range []int64{lo, hi} {
		switch b := b.(type) {
		case *array.Int8Builder:
			b.Append(int8(v))
		case *array.Int16Builder:
			b.Append(int16(v))
		case *array.Int32Builder:
			b.Append(int32(v))
		case *array.Int64Builder:
			b.Append(v)
		case *array.Date32Builder:
			b.Append(arrow.Date32(v))
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v))
		default:
			return nil
		}
	}
	return b.NewArray()
}

// dictionaryValues is the dictionary of string column leaf of row group g (its bytes data,
// from start, as ChunkBytes read them) when its data pages are all dictionary-encoded;
// nil when they are not.
func dictionaryValues(src *parquetio.Source, g, leaf int, data []byte, start int64) (arrow.Array, error) {
	pr, err := src.ChunkPages(g, leaf, data, start)
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	var dict arrow.Array
	release := func() {
		if dict != nil {
			dict.Release()
		}
	}
	for pr.Next() {
		switch p := pr.Page().(type) {
		case *file.DictionaryPage:
			if dict != nil || parquet.Encoding(p.Encoding()) != parquet.Encodings.Plain && parquet.Encoding(p.Encoding()) != parquet.Encodings.PlainDict {
				release()
				return nil, nil
			}
			if dict = plainStrings(p.Data(), int(p.NumValues())); dict == nil {
				return nil, nil
			}
		default:
			e := parquet.Encoding(p.Encoding())
			if dict == nil || (e != parquet.Encodings.PlainDict && e != parquet.Encodings.RLEDict) {
				release()
				return nil, nil
			}
		}
	}
	if err := pr.Err(); err != nil {
		release()
		return nil, err
	}
	return dict, nil
}

// plainStrings decodes n PLAIN byte arrays (4-byte little-endian length, bytes) as a
// string array; nil when the data is short.
func plainStrings(data []byte, n int) arrow.Array {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(max(len(data)-4*n, 0))
	for range n {
		if len(data) < 4 {
			return nil
		}
		l := int(uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24)
		if l < 0 || len(data)-4 < l {
			return nil
		}
		b.BinaryBuilder.Append(data[4 : 4+l])
		data = data[4+l:]
	}
	return b.NewArray()
}

// castColumn casts one decoded copy column for plan column plan. A dictionary array (a
// text read as its chunk's dictionary) has its distinct values cast and keeps its
// indices; when one of them is refused, the column is cast value by value so that the
// failure names the first refused row, as reading it plain would.
func (s *splicer) castColumn(plan int, in arrow.Array) (arrow.Array, *failure, error) {
	d, ok := in.(*array.Dictionary)
	if !ok {
		fn, err := s.cv.cast(plan, in.DataType())
		if err != nil {
			return nil, nil, err
		}
		out, fl := fn(in)
		return out, fl, nil
	}
	fn, err := s.cv.cast(plan, d.Dictionary().DataType())
	if err != nil {
		return nil, nil, err
	}
	if out, fl := fn(d.Dictionary()); fl == nil {
		dt := &arrow.DictionaryType{IndexType: d.Indices().DataType(), ValueType: out.DataType()}
		nd := array.NewDictionaryArray(dt, d.Indices(), out)
		out.Release()
		return nd, nil, nil
	}
	dense, err := denseOf(d)
	if err != nil {
		return nil, nil, err
	}
	defer dense.Release()
	out, fl := fn(dense)
	return out, fl, nil
}

// denseOf is a dictionary array's values, row by row.
func denseOf(d *array.Dictionary) (arrow.Array, error) {
	return compute.TakeArray(context.Background(), d.Dictionary(), d.Indices())
}

// oneDictionary is the cast pieces of one column of a row group as one dictionary array
// when they are dictionary arrays whose dictionaries each begin the last one's (a
// chunk's dictionary, read batch by batch), else as plain arrays. The caller releases
// the result, not pieces.
func oneDictionary(pieces []arrow.Array) ([]arrow.Array, error) {
	last, ok := pieces[len(pieces)-1].(*array.Dictionary)
	if ok {
		indices := make([]arrow.Array, len(pieces))
		for i, p := range pieces {
			d, isDict := p.(*array.Dictionary)
			if !isDict || d.Dictionary().Len() > last.Dictionary().Len() ||
				!array.SliceEqual(d.Dictionary(), 0, int64(d.Dictionary().Len()), last.Dictionary(), 0, int64(d.Dictionary().Len())) {
				ok = false
				break
			}
			indices[i] = d.Indices()
		}
		if ok {
			idx, err := array.Concatenate(indices, memory.DefaultAllocator)
			if err != nil {
				return nil, err
			}
			defer idx.Release()
			return []arrow.Array{array.NewDictionaryArray(last.DataType(), idx, last.Dictionary())}, nil
		}
	}
	out := make([]arrow.Array, 0, len(pieces))
	for _, p := range pieces {
		if d, isDict := p.(*array.Dictionary); isDict {
			dense, err := denseOf(d)
			if err != nil {
				for _, o := range out {
					o.Release()
				}
				return nil, err
			}
			out = append(out, dense)
			continue
		}
		p.Retain()
		out = append(out, p)
	}
	return out, nil
}
