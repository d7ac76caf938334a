package parquetio

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// HybridEncoder is arrow-go's RLE/bit-packed hybrid encoder (RleEncoder and BitWriter in
// arrow-go's parquet/internal/utils, which no other module can import), step for step: its
// literal runs padded to 8 and their indicator reserved ahead, its repeated runs of 8 or
// more, and its fast paths for long runs of levels. It encodes a data page's definition
// and repetition levels (AppendLevels) and a dictionary page's indices (AppendIndices) in
// the bytes arrow-go's column chunk writer gives them, so that a column chunk of one page
// can be written without that writer: a flat data file's (ownchunk.go,
// docs/decisions/0021-data-file-pages-encoded-here.md) and a checkpoint's (deltalog's
// cpColumn.ownPage, docs/decisions/0020-checkpoint-pages-encoded-here.md). Fed levels by
// WriteBatchSize, as the column chunk writer hands them over, its fast paths give the
// bytes the value-by-value path gives wherever a batch ends, but for a run past 2^31
// levels (decision 0020, follow-up). The zero value is ready; an encoder keeps its buffers
// from call to call and is used by one goroutine at a time.
type HybridEncoder struct {
	out []byte // the encoded bytes; written up to byteoffset, and partial bytes past it

	// BitWriter
	bits       uint64
	byteoffset int
	bitoffset  uint

	// RleEncoder
	width            int
	buffer           []uint64
	curVal           uint64
	repCount, litCnt int32
	indicatorOffset  int
}

func (e *HybridEncoder) reset(maxLevel int16) {
	*e = HybridEncoder{out: e.out[:0], buffer: e.buffer[:0], indicatorOffset: -1}
	for maxLevel > 0 {
		e.width++
		maxLevel >>= 1
	}
}

// writeAt writes p at off, growing out as needed.
func (e *HybridEncoder) writeAt(p []byte, off int) {
	if end := off + len(p); end > len(e.out) {
		e.out = append(e.out, make([]byte, end-len(e.out))...)
	}
	copy(e.out[off:], p)
}

func (e *HybridEncoder) flushBits(align bool) {
	var n int
	if e.bitoffset > 0 {
		n = int((e.bitoffset + 7) / 8)
		var raw [8]byte
		binary.LittleEndian.PutUint64(raw[:], e.bits)
		e.writeAt(raw[:n], e.byteoffset)
	}
	if align {
		e.bits, e.byteoffset, e.bitoffset = 0, e.byteoffset+n, 0
	}
}

func (e *HybridEncoder) skipBytes(n int) int {
	e.flushBits(true)
	at := e.byteoffset
	e.byteoffset += n
	if e.byteoffset > len(e.out) {
		e.out = append(e.out, make([]byte, e.byteoffset-len(e.out))...)
	}
	return at
}

func (e *HybridEncoder) writeValue(v uint64, nbits uint) {
	e.bits |= v << e.bitoffset
	e.bitoffset += nbits
	if e.bitoffset >= 64 {
		var raw [8]byte
		binary.LittleEndian.PutUint64(raw[:], e.bits)
		e.writeAt(raw[:], e.byteoffset)
		e.byteoffset += 8
		e.bitoffset -= 64
		e.bits = v >> (nbits - e.bitoffset)
	}
}

func (e *HybridEncoder) writeAligned(v uint64, nbytes int) {
	e.flushBits(true)
	var raw [8]byte
	binary.LittleEndian.PutUint64(raw[:], v)
	e.writeAt(raw[:nbytes], e.byteoffset)
	e.byteoffset += nbytes
}

func (e *HybridEncoder) writeVlq(v uint64) {
	e.flushBits(true)
	var raw [binary.MaxVarintLen64]byte
	n := binary.PutUvarint(raw[:], v)
	e.writeAt(raw[:n], e.byteoffset)
	e.byteoffset += n
}

func (e *HybridEncoder) flushRepeated() {
	e.writeVlq(uint64(e.repCount) << 1)
	e.writeAligned(e.curVal, (e.width+7)/8)
	e.repCount = 0
	e.buffer = e.buffer[:0]
}

func (e *HybridEncoder) flushLiteral(updateIndicator bool) {
	if e.indicatorOffset == -1 {
		e.indicatorOffset = e.skipBytes(1)
	}
	for _, v := range e.buffer {
		e.writeValue(v, uint(e.width))
	}
	e.buffer = e.buffer[:0]
	if updateIndicator {
		e.writeAt([]byte{byte((e.litCnt/8)<<1 | 1)}, e.indicatorOffset)
		e.indicatorOffset = -1
		e.litCnt = 0
	}
}

func (e *HybridEncoder) flushBuffered() {
	if e.repCount >= 8 {
		e.buffer = e.buffer[:0]
		if e.litCnt != 0 {
			e.flushLiteral(true)
		}
		return
	}
	e.litCnt += int32(len(e.buffer))
	ngroups := e.litCnt / 8
	e.flushLiteral(ngroups+1 >= 1<<6)
	e.repCount = 0
}

