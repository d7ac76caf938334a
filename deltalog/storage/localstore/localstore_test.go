package localstore_test

import (
	"os"
	"path/filepath"
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
