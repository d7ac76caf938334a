package localstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/localstore"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		s, err := localstore.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestKeysStayInsideRoot(t *testing.T) {
	s, err := localstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"", "/abs", "../x", "a/../../x", "a//b", "a/./b", `a\b`} {
		if err := s.PutIfAbsent(t.Context(), k, []byte("x")); err == nil {
			t.Errorf("PutIfAbsent(%q) succeeded, want an invalid key error", k)
		}
	}
}

func TestTempFilesAreNotListed(t *testing.T) {
	dir := t.TempDir()
	s, err := localstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".localstore-123.tmp"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(t.Context(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for info, err := range s.List(t.Context(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, info.Key)
	}
	if len(got) != 1 || got[0] != "k" {
		t.Fatalf("List = %q, want [k]", got)
	}
	if u, want := s.URL(), "file://"+filepath.ToSlash(dir); u != want {
		t.Fatalf("URL = %q, want %q", u, want)
	}
}

// A write whose directory cannot be made keeps the reason: mkdir under /proc fails with
// ENOENT, which is no missing key, so it is not storage.ErrNotFound (the exactly-once
// paths take a not-found for "the source object is gone"); under a regular file it is
// ENOTDIR. A read of a missing key is still ErrNotFound.
func TestWriteIntoUncreatableDirIsNotNotFound(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	roots := []string{filepath.Join(file, "b")}
	if runtime.GOOS == "linux" {
		roots = append(roots, "/proc/mssqlcdc-no-such/b")
	}
	for _, root := range roots {
		s, err := localstore.New(root)
		if err != nil {
			t.Fatal(err)
		}
		writes := map[string]error{
			"Put":         s.Put(ctx, "k/x", strings.NewReader("v"), 1),
			"PutIfAbsent": s.PutIfAbsent(ctx, "k/x", []byte("v")),
		}
		for op, err := range writes {
			var pe *fs.PathError
			if err == nil || errors.Is(err, storage.ErrNotFound) || !errors.As(err, &pe) {
				t.Errorf("%s under %s: %v, want the directory's error, not ErrNotFound", op, root, err)
			}
		}
		if _, err := s.Get(ctx, "k/x"); !strings.HasPrefix(root, file) && !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Get under %s: %v, want ErrNotFound", root, err)
		}
	}
}
