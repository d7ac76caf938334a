// Package storagetest holds what tests of storage.Store users need: Run, the conformance
// suite every Store implementation passes; Faulty, a wrapper that injects errors at a chosen
// call; and Counting, a wrapper that counts calls per method.
package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mssqlcdc/mssqlcdc/deltalog/storage"
)

// Run runs the conformance suite. newStore returns an empty Store for each subtest.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"PutGet", testPutGet},
		{"GetMissing", testGetMissing},
		{"GetRange", testGetRange},
		{"Head", testHead},
		{"PutReplaces", testPutReplaces},
		{"PutUnknownSize", testPutUnknownSize},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentRace", testPutIfAbsentRace},
		{"PutIfAbsentTag", testPutIfAbsentTag},
		{"GetTag", testGetTag},
		{"CopyIfAbsentTag", testCopyIfAbsentTag},
		{"Copy", testCopy},
		{"CopyIfAbsent", testCopyIfAbsent},
		{"CopyIfAbsentRace", testCopyIfAbsentRace},
		{"List", testList},
		{"Delete", testDelete},
		{"DeleteKeys", testDeleteKeys},
		{"URL", testURL},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
	}
}

func put(t *testing.T, s storage.Store, key, data string) {
	t.Helper()
	if err := s.Put(t.Context(), key, strings.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func get(t *testing.T, s storage.Store, key string) string {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return string(b)
}

func testPutGet(t *testing.T, s storage.Store) {
	put(t, s, "a/b/c.json", "hello\n")
	if got := get(t, s, "a/b/c.json"); got != "hello\n" {
		t.Fatalf("get = %q, want %q", got, "hello\n")
	}
	put(t, s, "empty", "")
	if got := get(t, s, "empty"); got != "" {
		t.Fatalf("get empty = %q", got)
	}
}

func testGetMissing(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if _, err := s.Get(ctx, "nope/x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get missing: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetRange(ctx, "nope/x", 0, 3); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetRange missing: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Head(ctx, "nope/x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Head missing: err = %v, want ErrNotFound", err)
	}
	if err := s.Copy(ctx, "nope/x", "y"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Copy missing: err = %v, want ErrNotFound", err)
	}
	if err := s.CopyIfAbsent(ctx, "nope/x", "y"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("CopyIfAbsent missing: err = %v, want ErrNotFound", err)
	}
	put(t, s, "dir/file", "x")
	if _, err := s.Get(ctx, "dir"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get of a key prefix: err = %v, want ErrNotFound", err)
	}
}

func testGetRange(t *testing.T, s storage.Store) {
	put(t, s, "r", "0123456789")
	for _, tc := range []struct {
		off, n int64
		want   string
	}{
		{0, 4, "0123"},
		{3, 2, "34"},
		{7, -1, "789"},
		{0, -1, "0123456789"},
		{8, 100, "89"},
		{9, 1, "9"},
	} {
		got, err := s.GetRange(t.Context(), "r", tc.off, tc.n)
		if err != nil {
			t.Fatalf("GetRange(%d, %d): %v", tc.off, tc.n, err)
		}
		if string(got) != tc.want {
			t.Errorf("GetRange(%d, %d) = %q, want %q", tc.off, tc.n, got, tc.want)
		}
	}
}

func testHead(t *testing.T, s storage.Store) {
	put(t, s, "h/x.bin", "abcde")
	info, err := s.Head(t.Context(), "h/x.bin")
	if err != nil {
		t.Fatal(err)
	}
	if info.Key != "h/x.bin" || info.Size != 5 || info.ModTime.IsZero() || info.ETag == "" {
		t.Fatalf("Head = %+v, want key h/x.bin, size 5, a mod time and an ETag", info)
	}
}

func testPutReplaces(t *testing.T, s storage.Store) {
	put(t, s, "k", "first")
	put(t, s, "k", "second, longer")
	if got := get(t, s, "k"); got != "second, longer" {
		t.Fatalf("get = %q", got)
	}
}

// onlyReader hides any Seek or WriterTo method, like a pipe.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func testPutUnknownSize(t *testing.T, s storage.Store) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 70000) // 1.1 MB
	if err := s.Put(t.Context(), "big", onlyReader{bytes.NewReader(data)}, -1); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "big2", onlyReader{bytes.NewReader(data)}, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"big", "big2"} {
		if got := get(t, s, k); got != string(data) {
			t.Fatalf("%s: got %d bytes, want %d", k, len(got), len(data))
		}
	}
}

