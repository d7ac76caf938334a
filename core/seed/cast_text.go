package seed

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Text and bytes: the char types, text, ntext, xml, uniqueidentifier, and the binary
// types. A value longer than the column's declared length cannot come from it and is
// refused: for char types, more characters than n (n bytes or n byte pairs never hold
// more than n characters, whatever the collation); for binary types, more bytes than n.

func castText(c source.Column, from arrow.DataType) castFunc {
	maxLen := c.MaxLength
	switch strings.ToLower(c.DataType) {
	case "text", "ntext", "xml":
		maxLen = -1
	}
	tooLong := func(s string) bool { return maxLen > 0 && len(s) > maxLen && utf8.RuneCountInString(s) > maxLen }
	reason := fmt.Sprintf("longer than %s's %d characters", sqlTypeText(c), maxLen)
	if from.ID() == arrow.STRING {
		if maxLen <= 0 {
			return retain(nil)
		}
		return retain(func(in arrow.Array) *failure {
			a := in.(*array.String)
			offs := a.ValueOffsets()
			for i := 0; i < a.Len(); i++ {
				// Bytes bound characters from above: only a long value needs counting.
				if int(offs[i+1]-offs[i]) > maxLen && a.IsValid(i) && tooLong(a.Value(i)) {
					return fail(in, i, "%s", reason)
				}
			}
			return nil
		})
	}
	return fromStrings(from, func() array.Builder { return array.NewStringBuilder(memory.DefaultAllocator) },
		func(s string, b array.Builder) string {
			if tooLong(s) {
				return reason
			}
			b.(*array.StringBuilder).Append(s)
			return ""
		})
}

// canonicalGUID is a GUID text in SQL Server's form: 36 characters, upper case, with
// dashes. It accepts upper or lower case, with or without dashes and braces.
func canonicalGUID(s string) (string, bool) {
	t := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "{"), "}")
	if len(t) == 36 {
		if t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-' {
			return "", false
		}
		t = t[:8] + t[9:13] + t[14:18] + t[19:23] + t[24:]
	}
	if len(t) != 32 {
		return "", false
	}
	if _, err := hex.DecodeString(t); err != nil {
		return "", false
	}
	h := strings.ToUpper(t)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
}

// guidBytesText is the text of a uniqueidentifier's 16 bytes in SQL Server's storage order
// (CONVERT(binary(16), guid)): the first three groups little-endian.
func guidBytesText(b []byte) string {
	o := [16]byte{b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6]}
	copy(o[8:], b[8:])
	h := strings.ToUpper(hex.EncodeToString(o[:]))
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func castGUID(from arrow.DataType) castFunc {
	newBuilder := func() array.Builder { return array.NewStringBuilder(memory.DefaultAllocator) }
	var bytesOf func(in arrow.Array, i int) []byte
	switch dt := from.(type) {
	case *arrow.FixedSizeBinaryType:
		if dt.ByteWidth != 16 {
			return nil
		}
		bytesOf = func(in arrow.Array, i int) []byte { return in.(*array.FixedSizeBinary).Value(i) }
	case *arrow.BinaryType:
		bytesOf = func(in arrow.Array, i int) []byte { return in.(*array.Binary).Value(i) }
	}
	if bytesOf != nil {
		return func(in arrow.Array) (arrow.Array, *failure) {
			b := newBuilder().(*array.StringBuilder)
			defer b.Release()
			for i := 0; i < in.Len(); i++ {
				if in.IsNull(i) {
					b.AppendNull()
					continue
				}
				v := bytesOf(in, i)
				if len(v) != 16 {
					return nil, fail(in, i, "not a uniqueidentifier: %d bytes, want 16", len(v))
				}
				b.Append(guidBytesText(v))
			}
			return b.NewArray(), nil
		}
	}
	return fromStrings(from, newBuilder, func(s string, b array.Builder) string {
		g, ok := canonicalGUID(s)
		if !ok {
			return "not a uniqueidentifier (32 hex digits, dashes and braces optional)"
		}
		b.(*array.StringBuilder).Append(g)
		return ""
	})
}

func castBinary(c source.Column, from arrow.DataType) castFunc {
	maxLen := c.MaxLength
	switch t := strings.ToLower(c.DataType); t {
	case "timestamp", "rowversion":
		maxLen = 8
	case "image":
		maxLen = -1
	}
	reason := fmt.Sprintf("longer than %s's %d bytes", sqlTypeText(c), maxLen)
	var get func(in arrow.Array, i int) []byte
	switch from.ID() {
	case arrow.BINARY:
		if maxLen <= 0 {
			return retain(nil)
		}
		return retain(func(in arrow.Array) *failure {
			a := in.(*array.Binary)
			for i := 0; i < a.Len(); i++ {
				if a.IsValid(i) && a.ValueLen(i) > maxLen {
					return fail(in, i, "%s", reason)
				}
			}
			return nil
		})
	case arrow.LARGE_BINARY:
		get = func(in arrow.Array, i int) []byte { return in.(*array.LargeBinary).Value(i) }
	case arrow.FIXED_SIZE_BINARY:
		get = func(in arrow.Array, i int) []byte { return in.(*array.FixedSizeBinary).Value(i) }
	case arrow.BINARY_VIEW:
		get = func(in arrow.Array, i int) []byte { return in.(*array.BinaryView).Value(i) }
	default:
		return nil
	}
	return func(in arrow.Array) (arrow.Array, *failure) {
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		defer b.Release()
		for i := 0; i < in.Len(); i++ {
			if in.IsNull(i) {
				b.AppendNull()
				continue
			}
			v := get(in, i)
			if maxLen > 0 && len(v) > maxLen {
				return nil, fail(in, i, "%s", reason)
			}
			b.Append(v)
		}
		return b.NewArray(), nil
	}
}
