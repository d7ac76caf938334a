package parquetio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/thrift/lib/go/thrift"
)

// Files whose columns are all flat (no struct, list or map) are encoded here and through
// arrow-go's column chunk writers directly, instead of through pqarrow.FileWriter: a
// column chunk of one page is written here (ownchunk.go,
// docs/decisions/0021-data-file-pages-encoded-here.md), any other by handing its values
// to pqarrow.WriteArrowToColumn with definition levels computed here. The column chunk writers, and so the encodings, statistics, pages
// and metadata, are the same ones pqarrow drives: the files are byte for byte the ones
// pqarrow.FileWriter writes (TestFlatEncoderMatchesPqarrow). What it spares, per file:
// pqarrow's schema conversion and schema manifest (the Parquet schema is kept with the
// writer properties, props.go), and per column chunk its level builder, chunked-array
// slicing and write context. A stream batch writes ~20 column chunks in small files,
// where that machinery was a fifth of the CPU (docs/performance.md § Small files).
// Nested schemas keep pqarrow.FileWriter, whose level builder handles them.

// rowGroupEncoder encodes the row groups of one Parquet file, column after column.
type rowGroupEncoder interface {
	// newRowGroup starts a row group (closing the previous one).
	newRowGroup() error
	// writeColumn writes the next top-level column of the open row group from its
	// pieces (rows rows in all; a dictionary array is written as its dictionary).
	writeColumn(dt arrow.DataType, pieces []arrow.Array, rows int64) error
	// close closes the open row group and writes the footer.
	close() error
}

// newRowGroupEncoder returns the encoder of a file of schema's records into w with the
// kept settings e: flatEncoder when e's schema is flat, else pqarrow's.
func newRowGroupEncoder(w *countingWriter, schema *arrow.Schema, e *propsEntry) (rowGroupEncoder, error) {
	if e.flat && !forcePqarrow {
		return newFlatEncoder(w, schema, e)
	}
	fw, err := pqarrow.NewFileWriter(schema, w, e.props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator)))
	if err != nil {
		return nil, err
	}
	return arrowEncoder{fw}, nil
}

// forcePqarrow makes every file go through pqarrow.FileWriter: set only by the test that
// compares the two.
var forcePqarrow bool

// arrowEncoder is pqarrow.FileWriter: nested schemas.
type arrowEncoder struct{ fw *pqarrow.FileWriter }

func (a arrowEncoder) newRowGroup() error { return a.fw.NewRowGroupChecked() }
func (a arrowEncoder) writeColumn(dt arrow.DataType, pieces []arrow.Array, rows int64) error {
	return writeColumn(a.fw, dt, pieces, rows)
}
func (a arrowEncoder) close() error { return a.fw.Close() }

// flatSchema says whether every field of s is one Parquet leaf column that
// pqarrow.WriteArrowToColumn writes from the array itself: no nested, extension,
// dictionary or null type.
func flatSchema(s *arrow.Schema) bool {
	for _, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.EXTENSION, arrow.DICTIONARY, arrow.NULL:
			return false
		}
		if isNested(f.Type) {
			return false
		}
	}
	return true
}

// flatEncoder writes a flat schema's files. A column chunk of one page is written here
// (ownChunk, ownchunk.go); any other goes through arrow-go's column chunk writer. It
// assembles the file as arrow-go's file.Writer does (the magic, each row group's column
// chunks in order with their footer entries from arrow-go's metadata builders, the footer
// from its file metadata builder), so that both kinds of chunk write into it, arrow-go's
// through a ChunkPager: arrow-go's page writer with a Close that serializes the chunk's
// footer entry only when arrow-go's would leave some of it in the file (FooterEntrySpill),
// instead of into a 4 KB bufio.Writer that is never flushed, for every chunk. The file's
// Parquet schema is the kept settings' (props.go), not rebuilt per file. The bytes are
// file.Writer's (TestFlatEncoderMatchesPqarrow and TestOwnChunksMatchPqarrow compare them
// with pqarrow.FileWriter's; docs/decisions/0021-data-file-pages-encoded-here.md).
type flatEncoder struct {
	e    *propsEntry
	sink *countingWriter
	// footer is this file's footer: the entry's shared fields (footerTemplate) with this
	// file's key-value metadata and row groups.
	footer *metadata.FileMetaData
	pager  *ChunkPager
	// rg is the open row group's builder (nil before the first), rgs the row groups
	// started; cw is its open column chunk writer (nil before its first column), col the
	// columns started, rows its rows (the first column's).
	rg   *metadata.RowGroupMetaDataBuilder
	rgs  int16
	cw   file.ColumnChunkWriter
	col  int
	rows int
	// ctx carries pqarrow's write context (its scratch buffers) from column to column,
	// as pqarrow.FileWriter keeps one per file.
	ctx context.Context
	// defs is the definition levels' scratch, grown to the longest piece.
	defs []int16
	// own is the scratch of the column chunks written here (ownchunk.go).
	own *ownScratch
}

