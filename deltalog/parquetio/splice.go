package parquetio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Splicing: Parquet files whose row groups are assembled from column chunks that are
// already encoded. A chunk is either copied as it is from another Parquet file (its pages
// with their headers, codec and encodings: Parquet gives each column chunk its own codec
// and encodings, so a file may mix them) or encoded here from Arrow arrays (EncodeChunks).
// The seed uses it to carry a copy's columns that bronze holds in the same Parquet type
// without decoding them (docs/seed.md § Conversion). Each row group gets a footer entry
// built from the chunks' own metadata, its offsets moved to where the chunk now lies; the
// copied chunks' page indexes and bloom filters are not carried over.

// Chunk is one column chunk of a row group given to SpliceWriter.WriteRowGroup.
type Chunk struct {
	// Data is the chunk's bytes: its pages, from its first page (the dictionary page, if
	// any) to its end, as they lie in the file Meta describes.
	Data []byte
	// Meta is the chunk's metadata in that file: its values, codec, encodings, encoding
	// statistics, page offsets (relative to Start) and Parquet statistics, all carried
	// into the new footer.
	Meta *metadata.ColumnChunkMetaData
	// Start is the offset of Data's first byte in that file.
	Start int64
	// Values bound the chunk's values for the Delta statistics: the values themselves (in
	// pieces), their distinct values, or their min and max; nil when unknown, which
	// leaves the column's min/max out of the file's statistics. Nulls is the chunk's
	// NULL count (NULLs among Values are not counted).
	Values []arrow.Array
	Nulls  int64
	// Stats, when not nil, are the chunk's Parquet statistics, else Meta's are carried.
	Stats *metadata.EncodedStatistics
}

// ChunkStart is where a column chunk's first page lies in its file: the dictionary page's
// offset when one is recorded before the first data page, else the first data page's
// (older parquet-mr writers leave the dictionary page's offset out; the dictionary page
// then lies at the data page offset).
func ChunkStart(m *metadata.ColumnChunkMetaData) int64 {
	if m.HasDictionaryPage() && m.DictionaryPageOffset() > 0 && m.DictionaryPageOffset() < m.DataPageOffset() {
		return m.DictionaryPageOffset()
	}
	return m.DataPageOffset()
}

// SpliceWriter writes Parquet files of one schema from row groups of encoded column
// chunks (Chunk), rolling to a new file at TargetFileSize after a row group. Files are
// uploaded as they are finished; Close uploads the last one and returns them all, with
// the Delta statistics of Chunk.Values and Chunk.Nulls. Not safe for concurrent use.
//
// Memory: the chunks of the row group being written (the caller's); each is written to
// a temporary file as it comes.
type SpliceWriter struct {
	store  storage.Store
	schema *arrow.Schema
	opts   WriterOptions
	optErr error

	pqSchema *pqschema.Schema
	props    *parquet.WriterProperties
	cur      *splicedFile
	part     int
	files    []File
	closed   bool
}

// splicedFile is the file being written.
type splicedFile struct {
	name   string
	tmp    *os.File
	buf    *bufio.Writer
	cw     *countingWriter
	meta   *metadata.FileMetaDataBuilder
	stats  *fileStats
	groups int16
}

// NewSpliceWriter returns a writer of schema's row groups into store (the file names,
// statistics and options of NewWriter; RowGroupBytes is not used: the chunks given make
// the row groups). It does no I/O; an invalid option is reported by the first
// WriteRowGroup as an *OptionError.
func NewSpliceWriter(store storage.Store, schema *arrow.Schema, opts WriterOptions) *SpliceWriter {
	o, err := opts.withDefaults()
	return &SpliceWriter{store: store, schema: schema, opts: o, optErr: err}
}

