package deltalog

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// The bytes of a deletion vector are a RoaringBitmapArray (docs/delta-reading.md
// § Deletion vectors): a 4-byte little-endian magic number, then a
// 64-bit Roaring bitmap in the "portable" layout of the RoaringFormatSpec — a uint64
// bucket count, then per bucket (ascending) its uint32 key (the high 32 bits of its values,
// top bit clear) and a standard 32-bit Roaring bitmap of the low 32 bits. A 32-bit bitmap
// is a cookie, a container count, one (key, cardinality-1) header per container of 2^16
// values, optional offsets, then each container as a sorted uint16 array (cardinality up to
// 4096), an 8 KiB bitset, or a list of (start, length-1) runs. Every number in the bitmap
// is little-endian.
const (
	// roaringPortableMagic starts every deletion vector this package writes.
	roaringPortableMagic = 1681511377
	// roaringNativeMagic starts the older "native" layout (the protocol's inline example
	// uses it): big-endian magic and bitmap count, then per bitmap a big-endian size and a
	// 32-bit Roaring bitmap covering the next 2^32 row indexes. Read, never written.
	roaringNativeMagic = 1681511376

	roaringCookieNoRuns = 12346 // followed by a uint32 container count; offsets always present
	roaringCookieRuns   = 12347 // the count-1 is in the high 16 bits; a run-flag bitset follows
	roaringNoOffsetMax  = 4     // with run containers, offsets are present from this many containers
	roaringArrayMax     = 4096  // a non-run container of at most this cardinality is an array
	roaringBitsetBytes  = 8192
)

// RowBitmap is a set of row indexes of one data file (0-based positions of rows in the
// Parquet file, the values a deletion vector holds), kept as an 8 KiB bitset per block of
// 2^16 rows that holds any: its memory follows the rows held, wherever they are. The zero
// value is an empty set ready to use; it is not safe for concurrent writes.
type RowBitmap struct {
	keys   []uint64 // row >> 16 of each block, ascending
	blocks []*[1024]uint64
	card   int64
}

// NewRowBitmap returns the set holding rows.
func NewRowBitmap(rows ...uint64) *RowBitmap {
	b := &RowBitmap{}
	for _, r := range rows {
		b.Add(r)
	}
	return b
}

// block returns the index of the block holding key, or where it would be inserted.
func (b *RowBitmap) block(key uint64) (int, bool) {
	if n := len(b.keys); n > 0 && b.keys[n-1] == key { // appends hit the last block
		return n - 1, true
	}
	return slices.BinarySearch(b.keys, key)
}

// Add puts row in the set.
func (b *RowBitmap) Add(row uint64) {
	i, ok := b.block(row >> 16)
	if !ok {
		b.keys = slices.Insert(b.keys, i, row>>16)
		b.blocks = slices.Insert(b.blocks, i, new([1024]uint64))
	}
	w, bit := &b.blocks[i][row&0xFFFF/64], uint64(1)<<(row%64)
	if *w&bit == 0 {
		*w |= bit
		b.card++
	}
}

// Contains reports whether row is in the set.
func (b *RowBitmap) Contains(row uint64) bool {
	if b == nil {
		return false
	}
	i, ok := b.block(row >> 16)
	return ok && b.blocks[i][row&0xFFFF/64]&(1<<(row%64)) != 0
}

// Cardinality is the number of rows in the set.
func (b *RowBitmap) Cardinality() int64 {
	if b == nil {
		return 0
	}
	return b.card
}

// Rows returns the rows of the set in ascending order.
func (b *RowBitmap) Rows() []uint64 {
	out := make([]uint64, 0, b.Cardinality())
	b.each(func(r uint64) { out = append(out, r) })
	return out
}

// each calls f for every row, ascending.
func (b *RowBitmap) each(f func(uint64)) {
	if b == nil {
		return
	}
	for i, blk := range b.blocks {
		base := b.keys[i] << 16
		for j, w := range blk {
			for w != 0 {
				t := bits.TrailingZeros64(w)
				f(base + uint64(j)*64 + uint64(t))
				w &= w - 1
			}
		}
	}
}