// parquetMagic begins and ends a Parquet file (unencrypted).
var parquetMagic = []byte("PAR1")

func newFlatEncoder(w *countingWriter, s *arrow.Schema, e *propsEntry) (*flatEncoder, error) {
	if e.props.PageIndexEnabled() || e.props.FileEncryptionProperties() != nil {
		return nil, errors.New("parquetio: the flat encoder writes no page index and no encryption")
	}
	// The key-value metadata pqarrow.FileWriter writes without a stored Arrow schema: the
	// schema's own metadata, an empty list when it has none.
	meta := make(metadata.KeyValueMetadata, 0)
	md := s.Metadata()
	for i := range md.Len() {
		if err := meta.Append(md.Keys()[i], md.Values()[i]); err != nil {
			return nil, err
		}
	}
	sink := w
	if _, err := sink.Write(parquetMagic); err != nil {
		return nil, fmt.Errorf("parquet: failed to write magic number: %w", err)
	}
	props := pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator))
	tmpl, err := e.footerTemplate()
	if err != nil {
		return nil, err
	}
	shared := *tmpl.FileMetaData
	shared.RowGroups, shared.NumRows, shared.KeyValueMetadata = nil, 0, meta
	return &flatEncoder{e: e, sink: sink, footer: &metadata.FileMetaData{FileMetaData: &shared},
		ctx: pqarrow.NewArrowWriteContext(context.Background(), &props), own: ownScratches.Get().(*ownScratch)}, nil
}

func (f *flatEncoder) newRowGroup() error {
	if err := f.closeRowGroup(); err != nil {
		return err
	}
	// A new row group: a copy of the template's empty one, whose chunks' entries the
	// builder fills (arrow-go's FileMetaDataBuilder.AppendRowGroup, without the builder).
	tmpl, _ := f.e.footerTemplate()
	rg := *tmpl.RowGroups[0]
	f.rg = metadata.NewRowGroupMetaDataBuilder(f.e.props, f.e.pqSchema, &rg)
	f.footer.RowGroups = append(f.footer.RowGroups, &rg)
	f.cw, f.col, f.rows = nil, 0, 0
	return nil
}

// closeColumn closes the open column chunk writer, checking its rows against the row
// group's (arrow-go's checkRowsWritten).
func (f *flatEncoder) closeColumn() error {
	if f.cw == nil {
		return nil
	}
	if n := f.cw.RowsWritten(); n != f.rows {
		return fmt.Errorf("row mismatch for unbuffered row group: %d, count expected: %d, actual: %d", f.rgs, n, f.rows)
	}
	err := f.cw.Close()
	f.cw = nil
	return err
}

// closeRowGroup closes the open row group, if any, and fills its footer entry.
func (f *flatEncoder) closeRowGroup() error {
	if f.rg == nil {
		return nil
	}
	if err := f.closeColumn(); err != nil {
		return err
	}
	f.rg.SetNumRows(f.rows)
	// The row group's sizes and offset come from its chunks' entries: arrow-go's Finish
	// ignores the bytes its row group writer passes.
	err := f.rg.Finish(0, f.rgs)
	f.rg = nil
	f.rgs++
	return err
}

// nextColumn starts the row group's next column chunk: its footer entry's builder.
func (f *flatEncoder) nextColumn() (*metadata.ColumnChunkMetaDataBuilder, error) {
	if err := f.closeColumn(); err != nil {
		return nil, err
	}
	f.col++
	return f.rg.NextColumnChunk(), nil
}