// ParquetSchema is the Parquet schema of the writer's files (the one NewWriter writes for
// the same Arrow schema); a copied chunk must be of its column's physical type.
func (w *SpliceWriter) ParquetSchema() (*pqschema.Schema, error) {
	if w.pqSchema != nil {
		return w.pqSchema, nil
	}
	props := parquet.NewWriterProperties(baseProperties(w.opts.Codec)...)
	sc, err := pqarrow.ToParquet(w.schema, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	w.pqSchema, w.props = sc, props
	return sc, nil
}

// ChunkTypeError: a chunk given to WriteRowGroup is not of its column's physical type or
// row count, or the column is nested.
type ChunkTypeError struct {
	Column      string
	Want, Got   parquet.Type
	Rows, Count int64 // the row group's rows, the chunk's values
}

func (e *ChunkTypeError) Error() string {
	return fmt.Sprintf("parquetio: chunk of column %s: %s with %d values, want a flat %s column of %d", e.Column, e.Got, e.Count, e.Want, e.Rows)
}

// WriteRowGroup writes one row group of rows rows from chunks, one per leaf column of the
// schema in order; each chunk's NumValues must be rows (flat columns). The chunks' Data
// may be reused once it returns.
func (w *SpliceWriter) WriteRowGroup(ctx context.Context, rows int64, chunks []Chunk) error {
	if w.closed {
		return ErrClosed
	}
	if w.optErr != nil {
		return w.optErr
	}
	sc, err := w.ParquetSchema()
	if err != nil {
		return err
	}
	if len(chunks) != sc.NumColumns() {
		return fmt.Errorf("parquetio: %d chunks for %d columns", len(chunks), sc.NumColumns())
	}
	for i, c := range chunks {
		col := sc.Column(i)
		got := c.Meta.Type()
		if got != col.PhysicalType() || c.Meta.NumValues() != rows || col.MaxRepetitionLevel() != 0 {
			return &ChunkTypeError{Column: col.Path(), Want: col.PhysicalType(), Got: got, Rows: rows, Count: c.Meta.NumValues()}
		}
	}
	if w.cur == nil {
		if err := w.openFile(); err != nil {
			return err
		}
	}
	f := w.cur
	rg := f.meta.AppendRowGroup()
	nullsBefore := make([]int64, len(chunks))
	for i := range chunks {
		if cs := f.stats.column(i); cs != nil {
			nullsBefore[i] = cs.nulls
		}
	}
	for i, c := range chunks {
		if err := f.writeChunk(rg.NextColumnChunk(), c); err != nil {
			return err
		}
		if cs := f.stats.column(i); cs != nil {
			if c.Values == nil && c.Nulls < rows {
				cs.bad = true // values not known: no min/max for the file
			}
			for _, v := range c.Values {
				f.stats.addColumn(cs, v)
			}
			cs.nulls = nullsBefore[i] + c.Nulls
		}
	}
	rg.SetNumRows(int(rows))
	if err := rg.Finish(0, f.groups); err != nil {
		return fmt.Errorf("parquet row group: %w", err)
	}
	f.groups++
	f.stats.rows += rows
	if f.cw.n >= w.opts.TargetFileSize {
		return w.finishFile(ctx)
	}
	return nil
}

// writeChunk writes c's bytes at the file's end and its metadata, moved there, into b.
func (f *splicedFile) writeChunk(b *metadata.ColumnChunkMetaDataBuilder, c Chunk) error {
	m := c.Meta
	at := f.cw.n
	if _, err := f.cw.Write(c.Data); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	shift := at - c.Start
	info := metadata.ChunkMetaInfo{
		NumValues:        m.NumValues(),
		IndexPageOffset:  -1,
		DataPageOffset:   m.DataPageOffset() + shift,
		CompressedSize:   m.TotalCompressedSize(),
		UncompressedSize: m.TotalUncompressedSize(),
	}
	if m.HasDictionaryPage() && m.DictionaryPageOffset() > 0 {
		info.DictPageOffset = m.DictionaryPageOffset() + shift
	}
	if int64(len(c.Data)) != m.TotalCompressedSize() {
		return fmt.Errorf("parquetio: chunk of %d bytes, its metadata says %d", len(c.Data), m.TotalCompressedSize())
	}
	if c.Stats != nil {
		b.SetStats(*c.Stats)
	} else if st, err := m.Statistics(); err == nil && st != nil {
		// As the reader validated them for the writer that wrote them: statistics an old
		// writer got wrong are not carried under this file's name.
		enc, err := st.Encode()
		if err != nil {
			return fmt.Errorf("parquet statistics: %w", err)
		}
		b.SetStats(enc)
	}
	var es metadata.EncodingStats
	for _, s := range m.EncodingStats() {
		// The reader keeps each entry's page type and encoding, not its page count.
		dst := &es.DataEncodingStats
		if s.PageType == 2 { // DICTIONARY_PAGE
			dst = &es.DictEncodingStats
		}
		if *dst == nil {
			*dst = map[parquet.Encoding]int32{}
		}
		(*dst)[s.Encoding]++
	}
	if err := b.Finish(info, m.HasDictionaryPage(), false, es); err != nil {
		return err
	}
	// The codec and encodings are the chunk's own, not the file's defaults.
	cm := b.Contents().MetaData
	setEnum(&cm.Codec, int64(m.Compression()))
	cm.Encodings = encodingsOf(cm.Encodings, m.Encodings())
	if len(m.EncodingStats()) == 0 {
		// Unknown stays unset: an empty list would tell parquet-mr's dictionary filter
		// that no page is plain-encoded, and it would skip row groups by the dictionary.
		cm.EncodingStats = nil
	}
	return nil
}

// setEnum sets a Thrift enum field of a type this package cannot name.
func setEnum[T ~int64](dst *T, v int64) { *dst = T(v) }

// encodingsOf is encs as dst's element type.
func encodingsOf[T ~int64](dst []T, encs []parquet.Encoding) []T {
	out := dst[:0]
	for _, e := range encs {
		out = append(out, T(e))
	}
	return out
}

// openFile starts a file: its magic number and its footer's builder.
func (w *SpliceWriter) openFile() error {
	tmp, err := os.CreateTemp(w.opts.TempDir, "parquetio-*.parquet")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	buf := tempBufs.Get().(*bufio.Writer)
	buf.Reset(tmp)
	cw := &countingWriter{w: buf}
	if _, err := cw.Write([]byte("PAR1")); err != nil {
		putTempBuf(buf)
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("write temporary file: %w", err)
	}
	w.cur = &splicedFile{
		name:  fileName(w.part, w.opts.Codec),
		tmp:   tmp,
		buf:   buf,
		cw:    cw,
		meta:  metadata.NewFileMetadataBuilder(w.pqSchema, w.props, nil),
		stats: newFileStats(w.schema, w.opts.NumIndexedCols, w.opts.StringPrefixLength),
	}
	w.part++
	return nil
}

// finishFile writes the footer, uploads the file and records it.
func (w *SpliceWriter) finishFile(ctx context.Context) error {
	f := w.cur
	w.cur = nil
	defer os.Remove(f.tmp.Name())
	defer f.tmp.Close()
	defer putTempBuf(f.buf)
	md, err := f.meta.Finish()
	if err != nil {
		return fmt.Errorf("parquet footer: %w", err)
	}
	n, err := md.WriteTo(f.cw, nil)
	if err != nil {
		return fmt.Errorf("write parquet footer: %w", err)
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], uint32(n))
	copy(tail[4:], "PAR1")
	if _, err := f.cw.Write(tail[:]); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if err := f.buf.Flush(); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if _, err := f.tmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewind temporary file: %w", err)
	}
	if err := w.store.Put(ctx, f.name, f.tmp, f.cw.n); err != nil {
		return fmt.Errorf("upload %s: %w", f.name, err)
	}
	w.files = append(w.files, File{Path: f.name, Size: f.cw.n, ModTime: time.Now().UTC(), NumRecords: f.stats.rows, Stats: f.stats.json()})
	return nil
}

