package parquetio

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Dictionaries, column by column, from what the data shows. When a file is opened, the
// first dictSampleRows rows of its first piece decide each column's encoding with
// parquet-mr's rule (Spark's writer): a dictionary when the dictionary plus its bit-packed
// indices are smaller than the plain values, else plain. Three encodings follow:
//
//   - encPlain: no dictionary. A column of unique values (_seqval, keys, amounts, names)
//     is encoded plain from its first value. Before, every column started a dictionary
//     and arrow-go dropped it after the first 1,024 values of each column chunk; for
//     strings that cost a hash-table insert and a heap allocation per value hashed.
//   - encOwnDict: a string or binary column with few distinct values (_capture_instance,
//     _start_lsn, _snapshot, status codes, a state). The writer builds the row group's
//     dictionary itself (a Go map keyed by the values in place, with a fast path for a run
//     of one value) and hands pqarrow a dictionary array, which it writes as the
//     dictionary page and the indices without hashing again. arrow-go's own dictionary
//     encoder for byte arrays boxes every value in an interface to hash it: a heap
//     allocation per value, most of the encoder's CPU on string-heavy change rows
//     (docs/performance.md § The writer against DuckDB). The Parquet file is the same: a
//     dictionary page and RLE/bit-packed indices, the same logical type (no Arrow schema
//     is stored in the file). A row group whose dictionary turns out too big
//     (maxOwnDictBytes) or not smaller than the plain values is handed over as it came,
//     and arrow-go's encoder falls back to plain by the same rule; the file's later row
//     groups then skip the attempt.
//   - encDict: any other column with few distinct values (integers, timestamps,
//     decimals): arrow-go's typed dictionary encoder, which hashes without allocating,
//     with the same fallback rule.
//
// A column whose values repeat only further apart than the sample loses a dictionary that
// would have paid off across the row group; a column that looked repetitive and is not
// costs one pass of hashing before it falls back.

// colEncoding is a column's encoding in one file.
type colEncoding uint8

const (
	encPlain colEncoding = iota
	encDict
	encOwnDict
)

const (
	// dictSampleRows are the rows of a file's first piece that decide its encodings:
	// about a page of a narrow column.
	dictSampleRows = 4096
	// maxOwnDictBytes bounds a dictionary built by the writer (values plus 4-byte
	// lengths), as arrow-go's DictionaryPageSizeLimit bounds its own.
	maxOwnDictBytes = 1 << 20
)

// chooseEncodings decides the encoding of each top-level column of first's schema from its
// first dictSampleRows rows. Nested columns keep arrow-go's dictionary with the fallback.
func chooseEncodings(first arrow.RecordBatch) []colEncoding {
	out := make([]colEncoding, first.NumCols())
	n := min(int(first.NumRows()), dictSampleRows)
	seen := distinctPool.Get().(*distinctSets)
	defer distinctPool.Put(seen)
	for i, col := range first.Columns() {
		if n == col.Len() {
			out[i] = seen.chooseEncoding(col)
			continue
		}
		sample := array.NewSlice(col, 0, int64(n))
		out[i] = seen.chooseEncoding(sample)
		sample.Release()
	}
	return out
}

// distinctPool keeps distinctSets, and the room their maps grew to, for the next file.
var distinctPool = sync.Pool{New: func() any { return new(distinctSets) }}

// distinctSets are the sets of values chooseEncoding counts a column's distinct values
// in, kept across the columns of one file (cleared, not reallocated; distinct.go). Values
// are keyed without a copy: strings by the bytes in the Arrow buffer, fixed-width values
// of up to 16 bytes as integers. Before, every distinct binary or fixed-width value was
// converted to a Go string to be a key: an allocation per value, a tenth of a 1,000-row
// stream batch's allocation (docs/performance.md § Requests per stream batch).
type distinctSets struct {
	str  bytesSet
	u64  u64Set
	u128 u128Set
}

// chooseEncoding applies parquet-mr's rule to a sample of one column.
func chooseEncoding(a arrow.Array) colEncoding {
	var seen distinctSets
	return seen.chooseEncoding(a)
}

