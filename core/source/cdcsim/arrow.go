package cdcsim

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// appendValue appends a stored value to an Arrow builder of the column's bronze type and
// returns the approximate bytes it adds.
func appendValue(b array.Builder, v any) (n int, err error) {
	if v == nil {
		b.AppendNull()
		return 1, nil
	}
	// Each stored value is asserted with its ok: a stored value of another Go type than
	// the builder's (a caller asking for a column with a type the simulator cannot
	// convert to) is an error, not a crash. (A deferred recover did this for every value,
	// ~40 % of this function's time in a stream batch's read: docs/performance.md § Issue
	// 13: a code-level cut.)
	ok := false
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		var x bool
		if x, ok = v.(bool); ok {
			bb.Append(x)
			n = 1
		}
	case *array.Int16Builder:
		var x int64
		if x, ok = v.(int64); ok {
			bb.Append(int16(x))
			n = 2
		}
	case *array.Int32Builder:
		var x int64
		if x, ok = v.(int64); ok {
			bb.Append(int32(x))
			n = 4
		}
	case *array.Int64Builder:
		var x int64
		if x, ok = v.(int64); ok {
			bb.Append(x)
			n = 8
		}
	case *array.Float32Builder:
		var x float64
		if x, ok = v.(float64); ok {
			bb.Append(float32(x))
			n = 4
		}
	case *array.Float64Builder:
		var x float64
		if x, ok = v.(float64); ok {
			bb.Append(x)
			n = 8
		}
	case *array.Decimal128Builder:
		var x string
		if x, ok = v.(string); ok {
			var d decimal128.Num
			if d, ok, err = decimalValue(x, bb.Type().(*arrow.Decimal128Type)); err != nil {
				return 0, err
			}
			if ok {
				bb.Append(d)
				n = 16
			}
		}
	case *array.Date32Builder:
		var x time.Time
		if x, ok = v.(time.Time); ok {
			bb.Append(arrow.Date32FromTime(x))
			n = 4
		}
	case *array.TimestampBuilder:
		var x time.Time
		if x, ok = v.(time.Time); ok {
			bb.Append(arrow.Timestamp(x.UnixMicro()))
			n = 8
		}
	case *array.StringBuilder:
		var x string
		if x, ok = v.(string); ok {
			bb.Append(x)
			n = len(x) + 4
		}
	case *array.BinaryBuilder:
		var x []byte
		if x, ok = v.([]byte); ok {
			bb.Append(x)
			n = len(x) + 4
		}
	}
	if !ok {
		return 0, fmt.Errorf("cdcsim: no Arrow conversion of %T into %s", v, b.Type())
	}
	return n, nil
}

// decimalValue is decimalNum, with ok false where the value does not fit a decimal128
// (decimal128.FromBigInt panics).
func decimalValue(s string, t *arrow.Decimal128Type) (d decimal128.Num, ok bool, err error) {
	defer func() {
		if recover() != nil {
			d, ok, err = decimal128.Num{}, false, nil
		}
	}()
	d, err = decimalNum(s, t)
	return d, true, err
}

// decimalNum reads fixed-point text into a decimal128 of type t's scale.
func decimalNum(s string, t *arrow.Decimal128Type) (decimal128.Num, error) {
	if n, ok := decimalInt64(s, int(t.Scale)); ok {
		return decimal128.FromI64(n), nil
	}
	return decimalText(s, t)
}

// decimalText is decimalNum by way of the digits' text: any text decimalInt64 does not
// take.
func decimalText(s string, t *arrow.Decimal128Type) (decimal128.Num, error) {
	intPart, frac, _ := strings.Cut(s, ".")
	scale := int(t.Scale)
	if len(frac) > scale {
		frac = frac[:scale]
	}
	frac += strings.Repeat("0", scale-len(frac))
	digits := intPart + frac
	if len(strings.TrimPrefix(digits, "-")) <= 18 {
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return decimal128.Num{}, fmt.Errorf("decimal %q: %w", s, err)
		}
		return decimal128.FromI64(n), nil
	}
	var bi big.Int
	if _, ok := bi.SetString(digits, 10); !ok {
		return decimal128.Num{}, fmt.Errorf("decimal %q: not a number", s)
	}
	return decimal128.FromBigInt(&bi), nil
}