// Close finishes and uploads the last file and returns every file written, in order.
func (w *SpliceWriter) Close(ctx context.Context) ([]File, error) {
	if w.closed {
		return nil, ErrClosed
	}
	w.closed = true
	if w.cur != nil {
		if err := w.finishFile(ctx); err != nil {
			return nil, err
		}
	}
	return w.files, nil
}

// Abort drops the file being written and deletes the files already uploaded (best
// effort); it returns the first delete error.
func (w *SpliceWriter) Abort(ctx context.Context) error {
	w.closed = true
	if f := w.cur; f != nil {
		w.cur = nil
		putTempBuf(f.buf)
		f.tmp.Close()
		os.Remove(f.tmp.Name())
	}
	var first error
	for _, f := range w.files {
		if err := w.store.Delete(ctx, f.Path); err != nil && first == nil {
			first = fmt.Errorf("delete %s: %w", f.Path, err)
		}
	}
	w.files = nil
	return first
}

// EncodeChunks encodes cols (each a column's pieces, rows rows in all, of the types of
// fields; a dictionary array for a field of its value type is written as that
// dictionary) as the column chunks of one row group, with the encodings NewWriter would
// choose and codec, and returns them with their Delta statistics' values (a dictionary's
// distinct values), retained: ReleaseChunks them. The chunks' Data share one buffer.
func EncodeChunks(fields []arrow.Field, cols [][]arrow.Array, rows int64, codec Codec) ([]Chunk, error) {
	schema := arrow.NewSchema(fields, nil)
	props := parquet.NewWriterProperties(baseProperties(codec)...)
	sc, err := pqarrow.ToParquet(schema, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	encs := make([]colEncoding, len(cols))
	for i, pieces := range cols {
		first := pieces[0]
		if first.DataType().ID() == arrow.DICTIONARY {
			encs[i] = encDict
			continue
		}
		sample := array.NewSlice(first, 0, int64(min(first.Len(), dictSampleRows)))
		encs[i] = chooseEncoding(sample)
		sample.Release()
	}
	// A column given as one dictionary array gets its Parquet statistics from its
	// dictionary (below): arrow-go would hash every index to find the values used.
	popts := append(baseProperties(codec), dictionaryProperties(sc, schema, encs)...)
	for i, pieces := range cols {
		if len(pieces) == 1 && pieces[0].DataType().ID() == arrow.DICTIONARY {
			popts = append(popts, parquet.WithStatsFor(sc.Column(i).Path(), false))
		}
	}
	props = parquet.NewWriterProperties(popts...)
	var out bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &out, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator)))
	if err != nil {
		return nil, fmt.Errorf("open parquet writer: %w", err)
	}
	if err := fw.NewRowGroupChecked(); err != nil {
		return nil, err
	}
	values := make([][]arrow.Array, len(cols))
	nulls := make([]int64, len(cols))
	for i, pieces := range cols {
		for _, p := range pieces {
			nulls[i] += int64(p.NullN())
		}
		if encs[i] == encOwnDict {
			if d, ok := ownDictionary(fields[i].Type, pieces); ok {
				dict := d.(*array.Dictionary).Dictionary()
				dict.Retain()
				values[i] = []arrow.Array{dict}
				err := writeColumn(fw, d.DataType(), []arrow.Array{d}, rows)
				d.Release()
				if err != nil {
					ReleaseChunks(chunksOf(values))
					return nil, fmt.Errorf("encode parquet: %w", err)
				}
				continue
			}
		}
		for _, p := range pieces {
			v := p
			if d, ok := p.(*array.Dictionary); ok {
				v = d.Dictionary()
			}
			v.Retain()
			values[i] = append(values[i], v)
		}
		if err := writeColumn(fw, pieces[0].DataType(), pieces, rows); err != nil {
			ReleaseChunks(chunksOf(values))
			return nil, fmt.Errorf("encode parquet: %w", err)
		}
	}
	if err := fw.Close(); err != nil {
		ReleaseChunks(chunksOf(values))
		return nil, fmt.Errorf("encode parquet: %w", err)
	}
	data := out.Bytes()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		ReleaseChunks(chunksOf(values))
		return nil, fmt.Errorf("read back encoded chunks: %w", err)
	}
	defer pf.Close()
	rg := pf.MetaData().RowGroup(0)
	chunks := make([]Chunk, len(cols))
	for i := range cols {
		m, err := rg.ColumnChunk(i)
		if err != nil {
			ReleaseChunks(chunksOf(values))
			return nil, err
		}
		start := ChunkStart(m)
		chunks[i] = Chunk{Data: data[start : start+m.TotalCompressedSize()], Meta: m, Start: start, Values: values[i], Nulls: nulls[i]}
		if len(cols[i]) == 1 && cols[i][0].DataType().ID() == arrow.DICTIONARY {
			st, err := dictionaryStats(sc.Column(i), values[i][0], rows, nulls[i])
			if err != nil {
				ReleaseChunks(chunksOf(values))
				return nil, err
			}
			chunks[i].Stats = st
		}
	}
	return chunks, nil
}