// chooseEncoding applies parquet-mr's rule to a sample of one column: plain when it has
// no non-NULL value or when its dictionary plus indices are not smaller than its plain
// values. The plain size is known before the values are counted, and the dictionary only
// grows with them, so the count stops at the first distinct value that makes the
// dictionary lose: a column of unique values is decided before its end.
func (s *distinctSets) chooseEncoding(a arrow.Array) colEncoding {
	nonNull := a.Len() - a.NullN()
	var valid []byte
	off := a.Data().Offset()
	if a.NullN() > 0 {
		valid = a.NullBitmapBytes()
	}
	switch c := a.(type) {
	case *array.String:
		if nonNull == 0 {
			return encPlain
		}
		return s.chooseBytes(c.ValueOffsets(), c.ValueBytes(), nonNull, valid, off)
	case *array.Binary:
		if nonNull == 0 {
			return encPlain
		}
		return s.chooseBytes(c.ValueOffsets(), c.ValueBytes(), nonNull, valid, off)
	}
	fw, ok := a.DataType().(arrow.FixedWidthDataType)
	if !ok {
		return encDict // nested or variable-width of another kind: arrow-go decides
	}
	w := fw.BitWidth() / 8
	if w == 0 || len(a.Data().Buffers()) < 2 || a.Data().Buffers()[1] == nil {
		return encPlain // booleans (arrow-go has no dictionary for them), nulls
	}
	if nonNull == 0 {
		return encPlain
	}
	values := a.Data().Buffers()[1].Bytes()[off*w:]
	raw := int64(nonNull * w)
	// loses says whether a dictionary of at least distinct values already costs the
	// plain size.
	loses := func(distinct int) bool { return int64(distinct*w)+indexBytes(nonNull, distinct) >= raw }
	n := a.Len()
	switch {
	case w <= 8:
		set := &s.u64
		set.reset(n)
		for i := 0; i < n; i++ {
			if valid != nil && !bitutil.BitIsSet(valid, off+i) {
				continue
			}
			var k uint64
			switch v := values[i*w:]; w {
			case 8:
				k = binary.LittleEndian.Uint64(v)
			case 4:
				k = uint64(binary.LittleEndian.Uint32(v))
			case 2:
				k = uint64(binary.LittleEndian.Uint16(v))
			case 1:
				k = uint64(v[0])
			default:
				var key [8]byte
				copy(key[:], v[:w])
				k = binary.LittleEndian.Uint64(key[:])
			}
			if set.add(k) && loses(set.n) {
				return encPlain
			}
		}
	case w == 16: // decimal128, interval_month_day_nano
		set := &s.u128
		set.reset(n)
		for i := 0; i < n; i++ {
			if valid != nil && !bitutil.BitIsSet(valid, off+i) {
				continue
			}
			v := values[i*16 : (i+1)*16]
			if set.add([2]uint64{binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:])}) && loses(set.n) {
				return encPlain
			}
		}
	default: // decimal256, fixed-size binary: keyed as strings
		set := &s.str
		set.reset(n, values)
		defer set.drop()
		for i := 0; i < n; i++ {
			if valid != nil && !bitutil.BitIsSet(valid, off+i) {
				continue
			}
			if set.add(int32(i*w), int32((i+1)*w)) && loses(set.len()) {
				return encPlain
			}
		}
	}
	return encDict
}

// chooseBytes is chooseEncoding for a string or binary column of nonNull non-NULL
// values: offs its len+1 value offsets, data its value bytes (from offs[0]), valid its
// validity bitmap from bit off (nil: no NULLs).
func (s *distinctSets) chooseBytes(offs []int32, data []byte, nonNull int, valid []byte, off int) colEncoding {
	if s.bytesLoses(offs, data, nonNull, valid, off, indexBytes) {
		return encPlain
	}
	return encOwnDict
}

