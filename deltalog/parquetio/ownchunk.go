package parquetio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
)

// A flat file's column chunk whose values fit one data page is written here, as arrow-go's
// column chunk writer would write it, instead of through that writer
// (docs/decisions/0021-data-file-pages-encoded-here.md). A stream batch's bronze file has
// ~20 column chunks of ~1,000 values, and arrow-go's machinery per chunk (the writer and
// its encoders, statistics objects and level sinks, the page writer's Thrift serializer,
// the dictionary re-hashed by PutDictionary, the footer entry serialized into a dropped
// 4 KiB buffer) cost more than the values' encoding: ~1.4 ms of a batch's ~2.6 ms of
// Parquet by profile (docs/performance.md § CPU per batch: the commit path, and what is
// left by owner). Three kinds of chunk are written here:
//
//   - plain: a column without a dictionary (its encoding chosen plain, or a dictionary
//     column that startsPlain starts plain) of a type whose Parquet values are its Arrow
//     values, converted as pqarrow converts them (ownKind), and whose plain values are
//     under DataPageSize: arrow-go's writer cuts a page only once they reach it. The page
//     is the definition levels (HybridEncoder, fed by WriteBatchSize as the writer feeds
//     its encoder) and the values, plain;
//   - dictionary: a string or binary column given as the writer's own dictionary
//     (ownDictionary, dictionary.go), which arrow-go writes as one page whatever its
//     rows (writeOwnDictionary puts indices, which never count towards a page's size):
//     the dictionary page (the values, plain) and one data page of the levels and the
//     indices, bit width first, RLE/bit-packed;
//   - integer dictionary: an integer column (of the kinds above) that arrow-go's writer
//     would dictionary-encode, its checks replayed batch by batch (ownIntDictChunk): as
//     the dictionary's pages, or plain when arrow-go would drop the dictionary before
//     its first page.
//
// All carry the statistics arrow-go's typed statistics give (appendPlain), in the page
// header and in the footer entry, the encodings and encoding stats arrow-go's page writer
// counts, and what arrow-go's page writer leaves of the footer entry in the file
// (FooterEntrySpill). Any other chunk (a type not listed, a float dictionary, values of a
// page or more, NULLs in a required column, a layout the flat encoder never gives) goes
// through arrow-go's column chunk writer as before. TestOwnChunksMatchPqarrow,
// TestOwnIntDictionariesMatchPqarrow and FuzzOwnChunksMatchPqarrow hold the files to
// pqarrow.FileWriter's, byte for byte.

// ownScratch is the scratch of the column chunks written here, kept from file to file
// (ownScratches).
type ownScratch struct {
	levels HybridEncoder
	defs   []int16
	idx    []int32
	// dict numbers an integer column's distinct values, entries in order of first
	// appearance (ownIntDictChunk).
	dict    intIndex
	entries []int64
	// page is the uncompressed page being built.
	page []byte
	// PageScratch's spill is also the pager's (flat.go).
	PageScratch
	// footer is the file's footer serialized (flatEncoder.close).
	footer bytes.Buffer
}

// ownChunks counts the column chunks written here in the process, for the tests to see
// which path a file took.
var ownChunks atomic.Int64

var ownScratches = sync.Pool{New: func() any {
	return &ownScratch{}
}}

// ownKind is how a column's Arrow values become its Parquet values, as pqarrow converts
// them (its writeDenseArrow); ownNone: not written here.
type ownKind uint8

const (
	ownNone    ownKind = iota
	ownInt32           // int32, date32, time32[ms]: INT32 as they are
	ownInt16           // INT32, sign-extended
	ownInt8            // INT32, sign-extended
	ownInt64           // int64, time64, timestamp[ms|us|ns]: INT64 as they are
	ownDec32           // decimal128 of precision ≤ 9: INT32, its low bits
	ownDec64           // decimal128 of precision 10–18: INT64, its low bits
	ownFloat32         // FLOAT
	ownFloat64         // DOUBLE
	ownBytes           // string, binary: BYTE_ARRAY
)