// columnWriter opens arrow-go's column chunk writer of the chunk meta (column f.col-1 of
// the row group), writing through the pager.
func (f *flatEncoder) columnWriter(meta *metadata.ColumnChunkMetaDataBuilder) (file.ColumnChunkWriter, error) {
	if f.pager == nil {
		f.pager, _ = chunkPagers.Get().(*ChunkPager)
		if f.pager == nil {
			f.pager = new(ChunkPager)
		}
	}
	if err := f.pager.Start(f.sink, meta, f.e.props, f.rgs, int16(f.col-1), &f.own.spill); err != nil {
		return nil, err
	}
	f.cw = file.NewColumnChunkWriter(meta, f.pager, f.e.props)
	return f.cw, nil
}

// writeColumn writes each piece with its definition levels (1 where a value is, 0 where
// NULL, none for a required column), as pqarrow's level builder gives them for a flat
// column; the column writer skips the NULL slots by the validity bitmap.
func (f *flatEncoder) writeColumn(dt arrow.DataType, pieces []arrow.Array, rows int64) error {
	meta, err := f.nextColumn()
	if err != nil {
		return err
	}
	if f.rows == 0 {
		f.rows = int(rows)
	}
	plain := startsPlain(meta.Descr(), f.e.props, pieces, rows)
	if own, err := f.ownChunk(meta, pieces, rows, plain); own || err != nil {
		return err
	}
	cw, err := f.columnWriter(meta)
	if err != nil {
		return err
	}
	optional := cw.Descr().SchemaNode().RepetitionType() == parquet.Repetitions.Optional
	if plain {
		cw.FallbackToPlain()
	}
	var written int64
	for _, p := range pieces {
		n := p.Len()
		if n == 0 {
			continue
		}
		var defs []int16
		if optional {
			if cap(f.defs) < n {
				f.defs = make([]int16, n)
			}
			defs = f.defs[:n]
			if p.NullN() == 0 {
				for i := range defs {
					defs[i] = 1
				}
			} else {
				for i := range defs {
					defs[i] = 0
					if p.IsValid(i) {
						defs[i] = 1
					}
				}
			}
		}
		var err error
		if d, ok := p.(*array.Dictionary); ok && len(pieces) == 1 {
			err = writeOwnDictionary(f.ctx, cw, d, defs, optional)
		} else {
			// The leaf is nullable to pqarrow's writer only where the piece has a NULL:
			// pqarrow's path builder says not nullable for a piece without (its
			// allPresentTerminalNode). It matters to booleans, which the writer then
			// packs from a []bool instead of copying the piece's bitmap, whose bits past
			// the last value land in the page (FuzzOwnChunksMatchPqarrow's input
			// 62f3bc351cdb679c: a nullable boolean column without NULLs).
			err = pqarrow.WriteArrowToColumn(f.ctx, cw, p, defs, nil, optional && p.NullN() > 0)
		}
		if err != nil {
			return err
		}
		written += int64(n)
	}
	if written != rows {
		return fmt.Errorf("parquetio: column %s: %d values for a row group of %d rows", cw.Descr().Name(), written, rows)
	}
	return nil
}

// close closes the open row group and writes the footer: the file metadata, its length
// and the magic (arrow-go's writeFileMetadata).
func (f *flatEncoder) close() error {
	if err := f.closeRowGroup(); err != nil {
		return err
	}
	var rows int64
	for _, rg := range f.footer.RowGroups {
		rows += rg.NumRows
	}
	f.footer.NumRows = rows
	// The footer's Thrift bytes, as arrow-go's FileMetaData.WriteTo serializes them (its
	// compact protocol into a memory buffer, then one write), into a buffer kept with the
	// scratch.
	buf := &f.own.footer
	buf.Reset()
	proto := thrift.NewTCompactProtocolConf(&thrift.TMemoryBuffer{Buffer: buf}, nil)
	if err := f.footer.FileMetaData.Write(context.Background(), proto); err != nil {
		return err
	}
	if err := proto.Flush(context.Background()); err != nil {
		return err
	}
	n, err := f.sink.Write(buf.Bytes())
	if err != nil {
		return err
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:], uint32(n))
	copy(tail[4:], parquetMagic)
	_, err = f.sink.Write(tail[:])
	f.putPager()
	if f.own != nil {
		ownScratches.Put(f.own)
		f.own = nil
	}
	return err
}

