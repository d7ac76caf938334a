package deltalog

// boolEncoder is arrow-go's plain boolean encoder (PlainBooleanEncoder in arrow-go's
// parquet/internal/encoding, which this package cannot import) with the
// bitutil.BitmapWriter it packs through, step for step, so that a boolean column's data
// page has arrow-go's bytes in the bits that hold no value (cpColumn.ownPage). The values
// are packed 8 to a byte, lowest bit first, into a buffer of 1 KiB (8,192 values) that is
// appended to the page each time it fills and then reused without being cleared; the
// page ends with the buffer's bytes up to the last value. The last byte's bits past the
// values are therefore not zero in general: they are what the buffer held there (an
// earlier round's values once it was reused), or the previous byte's bits when a Put
// ended on a byte boundary (AppendBools then keeps the byte it just completed as its
// current byte, and the next Put starts the next byte from it). Readers ignore those
// bits; the file is arrow-go's byte for byte only with them. The column chunk writer calls
// Put once for every WriteBatchSize levels, with the values among them (the levels at
// the leaf's maximum definition level). That is the path pqarrow takes for every boolean
// leaf of the checkpoint schema, each under a nullable struct (WriteArrowToColumn's
// maybeParentNulls); a leaf without a nullable parent would go through AppendBitmap,
// whose bits past the values differ. Found by FuzzCheckpointEncoderMatchesPqarrow
// (docs/decisions/0020-checkpoint-pages-encoded-here.md, follow-up); TestBoolEncoderPaddingBits
// and TestCheckpointBooleanPaddingMatchesPqarrow.
type boolEncoder struct {
	buf     [1024]byte // PlainBooleanEncoder.bitsBuffer
	pos     int        // values in buf
	byteOff int        // the byte the next value goes into
	bitOff  int        // and its bit (BitmapWriter.bitMask as a shift)
	cur     byte       // BitmapWriter.curByte
}

// start readies e for a column chunk: a new encoder's buffer, all zeros.
func (e *boolEncoder) start() {
	e.buf = [1024]byte{}
	e.reset()
}

// reset is BitmapWriter.Reset(0, 8192): the buffer kept as it is, its first byte current.
func (e *boolEncoder) reset() {
	e.pos, e.byteOff, e.bitOff, e.cur = 0, 0, 0, e.buf[0]
}

// appendBools is BitmapWriter.AppendBools: it packs as many of in as the buffer has room
// for and returns how many.
func (e *boolEncoder) appendBools(in []bool) int {
	space := min(len(e.buf)*8-e.pos, len(in))
	if space == 0 {
		return 0
	}
	end := e.bitOff + space
	app := e.buf[e.byteOff : e.byteOff+(end+7)/8]
	app[0] = e.cur
	for i, v := range in[:space] {
		j := e.bitOff + i
		if v {
			app[j/8] |= 1 << (j % 8)
		} else {
			app[j/8] &^= 1 << (j % 8)
		}
	}
	e.pos += space
	e.byteOff += end / 8
	e.bitOff = end % 8
	e.cur = app[len(app)-1] // the byte just completed when end is a multiple of 8
	return space
}

// put is PlainBooleanEncoder.Put: it packs in, appending the buffer to b whenever it
// fills, and returns b. (Put's Finish before appending writes nothing: a full buffer ends
// on a byte boundary.)
func (e *boolEncoder) put(b []byte, in []bool) []byte {
	if len(in) == 0 {
		return b
	}
	n := e.appendBools(in)
	for n < len(in) {
		b = append(b, e.buf[:]...)
		e.reset()
		in = in[n:]
		n = e.appendBools(in)
	}
	return b
}

// flush is PlainBooleanEncoder.FlushValues: it appends the buffer's bytes up to the last
// value to b and returns b.
func (e *boolEncoder) flush(b []byte) []byte {
	if e.pos > 0 {
		b = append(b, e.buf[:(e.pos+7)/8]...)
	}
	e.reset()
	return b
}
