package emulators

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/johannesboyne/gofakes3"
)

func put(t *testing.T, c *s3.Client, bucket, key, body string, ifNoneMatch bool) error {
	t.Helper()
	in := &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader([]byte(body))}
	if ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := c.PutObject(t.Context(), in)
	return err
}

func get(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return string(b)
}

func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// gofakes3 refuses a conditional PutObject onto an existing key with 412 on its own.
func TestConditionalPut(t *testing.T) {
	srv := StartS3(t)
	c, b := srv.Client(), srv.Bucket(t)
	if err := put(t, c, b, "k", "one", true); err != nil {
		t.Fatal(err)
	}
	if err := put(t, c, b, "k", "two", true); code(err) != "PreconditionFailed" {
		t.Fatalf("second conditional put: %v, want PreconditionFailed", err)
	}
	if got := get(t, c, b, "k"); got != "one" {
		t.Fatalf("content = %q", got)
	}
}

// The server answers a conditional CopyObject as S3 does: 412 when the target exists.
func TestConditionalCopy(t *testing.T) {
	srv := StartS3(t)
	c, b := srv.Client(), srv.Bucket(t)
	for _, k := range []string{"src a", "src b"} {
		if err := put(t, c, b, k, k, false); err != nil {
			t.Fatal(err)
		}
	}
	cp := func(src string) error {
		_, err := c.CopyObject(t.Context(), &s3.CopyObjectInput{
			Bucket: &b, Key: aws.String("dst"), CopySource: aws.String(b + "/" + "src%20" + src[4:]),
			IfNoneMatch: aws.String("*"),
		})
		return err
	}
	if err := cp("src a"); err != nil {
		t.Fatal(err)
	}
	if err := cp("src b"); code(err) != "PreconditionFailed" {
		t.Fatalf("second conditional copy: %v, want PreconditionFailed", err)
	}
	if got := get(t, c, b, "dst"); got != "src a" {
		t.Fatalf("content = %q", got)
	}
	_, err := c.CopyObject(t.Context(), &s3.CopyObjectInput{
		Bucket: &b, Key: aws.String("dst2"), CopySource: aws.String(b + "/missing"), IfNoneMatch: aws.String("*"),
	})
	if code(err) != "NoSuchKey" {
		t.Fatalf("conditional copy of a missing source: %v, want NoSuchKey", err)
	}
}

// Why conditionalCopy exists: gofakes3 v1.2.0 alone ignores If-None-Match on CopyObject
// and overwrites the target. When this test fails, gofakes3 has learned it and the wrapper
// can go.
func TestBareGofakes3IgnoresConditionalCopy(t *testing.T) {
	hs := httptest.NewServer(gofakes3.New(mustStore(time.Now, "")).Server())
	t.Cleanup(hs.Close)
	srv := &S3Server{URL: hs.URL}
	c, b := srv.Client(), srv.Bucket(t)
	for _, k := range []string{"a", "b"} {
		if err := put(t, c, b, k, k, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, src := range []string{"a", "b"} {
		if _, err := c.CopyObject(t.Context(), &s3.CopyObjectInput{
			Bucket: &b, Key: aws.String("dst"), CopySource: aws.String(b + "/" + src), IfNoneMatch: aws.String("*"),
		}); err != nil {
			t.Fatalf("copy %s: %v", src, err)
		}
	}
	if got := get(t, c, b, "dst"); got != "b" {
		t.Fatalf("content = %q: gofakes3 now honours conditional copy", got)
	}
}

// The emulator on a settable clock gives objects the clock's time, moves only when set,
// and refuses a clock request that is not a time or not a PUT; one without a clock has no
// such endpoint.
func TestS3HandlerClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h, err := NewS3HandlerClock(start, "")
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	srv := &S3Server{URL: hs.URL}
	c, b := srv.Client(), srv.Bucket(t)
	modified := func(key string) time.Time {
		t.Helper()
		out, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: &b, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		return out.LastModified.UTC()
	}
	if err := put(t, c, b, "a", "a", false); err != nil {
		t.Fatal(err)
	}
	if got := modified("a"); !got.Equal(start) {
		t.Fatalf("a modified %v, want the clock's start %v", got, start)
	}
	later := start.Add(30*24*time.Hour + time.Minute)
	if err := srv.SetClock(t.Context(), later); err != nil {
		t.Fatal(err)
	}
	if err := put(t, c, b, "b", "b", true); err != nil {
		t.Fatal(err)
	}
	if got := modified("b"); !got.Equal(later) {
		t.Fatalf("b modified %v, want the clock's %v", got, later)
	}
	if got := modified("a"); !got.Equal(start) {
		t.Fatalf("a modified %v after the clock moved, want %v", got, start)
	}
	for _, r := range []struct {
		method, body string
		want         int
	}{{http.MethodPut, "yesterday", http.StatusBadRequest}, {http.MethodGet, "", http.StatusMethodNotAllowed}} {
		req, _ := http.NewRequest(r.method, hs.URL+ClockPath, strings.NewReader(r.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != r.want {
			t.Errorf("%s %q: %s, want %d", r.method, r.body, resp.Status, r.want)
		}
	}
	if got := modified("b"); !got.Equal(later) {
		t.Fatalf("b modified %v after refused clock requests", got)
	}
	if err := StartS3(t).SetClock(t.Context(), later); err == nil {
		t.Fatal("SetClock on an emulator without a clock succeeded")
	}
}