// putPager keeps f's pager, and the room its compression buffer grew to, for the next
// file, pointing at nothing of this one.
func (f *flatEncoder) putPager() {
	if f.pager == nil {
		return
	}
	p := f.pager
	f.pager = nil
	if p.PageWriter == nil || p.PageWriter.Reset(nil, compress.Codecs.Uncompressed, 0, nil, 0, 0, nil, nil) != nil {
		return
	}
	p.meta, p.dict, p.data, p.sink, p.spill = nil, nil, nil, nil, nil
	p.scratch.Reset()
	chunkPagers.Put(p)
}

// chunkPagers keep ChunkPagers from file to file: arrow-go's page writer, its Thrift
// serializer, and the compression buffer grown to the largest page compressed.
var chunkPagers sync.Pool

// pageTotals are the totals arrow-go's page writer keeps of the column chunk it writes
// (its serializedPageWriter's exported methods).
type pageTotals interface {
	NumValues() int64
	DictionaryPageOffset() int64
	DataPageoffset() int64
	TotalCompressedSize() int64
	TotalUncompressedSize() int64
}

// ChunkPager is arrow-go's page writer (file.NewPageWriter: page headers, compression,
// the chunk's totals) for a file assembled without arrow-go's file.Writer, given to
// arrow-go's column chunk writer (file.NewColumnChunkWriter) for a chunk of more than the
// one page WritePlainChunk writes: its Close fills the chunk's footer entry as arrow-go's
// does, from the page writer's totals and the pages' encodings counted here, and writes
// only what arrow-go's would leave of the serialized entry in the file
// (FooterEntrySpill), instead of serializing every entry into a 4 KiB buffer it never
// flushes. A flat data file's chunks (flatEncoder,
// docs/decisions/0021-data-file-pages-encoded-here.md) and a checkpoint's (deltalog's
// checkpointEncoder, docs/decisions/0020-checkpoint-pages-encoded-here.md) go through
// it. The zero value is ready for Start; one pager writes one chunk at a time, from one
// goroutine.
type ChunkPager struct {
	file.PageWriter
	totals pageTotals
	meta   *metadata.ColumnChunkMetaDataBuilder
	sink   io.Writer
	spill  *FooterEntryScratch
	// dict and data count the dictionary and data pages written, by encoding.
	dict, data map[parquet.Encoding]int32
	// scratch receives each data page's compressed bytes (Compress).
	scratch bytes.Buffer
}

// Start points p at the column chunk meta, column column of row group rowGroup (arrow-go's
// page writer takes both, for encryption, which files here never use), its pages written
// to sink with the codec props gives the column; spill is the scratch of the footer
// entry's spill (Close). The first Start makes arrow-go's page writer, the others reset
// it. The error is the page writer's (a codec arrow-go lacks), or a page writer that keeps
// no totals.
func (p *ChunkPager) Start(sink interface {
	io.Writer
	Tell() int64
}, meta *metadata.ColumnChunkMetaDataBuilder, props *parquet.WriterProperties, rowGroup, column int16, spill *FooterEntryScratch) error {
	path := meta.Descr().Path()
	codec, level := props.CompressionFor(path), props.CompressionLevelFor(path)
	if p.PageWriter == nil {
		pw, err := file.NewPageWriter(sink, codec, level, meta, rowGroup, column, props.Allocator(), false, nil, nil)
		if err != nil {
			return err
		}
		totals, ok := pw.(pageTotals)
		if !ok {
			return errors.New("parquetio: arrow-go's page writer keeps no totals")
		}
		p.PageWriter, p.totals = pw, totals
	} else if err := p.PageWriter.Reset(sink, codec, level, meta, rowGroup, column, nil, nil); err != nil {
		return err
	}
	p.meta, p.sink, p.spill = meta, sink, spill
	p.dict, p.data = map[parquet.Encoding]int32{}, map[parquet.Encoding]int32{}
	return nil
}