// DeletionVectorError is a deletion vector that cannot be read or written: bytes that are
// not a RoaringBitmapArray, a checksum or size that does not match its descriptor, a row
// index beyond its data file, a storage type or path this package cannot resolve. Path
// is the data file (or DV file) concerned, "" when not known.
type DeletionVectorError struct {
	Path   string
	Reason string
	Err    error
}

func (e *DeletionVectorError) Error() string {
	msg := "deltalog: deletion vector"
	if e.Path != "" {
		msg += " of " + e.Path
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *DeletionVectorError) Unwrap() error { return e.Err }

func dvErr(format string, args ...any) *DeletionVectorError {
	return &DeletionVectorError{Reason: fmt.Sprintf(format, args...)}
}

// EncodeRoaringBitmapArray serializes rows as a RoaringBitmapArray in the portable layout,
// magic number first, choosing per container the smallest of array, bitset and runs (as
// Spark's runOptimize does). Row indexes must be below 2^63 (the protocol requires each
// bucket key's top bit clear), which any index of a real file is.
func EncodeRoaringBitmapArray(rows *RowBitmap) []byte {
	out := binary.LittleEndian.AppendUint32(nil, roaringPortableMagic)
	// Count the buckets first: the count leads.
	var buckets uint64
	last := uint64(1) << 63 // no bucket yet
	rows.each(func(r uint64) {
		if r>>32 != last {
			buckets++
			last = r >> 32
		}
	})
	out = binary.LittleEndian.AppendUint64(out, buckets)
	var enc bucketEncoder
	last = 1 << 63
	rows.each(func(r uint64) {
		if r>>32 != last {
			if last != 1<<63 {
				out = enc.flush(out)
			}
			last = r >> 32
			out = binary.LittleEndian.AppendUint32(out, uint32(last))
		}
		enc.add(uint32(r))
	})
	if last != 1<<63 {
		out = enc.flush(out)
	}
	return out
}

// bucketEncoder collects the low 32 bits of one bucket's values, then writes them as a
// 32-bit Roaring bitmap.
type bucketEncoder struct {
	containers []roaringContainer
}

type roaringContainer struct {
	key    uint16
	values []uint16
	runs   int // number of runs in values
}

func (e *bucketEncoder) add(v uint32) {
	k := uint16(v >> 16)
	n := len(e.containers)
	if n == 0 || e.containers[n-1].key != k {
		e.containers = append(e.containers, roaringContainer{key: k})
		n++
	}
	c := &e.containers[n-1]
	lo := uint16(v)
	if len(c.values) == 0 || c.values[len(c.values)-1] != lo-1 {
		c.runs++
	}
	c.values = append(c.values, lo)
}

// kind is 'a' (array), 'b' (bitset) or 'r' (runs), and the size of its data in bytes.
func (c *roaringContainer) kind() (byte, int) {
	kind, size := byte('a'), 2*len(c.values)
	if len(c.values) > roaringArrayMax {
		kind, size = 'b', roaringBitsetBytes
	}
	if runSize := 2 + 4*c.runs; runSize < size {
		kind, size = 'r', runSize
	}
	return kind, size
}

func (e *bucketEncoder) flush(out []byte) []byte {
	n := len(e.containers)
	hasRuns := false
	for i := range e.containers {
		if k, _ := e.containers[i].kind(); k == 'r' {
			hasRuns = true
		}
	}
	start := len(out)
	if hasRuns {
		out = binary.LittleEndian.AppendUint32(out, uint32(roaringCookieRuns)|uint32(n-1)<<16)
		flags := make([]byte, (n+7)/8)
		for i := range e.containers {
			if k, _ := e.containers[i].kind(); k == 'r' {
				flags[i/8] |= 1 << (i % 8)
			}
		}
		out = append(out, flags...)
	} else {
		out = binary.LittleEndian.AppendUint32(out, roaringCookieNoRuns)
		out = binary.LittleEndian.AppendUint32(out, uint32(n))
	}
	for i := range e.containers {
		out = binary.LittleEndian.AppendUint16(out, e.containers[i].key)
		out = binary.LittleEndian.AppendUint16(out, uint16(len(e.containers[i].values)-1))
	}
	if !hasRuns || n >= roaringNoOffsetMax {
		off := len(out) - start + 4*n
		for i := range e.containers {
			out = binary.LittleEndian.AppendUint32(out, uint32(off))
			_, size := e.containers[i].kind()
			off += size
		}
	}
	for i := range e.containers {
		c := &e.containers[i]
		switch kind, _ := c.kind(); kind {
		case 'a':
			for _, v := range c.values {
				out = binary.LittleEndian.AppendUint16(out, v)
			}
		case 'b':
			var words [roaringBitsetBytes / 8]uint64
			for _, v := range c.values {
				words[v/64] |= 1 << (v % 64)
			}
			for _, w := range words {
				out = binary.LittleEndian.AppendUint64(out, w)
			}
		case 'r':
			out = binary.LittleEndian.AppendUint16(out, uint16(c.runs))
			runStart := 0
			for j := 1; j <= len(c.values); j++ {
				if j == len(c.values) || c.values[j] != c.values[j-1]+1 {
					out = binary.LittleEndian.AppendUint16(out, c.values[runStart])
					out = binary.LittleEndian.AppendUint16(out, uint16(j-1-runStart))
					runStart = j
				}
			}
		}
	}
	e.containers = e.containers[:0]
	return out
}

// DecodeRoaringBitmapArray parses a RoaringBitmapArray (portable layout, or the older
// native one) whose row indexes must all be below maxRows (the data file's row count), so
// that its memory is bounded by the file, not by what the bytes claim. Bytes that are
// not a well-formed bitmap (bad magic, truncation, keys or values out of order, a
// cardinality that does not match its container, trailing bytes) are a
// *DeletionVectorError.
func DecodeRoaringBitmapArray(data []byte, maxRows uint64) (*RowBitmap, error) {
	if len(data) < 4 {
		return nil, dvErr("%d bytes, too short for a bitmap", len(data))
	}
	d := roaringDecoder{data: data, max: maxRows, out: &RowBitmap{}, prev: -1}
	var err error
	switch {
	case binary.LittleEndian.Uint32(data) == roaringPortableMagic:
		d.pos = 4
		err = d.portable()
	case binary.BigEndian.Uint32(data) == roaringNativeMagic, binary.LittleEndian.Uint32(data) == roaringNativeMagic:
		d.pos = 4
		err = d.native()
	default:
		return nil, dvErr("magic number %d is not a RoaringBitmapArray's (%d)", binary.LittleEndian.Uint32(data), roaringPortableMagic)
	}
	if err != nil {
		return nil, err
	}
	if d.pos != len(data) {
		return nil, dvErr("%d trailing bytes after the bitmap", len(data)-d.pos)
	}
	return d.out, nil
}

type roaringDecoder struct {
	data []byte
	pos  int
	max  uint64
	out  *RowBitmap
	prev int64 // last value emitted, -1 before the first; values must ascend
}

func (d *roaringDecoder) need(n int, what string) error {
	if n < 0 || len(d.data)-d.pos < n {
		return dvErr("truncated at byte %d reading %s", d.pos, what)
	}
	return nil
}

func (d *roaringDecoder) u16() uint16 {
	v := binary.LittleEndian.Uint16(d.data[d.pos:])
	d.pos += 2
	return v
}

func (d *roaringDecoder) u32() uint32 {
	v := binary.LittleEndian.Uint32(d.data[d.pos:])
	d.pos += 4
	return v
}

func (d *roaringDecoder) emit(v uint64) error {
	if int64(v) <= d.prev {
		return dvErr("row index %d out of order", v)
	}
	if v >= d.max {
		return dvErr("row index %d beyond the file's %d rows", v, d.max)
	}
	d.prev = int64(v)
	d.out.Add(v)
	return nil
}

func (d *roaringDecoder) portable() error {
	if err := d.need(8, "bucket count"); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint64(d.data[d.pos:])
	d.pos += 8
	// Each bucket takes at least 12 bytes (key, cookie, count).
	if n > uint64(len(d.data)-d.pos)/12 {
		return dvErr("%d buckets do not fit in %d bytes", n, len(d.data)-d.pos)
	}
	prevKey := int64(-1)
	for range n {
		if err := d.need(4, "bucket key"); err != nil {
			return err
		}
		key := d.u32()
		if key&(1<<31) != 0 {
			return dvErr("bucket key %d has its top bit set", key)
		}
		if int64(key) <= prevKey {
			return dvErr("bucket key %d out of order", key)
		}
		prevKey = int64(key)
		if err := d.bitmap32(uint64(key) << 32); err != nil {
			return err
		}
	}
	return nil
}

// native reads the older layout: big-endian bitmap count, then per bitmap a big-endian
// size and a 32-bit bitmap for the values [i·2^32, (i+1)·2^32).
func (d *roaringDecoder) native() error {
	if err := d.need(4, "bitmap count"); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(d.data[d.pos:])
	d.pos += 4
	if uint64(n) > uint64(len(d.data)-d.pos)/12 {
		return dvErr("%d bitmaps do not fit in %d bytes", n, len(d.data)-d.pos)
	}
	for i := range uint64(n) {
		if err := d.need(4, "bitmap size"); err != nil {
			return err
		}
		size := int(binary.BigEndian.Uint32(d.data[d.pos:]))
		d.pos += 4
		if err := d.need(size, "bitmap"); err != nil {
			return err
		}
		end := d.pos + size
		if err := d.bitmap32(i << 32); err != nil {
			return err
		}
		if d.pos != end {
			return dvErr("bitmap %d is %d bytes, its size says %d", i, d.pos-(end-size), size)
		}
	}
	return nil
}

// bitmap32 reads one 32-bit Roaring bitmap, adding high to each value.
func (d *roaringDecoder) bitmap32(high uint64) error {
	if err := d.need(4, "cookie"); err != nil {
		return err
	}
	cookie := d.u32()
	var n int
	var runFlags []byte
	switch {
	case cookie == roaringCookieNoRuns:
		if err := d.need(4, "container count"); err != nil {
			return err
		}
		c := d.u32()
		if c > 1<<16 {
			return dvErr("%d containers (at most 65536)", c)
		}
		n = int(c)
	case cookie&0xFFFF == roaringCookieRuns:
		n = int(cookie>>16) + 1
		if err := d.need((n+7)/8, "run flags"); err != nil {
			return err
		}
		runFlags = d.data[d.pos : d.pos+(n+7)/8]
		d.pos += (n + 7) / 8
	default:
		return dvErr("cookie %d is not a Roaring bitmap's", cookie)
	}
	if err := d.need(4*n, "container headers"); err != nil {
		return err
	}
	type header struct {
		key  uint16
		card int
	}
	headers := make([]header, n)
	for i := range headers {
		headers[i] = header{key: d.u16(), card: int(d.u16()) + 1}
		if i > 0 && headers[i].key <= headers[i-1].key {
			return dvErr("container key %d out of order", headers[i].key)
		}
	}
	if runFlags == nil || n >= roaringNoOffsetMax {
		if err := d.need(4*n, "container offsets"); err != nil {
			return err
		}
		d.pos += 4 * n // the containers follow in order; offsets are only an index
	}
	for i, h := range headers {
		base := high | uint64(h.key)<<16
		got := 0
		switch {
		case runFlags != nil && runFlags[i/8]&(1<<(i%8)) != 0:
			if err := d.need(2, "run count"); err != nil {
				return err
			}
			runs := int(d.u16())
			if err := d.need(4*runs, "runs"); err != nil {
				return err
			}
			for range runs {
				s, l := int(d.u16()), int(d.u16())
				if s+l > 0xFFFF {
					return dvErr("run %d+%d leaves its container", s, l)
				}
				for v := s; v <= s+l; v++ {
					if err := d.emit(base | uint64(v)); err != nil {
						return err
					}
				}
				got += l + 1
			}
		case h.card <= roaringArrayMax:
			if err := d.need(2*h.card, "array container"); err != nil {
				return err
			}
			for range h.card {
				if err := d.emit(base | uint64(d.u16())); err != nil {
					return err
				}
			}
			got = h.card
		default:
			if err := d.need(roaringBitsetBytes, "bitset container"); err != nil {
				return err
			}
			for w := range roaringBitsetBytes / 8 {
				word := binary.LittleEndian.Uint64(d.data[d.pos:])
				d.pos += 8
				for word != 0 {
					t := bits.TrailingZeros64(word)
					if err := d.emit(base | uint64(w*64+t)); err != nil {
						return err
					}
					word &= word - 1
					got++
				}
			}
		}
		if got != h.card {
			return dvErr("container %d holds %d values, its header says %d", h.key, got, h.card)
		}
	}
	return nil
}