func testPutIfAbsent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("one")); err != nil {
		t.Fatal(err)
	}
	err := s.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("two"))
	if !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second PutIfAbsent: err = %v, want ErrExists", err)
	}
	if got := get(t, s, "_delta_log/00000000000000000000.json"); got != "one" {
		t.Fatalf("content = %q, want the first write", got)
	}
}

func testPutIfAbsentRace(t *testing.T, s storage.Store) {
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.PutIfAbsent(t.Context(), "race", fmt.Appendf(nil, "writer %d", i)) })
	}
	wg.Wait()
	winner := OneWinner(t, errs, storage.ErrExists)
	if got, want := get(t, s, "race"), fmt.Sprintf("writer %d", winner); got != want {
		t.Fatalf("content = %q, want %q", got, want)
	}
}

func testCopy(t *testing.T, s storage.Store) {
	put(t, s, "src/a", "payload")
	put(t, s, "dst/b", "old")
	if err := s.Copy(t.Context(), "src/a", "dst/b"); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "dst/b"); got != "payload" {
		t.Fatalf("copy = %q", got)
	}
	if got := get(t, s, "src/a"); got != "payload" {
		t.Fatalf("source changed: %q", got)
	}
}

func testCopyIfAbsent(t *testing.T, s storage.Store) {
	ctx := t.Context()
	put(t, s, "_delta_log/.tmp/00000000000000000001.json.x", "mine")
	put(t, s, "_delta_log/.tmp/00000000000000000001.json.y", "theirs")
	if err := s.CopyIfAbsent(ctx, "_delta_log/.tmp/00000000000000000001.json.x", "_delta_log/00000000000000000001.json"); err != nil {
		t.Fatal(err)
	}
	err := s.CopyIfAbsent(ctx, "_delta_log/.tmp/00000000000000000001.json.y", "_delta_log/00000000000000000001.json")
	if !errors.Is(err, storage.ErrExists) {
		t.Fatalf("second CopyIfAbsent: err = %v, want ErrExists", err)
	}
	if got := get(t, s, "_delta_log/00000000000000000001.json"); got != "mine" {
		t.Fatalf("content = %q, want the first copy", got)
	}
}

func testCopyIfAbsentRace(t *testing.T, s storage.Store) {
	const n = 8
	for i := range n {
		put(t, s, fmt.Sprintf("tmp/%d", i), fmt.Sprintf("writer %d", i))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.CopyIfAbsent(t.Context(), fmt.Sprintf("tmp/%d", i), "target") })
	}
	wg.Wait()
	winner := OneWinner(t, errs, storage.ErrExists)
	if got, want := get(t, s, "target"), fmt.Sprintf("writer %d", winner); got != want {
		t.Fatalf("content = %q, want %q", got, want)
	}
}

func keys(t *testing.T, s storage.Store, prefix, startAfter string) []string {
	t.Helper()
	var out []string
	for info, err := range s.List(t.Context(), prefix, startAfter) {
		if err != nil {
			t.Fatalf("list %q after %q: %v", prefix, startAfter, err)
		}
		out = append(out, info.Key)
	}
	return out
}

