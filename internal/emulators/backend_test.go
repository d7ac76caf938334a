package emulators

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
)

// listAll is the reference LIST without a delimiter: the keys after marker that begin
// with prefix, in order.
func listAll(keys []string, prefix, marker string) []string {
	var out []string
	for _, k := range keys {
		if k > marker && strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// pageThrough lists bucket b of s page by page (maxKeys a page) from marker, as the
// gofakes3 front end does, and returns every key answered.
func pageThrough(t *testing.T, s *objectStore, b, prefix, marker string, maxKeys int64) []string {
	t.Helper()
	p := &gofakes3.Prefix{Prefix: prefix, HasPrefix: prefix != ""}
	var got []string
	for range 10_000 {
		page := gofakes3.ListBucketPage{Marker: marker, HasMarker: marker != "", MaxKeys: maxKeys}
		l, err := s.ListBucket(b, p, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Contents {
			got = append(got, c.Key)
		}
		if !l.IsTruncated {
			return got
		}
		if l.NextMarker == "" {
			t.Fatalf("truncated page without a marker after %q", marker)
		}
		marker = l.NextMarker
	}
	t.Fatal("LIST does not end")
	return nil
}

// A LIST answers what S3 answers — the keys after the marker that begin with the prefix,
// in order, page by page — for random keys, prefixes, markers and page sizes.
func TestObjectStoreListMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "_", "/", "0", "9", "é"}
	word := func(n int) string {
		var sb strings.Builder
		for range r.IntN(n) + 1 {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for round := range 200 {
		s := mustStore(time.Now, "")
		if err := s.CreateBucket("b"); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for range r.IntN(60) {
			k := word(5)
			if _, err := s.PutObject("b", k, nil, strings.NewReader(k), int64(len(k)), nil); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		// Some keys deleted again, some overwritten.
		for _, k := range keys {
			switch r.IntN(5) {
			case 0:
				if _, err := s.DeleteObject("b", k); err != nil {
					t.Fatal(err)
				}
			case 1:
				if _, err := s.PutObject("b", k, nil, strings.NewReader("x"), 1, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		var live []string
		for k := range s.buckets["b"].objects {
			live = append(live, k)
		}
		slices.Sort(live)
		if !slices.Equal(live, s.buckets["b"].keys) {
			t.Fatalf("round %d: sorted keys %q, objects %q", round, s.buckets["b"].keys, live)
		}
		for range 10 {
			prefix, marker := "", ""
			if r.IntN(3) > 0 {
				prefix = word(2)
			}
			if r.IntN(2) == 0 {
				marker = word(3)
			}
			want := listAll(live, prefix, marker)
			got := pageThrough(t, s, "b", prefix, marker, int64(r.IntN(7)+1))
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: LIST prefix %q after %q = %q, want %q", round, prefix, marker, got, want)
			}
		}
	}
}

// The cost that made this store: a table's log LIST from a known version reads the log's
// later keys and one more, not the table's data files that sort after "_delta_log/", nor
// the other tables' keys.
func TestObjectStoreListStopsAtPrefixEnd(t *testing.T) {
	s := mustStore(time.Now, "")
	if err := s.CreateBucket("b"); err != nil {
		t.Fatal(err)
	}
	putKey := func(k string) {
		if _, err := s.PutObject("b", k, nil, strings.NewReader("x"), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range []string{"a", "t", "z"} {
		for v := range 30 {
			putKey(fmt.Sprintf("%s/_delta_log/%020d.json", table, v))
		}
		for f := range 1000 {
			putKey(fmt.Sprintf("%s/part-%05d.parquet", table, f))
		}
	}
	before := s.listed.Load()
	got := pageThrough(t, s, "b", "t/_delta_log/", fmt.Sprintf("t/_delta_log/%020d.json", 24), 1000)
	read := s.listed.Load() - before
	if len(got) != 5 || got[0] != fmt.Sprintf("t/_delta_log/%020d.json", 25) {
		t.Fatalf("LIST = %q, want versions 25..29", got)
	}
	if read != 6 {
		t.Fatalf("LIST read %d keys, want 6 (5 answered and the first past the prefix)", read)
	}
}

// With a delimiter, keys under one common prefix are answered once, and the common
// prefixes and the keys at the level are S3's.
func TestObjectStoreListDelimiter(t *testing.T) {
	srv := StartS3(t)
	c, b := srv.Client(), srv.Bucket(t)
	for _, k := range []string{"t/_delta_log/0.json", "t/_delta_log/1.json", "t/a/x", "t/a/y", "t/b", "u/c"} {
		if err := put(t, c, b, k, k, false); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: &b, Prefix: aws.String("t/"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	var prefixes, keys []string
	for _, p := range out.CommonPrefixes {
		prefixes = append(prefixes, *p.Prefix)
	}
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	if !slices.Equal(prefixes, []string{"t/_delta_log/", "t/a/"}) || !slices.Equal(keys, []string{"t/b"}) {
		t.Fatalf("prefixes %q keys %q", prefixes, keys)
	}
}

// With bodies in files: GET, ranged GET, HEAD, overwrite, copy and delete answer as in
// memory; a deleted or overwritten object's file is gone, and a reader that opened the
// old body before the overwrite still reads it whole.
func TestObjectStoreBodiesInFiles(t *testing.T) {
	dir := t.TempDir()
	h, err := NewS3Handler(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := startHandler(t, h)
	c, b := srv.Client(), srv.Bucket(t)
	body := strings.Repeat("0123456789", 1000)
	if err := put(t, c, b, "k", body, true); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, b, "k"); got != body {
		t.Fatalf("GET = %d bytes, want %d", len(got), len(body))
	}
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &b, Key: aws.String("k"), Range: aws.String("bytes=10-19")})
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(part) != "0123456789" {
		t.Fatalf("ranged GET = %q", part)
	}
	if err := put(t, c, b, "k", "again", true); code(err) != "PreconditionFailed" {
		t.Fatalf("conditional put onto k: %v, want PreconditionFailed", err)
	}
	if n := filesIn(t, dir); n != 1 {
		t.Fatalf("%d body files after a refused put, want 1", n)
	}
	if _, err := c.CopyObject(t.Context(), &s3.CopyObjectInput{Bucket: &b, Key: aws.String("copy"), CopySource: aws.String(b + "/k")}); err != nil {
		t.Fatal(err)
	}
	if err := put(t, c, b, "k", "short", false); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, b, "k"); got != "short" {
		t.Fatalf("GET after overwrite = %q", got)
	}
	if got := get(t, c, b, "copy"); got != body {
		t.Fatalf("copy = %d bytes", len(got))
	}
	if n := filesIn(t, dir); n != 2 {
		t.Fatalf("%d body files for two objects, want 2", n)
	}
	if _, err := c.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObjects(t.Context(), &s3.DeleteObjectsInput{Bucket: &b, Delete: &s3types.Delete{Objects: []s3types.ObjectIdentifier{{Key: aws.String("copy")}}}}); err != nil {
		t.Fatal(err)
	}
	if n := filesIn(t, dir); n != 0 {
		t.Fatalf("%d body files after deleting both objects, want 0", n)
	}

	// A reader of the old body, opened before the overwrite.
	s := mustStore(time.Now, t.TempDir())
	if err := s.CreateBucket("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutObject("b", "k", nil, strings.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatal(err)
	}
	o, err := s.GetObject("b", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutObject("b", "k", nil, strings.NewReader("new"), 3, nil); err != nil {
		t.Fatal(err)
	}
	old, err := io.ReadAll(o.Contents)
	o.Contents.Close()
	if err != nil || string(old) != body {
		t.Fatalf("old body read after the overwrite: %d bytes, %v", len(old), err)
	}
}

// startHandler serves h for the test, as an S3Server.
func startHandler(t *testing.T, h http.Handler) *S3Server {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return &S3Server{URL: hs.URL}
}

func filesIn(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// An overwrite replaces the object's metadata, as S3 does (gofakes3's s3mem merged the
// old into the new).
func TestObjectStoreOverwriteReplacesMetadata(t *testing.T) {
	s := mustStore(time.Now, "")
	if err := s.CreateBucket("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutObject("b", "k", map[string]string{"X-Amz-Meta-A": "1"}, strings.NewReader("x"), 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutObject("b", "k", map[string]string{"X-Amz-Meta-B": "2"}, strings.NewReader("y"), 1, nil); err != nil {
		t.Fatal(err)
	}
	o, err := s.HeadObject("b", "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Metadata) != 1 || o.Metadata["X-Amz-Meta-B"] != "2" {
		t.Fatalf("metadata after overwrite = %v, want only X-Amz-Meta-B", o.Metadata)
	}
}

// Racing conditional puts of one key: exactly one wins, and the key holds its body.
func TestObjectStoreConditionalPutRace(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		s := mustStore(time.Now, dir)
		if err := s.CreateBucket("b"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		won := make([]bool, 16)
		for i := range won {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprint(i)
				_, err := s.PutObject("b", "k", nil, strings.NewReader(body), int64(len(body)), &gofakes3.PutConditions{IfNoneMatch: aws.String("*")})
				won[i] = err == nil
			}()
		}
		wg.Wait()
		winner := slices.Index(won, true)
		if n := len(slices.DeleteFunc(slices.Clone(won), func(w bool) bool { return !w })); n != 1 {
			t.Fatalf("dir %q: %d conditional puts won, want 1", dir, n)
		}
		o, err := s.GetObject("b", "k", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(o.Contents)
		o.Contents.Close()
		if !bytes.Equal(got, []byte(fmt.Sprint(winner))) {
			t.Fatalf("dir %q: body %q, want the winner's %d", dir, got, winner)
		}
		if dir != "" && filesIn(t, dir) != 1 {
			t.Fatalf("%d body files, want the winner's only", filesIn(t, dir))
		}
	}
}
