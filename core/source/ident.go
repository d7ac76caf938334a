package source

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxCaptureInstanceLen is the longest capture instance name SQL Server accepts
// (sys.sp_cdc_enable_table: @capture_instance is sysname, limited to 100 characters).
const MaxCaptureInstanceLen = 100

// CheckCaptureInstance validates a capture instance name as every Source takes it: 1..100
// characters of valid UTF-8 in any script (default names such as dbo_Situação are
// allowed), no ']' and no control characters, so that it can be inlined bracket-quoted as
// cdc.[<ci>_CT] (docs/reference/sqlserver-cdc.md §4.1). Bad input is an
// *InvalidArgumentError.
func CheckCaptureInstance(ci string) error {
	const arg = "capture instance"
	switch {
	case ci == "":
		return &InvalidArgumentError{Arg: arg, Reason: "empty name"}
	case !utf8.ValidString(ci):
		return &InvalidArgumentError{Arg: arg, Reason: "not valid UTF-8"}
	case utf8.RuneCountInString(ci) > MaxCaptureInstanceLen:
		return &InvalidArgumentError{Arg: arg, Reason: "longer than 100 characters"}
	}
	return checkNameChars(arg, ci)
}

// CheckName validates a schema, table or column name before it is bracket-quoted: not
// empty, valid UTF-8, no ']' and no control characters. what names the argument in the
// *InvalidArgumentError.
func CheckName(what, name string) error {
	if name == "" {
		return &InvalidArgumentError{Arg: what, Reason: "empty name"}
	}
	if !utf8.ValidString(name) {
		return &InvalidArgumentError{Arg: what, Reason: "not valid UTF-8"}
	}
	return checkNameChars(what, name)
}

func checkNameChars(what, name string) error {
	for _, r := range name {
		if r == ']' {
			return &InvalidArgumentError{Arg: what, Reason: "name " + QuoteForMessage(name) + " contains ']'"}
		}
		if unicode.IsControl(r) {
			return &InvalidArgumentError{Arg: what, Reason: "name " + QuoteForMessage(name) + " contains a control character"}
		}
	}
	return nil
}

// QuoteForMessage quotes a name for an error message, control characters shown as '?'.
func QuoteForMessage(s string) string {
	return "\"" + strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s) + "\""
}