// Compress compresses a data page's bytes (src) into p's scratch buffer instead of buf,
// which is a buffer of the column chunk writer's own, new with every column chunk and
// grown for each to the page's compressed bound (bytes.Buffer.Grow: ~190 KB of a
// 1,000-row bronze file's allocation, measured on branch batchcpu before the chunks of
// one page were written here). The bytes are the codec's either way. What Compress
// returns is used before the next call: arrow-go's column chunk writer copies a page it
// holds (a dictionary column's, until the dictionary page is written) and writes any
// other before it compresses the next (buildDataPageV1 and buildDataPageV2 in
// parquet/file/column_writer.go), and a chunk is closed before the next one starts.
// (The page writer compresses a dictionary page with a buffer of its own.)
func (p *ChunkPager) Compress(_ *bytes.Buffer, src []byte) []byte {
	p.scratch.Reset()
	return p.PageWriter.Compress(&p.scratch, src)
}

func (p *ChunkPager) WriteDictionaryPage(page *file.DictionaryPage) (int64, error) {
	n, err := p.PageWriter.WriteDictionaryPage(page)
	if err == nil {
		p.dict[parquet.Encoding(page.Encoding())]++
	}
	return n, err
}

func (p *ChunkPager) WriteDataPage(page file.DataPage) (int64, error) {
	n, err := p.PageWriter.WriteDataPage(page)
	if err == nil {
		p.data[parquet.Encoding(page.Encoding())]++
	}
	return n, err
}

// Close fills the chunk's footer entry and writes what arrow-go's Close would have left of
// it in the file (FooterEntrySpill: nothing unless the entry passes 4 KiB).
func (p *ChunkPager) Close(hasDict, fallback bool) error {
	err := p.meta.Finish(metadata.ChunkMetaInfo{
		NumValues:        p.totals.NumValues(),
		DictPageOffset:   p.totals.DictionaryPageOffset(),
		IndexPageOffset:  -1,
		DataPageOffset:   p.totals.DataPageoffset(),
		CompressedSize:   p.totals.TotalCompressedSize(),
		UncompressedSize: p.totals.TotalUncompressedSize(),
	}, hasDict, fallback, metadata.EncodingStats{DictEncodingStats: p.dict, DataEncodingStats: p.data})
	if err != nil {
		return err
	}
	return FooterEntrySpill(p.meta, p.sink, p.spill)
}

// flatSettings fills e's Parquet schema root and whether its schema is flat.
func flatSettings(e *propsEntry, sc *pqschema.Schema) {
	e.root, e.pqSchema = sc.Root(), sc
	e.flat = flatSchema(e.schema)
}

// dictWriter is the part of arrow-go's dictionary encoder (parquet/internal/encoding's
// DictEncoder, which a column chunk writer's CurrentEncoder is while it encodes with a
// dictionary) that writeOwnDictionary uses.
type dictWriter interface {
	NormalizeDict(arrow.Array) (arrow.Array, error)
	PutDictionary(arrow.Array) error
	PreservedDictionary() arrow.Array
	NumEntries() int
}