func testList(t *testing.T, s storage.Store) {
	all := []string{
		"_delta_log/00000000000000000000.json",
		"_delta_log/00000000000000000001.json",
		"_delta_log/00000000000000000002.checkpoint.parquet",
		"_delta_log/00000000000000000002.json",
		"_delta_log/_last_checkpoint",
		"a-b",
		"a/b",
		"a/c/d",
		"a0",
		"part-0001.parquet",
	}
	for _, k := range all {
		put(t, s, k, k)
	}
	want := slices.Clone(all)
	slices.Sort(want)
	check := func(prefix, after string, want []string) {
		t.Helper()
		if got := keys(t, s, prefix, after); !slices.Equal(got, want) {
			t.Errorf("List(%q, %q) = %q, want %q", prefix, after, got, want)
		}
	}
	check("", "", want)
	check("_delta_log/", "", want[:5])
	check("_delta_log/", "_delta_log/00000000000000000001.json", want[2:5])
	check("_delta_log/0000", "_delta_log/00000000000000000001", want[1:4])
	check("a", "", []string{"a-b", "a/b", "a/c/d", "a0"})
	check("a/", "a/b", []string{"a/c/d"})
	check("", "a/c", []string{"a/c/d", "a0", "part-0001.parquet"})
	check("zzz", "", nil)
	info := func() storage.ObjectInfo {
		for info, err := range s.List(t.Context(), "a/c/", "") {
			if err != nil {
				t.Fatal(err)
			}
			return info
		}
		return storage.ObjectInfo{}
	}()
	if info.Key != "a/c/d" || info.Size != int64(len("a/c/d")) || info.ModTime.IsZero() {
		t.Errorf("listed info = %+v", info)
	}
}

func testDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	put(t, s, "d/x", "1")
	if err := s.Delete(ctx, "d/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx, "d/x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "d/x"); err != nil {
		t.Fatalf("delete missing: %v", err)
	}
	if got := keys(t, s, "", ""); len(got) != 0 {
		t.Fatalf("after delete, list = %q", got)
	}
}

// testDeleteKeys: storage.DeleteKeys removes every key given, missing ones included, and
// only those (through the store's KeysDeleter when it has one).
func testDeleteKeys(t *testing.T, s storage.Store) {
	ctx := t.Context()
	for _, k := range []string{"d/a", "d/b", "d/c"} {
		put(t, s, k, "1")
	}
	if err := storage.DeleteKeys(ctx, s, []string{"d/a", "d/missing", "d/c"}); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, "", ""); len(got) != 1 || got[0] != "d/b" {
		t.Fatalf("after DeleteKeys, list = %q, want [d/b]", got)
	}
}

func testURL(t *testing.T, s storage.Store) {
	u := s.URL()
	if strings.HasSuffix(u, "/") || !(strings.HasPrefix(u, "s3://") || strings.HasPrefix(u, "file:///")) {
		t.Fatalf("URL() = %q, want s3:// or file:/// and no trailing slash", u)
	}
}

// OneWinner checks the outcome of a race of writers that each tried to create the same
// thing once: exactly one error is nil (its index is returned) and every other is lost
// (errors.Is(err, lost), e.g. storage.ErrExists or logstore.ErrVersionExists).
func OneWinner(t testing.TB, errs []error, lost error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both won", winner, i)
			}
			winner = i
		case !errors.Is(err, lost):
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	return winner
}