// bytesLoses reports whether a dictionary of the string or binary values (offs, data,
// valid and off as chooseBytes takes them) reaches their plain size (4 bytes of length
// and the bytes of each non-NULL value): its entries (4 bytes of length each, and their
// bytes) plus indexEst(nonNull, entries), the size of the indices by one writer's
// estimate (indexBytes for ours, arrowIndexBytes for arrow-go's check). It stops at the
// first distinct value that makes the dictionary lose.
func (s *distinctSets) bytesLoses(offs []int32, data []byte, nonNull int, valid []byte, off int, indexEst func(n, d int) int64) bool {
	n := len(offs) - 1
	base := offs[0]
	raw := int64(4 * nonNull)
	if valid == nil {
		raw += int64(offs[n] - base)
	} else {
		for i := 0; i < n; i++ {
			if bitutil.BitIsSet(valid, off+i) {
				raw += int64(offs[i+1] - offs[i])
			}
		}
	}
	set := &s.str
	set.reset(n, data)
	defer set.drop() // no reference into the record's buffers stays in the pool
	var dict int64
	for i := 0; i < n; i++ {
		if valid != nil && !bitutil.BitIsSet(valid, off+i) {
			continue
		}
		start, end := offs[i]-base, offs[i+1]-base
		if set.add(start, end) {
			dict += int64(end-start) + 4
			if dict+indexEst(nonNull, set.len()) >= raw {
				return true
			}
		}
	}
	return false
}

// indexBytes is the size of n bit-packed indices into a dictionary of d entries.
func indexBytes(n, d int) int64 {
	return (int64(n)*int64(bits.Len(uint(max(d-1, 1)))) + 7) / 8
}

// dictionaryProperties are the writer properties that carry encs: dictionary off for the
// leaves of plain columns, on with parquet-mr's cost fallback for the others.
func dictionaryProperties(sc *schema.Schema, s *arrow.Schema, encs []colEncoding) []parquet.WriterProperty {
	var opts []parquet.WriterProperty
	for j := 0; j < sc.NumColumns(); j++ {
		col := sc.Column(j)
		enc := encDict
		if idx := s.FieldIndices(col.ColumnPath()[0]); len(idx) == 1 && encs != nil {
			enc = encs[idx[0]]
		}
		if enc == encPlain {
			opts = append(opts, parquet.WithDictionaryFor(col.Path(), false))
			continue
		}
		opts = append(opts, parquet.WithDictionaryFor(col.Path(), true), parquet.WithDictionaryCostFallbackFor(col.Path(), true))
	}
	return opts
}

// ownDictionary returns the pieces of one string or binary column of a row group as one
// dictionary array (int32 indices into the row group's distinct values, in order of first
// appearance), or ok false when the dictionary would exceed maxOwnDictBytes or not be
// smaller than the plain values (the caller then writes the pieces as they are).
func ownDictionary(dt arrow.DataType, pieces []arrow.Array) (arrow.Array, bool) {
	rows := 0
	nulls := 0
	for _, p := range pieces {
		rows += p.Len()
		nulls += p.NullN()
	}
	idx := make([]int32, rows)
	var valid []byte
	if nulls > 0 {
		valid = make([]byte, bitutil.BytesForBits(int64(rows)))
	}
	d := dictBuilders.Get().(*dictBuilder)
	defer dictBuilders.Put(d)
	d.reset()
	d.table(rows)
	defer d.reset() // no reference into the pieces stays in the pool
	pos := 0
	for _, p := range pieces {
		n := p.Len()
		if valid != nil {
			if p.NullN() == 0 {
				bitutil.SetBitsTo(valid, int64(pos), int64(n), true)
			} else {
				bitutil.CopyBitmap(p.NullBitmapBytes(), p.Data().Offset(), n, valid, pos)
			}
		}
		switch c := p.(type) {
		case *array.String:
			for i := 0; i < n; i++ {
				if c.IsValid(i) {
					idx[pos+i] = d.add(c.Value(i))
				}
			}
		case *array.Binary:
			for i := 0; i < n; i++ {
				if c.IsValid(i) {
					idx[pos+i] = d.add(c.ValueString(i))
				}
			}
		default:
			return nil, false
		}
		if d.bytes > maxOwnDictBytes {
			return nil, false
		}
		pos += n
	}
	if d.bytes+indexBytes(rows-nulls, len(d.values)) >= d.raw {
		return nil, false
	}
	var dict arrow.Array
	if dt.ID() == arrow.STRING {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.Reserve(len(d.values))
		b.ReserveData(int(d.bytes))
		b.AppendValues(d.values, nil)
		dict = b.NewArray()
		b.Release()
	} else {
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		b.Reserve(len(d.values))
		b.ReserveData(int(d.bytes))
		for _, v := range d.values {
			b.Append([]byte(v))
		}
		dict = b.NewArray()
		b.Release()
	}
	defer dict.Release()
	var validBuf *memory.Buffer
	if valid != nil {
		validBuf = memory.NewBufferBytes(valid)
	}
	data := array.NewData(arrow.PrimitiveTypes.Int32, rows, []*memory.Buffer{validBuf, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(idx))}, nil, nulls, 0)
	defer data.Release()
	indices := array.MakeFromData(data)
	defer indices.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: dt}, indices, dict), true
}

