// Package lsn is SQL Server's log sequence number as a value.
//
// An LSN is 10 bytes: a 4-byte virtual log file sequence number, a 4-byte log block offset and
// a 2-byte slot number, compared as one big-endian unsigned integer. Outside SQL it travels as
// "0x" followed by 20 uppercase hex digits (22 characters), so that plain string order is LSN
// order (docs/design.md §4.1, docs/reference/sqlserver-cdc.md §1.2). It is bound to SQL as
// CONVERT(binary(10), @p, 1) and read back as CONVERT(varchar(22), x, 1).
//
// Next and Prev give the same results as sys.fn_cdc_increment_lsn and
// sys.fn_cdc_decrement_lsn: the 80-bit value plus or minus one. The server never hands
// out two LSNs that differ by one within a transaction, so Next(commit) is the first LSN
// of a closed range that starts after that commit.
package lsn

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// Size is the length of an LSN in bytes (binary(10) in SQL Server).
const Size = 10

// LSN is a SQL Server log sequence number. The zero value is the zero LSN
// 0x00000000000000000000, which stands for "none" or "nothing processed yet".
type LSN [Size]byte

// Zero is the zero LSN.
var Zero LSN

// Max is the largest representable LSN, 0xFFFFFFFFFFFFFFFFFFFF.
var Max = LSN{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// ParseError reports text that is not an LSN. Input is the text as given.
type ParseError struct {
	Input  string
	Reason string
}

// Error quotes at most the first 40 bytes of Input, so a huge input gives a short message.
func (e *ParseError) Error() string {
	in := e.Input
	if len(in) > 40 {
		in = in[:40] + "..."
	}
	return fmt.Sprintf("lsn: %q is not an LSN: %s (want 0x followed by up to 20 hex digits)", in, e.Reason)
}

// Parse reads an LSN from text. It accepts "0x"/"0X" or no prefix, upper- or lowercase
// hex, and fewer than 20 digits (padded on the left with zeros, as the original library
// normalises). Anything else, including an empty string, more than 20 digits and
// non-hex characters, is a *ParseError.
func Parse(s string) (LSN, error) {
	var l LSN
	h := s
	if len(h) >= 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') {
		h = h[2:]
	}
	if h == "" {
		return l, &ParseError{Input: s, Reason: "no hex digits"}
	}
	if len(h) > 2*Size {
		return l, &ParseError{Input: s, Reason: fmt.Sprintf("%d hex digits, more than 20", len(h))}
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return l, &ParseError{Input: s, Reason: fmt.Sprintf("%q at position %d is not a hex digit", c, i)}
		}
	}
	h = strings.Repeat("0", 2*Size-len(h)) + h
	if _, err := hex.Decode(l[:], []byte(h)); err != nil {
		return l, &ParseError{Input: s, Reason: err.Error()}
	}
	return l, nil
}

// MustParse is Parse for constants in tests and examples; it panics on bad input.
func MustParse(s string) LSN {
	l, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

// FromBytes turns a binary(10) value into an LSN. A slice of any other length is a
// *ParseError.
func FromBytes(b []byte) (LSN, error) {
	var l LSN
	if len(b) != Size {
		return l, &ParseError{Input: "0x" + strings.ToUpper(hex.EncodeToString(b)), Reason: fmt.Sprintf("%d bytes, want %d", len(b), Size)}
	}
	copy(l[:], b)
	return l, nil
}

// String is the canonical form: "0x" and 20 uppercase hex digits.
func (l LSN) String() string {
	const digits = "0123456789ABCDEF"
	var b [2 + 2*Size]byte
	b[0], b[1] = '0', 'x'
	for i, v := range l {
		b[2+2*i] = digits[v>>4]
		b[3+2*i] = digits[v&0x0f]
	}
	return string(b[:])
}

// Bytes returns the binary(10) form.
func (l LSN) Bytes() []byte { return append([]byte(nil), l[:]...) }

// IsZero reports whether l is the zero LSN.
func (l LSN) IsZero() bool { return l == Zero }

// Compare returns -1, 0 or +1 as l is below, equal to or above o.
func (l LSN) Compare(o LSN) int {
	for i := range l {
		switch {
		case l[i] < o[i]:
			return -1
		case l[i] > o[i]:
			return 1
		}
	}
	return 0
}

// Less reports l < o.
func (l LSN) Less(o LSN) bool { return l.Compare(o) < 0 }

// Next is sys.fn_cdc_increment_lsn: l + 1. Next(Max) is Max (the server never gets there).
func (l LSN) Next() LSN {
	if l == Max {
		return l
	}
	for i := Size - 1; i >= 0; i-- {
		l[i]++
		if l[i] != 0 {
			break
		}
	}
	return l
}

// Prev is sys.fn_cdc_decrement_lsn: l − 1. Prev(Zero) is Zero.
func (l LSN) Prev() LSN {
	if l == Zero {
		return l
	}
	for i := Size - 1; i >= 0; i-- {
		l[i]--
		if l[i] != 0xff {
			break
		}
	}
	return l
}

// MaxOf returns the larger of a and b.
func MaxOf(a, b LSN) LSN {
	if a.Less(b) {
		return b
	}
	return a
}

// MarshalText writes the canonical form, so an LSN is a JSON string.
func (l LSN) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText parses with Parse; on error l is left as it was. A nil l is a *ParseError.
func (l *LSN) UnmarshalText(b []byte) error {
	if l == nil {
		return &ParseError{Input: string(b), Reason: "nil *LSN to unmarshal into"}
	}
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