// The ETag a conditional put returns is the one List and Head report for the object; an
// object of other content written at the key after a delete has another, which no longer
// matches; and a put that finds the key taken returns storage.ErrExists and no ETag. Every
// Store of this module is a storage.TagPutter.
func testPutIfAbsentTag(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if _, ok := s.(storage.TagPutter); !ok {
		t.Fatalf("%T is not a storage.TagPutter", s)
	}
	listed := func(key string) string {
		t.Helper()
		for info, err := range s.List(ctx, key, "") {
			if err != nil {
				t.Fatal(err)
			}
			if info.Key == key {
				return info.ETag
			}
		}
		t.Fatalf("list: %s missing", key)
		return ""
	}
	tag, err := storage.PutIfAbsentTag(ctx, s, "tag/0.json", []byte(`{"writer":"a"}`))
	if err != nil || tag == "" {
		t.Fatalf("put: tag %q, %v", tag, err)
	}
	if got := listed("tag/0.json"); got != tag {
		t.Errorf("List's ETag %q, the put's %q", got, tag)
	}
	if info, err := s.Head(ctx, "tag/0.json"); err != nil || info.ETag != tag {
		t.Errorf("Head's ETag %q (%v), the put's %q", info.ETag, err, tag)
	}
	if again, err := storage.PutIfAbsentTag(ctx, s, "tag/0.json", []byte(`{"writer":"b"}`)); !errors.Is(err, storage.ErrExists) || again != "" {
		t.Errorf("put on a taken key: tag %q, %v; want ErrExists and no tag", again, err)
	}
	if err := s.Delete(ctx, "tag/0.json"); err != nil {
		t.Fatal(err)
	}
	other, err := storage.PutIfAbsentTag(ctx, s, "tag/0.json", []byte(`{"writer":"b"}`))
	if err != nil || other == "" || other == tag {
		t.Fatalf("another writer's object at the key: tag %q (first %q), %v", other, tag, err)
	}
	if got := listed("tag/0.json"); got != other || got == tag {
		t.Errorf("List's ETag %q after the key was written again, want %q (not %q)", got, other, tag)
	}
}

// testGetTag: GetTag returns the whole object with the ETag its put returned and List
// shows; a missing key is storage.ErrNotFound. Every Store of this module is a
// storage.TagGetter.
func testGetTag(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if _, ok := s.(storage.TagGetter); !ok {
		t.Fatalf("%T is not a storage.TagGetter", s)
	}
	data := []byte(`{"writer":"a"}`)
	tag, err := storage.PutIfAbsentTag(ctx, s, "gettag/0.json", data)
	if err != nil || tag == "" {
		t.Fatalf("put: tag %q, %v", tag, err)
	}
	got, gotTag, err := storage.GetTag(ctx, s, "gettag/0.json")
	if err != nil || string(got) != string(data) || gotTag != tag {
		t.Errorf("GetTag = %q, %q, %v; want %q, the put's ETag %q", got, gotTag, err, data, tag)
	}
	if _, _, err := storage.GetTag(ctx, s, "gettag/missing.json"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetTag of a missing key: %v, want ErrNotFound", err)
	}
}

// testCopyIfAbsentTag: CopyIfAbsentTag returns the ETag List shows for the copy, and
// storage.ErrExists with no ETag when the destination is taken. Every Store of this
// module is a storage.TagCopier.
func testCopyIfAbsentTag(t *testing.T, s storage.Store) {
	ctx := t.Context()
	if _, ok := s.(storage.TagCopier); !ok {
		t.Fatalf("%T is not a storage.TagCopier", s)
	}
	data := []byte(`{"writer":"a"}`)
	if err := s.PutIfAbsent(ctx, "copytag/src", data); err != nil {
		t.Fatal(err)
	}
	tag, err := storage.CopyIfAbsentTag(ctx, s, "copytag/src", "copytag/0.json")
	if err != nil || tag == "" {
		t.Fatalf("copy: tag %q, %v", tag, err)
	}
	if info, err := s.Head(ctx, "copytag/0.json"); err != nil || info.ETag != tag {
		t.Errorf("Head's ETag %q (%v), the copy's %q", info.ETag, err, tag)
	}
	for info, err := range s.List(ctx, "copytag/0.json", "") {
		if err != nil {
			t.Fatal(err)
		}
		if info.ETag != tag {
			t.Errorf("List's ETag %q, the copy's %q", info.ETag, tag)
		}
	}
	if again, err := storage.CopyIfAbsentTag(ctx, s, "copytag/src", "copytag/0.json"); !errors.Is(err, storage.ErrExists) || again != "" {
		t.Errorf("copy onto a taken key: tag %q, %v; want ErrExists and no tag", again, err)
	}
}
