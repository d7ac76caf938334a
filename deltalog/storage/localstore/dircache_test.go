package localstore

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func listKeys(t *testing.T, s *Store, prefix, after string) []string {
	t.Helper()
	var out []string
	for info, err := range s.List(t.Context(), prefix, after) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, info.Key)
	}
	return out
}

// A cached listing is never stale: entries created or removed after it, by this Store or
// another (another process), show at once.
func TestListCacheSeesEveryChange(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for v := range 300 {
		if err := os.WriteFile(filepath.Join(logDir, fmt.Sprintf("%020d.json", v)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The directory's last change is an hour old as far as the store can tell.
	later := func() time.Time { return time.Now().Add(time.Hour) }
	s.cache.now, other.cache.now = later, later
	key := func(v int) string { return fmt.Sprintf("_delta_log/%020d.json", v) }
	after := key(297)[:len(key(297))-len(".json")]

	if got, want := listKeys(t, s, "_delta_log/", after), []string{key(297), key(298), key(299)}; !slices.Equal(got, want) {
		t.Fatalf("first listing %q, want %q", got, want)
	}
	if len(s.cache.dirs) != 1 {
		t.Fatalf("%d directories cached, want the log", len(s.cache.dirs))
	}
	if err := other.PutIfAbsent(t.Context(), key(300), []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := listKeys(t, s, "_delta_log/", after), []string{key(297), key(298), key(299), key(300)}; !slices.Equal(got, want) {
		t.Fatalf("after another store's write: %q, want %q", got, want)
	}
	if err := os.Remove(filepath.Join(logDir, fmt.Sprintf("%020d.json", 298))); err != nil {
		t.Fatal(err)
	}
	if got, want := listKeys(t, s, "_delta_log/", after), []string{key(297), key(299), key(300)}; !slices.Equal(got, want) {
		t.Fatalf("after a removal: %q, want %q", got, want)
	}
	if got := len(listKeys(t, s, "", "")); got != 300 {
		t.Fatalf("full listing has %d keys, want 300", got)
	}
}

// A directory changed within quietFor is read afresh and not kept: the kernel's coarse
// timestamps could hide a change made right after the read.
func TestListCacheSkipsBusyDirectories(t *testing.T) {
	dir := t.TempDir()
	for v := range 300 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", v)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := listKeys(t, s, "", "f0297"); !slices.Equal(got, []string{"f0298", "f0299"}) {
		t.Fatalf("listing %q", got)
	}
	if len(s.cache.dirs) != 0 {
		t.Fatalf("a directory changed just now was cached")
	}
}

// Listing starts at the directory the prefix names and never leaves the root.
func TestListPrefixDirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := New(filepath.Join(dir, "table"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b/c", "b/d/e"} {
		if err := s.PutIfAbsent(t.Context(), k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "outside"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prefix, after string
		want          []string
	}{
		{"b/", "", []string{"b/c", "b/d/e"}},
		{"b/d/", "", []string{"b/d/e"}},
		{"b/d/", "b/c", []string{"b/d/e"}},
		{"b/", "c", nil},
		{"a/", "", nil}, // a is a file
		{"x/y/", "", nil},
		{"../", "", nil},
		{"../outside", "", nil},
		{"b//", "", nil},
	} {
		if got := listKeys(t, s, c.prefix, c.after); !slices.Equal(got, c.want) {
			t.Errorf("List(%q, %q) = %q, want %q", c.prefix, c.after, got, c.want)
		}
	}
}