// dictionaryStats are the Parquet statistics of a column chunk of rows values, nulls of
// them NULL, the others among dict's values (which bound them: min and max are those of
// dict).
func dictionaryStats(descr *pqschema.Column, dict arrow.Array, rows, nulls int64) (*metadata.EncodedStatistics, error) {
	st := metadata.NewStatistics(descr, memory.DefaultAllocator)
	if nulls < rows {
		if err := st.UpdateFromArrow(dict, false); err != nil {
			return nil, fmt.Errorf("parquet statistics of %s: %w", descr.Path(), err)
		}
	}
	st.IncNulls(nulls)
	st.IncNumValues(rows - nulls)
	enc, err := st.Encode()
	if err != nil {
		return nil, fmt.Errorf("parquet statistics of %s: %w", descr.Path(), err)
	}
	return &enc, nil
}

// ReleaseChunks releases the chunks' Values (EncodeChunks retains them for the caller).
func ReleaseChunks(chunks []Chunk) {
	for _, c := range chunks {
		for _, v := range c.Values {
			v.Release()
		}
	}
}

func chunksOf(values [][]arrow.Array) []Chunk {
	out := make([]Chunk, len(values))
	for i, v := range values {
		out[i].Values = v
	}
	return out
}

// baseProperties are the writer settings every file of this package is written with
// (writerProperties' first part).
func baseProperties(codec Codec) []parquet.WriterProperty {
	return []parquet.WriterProperty{
		parquet.WithCompression(codec.compression()),
		parquet.WithStoreDecimalAsInteger(true), // INT32/INT64 up to precision 18, as Spark
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithStats(true),
		parquet.WithAllocator(memory.DefaultAllocator),
	}
}
