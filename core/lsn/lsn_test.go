package lsn

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseAccepts(t *testing.T) {
	cases := map[string]string{
		"0x0000002A000001F00003": "0x0000002A000001F00003",
		"0x0000002a000001f00003": "0x0000002A000001F00003",
		"0000002A000001F00003":   "0x0000002A000001F00003",
		"2A000001F00003":         "0x0000002A000001F00003",
		"0X1":                    "0x00000000000000000001",
		"0":                      "0x00000000000000000000",
	}
	for in, want := range cases {
		l, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if got := l.String(); got != want {
			t.Errorf("Parse(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"", "0x", "0x" + strings.Repeat("0", 21), "0xZZ", " 0x01", "0x01 ", "-1", "0x0x1"} {
		_, err := Parse(in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error = %v, want *ParseError", in, err)
		}
	}
}

func TestNextPrevCarry(t *testing.T) {
	l := MustParse("0x000000000000000000FF")
	if got := l.Next().String(); got != "0x00000000000000000100" {
		t.Errorf("Next = %s", got)
	}
	if got := MustParse("0x00000000000000000100").Prev().String(); got != "0x000000000000000000FF" {
		t.Errorf("Prev = %s", got)
	}
	if Zero.Prev() != Zero || Max.Next() != Max {
		t.Error("saturation at the ends")
	}
	if !Zero.IsZero() || MustParse("1").IsZero() {
		t.Error("IsZero")
	}
}

func TestCompareMatchesStringOrder(t *testing.T) {
	a, b := MustParse("0x0000002A000001F00003"), MustParse("0x0000002A000001F00010")
	if a.Compare(b) != -1 || b.Compare(a) != 1 || a.Compare(a) != 0 || !(a.String() < b.String()) {
		t.Error("order")
	}
	if MaxOf(a, b) != b || MaxOf(b, a) != b {
		t.Error("MaxOf")
	}
}

func TestJSON(t *testing.T) {
	type off struct {
		LSN LSN `json:"lsn"`
	}
	b, err := json.Marshal(off{MustParse("0x2A")})
	if err != nil || string(b) != `{"lsn":"0x0000000000000000002A"}` {
		t.Fatalf("marshal = %s, %v", b, err)
	}
	var o off
	if err := json.Unmarshal([]byte(`{"lsn":"2a"}`), &o); err != nil || o.LSN != MustParse("0x2A") {
		t.Fatalf("unmarshal = %v, %v", o, err)
	}
	if err := json.Unmarshal([]byte(`{"lsn":"nope"}`), &o); err == nil {
		t.Fatal("bad LSN accepted")
	}
}

func TestFromBytes(t *testing.T) {
	if _, err := FromBytes([]byte{1, 2}); err == nil {
		t.Fatal("short slice accepted")
	}
	l, err := FromBytes(MustParse("0x0102030405060708090A").Bytes())
	if err != nil || l.String() != "0x0102030405060708090A" {
		t.Fatalf("%s %v", l, err)
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"0x0000002A000001F00003", "2a", "0x", "", "0xFFFFFFFFFFFFFFFFFFFF", "zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		out := l.String()
		if len(out) != 22 || out != strings.ToUpper(out[:0])+"0x"+strings.ToUpper(out[2:]) {
			t.Fatalf("bad canonical form %q", out)
		}
		back, err := Parse(out)
		if err != nil || back != l {
			t.Fatalf("round trip %q -> %q -> %v, %v", s, out, back, err)
		}
		if l != Max && l.Next().Prev() != l {
			t.Fatalf("Next/Prev not inverse at %s", l)
		}
		if l != Max && !l.Less(l.Next()) {
			t.Fatalf("Next not above at %s", l)
		}
	})
}
