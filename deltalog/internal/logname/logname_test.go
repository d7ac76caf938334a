package logname

import "testing"

func TestParseVersion(t *testing.T) {
	for s, want := range map[string]int64{
		"00000000000000000000": 0,
		"00000000000000000003": 3,
		"09223372036854775807": 9223372036854775807,
	} {
		if v, ok := ParseVersion(s); !ok || v != want {
			t.Errorf("ParseVersion(%q) = %d, %v; want %d", s, v, ok, want)
		}
	}
	for _, s := range []string{
		"+0000000000000000003", // strconv.ParseInt takes these two
		"-0000000000000000003",
		"0000000000000000003", // 19 digits
		"000000000000000000003",
		"0000000000000000000x",
		" 0000000000000000003",
		"000000000000000000٣",  // a non-ASCII digit (two bytes: 20 in all)
		"09223372036854775808", // above math.MaxInt64
		"",
	} {
		if v, ok := ParseVersion(s); ok {
			t.Errorf("ParseVersion(%q) = %d, true", s, v)
		}
	}
}

func TestParsePart(t *testing.T) {
	for s, want := range map[string]int{"0000000001": 1, "0000000012": 12, "1234567890": 1234567890} {
		if n, ok := ParsePart(s); !ok || n != want {
			t.Errorf("ParsePart(%q) = %d, %v; want %d", s, n, ok, want)
		}
	}
	for _, s := range []string{"+000000001", "-000000001", "000000001", "00000000001", "00000000x1", ""} {
		if n, ok := ParsePart(s); ok {
			t.Errorf("ParsePart(%q) = %d, true", s, n)
		}
	}
}