// ownKindOf is the kind of a column of type dt written as descr, ownNone when the pair is
// not one this file writes (unsigned integers, whose statistics sort unsigned; seconds,
// which pqarrow scales; large and fixed-size binaries, wide decimals, float16, date64;
// booleans, whose pages arrow-go's bitmap writer can leave with set bits past the last
// value, bits of its source bitmap or of NULL slots: FuzzOwnChunksMatchPqarrow's inputs
// efedab3745cc1b5b and 62f3bc351cdb679c).
func ownKindOf(dt arrow.DataType, descr *pqschema.Column) ownKind {
	pt := descr.PhysicalType()
	signed := descr.SortOrder() == pqschema.SortSIGNED
	switch dt := dt.(type) {
	case *arrow.Int32Type, *arrow.Date32Type:
		if pt == parquet.Types.Int32 && signed {
			return ownInt32
		}
	case *arrow.Time32Type:
		if pt == parquet.Types.Int32 && signed && dt.Unit == arrow.Millisecond {
			return ownInt32
		}
	case *arrow.Int16Type:
		if pt == parquet.Types.Int32 && signed {
			return ownInt16
		}
	case *arrow.Int8Type:
		if pt == parquet.Types.Int32 && signed {
			return ownInt8
		}
	case *arrow.Int64Type, *arrow.Time64Type:
		if pt == parquet.Types.Int64 && signed {
			return ownInt64
		}
	case *arrow.TimestampType:
		if pt == parquet.Types.Int64 && signed && dt.Unit != arrow.Second {
			return ownInt64
		}
	case *arrow.Decimal128Type:
		switch {
		case pt == parquet.Types.Int32 && signed && dt.Precision <= 9:
			return ownDec32
		case pt == parquet.Types.Int64 && signed && dt.Precision <= 18:
			return ownDec64
		}
	case *arrow.Float32Type:
		if pt == parquet.Types.Float {
			return ownFloat32
		}
	case *arrow.Float64Type:
		if pt == parquet.Types.Double {
			return ownFloat64
		}
	case *arrow.StringType, *arrow.BinaryType:
		if pt == parquet.Types.ByteArray {
			return ownBytes
		}
	}
	return ownNone
}

// plainSize is the plain size of pieces' non-NULL values (nonNull of them) of kind k.
func plainSize(k ownKind, pieces []arrow.Array, nonNull int) int64 {
	switch k {
	case ownInt32, ownInt16, ownInt8, ownDec32, ownFloat32:
		return 4 * int64(nonNull)
	case ownInt64, ownDec64, ownFloat64:
		return 8 * int64(nonNull)
	}
	size := 4 * int64(nonNull)
	for _, p := range pieces {
		offs, _ := binaryValues(p)
		if p.NullN() == 0 {
			size += int64(offs[len(offs)-1] - offs[0])
			continue
		}
		for i := range p.Len() {
			if p.IsValid(i) {
				size += int64(offs[i+1] - offs[i])
			}
		}
	}
	return size
}

// binaryValues are a string or binary array's len+1 value offsets and its value bytes
// from offs[0].
func binaryValues(a arrow.Array) ([]int32, []byte) {
	switch c := a.(type) {
	case *array.String:
		return c.ValueOffsets(), c.ValueBytes()
	case *array.Binary:
		return c.ValueOffsets(), c.ValueBytes()
	}
	return nil, nil
}