// decimalInt64 is decimalText's value for the common text, an optional '-', digits, and
// optionally '.' and digits (those past scale ignored, as decimalText cuts them), of at
// most 18 digits once the fraction is cut or padded to scale, read without building the
// digits' string (two allocations a value, ~0.1 ms of a 1,000-row stream batch's read:
// docs/performance.md § Issue 13: a code-level cut); ok is false for any other text,
// which decimalText reads.
func decimalInt64(s string, scale int) (n int64, ok bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if len(intPart)+scale > 18 || len(intPart)+scale == 0 {
		return 0, false
	}
	for i := range len(intPart) {
		c := intPart[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	for i := range scale {
		var d int64
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			d = int64(c - '0')
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}

// rowSource produces the rows of a read one at a time into a record builder.
type rowSource interface {
	// fill appends the next row to the builders and returns its approximate size in
	// bytes; ok is false when no row is left.
	fill(fields []array.Builder) (size int, ok bool, err error)
}

// reserver is a rowSource that knows the size of some variable-width values.
type reserver interface {
	reserve(fields []array.Builder, rows int)
}

// counted is a rowSource that knows how many rows it has left at most.
type counted interface {
	left() int
}

// rows is a source.Rows over a rowSource, built lazily in bounded record batches.
type rows struct {
	schema     *arrow.Schema
	src        rowSource
	done       bool
	batchRows  int
	batchBytes int
	method     string
	fault      *Fault // a lost connection, failing after fault.AfterBatches batches
	batches    int
	closed     bool
	mem        memory.Allocator
	// The previous batch's row count and, per field, its value bytes (string and binary
	// fields; 0 for the others), which size the next batch's builders.
	prevRows int
	prevData []int
}

// dataBuilder is a builder of variable-width values (string, binary) whose value buffer
// can be sized ahead.
type dataBuilder interface {
	DataLen() int
	ReserveData(n int)
}

func newRows(schema *arrow.Schema, src rowSource, opt source.ReadOptions, method string, f *Fault) *rows {
	r := &rows{schema: schema, src: src, batchRows: opt.BatchRows, batchBytes: opt.BatchBytes, method: method, mem: memory.DefaultAllocator}
	if r.batchRows <= 0 {
		r.batchRows = source.DefaultBatchRows
	}
	if r.batchBytes <= 0 {
		r.batchBytes = source.DefaultBatchBytes
	}
	if f != nil && f.Kind == FaultLostConnection {
		r.fault = f
	}
	return r
}

// Schema implements source.Rows.
func (r *rows) Schema() *arrow.Schema { return r.schema }

// Next implements source.Rows.
func (r *rows) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.closed {
		return nil, source.ErrClosed
	}
	if r.fault != nil && r.batches >= r.fault.AfterBatches {
		r.closed = true
		return nil, r.fault.streamError(r.method)
	}
	if r.done {
		return nil, io.EOF
	}
	b := array.NewRecordBuilder(r.mem, r.schema)
	defer b.Release()
	fields := b.Fields()
	r.reserve(fields)
	size, n := 0, 0
	for n < r.batchRows && size < r.batchBytes {
		sz, ok, err := r.src.fill(fields)
		if err != nil {
			r.closed = true
			return nil, err
		}
		if !ok {
			r.done = true
			break
		}
		size += sz
		n++
	}
	if n == 0 {
		return nil, io.EOF
	}
	r.batches++
	r.prevRows = n
	if r.prevData == nil {
		r.prevData = make([]int, len(fields))
	}
	for i, f := range fields {
		if d, ok := f.(dataBuilder); ok {
			r.prevData[i] = d.DataLen()
		}
	}
	return b.NewRecordBatch(), nil
}

// reserve sizes a new batch's builders. The first batch reserves 4,096 rows (and what
// the source knows of its values' sizes) and grows from there. The next ones reserve the
// previous batch's rows and value bytes plus a sixteenth, so a batch of the same shape
// fills buffers allocated once instead of doubling them: a 1M-row table read allocated
// about twice its Arrow size in reallocations otherwise. Neither reserves more rows than
// a counted source has left (a stream batch of 1,000 change rows is one batch of 1,000
// rows, which reserved 4,096 before).
func (r *rows) reserve(fields []array.Builder) {
	left := r.batchRows
	if c, ok := r.src.(counted); ok {
		left = min(left, c.left())
	}
	if r.prevRows == 0 {
		first := min(r.batchRows, 4096, left)
		// Resize allocates exactly the rows asked for; Reserve would round up to a power
		// of two.
		for _, f := range fields {
			f.Resize(first)
		}
		if rs, ok := r.src.(reserver); ok {
			rs.reserve(fields, first)
		}
		return
	}
	rows := min(r.batchRows, r.prevRows+r.prevRows/16, left)
	for i, f := range fields {
		f.Resize(rows)
		if d, ok := f.(dataBuilder); ok && r.prevData[i] > 0 {
			d.ReserveData(r.prevData[i] + r.prevData[i]/16)
		}
	}
}

// Close implements source.Rows.
func (r *rows) Close() error {
	r.closed = true
	return nil
}