// dictBuilders keep dictBuilders, and the room their map and values grew to, for the next
// column: a stream batch's _start_lsn and a string column of a few hundred values grew
// them afresh in every file, a twentieth of a 1,000-row batch's allocation.
var dictBuilders = sync.Pool{New: func() any { return new(dictBuilder) }}

// dictBuilder numbers distinct values in order of first appearance.
type dictBuilder struct {
	// slots is an open-addressed table of 1 + the index of a value (0 empty), hashes the
	// values' hashes: a Go map[string]int32 here cost ~0.1 ms of a 1,000-row stream
	// batch's file (docs/performance.md § Issue 13: a code-level cut).
	slots  []int32
	mask   uint64
	hashes []uint64
	// values are the distinct values (pointing into the pieces' Arrow buffers, which the
	// caller holds until the dictionary array is built); bytes their dictionary size
	// (value plus 4-byte length), raw the plain size of every value added.
	values     []string
	bytes, raw int64
	// lastValue and last are the previous value and its index: runs of one value (a
	// commit's _start_lsn, a constant stamp) skip the map.
	lastValue string
	last      int32
}

// reset empties d, keeping its room.
func (d *dictBuilder) reset() {
	d.hashes = d.hashes[:0]
	clear(d.values)
	d.values = d.values[:0]
	d.bytes, d.raw = 0, 0
	d.lastValue, d.last = "", -1
}

// add returns v's index, adding it when new. v may point into an Arrow buffer, which must
// outlive d's use of it (not copied).
func (d *dictBuilder) add(v string) int32 {
	d.raw += int64(len(v)) + 4
	if d.last >= 0 && v == d.lastValue {
		return d.last
	}
	h := maphash.String(bytesSeed, v)
	for i := h & d.mask; ; i = (i + 1) & d.mask {
		j := d.slots[i]
		if j == 0 {
			d.values = append(d.values, v)
			d.hashes = append(d.hashes, h)
			j = int32(len(d.values))
			d.slots[i] = j
			d.bytes += int64(len(v)) + 4
		} else if d.hashes[j-1] != h || d.values[j-1] != v {
			continue
		}
		d.lastValue, d.last = d.values[j-1], j-1
		return j - 1
	}
}

// table empties d's table for up to n distinct values (after reset).
func (d *dictBuilder) table(n int) {
	d.slots, d.mask = emptyTable(d.slots, n)
}