// ownChunk writes the column chunk meta of pieces (rows rows) here when it is one this
// file writes, and reports whether it did; plain is startsPlain's answer for it.
func (f *flatEncoder) ownChunk(meta *metadata.ColumnChunkMetaDataBuilder, pieces []arrow.Array, rows int64, plain bool) (bool, error) {
	descr := meta.Descr()
	props := f.e.props
	path := descr.Path()
	if rows <= 0 || rows >= math.MaxInt32 || len(pieces) == 0 || descr.MaxRepetitionLevel() != 0 || descr.MaxDefinitionLevel() > 1 ||
		!props.StatisticsEnabledFor(path) || descr.SortOrder() == pqschema.SortUNKNOWN {
		return false, nil
	}
	total, nulls := 0, 0
	for _, p := range pieces {
		total += p.Len()
		nulls += p.NullN()
	}
	if int64(total) != rows {
		return false, fmt.Errorf("parquetio: column %s: %d values for a row group of %d rows", descr.Name(), total, rows)
	}
	if nulls > 0 && descr.MaxDefinitionLevel() == 0 {
		return false, nil // NULLs in a required column: pqarrow writes their slots' values
	}
	for _, p := range pieces {
		if p.Len() == 0 {
			return false, nil // never given (writeRowGroup's pieces are records' columns)
		}
	}
	if d, ok := pieces[0].(*array.Dictionary); ok {
		if _, int32s := d.Indices().(*array.Int32); !int32s || len(pieces) != 1 || !usesDictionary(descr, props) ||
			ownKindOf(d.Dictionary().DataType(), descr) != ownBytes {
			return false, nil
		}
		ownChunks.Add(1)
		return true, f.ownDictChunk(meta, d, nulls)
	}
	if props.EncodingFor(path) != parquet.Encodings.Plain {
		return false, nil
	}
	k := ownKindOf(pieces[0].DataType(), descr)
	if usesDictionary(descr, props) && !plain {
		if intWidth(k) == 0 {
			return false, nil
		}
		return f.ownIntDictChunk(meta, k, pieces, total, nulls)
	}
	if k == ownNone || plainSize(k, pieces, total-nulls) >= props.DataPageSize() {
		return false, nil
	}
	ownChunks.Add(1)
	return true, f.ownPlainChunk(meta, k, pieces, total, nulls)
}

// levels appends the chunk's definition levels to s.page (none for a required column):
// 1 where a value is, 0 where NULL.
func (s *ownScratch) appendLevels(descr *pqschema.Column, props *parquet.WriterProperties, pieces []arrow.Array, rows, nulls int) {
	if descr.MaxDefinitionLevel() == 0 {
		return
	}
	if cap(s.defs) < rows {
		s.defs = make([]int16, rows)
	}
	defs := s.defs[:rows]
	if nulls == 0 {
		for i := range defs {
			defs[i] = 1
		}
	} else {
		at := 0
		for _, p := range pieces {
			for i := range p.Len() {
				defs[at] = 0
				if p.IsValid(i) {
					defs[at] = 1
				}
				at++
			}
		}
	}
	s.page = s.levels.AppendLevels(s.page, defs, 1, int(props.WriteBatchSize()))
}

// ownPlainChunk writes the chunk meta of kind k as one plain data page.
func (f *flatEncoder) ownPlainChunk(meta *metadata.ColumnChunkMetaDataBuilder, k ownKind, pieces []arrow.Array, rows, nulls int) error {
	descr := meta.Descr()
	props := f.e.props
	s := f.own
	s.page = s.page[:0]
	s.appendLevels(descr, props, pieces, rows, nulls)
	st, err := s.appendPlain(k, descr, pieces, rows-nulls)
	if err != nil {
		return err
	}
	return WritePlainChunk(f.sink, f.sink.n, meta, props, s.page, rows, nulls, st, &s.PageScratch)
}

// PageScratch is the scratch WritePlainChunk keeps from column chunk to column chunk: the
// compressed page, the page header, the footer entry's spill and the encoding stats. Its
// zero value is ready; one is used by one goroutine at a time.
type PageScratch struct {
	comp, header []byte
	spill        FooterEntryScratch
	// dictStats and dataStats are the chunk's encoding stats, cleared for each chunk
	// (ColumnChunkMetaDataBuilder.Finish copies them).
	dictStats, dataStats map[parquet.Encoding]int32
}

// encodingStats returns s's encoding stats maps, empty.
func (s *PageScratch) encodingStats() (dict, data map[parquet.Encoding]int32) {
	if s.dictStats == nil {
		s.dictStats, s.dataStats = map[parquet.Encoding]int32{}, map[parquet.Encoding]int32{}
	}
	clear(s.dictStats)
	clear(s.dataStats)
	return s.dictStats, s.dataStats
}