func (e *HybridEncoder) put(v uint64) {
	if e.curVal == v {
		e.repCount++
		if e.repCount > 8 {
			return
		}
	} else {
		if e.repCount >= 8 {
			e.flushRepeated()
		}
		e.repCount = 1
		e.curVal = v
	}
	e.buffer = append(e.buffer, v)
	if len(e.buffer) == 8 {
		e.flushBuffered()
	}
}

// putBatch is RleEncoder.PutBatchLevels.
func (e *HybridEncoder) putBatch(values []int16) {
	encoded := 0
	for encoded < len(values) {
		value := values[encoded]
		if e.repCount >= 8 && e.curVal == uint64(value) {
			runEnd := encoded + 1
			for runEnd < len(values) && values[runEnd] == value {
				runEnd++
			}
			runLength := min(runEnd-encoded, int(math.MaxInt32-e.repCount))
			e.repCount += int32(runLength)
			encoded += runLength
			if e.repCount == math.MaxInt32 && encoded < len(values) && values[encoded] == value {
				e.flushRepeated()
			}
			continue
		}
		if e.repCount == 0 && len(e.buffer) == 0 && len(values)-encoded >= 8 && values[encoded+7] == value {
			runEnd := encoded + 1
			for runEnd < len(values) && values[runEnd] == value {
				runEnd++
			}
			if runEnd-encoded >= 8 {
				e.curVal = uint64(value)
				if e.litCnt != 0 {
					e.repCount = 8
					e.flushLiteral(true)
					encoded += 8
				}
				runLength := min(runEnd-encoded, int(math.MaxInt32-e.repCount))
				e.repCount += int32(runLength)
				encoded += runLength
				continue
			}
		}
		batchEnd := min(len(values), encoded+8-len(e.buffer))
		for ; encoded < batchEnd; encoded++ {
			e.put(uint64(values[encoded]))
		}
	}
}

// flush is RleEncoder.Flush: it returns the encoded bytes.
func (e *HybridEncoder) flush() []byte {
	if e.litCnt > 0 || e.repCount > 0 || len(e.buffer) > 0 {
		allRep := e.litCnt == 0 && (e.repCount == int32(len(e.buffer)) || len(e.buffer) == 0)
		if e.repCount > 0 && allRep {
			e.flushRepeated()
		} else {
			for len(e.buffer) != 0 && len(e.buffer) < 8 {
				e.buffer = append(e.buffer, 0)
			}
			e.litCnt += int32(len(e.buffer))
			e.flushLiteral(true)
			e.repCount = 0
		}
	}
	e.flushBits(false)
	n := e.byteoffset + int((e.bitoffset+7)/8)
	if n > len(e.out) {
		e.out = append(e.out, make([]byte, n-len(e.out))...)
	}
	return e.out[:n]
}

// AppendIndices appends to b a dictionary-encoded data page's values: the bit width of
// dictionary indices into entries entries (one byte: 0 for none, 1 for one, else the bits
// of entries-1, arrow-go's dictEncoder.BitWidth) and the indices, each put one by one as
// arrow-go's dictEncoder.WriteIndices puts them, then flushed (no length prefix). It
// returns the extended slice.
func (e *HybridEncoder) AppendIndices(b []byte, indices []int32, entries int) []byte {
	width := indexBitWidth(entries)
	*e = HybridEncoder{out: e.out[:0], buffer: e.buffer[:0], indicatorOffset: -1, width: width}
	for _, v := range indices {
		e.put(uint64(v))
	}
	b = append(b, byte(width))
	return append(b, e.flush()...)
}

// AppendLevels appends to b the levels section of a V1 data page, as arrow-go's column
// chunk writer encodes it: the length in bytes of the encoded levels (4 bytes,
// little-endian), then levels (each 0 to maxLevel; the bit width is that of maxLevel)
// RLE/bit-packed, handed to the encoder batch levels at a time (the writer's
// WriteBatchSize). It returns the extended slice.
func (e *HybridEncoder) AppendLevels(b []byte, levels []int16, maxLevel int16, batch int) []byte {
	e.reset(maxLevel)
	for start := 0; start < len(levels); start += batch {
		e.putBatch(levels[start:min(start+batch, len(levels))])
	}
	enc := e.flush()
	b = binary.LittleEndian.AppendUint32(b, uint32(len(enc)))
	return append(b, enc...)
}

// indexBitWidth is the bit width of dictionary indices into entries entries, as arrow-go's
// dictEncoder.BitWidth gives it: 0 for none, 1 for one, else the bits of entries-1.
func indexBitWidth(entries int) int {
	switch {
	case entries == 1:
		return 1
	case entries > 1:
		return bits.Len32(uint32(entries - 1))
	}
	return 0
}