// dictionaryLoses says whether arrow-go's dictionary encoder, given one column chunk's
// values (pieces), drops its dictionary by its cost check (parquet-mr's rule as arrow-go
// estimates it): the distinct values (width bytes each in Parquet, or a string's bytes
// and 4-byte length when width is 0) plus its estimate of the indices' size
// (arrowIndexBytes) are not smaller than the plain values. False when it cannot tell
// exactly: a type whose Parquet values are not its Arrow values one to one, or strings
// in more than one piece (startsPlain, flat.go).
func (s *distinctSets) dictionaryLoses(pieces []arrow.Array, width int) bool {
	nonNull := 0
	rows := 0
	for _, p := range pieces {
		rows += p.Len()
		nonNull += p.Len() - p.NullN()
	}
	if nonNull == 0 {
		return false
	}
	if width == 0 {
		return s.bytesDictionaryLoses(pieces, nonNull)
	}
	w := 0
	switch dt := pieces[0].DataType().(type) {
	case *arrow.Int8Type, *arrow.Uint8Type:
		w = 1
	case *arrow.Int16Type, *arrow.Uint16Type:
		w = 2
	case *arrow.Int32Type, *arrow.Uint32Type, *arrow.Date32Type, *arrow.Time32Type:
		w = 4
	case *arrow.Int64Type, *arrow.Time64Type, *arrow.TimestampType:
		w = 8
	case *arrow.Decimal128Type:
		if dt.Precision > 18 {
			return false
		}
		w = 16
	default:
		return false
	}
	raw := int64(nonNull * width)
	loses := func(distinct int) bool { return int64(distinct*width)+arrowIndexBytes(nonNull, distinct) >= raw }
	if w == 16 {
		s.u128.reset(rows)
	} else {
		s.u64.reset(rows)
	}
	for _, p := range pieces {
		n, off := p.Len(), p.Data().Offset()
		if n == 0 {
			continue
		}
		var valid []byte
		if p.NullN() > 0 {
			valid = p.NullBitmapBytes()
		}
		values := p.Data().Buffers()[1].Bytes()[off*w:]
		for i := 0; i < n; i++ {
			if valid != nil && !bitutil.BitIsSet(valid, off+i) {
				continue
			}
			v := values[i*w:]
			var added bool
			var distinct int
			switch w {
			case 16:
				added, distinct = s.u128.add([2]uint64{binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:])}), s.u128.n
			case 8:
				added, distinct = s.u64.add(binary.LittleEndian.Uint64(v)), s.u64.n
			case 4:
				added, distinct = s.u64.add(uint64(binary.LittleEndian.Uint32(v))), s.u64.n
			case 2:
				added, distinct = s.u64.add(uint64(binary.LittleEndian.Uint16(v))), s.u64.n
			default:
				added, distinct = s.u64.add(uint64(v[0])), s.u64.n
			}
			if added && loses(distinct) {
				return true
			}
		}
	}
	return false
}

// bytesDictionaryLoses is dictionaryLoses for a string or binary column chunk in one
// piece with nonNull non-NULL values.
func (s *distinctSets) bytesDictionaryLoses(pieces []arrow.Array, nonNull int) bool {
	if len(pieces) != 1 {
		return false
	}
	var offs []int32
	var data []byte
	switch c := pieces[0].(type) {
	case *array.String:
		offs, data = c.ValueOffsets(), c.ValueBytes()
	case *array.Binary:
		offs, data = c.ValueOffsets(), c.ValueBytes()
	default:
		return false
	}
	var valid []byte
	if pieces[0].NullN() > 0 {
		valid = pieces[0].NullBitmapBytes()
	}
	return s.bytesLoses(offs, data, nonNull, valid, pieces[0].Data().Offset(), arrowIndexBytes)
}

// arrowIndexBytes is arrow-go's estimate of the size of n dictionary indices into d
// entries, which its cost check compares (parquet/internal/encoding's
// dictEncoder.EstimatedDataEncodedSize with its BitWidth, from parquet/internal/utils'
// MaxRLEBufferSize and MinRLEBufferSize, arrow-go v18.8.0): an upper bound of the
// RLE/bit-packed hybrid, above indexBytes. TestArrowIndexBytes pins it to the encoder's
// decisions.
func arrowIndexBytes(n, d int) int64 {
	bw := indexBitWidth(d)
	groups := int64((n + 7) / 8)
	maxRLE := max(groups*int64(1+bw), groups*int64(1+(bw+7)/8))
	const maxValuesPerLiteralRun = 512
	minRLE := max(1+int64((maxValuesPerLiteralRun*bw+7)/8), 5+int64((bw+7)/8))
	return 1 + maxRLE + minRLE
}