// WritePlainChunk writes to w, which is at offset start of the file, the column chunk meta
// as arrow-go's column chunk writer writes a column whose values fit one V1 data page,
// plain-encoded (their plain size under props.DataPageSize(), which the caller checks:
// the writer cuts a page only once they reach it): raw, the page's levels (repetition,
// then definition, each as HybridEncoder.AppendLevels gives them) and plain values,
// compressed with the column's codec of props after the page header (AppendDataPageHeader)
// of numValues levels, nulls of them without a value; then it fills meta's footer entry
// (sizes and offsets in bytes, the encodings arrow-go counts) and writes what arrow-go's
// page writer leaves of it in the file (FooterEntrySpill). st holds the values' minimum
// and maximum as arrow-go's typed statistics encode them (none when there are no values);
// the page and the entry carry it completed by finishStatistics. The error is the
// codec's, w's, Finish's or the spill's. A flat data file's chunks (ownchunk.go,
// docs/decisions/0021-data-file-pages-encoded-here.md) and a checkpoint's (deltalog's
// cpColumn.ownPage, docs/decisions/0020-checkpoint-pages-encoded-here.md) are written
// with it.
func WritePlainChunk(w io.Writer, start int64, meta *metadata.ColumnChunkMetaDataBuilder, props *parquet.WriterProperties, raw []byte, numValues, nulls int, st metadata.EncodedStatistics, s *PageScratch) error {
	finishStatistics(&st, meta.Descr(), props, numValues, nulls)
	hdr, compressed, err := s.writePage(w, meta.Descr().Path(), props, raw, func(h []byte, compressed int) []byte {
		return AppendDataPageHeader(h, numValues, len(raw), compressed, parquet.Encodings.Plain, &st)
	})
	if err != nil {
		return err
	}
	meta.SetStats(st)
	dict, data := s.encodingStats()
	data[parquet.Encodings.Plain] = 1
	err = meta.Finish(metadata.ChunkMetaInfo{
		NumValues:        int64(numValues),
		IndexPageOffset:  -1,
		DataPageOffset:   start,
		CompressedSize:   int64(hdr + compressed),
		UncompressedSize: int64(hdr + len(raw)),
	}, false, false, metadata.EncodingStats{DictEncodingStats: dict, DataEncodingStats: data})
	if err != nil {
		return err
	}
	return FooterEntrySpill(meta, w, &s.spill)
}

// finishStatistics completes a page's statistics st (the values' minimum and maximum) of
// the column descr as arrow-go's typed statistics encode them: the nulls (nulls of levels
// levels without a value), whether all are, the minimum and maximum dropped when longer
// than props' MaxStatsSize, and the deprecated pair written for a signed sort order.
func finishStatistics(st *metadata.EncodedStatistics, descr *pqschema.Column, props *parquet.WriterProperties, levels, nulls int) {
	st.SetNullCount(int64(nulls))
	st.AllNullValue = levels == nulls
	st.ApplyStatSizeLimits(int(props.MaxStatsSizeFor(descr.Path())))
	st.Signed = descr.SortOrder() == pqschema.SortSIGNED
}

// writePage compresses raw with the codec of the column at path as arrow-go's page writer
// does, and writes to w the page header header(h, compressed size) and the compressed
// bytes; it returns the sizes of the header and of the compressed bytes.
func (s *PageScratch) writePage(w io.Writer, path string, props *parquet.WriterProperties, raw []byte, header func(h []byte, compressed int) []byte) (hdr, compressed int, err error) {
	data := raw
	if c := props.CompressionFor(path); c != compress.Codecs.Uncompressed {
		codec, err := compress.GetCodec(c)
		if err != nil {
			return 0, 0, err
		}
		if bound := int(codec.CompressBound(int64(len(raw)))); cap(s.comp) < bound {
			s.comp = make([]byte, 0, bound)
		}
		data = codec.EncodeLevel(s.comp[:0], raw, props.CompressionLevelFor(path))
		s.comp = data[:0]
	}
	s.header = header(s.header[:0], len(data))
	if _, err := w.Write(s.header); err != nil {
		return 0, 0, err
	}
	if _, err := w.Write(data); err != nil {
		return 0, 0, err
	}
	return len(s.header), len(data), nil
}

