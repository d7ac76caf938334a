// Package logname reads the numbers written in Delta log file names: a version is exactly
// 20 ASCII digits, a multi-part checkpoint's part number and part count exactly 10
// (docs/reference/delta-protocol.md §1.1). A name with anything else there (a sign, which
// strconv.ParseInt takes: "+" and 19 digits is 20 characters) is no log file of that
// number, and is ignored as every name matching no pattern is.
//
// It is the one parser deltalog (the listing, log clean-up, temp-file clean-up) and the
// log stores (deltalog/logstore/internal/commitlog) share: it sits under deltalog/internal
// so both may import it, commitlog being internal to deltalog/logstore and out of
// deltalog's reach.
package logname

import "strconv"

// VersionDigits is the width of a version in a log file name: "<v:020>".
const VersionDigits = 20

// PartDigits is the width of a multi-part checkpoint's part number and part count:
// "<v:020>.checkpoint.<o:010>.<p:010>.parquet".
const PartDigits = 10

// ParseVersion returns the version written as s, which must be exactly VersionDigits
// ASCII digits ("00000000000000000003": 3). False for anything else: another length, a
// sign, a non-digit, or a number above math.MaxInt64.
func ParseVersion(s string) (int64, bool) {
	if !digits(s, VersionDigits) {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64) // digits only: fails only above math.MaxInt64
	return v, err == nil
}

// ParsePart returns the part number or part count written as s, which must be exactly
// PartDigits ASCII digits ("0000000002": 2); false for anything else.
func ParsePart(s string) (int, bool) {
	if !digits(s, PartDigits) {
		return 0, false
	}
	n, err := strconv.Atoi(s) // digits only: fails only above math.MaxInt
	return n, err == nil
}

// digits reports whether s is exactly width ASCII digits.
func digits(s string, width int) bool {
	if len(s) != width {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