// writeOwnDictionary writes a dictionary array built by ownDictionary (dictionary.go) as
// the column chunk's dictionary and indices: what pqarrow.WriteArrowToColumn does with a
// dictionary array given to a fresh column chunk writer (writeDictionaryArrow in
// arrow-go's parquet/pqarrow/encode_dict_compute.go), call for call, except for the
// page statistics. pqarrow takes them from the dictionary values the indices reference,
// found with compute.UniqueArray over the indices (and compute.TakeArray when some are
// unreferenced or NULL): arrow-go's compute executor, its hash kernel and a goroutine per
// call, ~5 % of a 1,000-row stream batch's CPU by profile (docs/performance.md § Parquet
// CPU of a small file). ownDictionary's dictionary holds exactly the distinct values of
// the non-NULL rows, each referenced, so the statistics are taken from it directly and
// come out the same (TestFlatEncoderMatchesPqarrow compares the files byte for byte). Any other state (the writer not encoding with a dictionary, a dictionary
// already put, a dictionary with duplicates) goes through pqarrow as before.
func writeOwnDictionary(ctx context.Context, cw file.ColumnChunkWriter, d *array.Dictionary, defs []int16, optional bool) error {
	enc, ok := cw.CurrentEncoder().(dictWriter)
	if !ok || cw.CurrentEncoder().Encoding() != parquet.Encodings.PlainDict || enc.PreservedDictionary() != nil || !arrow.IsBaseBinary(d.Dictionary().DataType().ID()) {
		return pqarrow.WriteArrowToColumn(ctx, cw, d, defs, nil, optional)
	}
	normalized, err := enc.NormalizeDict(d.Dictionary())
	if err != nil {
		return err
	}
	defer normalized.Release()
	if err := enc.PutDictionary(normalized); err != nil {
		return err
	}
	if enc.NumEntries() != normalized.Len() {
		// Duplicates in the dictionary: pqarrow falls back to plain (the encoder's
		// memo no longer matches the indices), and so does its dense path from here.
		cw.FallbackToPlain()
		return pqarrow.WriteArrowToColumn(ctx, cw, d, defs, nil, optional)
	}
	indices := d.Indices()
	if stats := cw.PageStatistics(); stats != nil {
		nonNull := indices.Len() - indices.NullN()
		stats.IncNulls(int64(max(len(defs)-nonNull, 0)))
		stats.IncNumValues(int64(nonNull))
		if err := stats.UpdateFromArrow(normalized, false); err != nil {
			return err
		}
	}
	return cw.WriteDictIndices(indices, defs, nil)
}

// maxEarlyPlainRows bounds the row groups in which startsPlain may start a dictionary
// column plain: far below the values whose dictionary indices could fill a data page
// (DataPageSize, 1 MiB, at up to ~4 bytes a value) before arrow-go's cost check has seen
// them all.
const maxEarlyPlainRows = 1 << 16

// usesDictionary says whether arrow-go's column chunk writer of descr starts with a
// dictionary (file.NewColumnChunkWriter's rule).
func usesDictionary(descr *pqschema.Column, props *parquet.WriterProperties) bool {
	t := descr.PhysicalType()
	return props.DictionaryEnabledFor(descr.Path()) && t != parquet.Types.Boolean && t != parquet.Types.Int96
}

// startsPlain says whether the column chunk writer of descr, about to encode pieces (rows rows)
// with a dictionary, would drop it for plain anyway by its cost check (parquet-mr's rule,
// which the writer properties turn on for every dictionary column, dictionary.go), and
// so can start plain. arrow-go applies the check after each batch of WriteBatchSize
// values until the first data page is cut, and then re-encodes what it buffered as
// plain: in a small file, after hashing every value into a dictionary. The writer's
// choice (chooseEncodings) estimates the indices bit-packed; arrow-go's check takes an
// upper bound of their RLE size, so a column of ~700–850 distinct values in 1,000 rows
// (timestamps, amounts, ids of a stream batch) is chosen for a dictionary that arrow-go
// then drops: its hash table grown four times over for nothing, ~7 % of a batch's
// allocation (docs/performance.md § Parquet CPU of a small file). dictionaryLoses counts
// the distinct values and applies arrow-go's estimate (arrowIndexBytes); when it says the
// dictionary loses over the whole row group, arrow-go's last check, which sees every
// value (no page is cut under maxEarlyPlainRows), drops it too, so starting plain writes
// the same bytes (TestArrowIndexBytes, TestStartsPlainMatchesArrow). Only types whose
// Parquet values are their Arrow values one to one are counted (integers, dates, times,
// timestamps, decimals stored as integers, strings and binaries in one piece); floats
// (NaN, -0) and the rest keep arrow-go's course.
func startsPlain(descr *pqschema.Column, props *parquet.WriterProperties, pieces []arrow.Array, rows int64) bool {
	if rows == 0 || rows > maxEarlyPlainRows || !usesDictionary(descr, props) ||
		!props.DictionaryCostFallbackEnabledFor(descr.Path()) {
		return false
	}
	width := 0
	switch descr.PhysicalType() {
	case parquet.Types.Int32:
		width = 4
	case parquet.Types.Int64:
		width = 8
	case parquet.Types.ByteArray:
	default:
		return false
	}
	seen := distinctPool.Get().(*distinctSets)
	defer distinctPool.Put(seen)
	return seen.dictionaryLoses(pieces, width)
}