// appendPlain appends pieces' non-NULL values (nonNull of them) of kind k to s.page,
// plain (integers and floats little-endian, strings each a 4-byte length and the bytes),
// and returns their minimum and maximum as arrow-go's typed statistics encode them:
// integers in signed order, strings and binaries in unsigned byte order, floats by
// arrow-go's own statistics (NaN skipped, the signs of zero), each plain-encoded (a
// string without its length).
func (s *ownScratch) appendPlain(k ownKind, descr *pqschema.Column, pieces []arrow.Array, nonNull int) (metadata.EncodedStatistics, error) {
	var st metadata.EncodedStatistics
	b := s.page
	valid := func(p arrow.Array, i int) bool { return p.NullN() == 0 || p.IsValid(i) }
	switch k {
	case ownInt32, ownInt16, ownInt8, ownDec32, ownInt64, ownDec64:
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		width := intWidth(k)
		for _, p := range pieces {
			n, off := p.Len(), p.Data().Offset()
			buf := p.Data().Buffers()[1].Bytes()
			for i := range n {
				if !valid(p, i) {
					continue
				}
				v := intAt(k, buf, off+i)
				lo, hi = min(lo, v), max(hi, v)
				b = appendInt(b, v, width)
			}
		}
		if nonNull > 0 {
			st.SetMax(appendInt(nil, hi, width))
			st.SetMin(appendInt(nil, lo, width))
		}
	case ownFloat32, ownFloat64:
		width := 4
		if k == ownFloat64 {
			width = 8
		}
		stats := metadata.NewStatistics(descr, memory.DefaultAllocator)
		for _, p := range pieces {
			n, off := p.Len(), p.Data().Offset()
			buf := p.Data().Buffers()[1].Bytes()
			for i := range n {
				if valid(p, i) {
					b = append(b, buf[width*(off+i):width*(off+i+1)]...)
				}
			}
			if n == 0 {
				continue
			}
			var bits []byte
			if p.NullN() > 0 {
				bits = p.NullBitmapBytes()
			}
			switch st := stats.(type) {
			case *metadata.Float32Statistics:
				vals := arrow.Float32Traits.CastFromBytes(buf)[off : off+n]
				if bits == nil {
					st.Update(vals, 0)
				} else {
					st.UpdateSpaced(vals, bits, int64(off), int64(p.NullN()))
				}
			case *metadata.Float64Statistics:
				vals := arrow.Float64Traits.CastFromBytes(buf)[off : off+n]
				if bits == nil {
					st.Update(vals, 0)
				} else {
					st.UpdateSpaced(vals, bits, int64(off), int64(p.NullN()))
				}
			}
		}
		enc, err := stats.Encode()
		if err != nil {
			return st, err
		}
		st.Max, st.HasMax, st.Min, st.HasMin = enc.Max, enc.HasMax, enc.Min, enc.HasMin
	case ownBytes:
		var lo, hi []byte
		first := true
		for _, p := range pieces {
			offs, data := binaryValues(p)
			base := offs[0]
			for i := range p.Len() {
				if !valid(p, i) {
					continue
				}
				v := data[offs[i]-base : offs[i+1]-base]
				b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
				b = append(b, v...)
				if first || bytes.Compare(v, lo) < 0 {
					lo = v
				}
				if first || bytes.Compare(v, hi) > 0 {
					hi = v
				}
				first = false
			}
		}
		if nonNull > 0 {
			st.SetMax(append([]byte{}, hi...)) // never nil: an empty maximum is one
			st.SetMin(append([]byte{}, lo...))
		}
	}
	s.page = b
	return st, nil
}

