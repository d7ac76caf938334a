package lsn

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestBadInputIsParseError: every way text or bytes can fail to be an LSN is a
// *ParseError, never a panic: Parse, FromBytes (nil, short, long), UnmarshalText (also on a
// nil receiver) and JSON decoding of a wrong string or a non-string.
func TestBadInputIsParseError(t *testing.T) {
	var nilLSN *LSN
	var dst LSN
	cases := map[string]func() error{
		"Parse control char":     func() error { _, err := Parse("0x01\x00"); return err },
		"Parse non-ASCII":        func() error { _, err := Parse("0xé1"); return err },
		"Parse 21 digits":        func() error { _, err := Parse(strings.Repeat("1", 21)); return err },
		"Parse huge":             func() error { _, err := Parse("0x" + strings.Repeat("F", 1<<16)); return err },
		"Parse only 0X":          func() error { _, err := Parse("0X"); return err },
		"Parse signed":           func() error { _, err := Parse("+0x01"); return err },
		"FromBytes nil":          func() error { _, err := FromBytes(nil); return err },
		"FromBytes 11 bytes":     func() error { _, err := FromBytes(make([]byte, 11)); return err },
		"UnmarshalText bad":      func() error { return dst.UnmarshalText([]byte("0xQQ")) },
		"UnmarshalText empty":    func() error { return dst.UnmarshalText(nil) },
		"UnmarshalText nil *LSN": func() error { return nilLSN.UnmarshalText([]byte("0x01")) },
		"JSON bad string":        func() error { return json.Unmarshal([]byte(`"0xG"`), &dst) },
	}
	for name, fn := range cases {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: panic: %v", name, p)
				}
			}()
			return fn()
		}()
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %T %v, want *ParseError", name, err, err)
		}
	}
	long := (&ParseError{Input: strings.Repeat("F", 1<<16), Reason: "r"}).Error()
	if len(long) > 200 {
		t.Errorf("a huge input gives a %d-byte message", len(long))
	}
	if dst != Zero {
		t.Errorf("a refused input changed the destination to %s", dst)
	}
	// A JSON number is not an LSN: encoding/json refuses it with its own typed error.
	var ute *json.UnmarshalTypeError
	if err := json.Unmarshal([]byte(`42`), &dst); !errors.As(err, &ute) {
		t.Errorf("JSON number: got %T %v", err, err)
	}
}

// TestNextPrevEdges: Next(Max) and Prev(Zero) saturate instead of wrapping.
func TestNextPrevEdges(t *testing.T) {
	if Max.Next() != Max || Zero.Prev() != Zero {
		t.Fatalf("Next(Max) = %s, Prev(Zero) = %s", Max.Next(), Zero.Prev())
	}
}
