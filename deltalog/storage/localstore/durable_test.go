package localstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// syncEvent is one fsync: the path synced and whether the target file existed then.
type syncEvent struct {
	path         string
	targetExists bool
}

// watchSyncs records every fsync while the test runs; fail, when it returns an error for
// the n-th sync (1-based), makes that sync fail.
func watchSyncs(t *testing.T, target string, fail func(n int) error) *[]syncEvent {
	t.Helper()
	var events []syncEvent
	orig := fsync
	fsync = func(f *os.File) error {
		_, err := os.Lstat(target)
		events = append(events, syncEvent{path: f.Name(), targetExists: err == nil})
		if fail != nil {
			if err := fail(len(events)); err != nil {
				return err
			}
		}
		return orig(f)
	}
	t.Cleanup(func() { fsync = orig })
	return &events
}

// Every write is durable when it returns (issue 12: a durable commit could name a data file
// a power loss took back): the temporary file is synced before it gets its name, the
// directory holding the name after it, and each directory the write created has its
// parent synced, from the root's parent down.
func TestWritesSyncWhatTheCommitDependsOn(t *testing.T) {
	ctx := context.Background()
	for _, op := range []string{"put", "put if absent", "copy", "copy if absent"} {
		t.Run(op, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "lake")
			s, err := New(root)
			if err != nil {
				t.Fatal(err)
			}
			src := "src.json"
			if strings.HasPrefix(op, "copy") {
				root = base // the source exists first, so the root is not new
				if s, err = New(root); err != nil {
					t.Fatal(err)
				}
				if err := s.PutIfAbsent(ctx, src, []byte("data")); err != nil {
					t.Fatal(err)
				}
			}
			target := filepath.Join(root, "t", "_delta_log", "00000000000000000000.json")
			events := watchSyncs(t, target, nil)
			key := "t/_delta_log/00000000000000000000.json"
			switch op {
			case "put":
				err = s.Put(ctx, key, strings.NewReader("data"), 4)
			case "put if absent":
				err = s.PutIfAbsent(ctx, key, []byte("data"))
			case "copy":
				err = s.Copy(ctx, src, key)
			case "copy if absent":
				err = s.CopyIfAbsent(ctx, src, key)
			}
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, e := range *events {
				paths = append(paths, e.path)
			}
			// New directories: their parents synced, top down, before the file exists.
			wantDirs := []string{filepath.Join(root, "t"), filepath.Join(root, "t", "_delta_log")}
			if !strings.HasPrefix(op, "copy") {
				wantDirs = append([]string{root}, wantDirs...)
			}
			for i, d := range wantDirs {
				if i >= len(*events) || (*events)[i].path != filepath.Dir(d) || (*events)[i].targetExists {
					t.Fatalf("syncs %v: want the parent of each new directory %v first, in order", paths, wantDirs)
				}
			}
			rest := (*events)[len(wantDirs):]
			// Then the temporary file's bytes, before the name exists.
			if len(rest) < 2 || !strings.Contains(filepath.Base(rest[0].path), tempPrefix) || rest[0].targetExists {
				t.Fatalf("syncs %v: want the temporary file synced before the rename or link", paths)
			}
			// Then the directory holding the new name, after it exists.
			last := rest[len(rest)-1]
			if last.path != filepath.Dir(target) || !last.targetExists {
				t.Fatalf("syncs %v: want %s synced last, after the name exists", paths, filepath.Dir(target))
			}
		})
	}
}

// A failed sync fails the write (syncDir ignored its error before), at every sync a write
// makes; the write then succeeds when retried and leaves the right content. A file
// system that cannot sync directories at all (EINVAL) is not an error.
func TestFailedSyncFailsTheWriteAndARetryWorks(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("injected fsync failure")
	for n := 1; ; n++ {
		root := filepath.Join(t.TempDir(), "lake")
		s, err := New(root)
		if err != nil {
			t.Fatal(err)
		}
		key := "t/part-0.parquet"
		target := filepath.Join(root, key)
		events := watchSyncs(t, target, func(i int) error {
			if i == n {
				return boom
			}
			return nil
		})
		err = s.Put(ctx, key, strings.NewReader("v1"), 2)
		if len(*events) < n {
			// Every sync point has failed once.
			if err != nil || n < 4 {
				t.Fatalf("Put with %d syncs: %v (want 4 or more sync points, all covered)", len(*events), err)
			}
			break
		}
		if !errors.Is(err, boom) {
			t.Fatalf("sync %d of Put failed, Put returned %v", n, err)
		}
		fsync = func(f *os.File) error { return f.Sync() }
		if err := s.Put(ctx, key, strings.NewReader("v2"), 2); err != nil {
			t.Fatalf("retry after failed sync %d: %v", n, err)
		}
		if b, err := os.ReadFile(target); err != nil || !bytes.Equal(b, []byte("v2")) {
			t.Fatalf("after retry: %q %v", b, err)
		}
	}
	// A file system without directory fsync, and one that fails.
	real := func(f *os.File) error { return f.Sync() }
	t.Cleanup(func() { fsync = real })
	fsync = func(*os.File) error { return syscall.EINVAL }
	if err := syncDir(t.TempDir()); err != nil {
		t.Errorf("EINVAL from a directory fsync: %v, want nil", err)
	}
	fsync = func(*os.File) error { return syscall.EIO }
	if err := syncDir(t.TempDir()); !errors.Is(err, syscall.EIO) {
		t.Errorf("EIO from a directory fsync: %v, want it returned", err)
	}
}