// ownDictChunk writes the chunk meta of the writer's own dictionary array d (nulls of
// its rows NULL) as arrow-go writes it through writeOwnDictionary: the dictionary page
// (the dictionary's values, plain), then one data page of the levels and the indices,
// with the statistics of the dictionary's non-empty values (each referenced) and the
// NULLs.
func (f *flatEncoder) ownDictChunk(meta *metadata.ColumnChunkMetaDataBuilder, d *array.Dictionary, nulls int) error {
	s := f.own
	rows := d.Len()
	dict := d.Dictionary()
	entries := dict.Len()

	// The dictionary page, and the values' minimum and maximum.
	offs, data := binaryValues(dict)
	base := offs[0]
	s.page = s.page[:0]
	// The statistics skip the empty value, as arrow-go's ByteArrayStatistics.UpdateFromArrow
	// (which writeOwnDictionary's pqarrow path takes them with) does.
	var lo, hi []byte
	for i := range entries {
		v := data[offs[i]-base : offs[i+1]-base]
		s.page = binary.LittleEndian.AppendUint32(s.page, uint32(len(v)))
		s.page = append(s.page, v...)
		if len(v) == 0 {
			continue
		}
		if lo == nil || bytes.Compare(v, lo) < 0 {
			lo = v
		}
		if hi == nil || bytes.Compare(v, hi) > 0 {
			hi = v
		}
	}
	var st metadata.EncodedStatistics
	if lo != nil {
		st.SetMax(append([]byte{}, hi...))
		st.SetMin(append([]byte{}, lo...))
	}
	ind := d.Indices().(*array.Int32)
	s.idx = s.idx[:0]
	if nulls == 0 {
		s.idx = append(s.idx, ind.Int32Values()...)
	} else {
		for i, v := range ind.Int32Values() {
			if ind.IsValid(i) {
				s.idx = append(s.idx, v)
			}
		}
	}
	return f.writeDictChunk(meta, entries, st, []arrow.Array{d}, rows, nulls)
}

// writeDictChunk writes a dictionary-encoded column chunk meta as arrow-go's column chunk
// writer writes one of one page: the dictionary page (s.page: its entries values,
// plain), then the data page of the levels of pieces (rows rows, nulls of them NULL) and
// the indices (s.idx), the statistics st (the values' minimum and maximum) completed
// with the NULLs.
func (f *flatEncoder) writeDictChunk(meta *metadata.ColumnChunkMetaDataBuilder, entries int, st metadata.EncodedStatistics, pieces []arrow.Array, rows, nulls int) error {
	descr := meta.Descr()
	props := f.e.props
	s := f.own
	dictStart := f.sink.n
	dictRaw := len(s.page)
	dictHdr, _, err := s.writePage(f.sink, descr.Path(), props, s.page, func(h []byte, compressed int) []byte {
		return AppendDictionaryPageHeader(h, entries, dictRaw, compressed, props.DictionaryPageEncoding())
	})
	if err != nil {
		return err
	}
	finishStatistics(&st, descr, props, rows, nulls)

	// The data page: levels, then the indices of the non-NULL rows.
	s.page = s.page[:0]
	s.appendLevels(descr, props, pieces, rows, nulls)
	s.page = s.levels.AppendIndices(s.page, s.idx, entries)
	dataStart := f.sink.n
	dataHdr, _, err := s.writePage(f.sink, descr.Path(), props, s.page, func(h []byte, compressed int) []byte {
		return AppendDataPageHeader(h, rows, len(s.page), compressed, props.DictionaryIndexEncoding(), &st)
	})
	if err != nil {
		return err
	}
	meta.SetStats(st)
	dictStats, dataStats := s.encodingStats()
	dictStats[props.DictionaryPageEncoding()] = 1
	dataStats[props.DictionaryIndexEncoding()] = 1
	err = meta.Finish(metadata.ChunkMetaInfo{
		NumValues:        int64(rows),
		DictPageOffset:   dictStart,
		IndexPageOffset:  -1,
		DataPageOffset:   dataStart,
		CompressedSize:   f.sink.n - dictStart,
		UncompressedSize: int64(dictHdr + dictRaw + dataHdr + len(s.page)),
	}, true, false, metadata.EncodingStats{DictEncodingStats: dictStats, DataEncodingStats: dataStats})
	if err != nil {
		return err
	}
	return FooterEntrySpill(meta, f.sink, &s.spill)
}

// intWidth is the width of an integer kind's Parquet values (INT32 or INT64), 0 for the
// other kinds.
func intWidth(k ownKind) int {
	switch k {
	case ownInt32, ownInt16, ownInt8, ownDec32:
		return 4
	case ownInt64, ownDec64:
		return 8
	}
	return 0
}

