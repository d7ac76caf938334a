package storage

import (
	"errors"
	"testing"
)

func TestCleanPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"/":               "",
		"lake/orders":     "lake/orders",
		"/lake/orders/":   "lake/orders",
		"lake//orders":    "lake/orders",
		"//lake///orders": "lake/orders",
		"a b/c%20d":       "a b/c%20d",
		"lake/.hidden":    "lake/.hidden",
	} {
		if got, err := CleanPrefix(in); err != nil || got != want {
			t.Errorf("CleanPrefix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"lake/./orders", "lake/../orders", "..", "/."} {
		var be *BadPrefixError
		if _, err := CleanPrefix(in); !errors.As(err, &be) {
			t.Errorf("CleanPrefix(%q): %v, want *BadPrefixError", in, err)
		}
	}
}