// appendInt appends v plain as a Parquet integer of width bytes (4: INT32, its low bits;
// 8: INT64), little-endian.
func appendInt(b []byte, v int64, width int) []byte {
	if width == 4 {
		return binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return binary.LittleEndian.AppendUint64(b, uint64(v))
}

// intAt is value i of a values buffer buf of integer kind k, as its Parquet value.
func intAt(k ownKind, buf []byte, i int) int64 {
	switch k {
	case ownInt32:
		return int64(int32(binary.LittleEndian.Uint32(buf[4*i:])))
	case ownInt16:
		return int64(int16(binary.LittleEndian.Uint16(buf[2*i:])))
	case ownInt8:
		return int64(int8(buf[i]))
	case ownDec32:
		return int64(int32(binary.LittleEndian.Uint64(buf[16*i:])))
	case ownDec64:
		return int64(binary.LittleEndian.Uint64(buf[16*i:]))
	}
	return int64(binary.LittleEndian.Uint64(buf[8*i:]))
}

// ownIntDictChunk writes the chunk meta of an integer column (kind k) that arrow-go's
// column chunk writer would start with its own dictionary, and reports whether it did.
// The writer numbers the values in order of first appearance (its memo table), and after
// each batch of WriteBatchSize levels of each piece (pqarrow hands it the pieces one by
// one) checks, in this order: the values' raw size (width bytes each) against
// DataPageSize, cutting a page (then this declines: arrow-go's); the dictionary's size
// against DictionaryPageSizeLimit, and the cost rule (dictionary plus its estimate of the
// indices, arrowIndexBytes, not smaller than the raw size: dictionary.go), each of which
// drops the dictionary for plain before any page is cut, the chunk then written plain
// (ownPlainChunk: a fallback before the first page leaves no trace of the dictionary).
// Otherwise the chunk is the dictionary page and one data page (writeDictChunk), with the
// values' statistics.
func (f *flatEncoder) ownIntDictChunk(meta *metadata.ColumnChunkMetaDataBuilder, k ownKind, pieces []arrow.Array, rows, nulls int) (bool, error) {
	descr := meta.Descr()
	props := f.e.props
	s := f.own
	width := intWidth(k)
	s.dict.reset(rows)
	s.entries, s.idx = s.entries[:0], s.idx[:0]
	batch := int(props.WriteBatchSize())
	costRule := props.DictionaryCostFallbackEnabledFor(descr.Path())
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	nonNull := 0
	for _, p := range pieces {
		n, off := p.Len(), p.Data().Offset()
		buf := p.Data().Buffers()[1].Bytes()
		for start := 0; start < n; start += batch {
			for i := start; i < min(start+batch, n); i++ {
				if p.NullN() > 0 && !p.IsValid(i) {
					continue
				}
				v := intAt(k, buf, off+i)
				lo, hi = min(lo, v), max(hi, v)
				s.idx = append(s.idx, s.dict.index(v, &s.entries))
				nonNull++
			}
			raw := int64(width * nonNull)
			if raw >= props.DataPageSize() {
				return false, nil
			}
			dict := int64(width * len(s.entries))
			if dict >= props.DictionaryPageSizeLimit() || (costRule && dict+arrowIndexBytes(nonNull, len(s.entries)) >= raw) {
				if int64(width*(rows-nulls)) >= props.DataPageSize() {
					return false, nil // plain from here, over more than a page
				}
				ownChunks.Add(1)
				return true, f.ownPlainChunk(meta, k, pieces, rows, nulls)
			}
		}
	}
	var st metadata.EncodedStatistics
	s.page = s.page[:0]
	for _, v := range s.entries {
		s.page = appendInt(s.page, v, width)
	}
	if nonNull > 0 {
		st.SetMax(appendInt(nil, hi, width))
		st.SetMin(appendInt(nil, lo, width))
	}
	ownChunks.Add(1)
	return true, f.writeDictChunk(meta, len(s.entries), st, pieces, rows, nulls)
}
